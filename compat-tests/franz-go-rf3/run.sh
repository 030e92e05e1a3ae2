#!/usr/bin/env bash
# franz-go's kgo suite against three brokers whose embedded etcd members form
# one cluster, with KGO_TEST_RF=3 (issue 7); writes franz-go/RESULTS-rf3.md.
here="$(cd "$(dirname "$0")" && pwd)"
KGO_BROKERS=3 exec "$here/../franz-go/run.sh" "$@"
