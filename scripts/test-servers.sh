#!/bin/sh
# Run the test suite once per server, the passes side by side:
#
#	scripts/test-servers.sh "redis valkey" go test -race -count=1 ./...
#
# Each pass runs the given command with REDISKIT_LAB_SERVER set to its
# server, so every lab-backed test runs on each. The test binaries are
# built once first (the same command with -run '^$'), so the passes share
# the build and only the tests run twice. Each pass's output goes to its
# own log, printed whole when the pass ends (prefixed with the server),
# with its wall time; the script fails if any pass failed.
#
# Side by side rather than one after the other: the lab-backed tests
# spend most of their time waiting for failovers and timeouts, not on the
# CPU, so two passes on two cores take little more than the longer one
# (measured in BENCHMARKS.md, "make test").
set -u
servers=$1
shift
[ "$#" -gt 0 ] || { echo "usage: $0 \"redis valkey\" go test [flags] packages" >&2; exit 2; }

began=$(date +%s)
echo "test-servers: building the test binaries: $* -run '^\$'"
"$@" -run '^$' >/dev/null || { echo "test-servers: build failed:" >&2; "$@" -run '^$'; exit 1; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for s in $servers; do
	(
		start=$(date +%s)
		REDISKIT_LAB_SERVER=$s "$@" >"$logs/$s.log" 2>&1
		echo $? >"$logs/$s.rc"
		echo $(( $(date +%s) - start )) >"$logs/$s.secs"
	) &
done
wait

rc=0
for s in $servers; do
	sed "s/^/[$s] /" "$logs/$s.log"
	r=$(cat "$logs/$s.rc")
	echo "test-servers: $s: exit $r in $(cat "$logs/$s.secs") s"
	[ "$r" = 0 ] || rc=1
done
echo "test-servers: $servers: $(( $(date +%s) - began )) s in all"
exit $rc
