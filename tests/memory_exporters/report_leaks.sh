#!/usr/bin/env bash
# `ringtrace report --leaks` and the memory lines of `report` and `info` on a recording
# with leaks of known size (memory_heap_program --leak): 77777 bytes in one block in
# "outer; leaky", 4000 bytes in 10 blocks in "kept", largest first (what the session
# itself allocates on the thread is "(no zone)", below them), each with the function that
# allocated it (write_leak, the program's).
#   report_leaks.sh RINGTRACE PROGRAM WORKDIR
set -euo pipefail
tool="$1" program="$2" work="$3"
rm -rf "${work}" && mkdir -p "${work}"
"${program}" --leak "${work}/leak.rtrace"
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then
    echo "FAIL: $1"
    echo "  expected: $2"
    echo "  actual:   $3"
    fail=1
  fi
}
"${tool}" report --leaks "${work}/leak.rtrace" > "${work}/leaks.txt"
cat "${work}/leaks.txt"
leaker='(anonymous namespace)::write_leak(std::filesystem::__cxx11::path const&)'
check "leak lines, largest first" "$(printf '%s\n' "77,777       1  outer; leaky             ${leaker}" \
  " 4,000      10  kept                     ${leaker}")" \
  "$(grep -E '^ *[0-9,]+ +[0-9,]+  ' "${work}/leaks.txt" | head -n 2)"
check "the leaks' header" "1" "$(grep -cE '^Leaks: [0-9,]+ blocks \([0-9.]+ KB\) still live at the end, by the zones and the function that allocated them, largest first$' "${work}/leaks.txt")"
check "no table with --leaks" "" "$(grep 'Self time total' "${work}/leaks.txt" || true)"
# --rows 1: the largest only.
"${tool}" report --leaks --rows 1 "${work}/leak.rtrace" > "${work}/leaks1.txt"
check "--rows 1" "77,777       1  outer; leaky             ${leaker}" "$(grep -E '^ *[0-9,]+ +[0-9,]+  ' "${work}/leaks1.txt")"
check "--rows 1: the rest counted" "1" "$(grep -cE '^Groups shown: 1 of [23]$' "${work}/leaks1.txt")"
# report: the table with its CPU Mem columns, and the memory line; info: the same line.
"${tool}" report "${work}/leak.rtrace" > "${work}/report.txt"
check "report's CPU Mem columns" "1" "$(grep -c 'CPU Mem  Self CPU Mem' "${work}/report.txt")"
check "report's leaky row" "75.95 KB" "$(grep '^leaky ' "${work}/report.txt" | grep -oE '75\.95 KB' | head -n 1)"
check "report's memory line" "1" "$(grep -cE '^Memory: [0-9,]+ allocations \([0-9.]+ KB\), [0-9,]+ frees? \([0-9.]+ KB\), peak [0-9.]+ KB live at .* after the start; still live at the end: [0-9,]+ blocks \([0-9.]+ KB\)$' "${work}/report.txt")"
"${tool}" info "${work}/leak.rtrace" > "${work}/info.txt"
check "info's memory line" "1" "$(grep -cE '^memory: +[0-9,]+ allocations .*still live at the end: [0-9,]+ blocks' "${work}/info.txt")"
# --sort-by cpu-mem: the rows by CPU Mem, leaky's (77,777) and outer's first.
"${tool}" report --sort-by cpu-mem "${work}/leak.rtrace" > "${work}/sorted.txt"
check "--sort-by cpu-mem" "$(printf '%s\n' kept leaky outer | sort)" \
  "$(sed -n '3,5p' "${work}/sorted.txt" | awk '{print $1}' | sort)"
check "--sort-by cpu-mem: kept last" "kept" "$(sed -n '5p' "${work}/sorted.txt" | awk '{print $1}')"
exit "${fail}"
