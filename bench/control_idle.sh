#!/usr/bin/env bash
# The idle control channel's cost (docs/performance.md, "The control channel"): bench_control's
# BM_IdleCompute with the channel open (the default) and off (RINGTRACE_CONTROL=off),
# alternately, ROUNDS times each, in the same minutes (the benchmark thread's CPU time); a
# program's start and exit (bench_control running no benchmark) 200 times each way,
# alternately (bench/spawn_pairs.cpp: wall and CPU time of the whole process); then a
# status round trip and the snapshot of a full 64 MB flight recorder. Prints each run's
# line and the medians.
#   bench/control_idle.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build="${1:?usage: control_idle.sh BUILD_DIR [ROUNDS]}"
rounds="${2:-5}"
bench="${build}/bench/bench_control"
open=() off=()
for ((r = 1; r <= rounds; r++)); do
  for mode in open off; do
    if [[ "${mode}" == off ]]; then
      line=$(RINGTRACE_CONTROL=off "${bench}" --benchmark_filter=BM_IdleCompute --benchmark_min_time=1 2>/dev/null | grep '^BM_IdleCompute')
      off+=("$(awk '{print $4}' <<<"${line}")")  # CPU time: the VM's stolen time is not the program's
    else
      line=$("${bench}" --benchmark_filter=BM_IdleCompute --benchmark_min_time=1 2>/dev/null | grep '^BM_IdleCompute')
      open+=("$(awk '{print $4}' <<<"${line}")")
    fi
    echo "round ${r} ${mode}: ${line}"
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mo=$(median "${open[@]}")
mf=$(median "${off[@]}")
echo "median CPU ns per kernel: channel open ${mo}, off ${mf}, ratio $(awk -v a="${mo}" -v b="${mf}" 'BEGIN {printf "%.3f", a / b}')"
# Start and exit: the program (bench_control running no benchmark) with its channel (the
# default) and with none, alternately, 200 times each (bench/spawn_pairs.cpp).
"${build}/bench/spawn_pairs" 200 "-|${bench}|--benchmark_filter=^$" "RINGTRACE_CONTROL=off|${bench}|--benchmark_filter=^$"
"${bench}" --benchmark_filter='BM_StatusRoundTrip|BM_Snapshot64MB' 2>/dev/null | grep '^BM_'
