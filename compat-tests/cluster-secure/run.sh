#!/usr/bin/env bash
# compat-tests/cluster's kill -9 test (TestKill9EachBrokerWhileProducing) on
# three brokers whose every listener, the inter-broker one included, is
# SASL_SSL (SASL/PLAIN, certificates from lib/certs.sh); every client speaks
# TLS and SASL. Nothing acknowledged may be lost. Writes
# cluster-secure/work/results.md and results.tsv. CLUSTER_RUN picks other
# tests of the package.
here="$(cd "$(dirname "$0")" && pwd)"
STRAIT_CLUSTER_SECURE=1 CLUSTER_WORK="$here/work" CLUSTER_RUN="${CLUSTER_RUN:-TestKill9EachBrokerWhileProducing}" \
  exec "$here/../cluster/run.sh" "$@"
