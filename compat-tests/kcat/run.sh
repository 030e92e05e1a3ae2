#!/usr/bin/env bash
# kcat (librdkafka) from Debian against the built broker: -L lists the broker
# and topics, -P produces (keys, every codec), -C reads everything back.
# Installs kcat with apt-get when it is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/broker.sh"
if ! command -v kcat >/dev/null; then
  echo "installing kcat from Debian"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi
work="$here/work"; rm -rf "$work"
start_broker "$work"
pass=0; failed=0
check() { # name, expected, actual
  if [ "$2" == "$3" ]; then
    pass=$((pass+1)); echo "ok   $1"; printf 'kcat\t%s\tpass\n' "$1" >>"$work/results.tsv"
  else
    failed=$((failed+1)); echo "FAIL $1"; echo " want: $2"; echo " got:  $3"; printf 'kcat\t%s\tfail\n' "$1" >>"$work/results.tsv"
  fi
}

meta=$(kcat -b "$BROKER" -L -J)
check "-L lists the broker" "1" "$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(len(m["brokers"]))' "$meta")"

for codec in none gzip snappy lz4 zstd; do
  topic="kcat-$codec"
  seq 1 1000 | sed 's/.*/k&:v&/' | kcat -b "$BROKER" -P -t "$topic" -K : -z "$codec"
  got=$(kcat -b "$BROKER" -C -t "$topic" -o beginning -e -q -f '%k=%s\n' | sort -t= -k1.2n | md5sum)
  want=$(seq 1 1000 | sed 's/.*/k&=v&/' | sort -t= -k1.2n | md5sum)
  check "-P/-C round trip with $codec" "$want" "$got"
done

# -G: a balanced consumer group (librdkafka's group protocol) reads a topic
# to its end, commits, and a second run of the same group has nothing left.
got=$(timeout 60 kcat -b "$BROKER" -G kcat-group -X auto.offset.reset=earliest -e -q -f '%s\n' kcat-gzip | wc -l)
check "-G consumer group reads every record" "1000" "$got"
got=$(timeout 60 kcat -b "$BROKER" -G kcat-group -X auto.offset.reset=earliest -e -q -f '%s\n' kcat-gzip | wc -l)
check "-G consumer group resumes from its committed offsets" "0" "$got"

meta=$(kcat -b "$BROKER" -L -J -t kcat-zstd)
check "-L shows the auto-created topic" "kcat-zstd 1 1" "$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["topics"][0]; print(t["topic"], len(t["partitions"]), t["partitions"][0]["leader"])' "$meta")"

echo "kcat: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
