#!/usr/bin/env bash
# zone_counts_test.sh <Release build dir>: the hot path's size, issue 21's bound. An enabled
# RINGTRACE_ZONE, begin and end together, executes at most 30 instructions and 6 data
# writes, net of its loop, built with g++ and with clang++: counted exactly by callgrind
# (bench/zone_counts/zone_counts.sh), so the same on every x86-64 machine and under any
# load. Counts, not times: a change that makes the fast path longer fails here.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(bash "${here}/../../bench/zone_counts/zone_counts.sh" "$1" 20000 2>&1)"
status=$?
lines="$(grep ' per zone (begin + end)' <<<"${out}")"
if [[ ${status} -ne 0 || $(wc -l <<<"${lines}") -ne 2 ]]; then
  echo "zone_counts.sh did not count both compilers (exit ${status}):"
  echo "${out}" | head -40
  exit 1
fi
echo "${lines}"
awk '{ ir = $(NF - 4); dw = $(NF - 2)
       if (ir > 30 || dw > 6) { printf "FAIL: %s: %s instructions, %s data writes (bound 30 and 6)\n", $1, ir, dw; bad = 1 } }
     END { exit bad }' <<<"${lines}"
