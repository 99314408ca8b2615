#!/usr/bin/env bash
# check_demo.sh <demo binary> <output folder> [ringtrace tool]: runs the demo as a new
# user does (from the folder above its output folder, named relative to it, as
# scripts/demo.sh runs it from where the user is) and checks what they see: it exits 0,
# prints at most 25 lines, the table and under it why maxima can be far above medians,
# names its output folder and every file it wrote there, and every hint works from that
# same directory: each path it prints exists and is not empty, and each ringtrace
# command it prints (the tool given, by a path that exists) runs as printed, exits 0 and
# writes something.
set -euo pipefail
demo="$(realpath "$1")"; dir="$(realpath -m "$2")"; tool="${3:+$(realpath "$3")}"
fail() { echo "check_demo: $*"; exit 1; }
rm -rf "${dir}"
mkdir -p "$(dirname "${dir}")"
cd "$(dirname "${dir}")"
out="$("${demo}" "$(basename "${dir}")")" || { printf '%s\n' "${out}"; fail "the demo exits non-zero"; }
printf '%s\n' "${out}"
lines="$(printf '%s\n' "${out}" | wc -l)"
((lines <= 25)) || fail "${lines} lines, more than 25"
grep -q "^Files in $(realpath "${dir}"):\$" <<<"${out}" || fail "the output folder is not named"
grep -Eq '^Captured ops: [0-9]+ graphs [0-9]+ graph calls ' <<<"${out}" || fail "no captured-ops line"
grep -Eq '^Name +Self % +Self +Total %' <<<"${out}" || fail "no table header"
! grep -q "exporter error" <<<"${out}" || fail "an exporter failed"
# The lines under the table's last row, before the files: why maxima can be far above
# medians, then (the demo records context switches) which row's maximum was a wait, or
# why there are no on-CPU columns.
wall='Max far above p50? Times are wall-clock: the thread was preempted in the zone (README: "Times are wall-clock and on-CPU").'
under="$(grep -B3 '^Files in ' <<<"${out}" | head -3)"
[[ "${under}" =~ ^[a-z_]+\ +[0-9.]+%.*$'\n'"${wall}"$'\n'(On-CPU:\ |No\ on-CPU\ columns:\ ) ]] \
  || fail "no wall-clock and on-CPU lines under the table: ${under}"
if grep -q '^On-CPU: ' <<<"${out}"; then
  grep -Eq "^On-CPU: ([a-z_]+'s Max is [0-9.]+ ms, yet no call ran over [0-9.]+ ms on the CPU: at least [0-9.]*[1-9][0-9.]* ms was a wait|no row's slowest call is known to have waited)\.$" <<<"${out}" \
    || fail "the on-CPU line: $(grep '^On-CPU: ' <<<"${out}")"
  grep -Eq '^Name +Self % .* On-CPU Self +On-CPU Total +On-CPU Avg +On-CPU p50 +On-CPU p99 *$' <<<"${out}" || fail "no on-CPU columns in the table"
fi

# load_inputs sleeps 10 ms in each worker's first zone: off the CPU, not counted on it
# (issue 31 point 12: it read 49.5 ms on-CPU of 49.5 ms wall when a thread's stream opened
# only once the drainer had seen the thread).
if head -1 "${dir}/table.csv" | grep -q on_cpu_total_ns; then
  read -r wall_ns cpu_ns < <(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
    $1 == "load_inputs" { print $col["total_ns"], $col["on_cpu_total_ns"] }' "${dir}/table.csv")
  [[ -n "${wall_ns:-}" && -n "${cpu_ns:-}" ]] || fail "no load_inputs row in table.csv"
  ((cpu_ns * 10 < wall_ns)) || fail "load_inputs: ${cpu_ns} ns on the CPU of ${wall_ns} ns asleep"
fi

# Every file written has a row of its own, and every file the README says the demo
# writes is there.
count=0
for file in "${dir}"/*; do
  name="$(basename "${file}")"
  [[ -s "${file}" ]] || fail "${name} is empty"
  grep -Eq "^  ${name//./\\.}  " <<<"${out}" || fail "${name} is written but has no row"
  count=$((count + 1))
done
for name in trace.json trace.perfetto-trace trace.folded trace.prof table.csv summary.csv trace.rtrace; do
  [[ -s "${dir}/${name}" ]] || fail "${name} is not written"
done

# Paths in the rows' hints (a token with a '/' that is no URL, or one that names a file
# of the folder): they work from here.
declare -A written_names
for file in "${dir}"/*; do written_names["$(basename "${file}")"]=1; done
paths=0
while read -r -a tokens; do
  row="${tokens[*]}"
  for token in "${tokens[@]:1}"; do
    if [[ "${token}" != */* || "${token}" == *://* || "${token}" == / ]]; then
      [[ -n "${written_names[${token}]:-}" ]] || continue
    fi
    [[ -s "${token}" ]] || fail "'${token}' (in: ${row}) is not a file from $(pwd)"
    paths=$((paths + 1))
  done
done < <(grep -E '^  [^ ]' <<<"${out}")
((paths >= 2)) || fail "only ${paths} paths in the rows"

# The tool's commands (lines indented by four): each runs as printed, from here.
commands=0
reports=0
while IFS= read -r command; do
  [[ -n "${tool}" ]] || fail "no tool given, yet the demo prints: ${command}"
  printed_tool="$(eval "set -- ${command}"; echo "$1")"
  [[ "$(realpath "${printed_tool}")" == "$(realpath "${tool}")" ]] || fail "'${printed_tool}' is not ${tool}"
  bash -c "${command}" >"${dir}.command.out" 2>&1 || { cat "${dir}.command.out"; fail "exits non-zero: ${command}"; }
  [[ -s "${dir}.command.out" ]] || fail "prints nothing: ${command}"
  # A report of the demo's file prints the demo's own captured-ops line.
  if [[ "${command}" == *" report "* ]]; then
    grep -qxF "$(grep '^Captured ops: ' <<<"${out}")" "${dir}.command.out" \
      || fail "${command}: not the demo's captured-ops line: $(grep -m1 '^Captured ops: ' "${dir}.command.out")"
    reports=$((reports + 1))
  fi
  # What it wrote (the value of --chrome, --perfetto, ... or -o) is not empty.
  written="$(eval "set -- ${command}"; while (($# > 1)); do
    case "$1" in --chrome|--perfetto|--pstats|--folded|--summary|--table|-o) echo "$2";; esac; shift; done)"
  while IFS= read -r file; do
    [[ -z "${file}" || -s "${file}" ]] || fail "${command}: wrote no ${file}"
  done <<<"${written}"
  commands=$((commands + 1))
done < <(grep -E '^    [^ ]' <<<"${out}" | sed 's/^    //')
rm -f "${dir}.command.out"
if [[ -n "${tool}" ]]; then
  ((commands >= 3)) || fail "${commands} tool commands printed"
  ((reports >= 1)) || fail "no ringtrace report command printed"
fi
echo "check_demo: ok (${lines} lines, ${count} files, ${paths} paths, ${commands} tool commands)"
