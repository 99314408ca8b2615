#!/usr/bin/env bash
# outputs_unchanged.sh OLD_TOOL NEW_TOOL BUILD_DIR WORK_DIR [MORE.rtrace ...]: a refactor of
# the reading (issue 43: one pipeline for the live drainer and the file reader) changes no
# byte of any output. A corpus of recordings is made once (by BUILD_DIR's programs and
# NEW_TOOL's `record`), then each one is converted by both tools to every format and the
# outputs compared byte for byte (cmp). Not a ctest test: OLD_TOOL is another build (main's
# tool at the commit the branch started from, copied aside).
#   demo        examples/demo.cpp: threads, steps, args, flows, counters; context switches
#               when the kernel allows them (perf_event_paranoid)
#   functions   an unmodified program built with -finstrument-functions, under `record`
#   memory      an unmodified program under `record --memory`, and the same built with
#               -finstrument-functions (allocations in function zones)
#   drops       the functions program with a 64-record ring in drop mode: drop markers
#   memory_limit  tests/memory/truth's linked program past memory_max_blocks (when built)
#   MORE        any other recording (a 2.5 M-event one, a recording with memory_max_blocks)
# Prints one line per recording and format; exits 1 if any output differs.
set -uo pipefail
old="$(realpath "$1")"; new="$(realpath "$2")"; build="$(realpath "$3")"; work="$4"; shift 4
rm -rf "${work}"; mkdir -p "${work}/corpus" "${work}/old" "${work}/new"
work="$(realpath "${work}")"
corpus="${work}/corpus"

(cd "${work}" && "${build}/examples/ringtrace_demo" demo >"${work}/demo.out" 2>&1) || echo "demo failed: $(tail -3 "${work}/demo.out")"
cp "${work}/demo/trace.rtrace" "${corpus}/demo.rtrace" 2>/dev/null
app="${build}/tests/memory/memory_app"
app_functions="${build}/tests/memory/memory_app_functions"
record_app="${build}/tests/functions/functions_record_app"  # exits 7, by design
"${new}" record -o "${corpus}/functions.rtrace" -- "${record_app}" 20000 >/dev/null 2>"${work}/functions.err"
[[ -s "${corpus}/functions.rtrace" ]] || echo "functions recording failed: $(cat "${work}/functions.err")"
"${new}" record --memory -o "${corpus}/memory.rtrace" -- "${app}" >/dev/null 2>"${work}/memory.err" ||
  echo "memory recording failed: $(cat "${work}/memory.err")"
"${new}" record --memory -o "${corpus}/memory_functions.rtrace" -- "${app_functions}" >/dev/null \
  2>"${work}/memory_functions.err" || echo "memory+functions recording failed: $(cat "${work}/memory_functions.err")"
# Whether a ring overflows depends on the drainer's luck on a busy machine: up to 5 tries.
for calls in 200000 400000 800000 1600000 3200000; do
  "${new}" record --policy drop --buffer 64 -o "${corpus}/drops.rtrace" -- "${record_app}" "${calls}" \
    >/dev/null 2>"${work}/drops.err"
  "${new}" info "${corpus}/drops.rtrace" 2>/dev/null | grep -Eq '^events: .* [1-9][0-9]* dropped' && break
done
"${new}" info "${corpus}/drops.rtrace" 2>/dev/null | grep -Eq '^events: .* [1-9][0-9]* dropped' ||
  echo "drops recording: nothing dropped ($(cat "${work}/drops.err"))"
# Past memory_max_blocks (issue 42 point 5): 1,000 blocks under a limit of 100.
truth_linked="${build}/tests/memory/truth/truth_linked"
if [[ -x "${truth_linked}" ]]; then
  mkdir -p "${work}/limit" && "${truth_linked}" limit "${work}/limit" >/dev/null 2>&1 && cp "${work}/limit/run.rtrace" "${corpus}/memory_limit.rtrace" ||
    echo "memory_max_blocks recording failed"
fi
for more in "$@"; do cp "${more}" "${corpus}/"; done

# Each format, as `convert` writes it (to standard output; pstats, a binary file, to a
# file), and the tool's readings. Standard error is compared too, its timings ("in 310
# ms") left out.
formats=(--chrome --perfetto --pstats --folded --table --summary)
failures=0 compared=0
untimed() {
  sed -E -e 's/ in [0-9.]+ (ms|s|us) / in (time) /' -e "s#${work}/(old|new)/#(out)/#" "$1" >"$1.untimed" && mv "$1.untimed" "$1"
}
for file in "${corpus}"/*.rtrace; do
  name="$(basename "${file}" .rtrace)"
  for which in old new; do
    tool="${old}"; [[ "${which}" == new ]] && tool="${new}"
    for f in "${formats[@]}"; do
      out="${work}/${which}/${name}${f}"
      if [[ "${f}" == --pstats ]]; then to="${out}"; else to=-; fi
      "${tool}" convert "${file}" "${f}" "${to}" >"${out}.stdout" 2>"${out}.err"
      echo "exit $?" >>"${out}.err"
      untimed "${out}.err"
    done
    "${tool}" info "${file}" >"${work}/${which}/${name}.info" 2>&1
    "${tool}" report "${file}" >"${work}/${which}/${name}.report" 2>&1
    "${tool}" report --leaks "${file}" >"${work}/${which}/${name}.leaks" 2>&1
    "${tool}" dump "${file}" >"${work}/${which}/${name}.dump" 2>&1
  done
  # The events a reading delivered, for the line below: from the dump.
  events="$(grep -c . "${work}/new/${name}.dump")"
  for out in "${work}/old/${name}"*; do
    base="$(basename "${out}")"
    compared=$((compared + 1))
    if cmp -s "${out}" "${work}/new/${base}"; then
      [[ "${base}" == *.err || ! -s "${out}" ]] || printf 'same       %-40s %10s bytes\n' "${base}" "$(stat -c %s "${out}")"
    else
      printf 'DIFFERENT  %-40s (%s)\n' "${base}" "$(cmp "${out}" "${work}/new/${base}" 2>&1 | head -1)"
      failures=$((failures + 1))
    fi
  done
  echo "  ${name}: ${events} dump lines; context switches: $(grep -c 'switch_' "${work}/new/${name}.dump"), drop markers: $(grep -c ' dropped ' "${work}/new/${name}.dump"), alloc/free: $(grep -Ec ' (alloc|free) ' "${work}/new/${name}.dump")"
done
echo "${compared} outputs compared (with their stderr and exit status), ${failures} different"
((failures == 0))
