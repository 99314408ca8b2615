#!/usr/bin/env bash
# report_many.sh TOOL DIFF_STATS WORK_DIR [FILES] [CALLS]: times `ringtrace report DIR` over
# FILES recordings (default 1,000) of bench/diff_stats.cpp of CALLS rounds each (default
# 100,000: 1M events, 2.5 MB a file), docs/performance.md ("report of many files"). Ten
# distinct recordings are made, then copied to FILES files (distinct files on disk, read
# from the page cache after a first, untimed, pass). Prints the files' bytes and events and
# the wall and CPU time of three timed runs. Not in CI.
set -euo pipefail
tool="$1"; subject="$2"; work="$3"; files="${4:-1000}"; calls="${5:-100000}"
rm -rf "${work}"; mkdir -p "${work}/files"
for i in $(seq 0 9); do "${subject}" "${work}/seed${i}.rtrace" --calls "${calls}"; done
for i in $(seq 0 $((files - 1))); do cp "${work}/seed$((i % 10)).rtrace" "${work}/files/run${i}.rtrace"; done
echo "files: ${files}, $(du -sb "${work}/files" | cut -f1) bytes"
"${tool}" report "${work}/files" >/dev/null  # warms the page cache
for round in 1 2 3; do
  /usr/bin/time -f "round ${round}: %e s wall, %U s user, %S s system, %M kB max RSS" \
    "${tool}" report "${work}/files" >"${work}/report.txt"
done
tail -1 "${work}/report.txt"
