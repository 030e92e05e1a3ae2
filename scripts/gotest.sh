#!/usr/bin/env bash
# Runs `go test` with the arguments given, its output streamed as usual; when
# it fails, it ends with what failed: each failed test's report, data races,
# panics and timeouts, then the failed tests' names. A package's log lines
# bury its failed test's report, and CI keeps only the tail of a long log.
set -uo pipefail
log=$(mktemp "${TMPDIR:-/tmp}/strait-gotest.XXXXXX")
trap 'rm -f "$log"' EXIT
"${GO:-go}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ]; then
	exit 0
fi
echo
echo "=== what failed, from the output above"
awk '
	# A race report runs to its closing line of equals signs; the report
	# of a failed test and the stacks of a panic are the indented lines
	# after their first line. Each is cut short.
	race && /^==================$/ { print; race = 0; next }
	race && max-- > 0             { print; next }
	race                          { next }
	/^WARNING: DATA RACE/         { print; race = 1; max = 60; left = 0; next }
	/^[[:space:]]*--- FAIL:/      { print; left = 12; next }
	/^panic: /                    { print; left = 40; next }
	/race detected during execution of test/ { print; next }
	left > 0 && /^([[:space:]]|goroutine |created by )/ { print; left--; next }
	{ left = 0 }
' "$log" | head -n 150
echo "=== failed tests and packages"
grep -E '^[[:space:]]*--- FAIL:|^FAIL[[:space:]]' "$log" | head -n 30
exit "$status"
