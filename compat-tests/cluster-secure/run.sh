#!/usr/bin/env bash
# compat-tests/cluster's kill -9 test on three brokers whose every listener,
# the inter-broker one included, is SASL_SSL (SASL/PLAIN, certificates from
# lib/certs.sh); every client speaks TLS and SASL. Twice: as is
# (TestKill9EachBrokerWhileProducing), then with Kafka's StandardAuthorizer
# on every broker (TestKill9WithAuthorizer: the brokers replicate as a
# principal that holds CLUSTER_ACTION through an ACL, the producer holds
# READ and WRITE on its topic only). Nothing acknowledged may be lost.
# Writes cluster-secure/work/results.md and results.tsv; about 1.5 minutes.
# CLUSTER_RUN picks other tests of the package.
here="$(cd "$(dirname "$0")" && pwd)"
STRAIT_CLUSTER_SECURE=1 CLUSTER_WORK="$here/work" \
  CLUSTER_RUN="${CLUSTER_RUN:-^(TestKill9EachBrokerWhileProducing|TestKill9WithAuthorizer)\$}" \
  exec "$here/../cluster/run.sh" "$@"
