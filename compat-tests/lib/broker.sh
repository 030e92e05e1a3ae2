# Shared by the compat suites: start_broker starts bin/strait on a free port
# with its data in $1 (further arguments go to strait, e.g. --override k=v),
# waits for its ready line and sets BROKER (host:port), BROKER_PID and
# BROKER_HTTP (host:port of its strait.http.listener, /metrics); the broker
# is stopped when the calling script exits.
start_broker() {
  local dir="$1"; shift
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  [ -x "$root/bin/strait" ] || (cd "$root" && go build -o bin/strait ./cmd/strait)
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$dir"
  "$root/bin/strait" --override listeners=PLAINTEXT://127.0.0.1:$port --override log.dirs="$dir/logs" \
    --override strait.http.listener=127.0.0.1:0 "$@" >"$dir/broker.log" 2>&1 &
  BROKER_PID=$!
  BROKER=127.0.0.1:$port
  trap 'kill $BROKER_PID 2>/dev/null || true; wait $BROKER_PID 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    if grep -q "strait ready" "$dir/broker.log"; then
      BROKER_HTTP=$(grep -m1 "http listener started" "$dir/broker.log" | grep -oE 'addr="?[0-9.]+:[0-9]+' | grep -oE '[0-9.]+:[0-9]+')
      return 0
    fi
    kill -0 $BROKER_PID 2>/dev/null || { cat "$dir/broker.log"; echo "broker exited" >&2; return 1; }
    sleep 0.1
  done
  echo "broker not ready after 10 s" >&2
  return 1
}

# The secured broker of the TLS/SASL suites. start_secure_broker DIR starts,
# with its data and certificates under DIR, either bin/strait or, when
# COMPAT_BROKER=kafka, Apache Kafka 4.4 from its Maven Central jars
# (bench/kafka/kafka.sh), both from the same properties (DIR/secure.properties,
# written by secure_properties) with four listeners:
#
#   PLAINTEXT       for setup (SCRAM users are created over it)  -> BROKER
#   SASL_SSL        PLAIN, SCRAM-SHA-256, SCRAM-SHA-512           -> BROKER_SASL_SSL
#   SSL             ssl.client.auth=required (mTLS)               -> BROKER_SSL
#   SASL_PLAINTEXT  PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
#                   (Kafka's unsecured validator)                  -> BROKER_SASL_PLAINTEXT
#
# PLAIN users (the JAAS config): admin/admin-secret, alice/alice-secret.
# SCRAM users are made by scram_user (kafka-configs over PLAINTEXT).
# Delegation tokens are enabled (delegation.token.secret.key). CERTS is the
# certificates' directory (lib/certs.sh), CERTS_PASSWORD their password.
# BROKER_KIND says which broker runs; it is stopped when the script exits.
. "$(dirname "${BASH_SOURCE[0]}")/certs.sh"

compat_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd); }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# secure_properties FILE CERTS PLAINTEXT_PORT SASL_SSL_PORT SSL_PORT SASL_PLAINTEXT_PORT
# writes the listener and security properties both brokers read.
secure_properties() {
  local file="$1" certs="$2" pw=$CERTS_PASSWORD
  local jaas_plain='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
  local jaas_scram='org.apache.kafka.common.security.scram.ScramLoginModule required;'
  local jaas_oauth='org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";'
  cat >"$file" <<EOP
listeners=PLAINTEXT://127.0.0.1:$3,SASL_SSL://127.0.0.1:$4,SSL://127.0.0.1:$5,SASL_PLAINTEXT://127.0.0.1:$6
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_ssl.plain.sasl.jaas.config=$jaas_plain
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$jaas_scram
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$jaas_scram
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas_plain
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=$jaas_scram
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=$jaas_scram
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=$jaas_oauth
# SASL_SSL: a PKCS12 keystore; SSL: JKS stores and client certificates required.
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$certs/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$pw
listener.name.sasl_ssl.ssl.key.password=$pw
listener.name.ssl.ssl.keystore.type=JKS
listener.name.ssl.ssl.keystore.location=$certs/broker.jks
listener.name.ssl.ssl.keystore.password=$pw
listener.name.ssl.ssl.key.password=$pw
listener.name.ssl.ssl.truststore.type=JKS
listener.name.ssl.ssl.truststore.location=$certs/truststore.jks
listener.name.ssl.ssl.truststore.password=$pw
listener.name.ssl.ssl.client.auth=required
delegation.token.secret.key=strait-compat-token-secret
EOP
}

start_secure_broker() {
  local dir="$1" root; root="$(compat_root)"
  mkdir -p "$dir"; dir="$(cd "$dir" && pwd)"
  CERTS="$dir/certs"
  make_certs "$CERTS" || return 1
  local p1 p2 p3 p4
  p1=$(free_port) p2=$(free_port) p3=$(free_port) p4=$(free_port)
  BROKER=127.0.0.1:$p1 BROKER_SASL_SSL=127.0.0.1:$p2 BROKER_SSL=127.0.0.1:$p3 BROKER_SASL_PLAINTEXT=127.0.0.1:$p4
  secure_properties "$dir/secure.properties" "$CERTS" "$p1" "$p2" "$p3" "$p4"
  BROKER_KIND=${COMPAT_BROKER:-strait}
  case "$BROKER_KIND" in
  kafka)
    local kdir="$dir/kafka"
    "$root/bench/kafka/kafka.sh" format "$kdir" "$p1" || return 1
    # Kafka's own settings first, then the shared ones, then what the
    # combined-mode controller adds to them (its own listener).
    local cline; cline=$(grep '^controller.quorum.bootstrap.servers=' "$kdir/server.properties")
    local cport=${cline##*:}
    cat "$dir/secure.properties" >>"$kdir/server.properties"
    sed -e "s|^listeners=.*|&,CONTROLLER://127.0.0.1:$cport|" \
        -e "s|^listener.security.protocol.map=.*|&,CONTROLLER:PLAINTEXT|" "$dir/secure.properties" |
      grep -E '^(listeners|listener.security.protocol.map)=' >>"$kdir/server.properties"
    grep '^listeners=' "$kdir/server.properties" | tail -1 | sed 's/^listeners=/advertised.listeners=/' >>"$kdir/server.properties"
    "$root/bench/kafka/kafka.sh" start "$kdir" >/dev/null || return 1
    KAFKA_SCRIPT="$root/bench/kafka/kafka.sh" KAFKA_DIR="$kdir"
    trap '"$KAFKA_SCRIPT" stop "$KAFKA_DIR"' EXIT
    BROKER_LOG="$kdir/kafka.log"
    ;;
  strait)
    [ -x "$root/bin/strait" ] || (cd "$root" && go build -o bin/strait ./cmd/strait)
    "$root/bin/strait" "$dir/secure.properties" --override log.dirs="$dir/logs" >"$dir/broker.log" 2>&1 &
    BROKER_PID=$!
    trap 'kill $BROKER_PID 2>/dev/null || true; wait $BROKER_PID 2>/dev/null || true' EXIT
    BROKER_LOG="$dir/broker.log"
    local ok=""
    for _ in $(seq 1 100); do
      grep -q "strait ready" "$dir/broker.log" && { ok=1; break; }
      kill -0 $BROKER_PID 2>/dev/null || { cat "$dir/broker.log"; echo "broker exited" >&2; return 1; }
      sleep 0.1
    done
    [ -n "$ok" ] || { echo "broker not ready after 10 s" >&2; return 1; }
    ;;
  *) echo "COMPAT_BROKER is strait or kafka, not $BROKER_KIND" >&2; return 1 ;;
  esac
  echo "secured $BROKER_KIND broker: PLAINTEXT $BROKER, SASL_SSL $BROKER_SASL_SSL, SSL $BROKER_SSL, SASL_PLAINTEXT $BROKER_SASL_PLAINTEXT"
}

# kafka_cli CLASS ARGS...: one of Kafka's tools from the Maven Central jars.
kafka_cli() {
  local root; root="$(compat_root)"
  "$root/bench/kafka/kafka.sh" fetch || return 1
  java -Dlog4j2.level=error -cp "$root/bench/kafka/lib/*" "$@"
}

# scram_user NAME PASSWORD: kafka-configs over the PLAINTEXT listener gives
# NAME SCRAM-SHA-256 and SCRAM-SHA-512 credentials (one request each: Kafka
# refuses two mechanisms of one user in one AlterUserScramCredentials).
scram_user() {
  local mech
  for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
    kafka_cli org.apache.kafka.tools.ConfigCommand --bootstrap-server "$BROKER" --alter --entity-type users \
      --entity-name "$1" --add-config "$mech=[iterations=8192,password=$2]" || return 1
  done
}
