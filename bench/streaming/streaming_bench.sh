#!/usr/bin/env bash
# streaming_bench.sh NEW_TOOL OLD_TOOL WRITE_LARGE_TRACE DIR [GB] [ROUNDS]: `ringtrace convert`
# and `report` of a large recording in bounded memory, at what speed, against another
# build of the tool (main's) on the same file. Not run by the tests (docs/performance.md,
# "Converting large files").
#  1. DIR/large.rtrace: GB gigabytes (default 10) of a live recording (write_large_trace:
#     two threads of nested zones, a counter and a text value every 1,000 requests),
#     written once and kept for later runs (delete it to write it again).
#  2. Each command under /usr/bin/time -v, OLD and NEW alternated (the order swapped every
#     round, ROUNDS rounds, default 1): convert --perfetto -, report and convert --chrome -
#     (or the commands of COMMANDS, separated by ';')
#     (standard output to /dev/null: the exporters' work without the disk's); then NEW
#     alone with filters: report with --min-duration and --time-range, and convert
#     --perfetto with --min-duration.
#  3. One line per run: wall and CPU seconds, the largest resident set, events per wall
#     second and per CPU second (the machine is shared: CPU time is what the run used).
# Example: bench/streaming/streaming_bench.sh build/release/tools/ringtrace /tmp/ringtrace-main \
#            build/release/bench/write_large_trace /var/tmp/rt 10
set -euo pipefail
new="$(realpath "$1")"; old="$(realpath "$2")"; writer="$(realpath "$3")"; dir="$4"
gb="${5:-10}"; rounds="${6:-1}"
[[ -x /usr/bin/time ]] || { echo "streaming_bench: /usr/bin/time is missing (Debian package time)"; exit 2; }
mkdir -p "${dir}"
file="${dir}/large.rtrace"
bytes=$((gb * 1000000000))
if [[ ! -f "${file}" ]] || (($(stat -c %s "${file}") < bytes)); then
  echo "writing ${file} (${gb} GB) ..."
  /usr/bin/time -f "  written in %e s" "${writer}" "${file}" "${bytes}" 2
fi
echo "file: ${file}, $(stat -c %s "${file}") bytes"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
  "$(free -g | awk '/^Mem:/ { print $2 }') GB, load $(cut -d' ' -f1-3 /proc/loadavg)"

events=""
# run LABEL TOOL ARGS...: one run under /usr/bin/time -v; its line.
run() {
  local label="$1" tool="$2"; shift 2
  local log="${dir}/run.log" err="${dir}/run.err"
  /usr/bin/time -v "${tool}" "$@" >/dev/null 2>"${err}" || { echo "${label}: failed: $(tail -3 "${err}")"; return 1; }
  local wall user sys rss n
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ { split($2, t, ":"); s = 0; for (i = 1; i <= length(t); i++) s = s * 60 + t[i]; print s }' "${err}")"
  user="$(awk -F': ' '/User time/ { print $2 }' "${err}")"
  sys="$(awk -F': ' '/System time/ { print $2 }' "${err}")"
  rss="$(awk -F': ' '/Maximum resident set size/ { print $2 }' "${err}")"
  n="$(grep -o '([0-9,]* events)' "${err}" | tr -dc '0-9' || true)"
  [[ -n "${n}" ]] && events="${n}"
  cp "${err}" "${log}"
  awk -v l="${label}" -v w="${wall}" -v u="${user}" -v s="${sys}" -v r="${rss}" -v n="${events}" 'BEGIN {
    printf "%-44s %8.1f s wall %8.1f s CPU %7.0f MB RSS", l, w, u + s, r / 1024
    if (n != "") printf "  %5.1f M events/s wall %5.1f M/s CPU", n / w / 1e6, n / (u + s) / 1e6
    printf "\n" }'
}

# COMMANDS (semicolon-separated) replaces the three compared commands.
IFS=';' read -r -a commands <<<"${COMMANDS:-convert --perfetto -;report;convert --chrome -}"
for ((round = 1; round <= rounds; round++)); do
  for c in "${commands[@]}"; do
    read -r -a words <<<"${c}"
    first=("old" "${old}") second=("new" "${new}")
    if ((round % 2 == 0)); then first=("new" "${new}") second=("old" "${old}"); fi
    run "${first[0]} ${c} (round ${round})" "${first[1]}" "${words[0]}" "${file}" "${words[@]:1}"
    run "${second[0]} ${c} (round ${round})" "${second[1]}" "${words[0]}" "${file}" "${words[@]:1}"
  done
done
run "new report --min-duration 1us --time-range 5s," "${new}" report "${file}" --min-duration 1us --time-range 5s,
run "new convert --perfetto - --min-duration 200ns" "${new}" convert "${file}" --perfetto - --min-duration 200ns
