#!/usr/bin/env bash
# report_many_tests.sh <ringtrace tool> <record_all> <diff_stats program> <work dir>:
# `ringtrace report DIR_OR_FILES...` prints the table `report` prints of the same files
# merged by `ringtrace merge`: the same rows, line for line, for every grouping and sort
# (recordings of steps, sampled sites, regions, arguments, nodes and FLOPs, context
# switches, drops, a stream file, and runs of bench/diff_stats.cpp), read on one thread or
# several; a directory reads its .rtrace files; the errors.
set -uo pipefail
tool="$1"; record="$2"; subject="$3"; work="$4"
rm -rf "${work}"; mkdir -p "${work}/runs/deeper"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"${record}" . >/dev/null 2>&1 || fail "record_all exits $?"
for mode in columns switches rich; do "${record}" . "${mode}" >/dev/null 2>&1 || fail "record_all ${mode} exits $?"; done
"${subject}" runs/a.rtrace --calls 300 || fail "diff_stats exits $?"
"${subject}" runs/b.rtrace --calls 200 --slow work:50 || fail "diff_stats exits $?"
"${subject}" runs/deeper/c.rtrace --calls 100 || fail "diff_stats exits $?"
files=(run.rtrace columns_a.rtrace columns_b.rtrace rich.rtrace switches.rtrace drops.rtrace stream.rtrace
  runs/a.rtrace runs/b.rtrace runs/deeper/c.rtrace)
"${tool}" merge "${files[@]}" -o merged.rtrace >/dev/null 2>&1 || fail "merge exits $?"
# table TEXT: the key-averages table, its header to its "Dropped events" line.
table() { sed -n '/^Name /,/^Dropped events/p' "$1"; }
n=0
for options in "" "--by-node" "--sort-by calls" "--sort-by p99" "--fold-steps" "--by-input-shapes" "--by-arg batch" \
  "--estimate-sampled" "--sort-by on-cpu-total" "--sort-by flops" "--sort-by name"; do
  n=$((n + 1))
  # shellcheck disable=SC2086 # options are words
  "${tool}" report "${files[@]}" --rows 0 ${options} >"many${n}.txt" 2>"many${n}.err" || fail "report of the files ${options}: $?"
  # shellcheck disable=SC2086
  "${tool}" report merged.rtrace --rows 0 ${options} >"merged${n}.txt" 2>"merged${n}.err" || fail "report merged ${options}: $?"
  [[ $(table "many${n}.txt" | wc -l) -gt 20 ]] || fail "${options}: no table: $(cat "many${n}.txt")"
  diff <(table "many${n}.txt") <(table "merged${n}.txt") >"diff${n}.txt" \
    || fail "report of the files ${options} is not report of their merged file: $(head -20 "diff${n}.txt")"
done
# Read on one thread or several (each a table of its own, added in the files' order): one table.
for options in "--sort-by first-seen" "--by-node --sort-by calls" "--estimate-sampled --fold-steps"; do
  # shellcheck disable=SC2086
  "${tool}" report "${files[@]}" --rows 0 --jobs 1 ${options} >jobs1.txt 2>/dev/null || fail "--jobs 1 ${options}"
  for jobs in 2 3 10; do
    # shellcheck disable=SC2086
    "${tool}" report "${files[@]}" --rows 0 --jobs "${jobs}" ${options} >jobs.txt 2>/dev/null || fail "--jobs ${jobs}"
    cmp -s jobs1.txt jobs.txt || fail "--jobs ${jobs} ${options} differs from --jobs 1: $(diff jobs1.txt jobs.txt | head)"
  done
done
grep -q '^Files: 10 (10 processes, [0-9,]* events)$' many1.txt || fail "the files' line: $(tail -1 many1.txt)"
grep -q '^Name .* Node ID' many2.txt || fail "--by-node: no Node ID column: $(head -1 many2.txt)"

# --by-process: files of distinct processes (a merged file gives a pid seen twice a new one).
"${tool}" merge runs/a.rtrace runs/b.rtrace columns_a.rtrace -o distinct.rtrace >/dev/null 2>&1
"${tool}" report runs/a.rtrace runs/b.rtrace columns_a.rtrace --by-process --rows 0 >process_many.txt || fail "--by-process"
"${tool}" report distinct.rtrace --by-process --rows 0 >process_merged.txt || fail "--by-process of the merged file"
diff <(table process_many.txt) <(table process_merged.txt) >process.diff || fail "--by-process: $(head process.diff)"
grep -q '^Name .* Process' process_many.txt || fail "--by-process: no Process column: $(head -1 process_many.txt)"
[[ $(grep -c '^work .* (pid [0-9]*)' process_many.txt) -eq 2 ]] || fail "--by-process: a row of work per run: $(cat process_many.txt)"

# A directory: its .rtrace files, recursively; the same table as the files given.
"${tool}" report runs --rows 0 >dir.txt || fail "report of a directory: $?"
"${tool}" report runs/a.rtrace runs/b.rtrace runs/deeper/c.rtrace --rows 0 >dir_files.txt
cmp -s dir.txt dir_files.txt || fail "a directory is not its files: $(diff dir.txt dir_files.txt | head)"
grep -q '^work .* 600$' dir.txt || fail "work's calls over the three runs: $(grep '^work' dir.txt)"

# Errors.
s=0; "${tool}" report runs runs/a.rtrace >twice.out 2>twice.err || s=$?
[[ ${s} -eq 2 ]] && grep -qx "ringtrace report: 'runs/a.rtrace' is given twice: give each recording once" twice.err \
  || fail "a file twice: status ${s}: $(cat twice.err)"
s=0; "${tool}" report runs --stragglers >strag.out 2>strag.err || s=$?
[[ ${s} -eq 2 ]] && grep -qx "ringtrace report: --stragglers reads one recording: not with several files" strag.err \
  || fail "--stragglers of several: status ${s}: $(cat strag.err)"
s=0; "${tool}" report runs --min-duration 1us >filtered.out 2>filtered.err || s=$?
[[ ${s} -eq 2 ]] && grep -qx "ringtrace report: the filters read one recording: not with several files" filtered.err \
  || fail "a filter with several: status ${s}: $(cat filtered.err)"
s=0; "${tool}" report runs --by-node --by-process >both.out 2>both.err || s=$?
[[ ${s} -eq 2 ]] || fail "--by-node --by-process: status ${s}"
head -c 3000 runs/a.rtrace >cut.rtrace
s=0; "${tool}" report runs/b.rtrace cut.rtrace >cut.out 2>cut.err || s=$?
[[ ${s} -eq 1 ]] && grep -q '^ringtrace report: cut.rtrace: file cut short at byte' cut.err \
  && grep -q '^Files: 2 ' cut.out || fail "a file cut short among several: status ${s}: $(cat cut.err)"

if ((failures > 0)); then echo "report_many_tests: ${failures} failure(s)"; exit 1; fi
echo "report_many_tests: all checks passed"
