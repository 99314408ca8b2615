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
"${tool}" report "${work}/run.rtrace" --estimate-sampled >"${work}/report_estimated.txt" || fail "report --estimate-sampled exits $?"
grep -q '^Estimates: ' "${work}/report_estimated.txt" || fail "report --estimate-sampled does not say it estimates"

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
# The format version as major.minor, from the header's version word (major << 16 | minor);
# format 1's word (1, or 2 for a merged file) is one number.
word=$(od -An -tu4 -j8 -N4 "${work}/run.rtrace" | tr -d ' ')
grep -q "^file: .* bytes, format version $((word >> 16))\.$((word & 0xFFFF)))$" "${work}/info.txt" \
  || fail "info's format version is not $((word >> 16)).$((word & 0xFFFF)): $(head -1 "${work}/info.txt")"
format1="$(dirname "$0")/../binary/fixtures/format1/one.rtrace"
"${tool}" info "${format1}" | grep '^file: .* bytes, format version 1)$' >/dev/null \
  || fail "info of a format-1 file: $("${tool}" info "${format1}" | head -1)"
# The help read whole, then searched (grep -q closing the pipe early would kill the tool
# with SIGPIPE before its last line: a failure of the pipeline under pipefail).
for command in convert report info merge; do
  help="$("${tool}" "${command}" --help)" || fail "${command} --help exits $?"
  grep -q "^usage: ringtrace ${command}" <<<"${help}" || fail "${command} --help"
done
help="$("${tool}" --help)" || fail "--help exits $?"
grep -q '^usage: ringtrace' <<<"${help}" || fail "--help"

# The table's columns of issue 34 from report: two nodes merged, zones with input shapes
# and flops (record_all's columns mode says what they are), their call site.
"${record}" "${work}" columns || fail "record_all columns exits $?"
"${tool}" merge "${work}/columns_a.rtrace" "${work}/columns_b.rtrace" -o "${work}/columns.rtrace" 2>/dev/null \
  || fail "merge of the columns files exits $?"
"${tool}" report "${work}/columns.rtrace" --by-input-shapes --by-node --source-locations >"${work}/columns.txt" \
  || fail "report with the columns exits $?"
matmul_line=$(grep -n 'COLUMNS_MATMUL_LINE' "$(dirname "$0")/record_all.cpp" | cut -d: -f1)
expect_row() {  # expect_row REGEX: a line of the columns report matches it
  grep -Eq "$1" "${work}/columns.txt" || fail "report's columns: no line matching '$1' in: $(cat "${work}/columns.txt")"
}
expect_row '^Name .* Calls +Node ID +Input Shapes +Total KFLOPs +Source Location$'
expect_row "^matmul .* 3 +rank-a +\[\[64, 128\], \[128, 256\]\] +12582\.912 +.*record_all\.cpp:${matmul_line}\$"
expect_row "^matmul .* 1 +rank-b +\[\[64, 128\], \[128, 256\]\] +4194\.304 +.*record_all\.cpp:${matmul_line}\$"
expect_row "^matmul .* 2 +rank-a +\[\[8, 8\], \[8, 8\]\] +2\.048 +.*record_all\.cpp:${matmul_line}\$"
expect_row '^small .* 2 +rank-a +2\.000 +.*record_all\.cpp:[0-9]+$'
expect_row '^relu .* 1 +rank-a +-- +.*record_all\.cpp:[0-9]+$'
[[ $(grep -c '^matmul ' "${work}/columns.txt") -eq 3 ]] || fail "report's columns: not 3 matmul rows"
# Without the options: one row per name, FLOPs summed over nodes and shapes; by flops first.
"${tool}" report "${work}/columns.rtrace" --sort-by flops >"${work}/columns_plain.txt" || fail "report --sort-by flops exits $?"
sed -n 3p "${work}/columns_plain.txt" | grep -Eq '^matmul .* 6 +16779\.264$' \
  || fail "report --sort-by flops: $(cat "${work}/columns_plain.txt")"
grep -Eq 'Node ID|Input Shapes|Source Location' "${work}/columns_plain.txt" && fail "report without the options shows their columns"
"${tool}" report "${work}/columns.rtrace" --by-input-shapes --by-arg batch 2>/dev/null
[[ $? -eq 2 ]] || fail "report --by-input-shapes --by-arg batch is no usage error"

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

# A process killed with its rings in a file: convert and info read on from the ring file
# (what the drainer had not written); --no-rings reads the file alone.
# Its trace file is its temporary, killed.rtrace.partial.XXXXXXXX (eight random characters).
"${record}" "${work}" killed
partials=("${work}"/killed.rtrace.partial.????????)
killed_partial="${partials[0]}"
[[ ${#partials[@]} -eq 1 && -f "${killed_partial}" && -f "${work}/killed.rtrace.rings" ]] \
  || fail "the killed run left no temporary and .rings: ${partials[*]}"
"${tool}" convert "${killed_partial}" --chrome "${work}/killed.json" 2>"${work}/killed.err"
status=$?
[[ ${status} -eq 1 && $(wc -l <"${work}/killed.err") -eq 1 ]] && grep -q 'events recovered from .*killed.rtrace.rings' "${work}/killed.err" \
  || fail "convert of a killed run with its rings: status ${status}, $(cat "${work}/killed.err")"
late=$(python3 -c 'import json,sys; print(sum(1 for e in json.load(open(sys.argv[1])) if e.get("name") == "late" and e.get("ph") == "X"))' "${work}/killed.json")
[[ ${late} -eq 1001 ]] || fail "the killed run's zones: ${late} of 1001"
"${tool}" info "${killed_partial}" >"${work}/killed_info.txt" || fail "info of the killed run exits $?"
grep -q '^rings: .*killed.rtrace.rings: [0-9]* events recovered' "${work}/killed_info.txt" \
  && grep -q 'doomed ' "${work}/killed_info.txt" || fail "info of the killed run: $(cat "${work}/killed_info.txt")"
"${tool}" convert "${killed_partial}" --no-rings --chrome "${work}/killed_alone.json" 2>"${work}/killed_alone.err"
[[ $? -eq 1 ]] && ! grep -q 'recovered' "${work}/killed_alone.err" || fail "--no-rings: $(cat "${work}/killed_alone.err")"

# Hostile ring files beside a copy of the killed run (issue 22, point 9): a header that
# claims 2^30 slots, rings of 2^40 bytes, a slot whose write position lies. info exits 0
# and convert 1 (the file is cut) within seconds, each saying in one line which ring
# file was refused or which slot skipped, and what the trace file holds is converted.
hostile() {  # hostile <name> <offset> <value> <bytes> [<offset> <value> <bytes>]
  local name="$1"; shift
  cp "${killed_partial}" "${work}/${name}.rtrace"
  python3 - "${work}/killed.rtrace.rings" "${work}/${name}.rtrace.rings" "$@" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
fields = sys.argv[3:]
for i in range(0, len(fields), 3):
    offset, value, size = int(fields[i]), int(fields[i + 1]), int(fields[i + 2])
    data[offset:offset + size] = value.to_bytes(size, 'little')
open(sys.argv[2], 'wb').write(data)
PY
}
hostile slots 40 $((1 << 30)) 8
hostile rings 24 $((1 << 40)) 8 32 $(((1 << 40) + 4096)) 8
hostile slot 4352 $((1 << 40)) 8  # slot 0's write position (4096 + 256)
for name in slots rings slot; do
  case "${name}" in
    slots) says=' refused: its header claims 1073741824 slot(s) of' ;;
    rings) says=' refused: its header claims rings of 1099511627776 bytes' ;;
    slot) says='; 1 damaged slot(s) skipped (slot 0 at byte 4096: its write position is outside its ring)' ;;
  esac
  timeout 10 "${tool}" info "${work}/${name}.rtrace" >"${work}/${name}_info.txt" 2>&1
  status=$?
  [[ ${status} -eq 0 ]] && grep -qF "${work}/${name}.rtrace.rings${says}" "${work}/${name}_info.txt" \
    && grep -q 'doomed ' "${work}/${name}_info.txt" \
    || fail "info beside a hostile ring file (${name}): status ${status}, $(head -3 "${work}/${name}_info.txt")"
  timeout 10 "${tool}" convert "${work}/${name}.rtrace" --chrome "${work}/${name}.json" 2>"${work}/${name}.err"
  status=$?
  [[ ${status} -eq 1 && $(wc -l <"${work}/${name}.err") -eq 1 ]] && grep -qF "${work}/${name}.rtrace.rings${says}" "${work}/${name}.err" \
    || fail "convert beside a hostile ring file (${name}): status ${status}, $(cat "${work}/${name}.err")"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "${work}/${name}.json" || fail "${name}: the Chrome trace is not valid JSON"
done

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

# merge: a second process's recording and the first on one timeline (one host and
# boot: exact); every process's Chrome events are those of its own file.
"${record}" "${work}/second" >/dev/null || fail "record_all (second process) failed"
"${tool}" merge "${work}/run.rtrace" "${work}/second/run.rtrace" -o "${work}/merged.rtrace" >"${work}/merge.txt" \
  || fail "merge exits $?: $(cat "${work}/merge.txt")"
[[ $(grep -c 'same host and boot: exact' "${work}/merge.txt") -eq 2 ]] || fail "merge output: $(cat "${work}/merge.txt")"
"${tool}" info "${work}/merged.rtrace" >"${work}/merged_info.txt" || fail "info of a merged file exits $?"
grep -q 'format version 2' "${work}/merged_info.txt" && grep -q '^processes: *2, merged' "${work}/merged_info.txt" \
  && grep -q '^status: *complete$' "${work}/merged_info.txt" || fail "info of a merged file: $(cat "${work}/merged_info.txt")"
"${tool}" convert "${work}/second/run.rtrace" --chrome "${work}/second.json" || fail "convert of the second file"
"${tool}" convert "${work}/merged.rtrace" --chrome "${work}/merged.json" --perfetto "${work}/merged.perfetto-trace" \
  || fail "convert of the merged file exits $?"
python3 - "${work}/merged.json" "${work}/file.json" "${work}/second.json" <<'PY' || fail "merged Chrome trace"
import json, sys
def zones(path):
    by_pid = {}
    for e in json.load(open(path)):
        if e.get("ph") in ("X", "i", "C", "b", "e"):
            by_pid.setdefault(e["pid"], []).append((e["tid"], e["ph"], e["name"], e["ts"], e.get("dur")))
    return by_pid
merged, first, second = zones(sys.argv[1]), zones(sys.argv[2]), zones(sys.argv[3])
assert len(merged) == 2, sorted(merged)
for single in (first, second):
    (pid, events), = single.items()
    assert sorted(merged[pid]) == sorted(events), pid
names = {e["pid"]: e["args"]["name"] for e in json.load(open(sys.argv[1])) if e.get("name") == "process_name"}
assert sorted(names) == sorted(merged), names
PY
head -c $(( $(stat -c %s "${work}/second/run.rtrace") / 2 )) "${work}/second/run.rtrace" >"${work}/second_cut.rtrace"
"${tool}" merge "${work}/run.rtrace" "${work}/second_cut.rtrace" -o "${work}/merged_cut.rtrace" >/dev/null 2>"${work}/merge_cut.err"
status=$?
[[ ${status} -eq 1 && $(wc -l <"${work}/merge_cut.err") -eq 1 && -f "${work}/merged_cut.rtrace" ]] \
  && grep -q 'second_cut.rtrace' "${work}/merge_cut.err" || fail "merge of a cut file: status ${status}, $(cat "${work}/merge_cut.err")"
"${tool}" merge "${work}/run.rtrace" "${work}/foreign.rtrace" -o "${work}/merged_bad.rtrace" 2>"${work}/merge_bad.err"
status=$?
[[ ${status} -eq 1 && $(wc -l <"${work}/merge_bad.err") -eq 1 && ! -e "${work}/merged_bad.rtrace" ]] \
  || fail "merge of a foreign file: status ${status}, $(cat "${work}/merge_bad.err")"
"${tool}" merge "${work}/run.rtrace" 2>/dev/null; [[ $? -eq 2 ]] || fail "merge without -o"

if ((failures > 0)); then echo "tool_tests: ${failures} failure(s)"; exit 1; fi
echo "tool_tests: all checks passed"
