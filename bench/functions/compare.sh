#!/usr/bin/env bash
# An instrumented call's cost in ringtrace beside uftrace and LLVM XRay, in the same minutes,
# on the same workload (fib.cpp: fib(N), REPEAT times, the median ns per call as the
# program itself times it, in the thread's CPU time), as ratios to the plain call and to an enabled RINGTRACE_ZONE
# measured in the same run (docs/functions.md, "Costs"):
#   plain (g++, clang)        no instrumentation
#   ringtrace zone            RINGTRACE_ZONE in fib, a session writing a binary file
#   ringtrace hooks           -finstrument-functions + ringtrace::functions, same session;
#                             and with no session
#   uftrace -pg, uftrace -finstrument-functions   `uftrace record` of the same code
#   xray fdr, xray basic      clang -fxray-instrument -fxray-instruction-threshold=1; FDR as
#                             shipped (calls under 5 us rewound, not kept) and keeping
#                             every call (func_duration_threshold_us=0, buffers for all);
#                             and the sleds patched to a handler that does nothing (what
#                             a recorder on XRay's sleds would start from), or unpatched
# Every program runs once per round, in the same order, ROUNDS rounds: the binaries
# alternate within the same minutes, and each ratio is taken to the plain call of the same
# compiler in the same round, then the median (and range) of the rounds' ratios printed.
# Needs uftrace (apt-get install uftrace), clang-14 and libclang-rt-14-dev; builds the
# ringtrace library (build/release, or BUILD_DIR) first.
#   bash bench/functions/compare.sh [N] [REPEAT] [ROUNDS]   (default 25 15 5: 242,785 calls each)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-25}
repeat=${2:-15}
rounds=${3:-5}
build=${BUILD_DIR:-build/release}
for tool in uftrace clang++-14 g++; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool not found" >&2; exit 1; }
done
[[ -f "$build/CMakeCache.txt" ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target ringtrace ringtrace_functions >/dev/null
out_dir=${OUT_DIR:-/dev/shm}
[[ -d "$out_dir" && -w "$out_dir" ]] || out_dir=${TMPDIR:-/tmp}
work=$(mktemp -d -p "$out_dir")
trap 'rm -rf "$work"' EXIT
src=bench/functions/fib.cpp
lib=("$build"/libringtrace.a -lz -ldl -ldw -lelf -pthread)
g++ -O2 -std=c++20 "$src" -o "$work/plain_gcc"
clang++-14 -O2 -std=c++20 "$src" -o "$work/plain_clang"
g++ -O2 -std=c++20 -Iinclude -DZONED "$src" -o "$work/zone" "${lib[@]}"
g++ -O2 -std=c++20 -Iinclude -DRINGTRACE_HOOKS -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include,include/ringtrace \
  "$src" -o "$work/hooks" "$build"/libringtrace_functions.a "${lib[@]}"
clang++-14 -O2 -std=c++20 -Iinclude -DRINGTRACE_HOOKS -finstrument-functions -finstrument-functions-after-inlining \
  "$src" -o "$work/hooks_clang" "$build"/libringtrace_functions.a "${lib[@]}"
g++ -O2 -std=c++20 -pg "$src" -o "$work/pg"
g++ -O2 -std=c++20 -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include "$src" -o "$work/cyg"
clang++-14 -O2 -std=c++20 -fxray-instrument -fxray-instruction-threshold=1 "$src" -o "$work/xray"
clang++-14 -O2 -std=c++20 -fxray-instrument -fxray-instruction-threshold=1 -DXRAY_HANDLER "$src" -o "$work/xray_handler"

# Each configuration: NAME|the plain build it is a ratio to|label|command. XRay FDR keeping
# every call: 16 runs of fib(25) (calls_of too) at 2 records of 8 bytes each, about 62 MB,
# fit 128 buffers of 1 MB.
configs=(
  "plain_gcc|plain_gcc|plain call (g++)|$work/plain_gcc $n $repeat"
  "plain_clang|plain_clang|plain call (clang)|$work/plain_clang $n $repeat"
  "zone|plain_gcc|ringtrace RINGTRACE_ZONE, enabled (g++)|$work/zone $n $repeat $work/zone.rtrace"
  "hooks|plain_gcc|ringtrace hooks, enabled (g++)|$work/hooks $n $repeat $work/hooks.rtrace"
  "hooks_clang|plain_clang|ringtrace hooks, enabled (clang)|$work/hooks_clang $n $repeat $work/hooks_clang.rtrace"
  "hooks_off|plain_gcc|ringtrace hooks, no session (g++)|env FIB_NO_SESSION=1 $work/hooks $n $repeat"
  "uftrace_pg|plain_gcc|uftrace record, -pg (g++)|uftrace record -d $work/uftrace.pg $work/pg $n $repeat"
  "uftrace_cyg|plain_gcc|uftrace record, -finstrument-functions (g++)|uftrace record -d $work/uftrace.cyg $work/cyg $n $repeat"
  "xray_fdr|plain_clang|XRay FDR, as shipped (clang)|env XRAY_OPTIONS=patch_premain=true:xray_mode=xray-fdr:verbosity=0:xray_logfile_base=$work/xray-fdr. $work/xray $n $repeat"
  "xray_fdr_all|plain_clang|XRay FDR, every call kept (clang)|env XRAY_OPTIONS=patch_premain=true:xray_mode=xray-fdr:verbosity=0:xray_logfile_base=$work/xray-fdr-all. XRAY_FDR_OPTIONS=func_duration_threshold_us=0:buffer_size=1048576:buffer_max=128 $work/xray $n $repeat"
  "xray_basic|plain_clang|XRay basic (clang)|env XRAY_OPTIONS=patch_premain=true:xray_mode=xray-basic:verbosity=0:xray_logfile_base=$work/xray-basic. XRAY_BASIC_OPTIONS=func_duration_threshold_us=0 $work/xray $n $repeat"
  "xray_empty|plain_clang|XRay sleds patched, empty handler (clang)|env XRAY_OPTIONS=patch_premain=false $work/xray_handler $n $repeat"
  "xray_unpatched|plain_clang|XRay sleds unpatched (clang)|env XRAY_OPTIONS=patch_premain=false FIB_NO_SESSION=1 $work/xray_handler $n $repeat"
)
declare -A ns ratio
for ((round = 1; round <= rounds; ++round)); do
  declare -A this_round=()
  for config in "${configs[@]}"; do
    IFS='|' read -r name base label command <<<"$config"
    read -r -a argv <<<"$command"
    out=$("${argv[@]}" 2>"$work/stderr") || { cat "$work/stderr" >&2; echo "compare.sh: $name failed" >&2; exit 1; }
    grep -q dropped "$work/stderr" && { cat "$work/stderr" >&2; echo "compare.sh: $name dropped events" >&2; exit 1; }
    read -r median _ <<<"$(tail -1 <<<"$out")"
    this_round[$name]=$median
    ns[$name]+="$median "
    ratio[$name]+="$(awk -v m="$median" -v p="${this_round[$base]}" 'BEGIN { printf "%.3f", m / p }') "
    rm -rf "$work"/uftrace.* "$work"/xray-* "$work"/*.rtrace
  done
  ratio_to_zone+="$(awk -v h="${this_round[hooks]}" -v z="${this_round[zone]}" 'BEGIN { printf "%.3f", h / z }') "
  hooks_to_uftrace+="$(awk -v h="${this_round[hooks]}" -v u="${this_round[uftrace_pg]}" 'BEGIN { printf "%.3f", h / u }') "
  net_off+="$(awk -v h="${this_round[hooks_off]}" -v p="${this_round[plain_gcc]}" 'BEGIN { printf "%.2f", h - p }') "
done

# stats "v1 v2 ...": median, min, max.
stats() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
printf "fib(%s): %s repetitions per run, %s rounds alternating the programs; per run the median ns per call;\n" "$n" "$repeat" "$rounds"
printf "below, the median over rounds [min to max]; x plain: to the same compiler's plain call in the same round\n"
printf "%-46s %20s %22s\n" "" "ns per call" "x plain"
for config in "${configs[@]}"; do
  IFS='|' read -r name base label command <<<"$config"
  read -r m lo hi <<<"$(stats "${ns[$name]}")"
  read -r rm rlo rhi <<<"$(stats "${ratio[$name]}")"
  printf "%-46s %7.2f [%5.2f to %5.2f] %6.2f [%5.2f to %5.2f]\n" "$label" "$m" "$lo" "$hi" "$rm" "$rlo" "$rhi"
done
read -r m lo hi <<<"$(stats "$ratio_to_zone")"
printf "ringtrace hooks / RINGTRACE_ZONE, same round:    %s [%s to %s]   (target <= 1.3)\n" "$m" "$lo" "$hi"
read -r m lo hi <<<"$(stats "$hooks_to_uftrace")"
printf "ringtrace hooks / uftrace -pg, same round:       %s [%s to %s]   (target <= 0.5)\n" "$m" "$lo" "$hi"
read -r m lo hi <<<"$(stats "$net_off")"
printf "ringtrace hooks with no session, net of plain:   %s ns [%s to %s]\n" "$m" "$lo" "$hi"
