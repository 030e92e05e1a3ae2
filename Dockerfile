# syntax=docker/dockerfile:1
#
# Strait as a container image that stands in for apache/kafka: the same
# port (9092), the same KAFKA_* environment (strip KAFKA_, lower-case,
# ___ -> -, __ -> _, _ -> .; KAFKA_ADVERTISED_LISTENERS alone also gives
# the listeners, bound to 0.0.0.0), the same file input (a server.properties
# mounted in /mnt/shared/config), and the same command, /etc/kafka/docker/run,
# which testcontainers' KafkaContainer runs from its starter script (bash).
#
#   docker build -t strait .
#   docker run --rm -p 9092:9092 strait        # clients: localhost:9092
#
# Of the environment testcontainers and the apache/kafka examples set,
# Strait reads KAFKA_LISTENERS, KAFKA_ADVERTISED_LISTENERS,
# KAFKA_LISTENER_SECURITY_PROTOCOL_MAP, KAFKA_INTER_BROKER_LISTENER_NAME,
# KAFKA_NODE_ID (KAFKA_BROKER_ID), KAFKA_LOG_DIRS, the internal topics' and
# group settings; it accepts and ignores the KRaft ones (KAFKA_PROCESS_ROLES,
# KAFKA_CONTROLLER_LISTENER_NAMES, whose listener it does not bind,
# KAFKA_CONTROLLER_QUORUM_VOTERS) and CLUSTER_ID (the cluster id is
# etcd's). See README.md, "Docker".

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/strait ./cmd/strait

FROM alpine:3.22
# bash: testcontainers' starter script is #!/bin/bash.
RUN apk add --no-cache bash \
 && adduser -h /home/appuser -D -s /bin/bash appuser \
 && mkdir -p /var/lib/strait/data /etc/kafka/docker /etc/strait /mnt/shared/config \
 && chown -R appuser:appuser /var/lib/strait /mnt/shared/config
COPY --from=build /out/strait /usr/local/bin/strait

# The image's defaults, under the file input and the environment: every
# interface (an empty host: the advertised address is then 127.0.0.1, so
# "docker run -p 9092:9092" serves localhost:9092 as apache/kafka does) and
# a data directory inside the container. The embedded etcd keeps its data
# in <log dir>/etcd.
COPY <<EOF /etc/strait/server.properties
listeners=PLAINTEXT://:9092
log.dirs=/var/lib/strait/data
EOF

# apache/kafka's entry point. Arguments (as its run script's) are
# --override key=value or other strait options. The ready file is the
# health check.
COPY --chmod=755 <<'EOF' /etc/kafka/docker/run
#!/bin/sh
set -e
config=/etc/strait/server.properties
if [ -f /mnt/shared/config/server.properties ]; then
  config=/mnt/shared/config/server.properties
fi
rm -f /tmp/strait.ready
exec /usr/local/bin/strait --config "$config" --ready-file /tmp/strait.ready "$@"
EOF

USER appuser
EXPOSE 9092
HEALTHCHECK --interval=2s --timeout=2s --start-period=60s CMD test -s /tmp/strait.ready
CMD ["/etc/kafka/docker/run"]
