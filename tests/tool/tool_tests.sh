#!/usr/bin/env bash
# tool_tests.sh <ringtrace tool> <record_all> <work dir>: the `ringtrace` tool on a file
# recorded beside every live format: convert gives the same outputs (folded lines,
# pstats bytes, summary and table text, Chrome events); report, info, --help; cut,
# damaged and foreign files and unwritable outputs get one line and a non-zero status.
set -uo pipefail
tool="$1"; record="$2"; work="$3"
rm -rf "${work}"; mkdir -p "${work}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"${record}" "${work}" || { echo "record_all failed"; exit 1; }

# Round trip: every format from the file equals the live one.
"${tool}" convert "${work}/run.rtrace" --chrome "${work}/file.json" --pstats "${work}/file.prof" \
  --folded "${work}/file.folded" --summary "${work}/file_summary.txt" --transparent step \
  --table "${work}/file_table.txt" --perfetto "${work}/file.perfetto-trace" || fail "convert exits $?"
cmp -s "${work}/live.folded" "${work}/file.folded" || fail "folded stacks differ"
cmp -s "${work}/live.prof" "${work}/file.prof" || fail "pstats files differ"
cmp -s "${work}/live_summary.txt" "${work}/file_summary.txt" || fail "summaries differ"
cmp -s "${work}/live_table.txt" "${work}/file_table.txt" || fail "tables differ"
[[ -s "${work}/file.perfetto-trace" ]] || fail "no Perfetto trace"
# The same packets, but for the order of zones that end in the same nanosecond on two threads.
[[ $(stat -c %s "${work}/live.perfetto-trace") -eq $(stat -c %s "${work}/file.perfetto-trace") ]] \
  || fail "Perfetto traces differ in size: $(stat -c %s "${work}/live.perfetto-trace") vs $(stat -c %s "${work}/file.perfetto-trace")"
# Chrome: the same events (the session's own counts line aside: drain passes differ).
events() { grep -v '"ringtrace_session"' "$1" | grep -v '^{"tid"' | sed 's/,$//' | sort; }
diff <(events "${work}/live.json") <(events "${work}/file.json") >"${work}/chrome.diff" \
  || fail "Chrome events differ: $(head -4 "${work}/chrome.diff")"
grep -q '"ph":"s"' "${work}/file.json" || fail "no flow in the converted Chrome trace"
# Sampled sites: the file keeps each site's rate, so estimates from it equal the live ones.
"${tool}" convert "${work}/run.rtrace" --estimate-sampled --folded-value calls --folded "${work}/file_estimated.folded" \
  --table "${work}/file_estimated_table.txt" || fail "convert --estimate-sampled exits $?"
cmp -s "${work}/live_estimated.folded" "${work}/file_estimated.folded" || fail "estimated folded stacks differ"
cmp -s "${work}/live_estimated_table.txt" "${work}/file_estimated_table.txt" || fail "estimated tables differ"
grep -q 'step;eager;sampled 6000$' "${work}/file_estimated.folded" \
  || fail "estimated calls of the sampled site: $(grep sampled "${work}/file_estimated.folded" | head -2)"
grep -q 'step;eager;sampled;under 6000$' "${work}/file_estimated.folded" || fail "estimated calls under the sampled site"
grep -q 'step;eager;sampled 1500$' <("${tool}" convert "${work}/run.rtrace" --folded-value calls --folded -) \
  || fail "recorded calls of the sampled site"
grep -q '^Estimates: ' "${work}/file_estimated_table.txt" || fail "the estimated table does not say so"
"${tool}" report "${work}/run.rtrace" --estimate-sampled | grep -q '^Estimates: ' || fail "report --estimate-sampled"

# '-' is standard output.
"${tool}" convert "${work}/run.rtrace" --folded - >"${work}/stdout.folded" || fail "convert to stdout"
cmp -s "${work}/live.folded" "${work}/stdout.folded" || fail "folded on stdout differs"

# report and info.
"${tool}" report "${work}/run.rtrace" --transparent step >"${work}/report.txt" || fail "report exits $?"
grep -q '^Name  *Self %' "${work}/report.txt" || fail "report has no table"
grep -q '^Captured ops: ' "${work}/report.txt" || fail "report has no summary"
"${tool}" info "${work}/run.rtrace" >"${work}/info.txt" || fail "info exits $?"
grep -q '^status: *complete$' "${work}/info.txt" || fail "info: $(cat "${work}/info.txt")"
grep -q 'process: *tool test (pid ' "${work}/info.txt" || fail "info names no process"
grep -q 'worker-1 ' "${work}/info.txt" || fail "info lists no thread"
for command in convert report info; do
  "${tool}" "${command}" --help | grep -q "^usage: ringtrace ${command}" || fail "${command} --help"
done
"${tool}" --help | grep -q '^usage: ringtrace' || fail "--help"

# A file cut in the middle: convert writes what is complete, then exits 1 with one line.
size=$(stat -c %s "${work}/run.rtrace")
head -c $((size / 2)) "${work}/run.rtrace" >"${work}/cut.rtrace"
"${tool}" convert "${work}/cut.rtrace" --chrome "${work}/cut.json" 2>"${work}/cut.err"
status=$?
[[ ${status} -eq 1 ]] || fail "convert of a cut file exits ${status}"
[[ $(wc -l <"${work}/cut.err") -eq 1 ]] && grep -q 'cut short at byte' "${work}/cut.err" \
  || fail "cut file message: $(cat "${work}/cut.err")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "${work}/cut.json" || fail "cut file's Chrome trace is not valid JSON"
"${tool}" info "${work}/cut.rtrace" >"${work}/cut_info.txt" || fail "info of a cut file exits $?"
grep -q 'status: *file cut short at byte' "${work}/cut_info.txt" || fail "info of a cut file: $(head -3 "${work}/cut_info.txt")"

# Bad input: one line, non-zero, nothing written.
printf '' >"${work}/empty.rtrace"
echo '{"traceEvents":[]}' >"${work}/foreign.rtrace"
for bad in empty foreign missing; do
  "${tool}" convert "${work}/${bad}.rtrace" --chrome "${work}/${bad}.json" 2>"${work}/${bad}.err"
  status=$?
  [[ ${status} -ne 0 && $(wc -l <"${work}/${bad}.err") -eq 1 ]] || fail "${bad}: status ${status}, $(cat "${work}/${bad}.err")"
done
"${tool}" convert "${work}/run.rtrace" --chrome /nonexistent-dir/x.json 2>"${work}/unwritable.err"
[[ $? -eq 1 ]] && grep -q '/nonexistent-dir/x.json' "${work}/unwritable.err" || fail "unwritable output: $(cat "${work}/unwritable.err")"
"${tool}" convert "${work}/run.rtrace" --bogus 2>/dev/null; [[ $? -eq 2 ]] || fail "unknown option"
"${tool}" frobnicate 2>/dev/null; [[ $? -eq 2 ]] || fail "unknown command"

if ((failures > 0)); then echo "tool_tests: ${failures} failure(s)"; exit 1; fi
echo "tool_tests: all checks passed"
