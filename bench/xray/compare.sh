#!/usr/bin/env bash
# `ringtrace convert --chrome` beside `llvm-xray convert --output-format=trace_event`, in
# the same run, on traces of the same workload (workload.cpp: THREADS threads, CALLS
# iterations each of two nested calls, so 4 x THREADS x CALLS events):
#   - XRay: clang's -fxray-instrument with every function instrumented, recorded in basic
#     mode with func_duration_threshold_us=0 (every call logged), converted with names
#     (--symbolize) and without;
#   - ringtrace: RINGTRACE_ZONE in the same two functions, a binary trace file (block
#     policy: every event kept), converted to Chrome JSON by the ringtrace tool.
# Prints events/s and peak memory of each conversion. Needs clang-14, llvm-14 (llvm-xray)
# and libclang-rt-14-dev; builds the ringtrace tool and library (build/release) first.
#   bash bench/xray/compare.sh [THREADS] [CALLS]      (default 2 500000: 4 M events)
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
calls=${2:-500000}
for tool in clang++-14 llvm-xray-14 python3; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool not found (apt-get install clang-14 llvm-14 libclang-rt-14-dev python3)" >&2; exit 1; }
done
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" --target ringtrace ringtrace_tool >/dev/null
# Files go to memory (/dev/shm) when it is there, so that the conversions are measured
# rather than the disk (a 4 M-event Chrome trace is a few hundred MB); OUT_DIR overrides.
out_dir=${OUT_DIR:-/dev/shm}
[[ -d "$out_dir" && -w "$out_dir" ]] || out_dir=${TMPDIR:-/tmp}
work=$(mktemp -d -p "$out_dir")
trap 'rm -rf "$work"' EXIT
echo "files in $work"

clang++-14 -O2 -std=c++20 -fxray-instrument -fxray-instruction-threshold=1 bench/xray/workload.cpp \
  -o "$work/workload_xray" -pthread
c++ -O2 -std=c++20 -DWITH_RINGTRACE -Iinclude bench/xray/workload.cpp build/release/libringtrace.a \
  -o "$work/workload_ringtrace" -pthread -ldl -lz

XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic verbosity=0 xray_logfile_base=$work/xray-log." \
XRAY_BASIC_OPTIONS="func_duration_threshold_us=0" "$work/workload_xray" "$threads" "$calls"
"$work/workload_ringtrace" "$threads" "$calls" "$work/trace.rtrace" >/dev/null
xlog=$(ls "$work"/xray-log.*)

# run NAME EVENTS COMMAND...: wall time and the child's peak RSS.
python3 - "$work" "$xlog" "$((4 * threads * calls))" <<'PY'
import os, resource, subprocess, sys, time
work, xlog, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [
    ("ringtrace convert --chrome", ["build/release/tools/ringtrace", "convert", f"{work}/trace.rtrace", "--chrome", f"{work}/rt.json"], f"{work}/trace.rtrace"),
    ("llvm-xray convert --symbolize", ["llvm-xray-14", "convert", "--output-format=trace_event", f"--instr_map={work}/workload_xray", "--symbolize", xlog, "-o", f"{work}/xray.json"], xlog),
    ("llvm-xray convert (addresses)", ["llvm-xray-14", "convert", "--output-format=trace_event", f"--instr_map={work}/workload_xray", xlog, "-o", f"{work}/xray_plain.json"], xlog),
]
print(f"{events} events per trace ({events // 4} iterations of two nested calls)")
for name, cmd, source in runs:
    best = None
    for _ in range(2):  # the better of two runs
        pid = os.fork()
        if pid == 0:
            os.execvp(cmd[0], cmd)
        t0 = time.monotonic()
        _, status, usage = os.wait4(pid, 0)
        dt = time.monotonic() - t0
        if status != 0:
            sys.exit(f"{name}: exit status {status}")
        if best is None or dt < best[0]:
            best = (dt, usage.ru_maxrss)
    dt, rss = best
    print(f"{name:32s} {events / dt / 1e6:7.2f} M events/s  {dt:6.2f} s  peak RSS {rss / 1024:7.1f} MB"
          f"  input {os.path.getsize(source) / 1e6:7.1f} MB")
PY
