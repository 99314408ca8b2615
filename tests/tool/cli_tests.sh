#!/usr/bin/env bash
# cli_tests.sh <ringtrace tool> <record_all> <work dir> <project version>: what the tool
# says, rather than what it converts: --version; exactly one "ringtrace <command>: "
# prefix on every error line, with its exit status; the summary line of convert and
# merge (sizes equal to the files'), the hint on large Chrome JSON; aligned columns in
# info; a file given twice to merge is refused before any work.
set -uo pipefail
tool="$1"; record="$2"; work="$3"; version="$4"
rm -rf "${work}"; mkdir -p "${work}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
recorded="$("${record}" "${work}")" || { echo "record_all failed"; exit 1; }
run="${work}/run.rtrace"

# --- Version -------------------------------------------------------------------------
for flag in --version -V version; do
  out="$("${tool}" "${flag}" 2>&1)"
  status=$?
  [[ ${status} -eq 0 && "${out}" == "ringtrace ${version}" ]] || fail "${flag}: status ${status}: '${out}'"
done
"${tool}" version extra >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "version with an argument is no usage error"
"${tool}" --help | grep '^  version  *the tool.s version' >/dev/null || fail "--help does not list version"

# --- Errors: one line, one prefix ------------------------------------------------------
# expect_error <status> <command> <arguments...>: the tool exits with <status> and
# writes one line on standard error, "ringtrace <command>: " and a message holding no
# other "ringtrace...: " prefix (the library's exception texts start with their own).
expect_error() {
  local want="$1" command="$2"; shift
  timeout 20 "${tool}" "$@" >"${work}/out.txt" 2>"${work}/err.txt"
  local status=$? err
  err="$(cat "${work}/err.txt")"
  [[ ${status} -eq ${want} ]] || fail "$*: status ${status}, not ${want}: ${err}"
  [[ $(wc -l <"${work}/err.txt") -eq 1 ]] || fail "$*: not one line: ${err}"
  [[ "${err}" == "ringtrace ${command}: "* ]] || fail "$*: not prefixed 'ringtrace ${command}: ': ${err}"
  [[ $(grep -o 'ringtrace[a-z ]*: ' "${work}/err.txt" | wc -l) -eq 1 ]] || fail "$*: more than one prefix: ${err}"
}
printf '' >"${work}/empty.rtrace"
echo '{"traceEvents":[]}' >"${work}/foreign.rtrace"
mkfifo "${work}/in.fifo"
head -c $(( $(stat -c %s "${run}") / 2 )) "${run}" >"${work}/cut.rtrace"
mkdir "${work}/dir"
expect_error 1 convert "${work}/missing.rtrace" --chrome "${work}/x.json"
expect_error 1 convert "${work}/empty.rtrace" --chrome "${work}/x.json"
expect_error 1 convert "${work}/foreign.rtrace" --chrome "${work}/x.json"
expect_error 1 convert "${work}/in.fifo" --chrome "${work}/x.json"
expect_error 1 convert "${work}/cut.rtrace" --chrome "${work}/cut.json"
expect_error 1 convert "${run}" --chrome "${work}/dir"
expect_error 1 convert "${run}" --table /dev/null
expect_error 1 convert "${run}" --chrome /nonexistent-dir/x.json
expect_error 1 convert "${run}" --pstats "${work}/x.prof.gz"
expect_error 2 convert "${run}" --table "${work}/x.txt" --rows abc
expect_error 2 convert "${run}" --table "${work}/x.txt" --rows
expect_error 2 convert "${run}" --bogus
expect_error 2 convert "${run}"
expect_error 2 convert "${run}" --chrome "${run}"
expect_error 1 report "${work}/missing.rtrace"
expect_error 2 report "${run}" --rows -1
expect_error 1 info "${work}/missing.rtrace"
expect_error 1 info "${work}/dir"
expect_error 1 info -
expect_error 1 merge "${work}/missing.rtrace" -o "${work}/m.rtrace"
expect_error 1 merge "${run}" "${work}/foreign.rtrace" -o "${work}/m.rtrace"
expect_error 1 merge "${run}" -o /nonexistent-dir/m.rtrace
expect_error 1 merge "${run}" -o "${run}"
grep -q 'cannot open .*missing.rtrace' <("${tool}" convert "${work}/missing.rtrace" --chrome "${work}/x.json" 2>&1) \
  || fail "a missing file's message does not name it"
"${tool}" frobnicate 2>"${work}/err.txt"; status=$?
[[ ${status} -eq 2 && "$(head -1 "${work}/err.txt")" == "ringtrace: unknown command 'frobnicate'" ]] \
  || fail "unknown command: status ${status}: $(head -1 "${work}/err.txt")"

# --- The summary line ------------------------------------------------------------------
# summary_check <command> <standard error file> <events or -> <outputs...>: standard error
# is the one summary line, naming each output with its size as the tool writes sizes
# (three significant digits, decimal units; '-': standard output, named by its flag),
# a time, and (convert) the number of events read.
summary_check() {
  python3 - "$@" <<'PY'
import os, re, sys
command, err, events, outputs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def byte_size(n):
    if n < 1000:
        return f"{n} bytes"
    units = ["kB", "MB", "GB", "TB", "PB", "EB"]
    value, unit = n / 1000, 0
    while value >= 999.5 and unit + 1 < len(units):
        value, unit = value / 1000, unit + 1
    decimals = 2 if value < 9.995 else 1 if value < 99.95 else 0
    return f"{value:.{decimals}f} {units[unit]}"
lines = open(err).read().splitlines()
assert len(lines) == 1, lines
time = r"[0-9]+\.[0-9] ms|[1-9][0-9]+ ms|[0-9]\.[0-9]{2} s|[0-9]+\.[0-9] s"
if command == "convert":
    m = re.fullmatch(rf"ringtrace convert: wrote (.*) in (?:{time}) from (\S+) \(([0-9]{{1,3}}(?:,[0-9]{{3}})*) events\)", lines[0])
    assert m, lines[0]
    assert int(m.group(3).replace(",", "")) == int(events), (m.group(3), events)
else:
    m = re.fullmatch(rf"ringtrace merge: wrote (.*) in (?:{time}) from ([0-9]+) files \(([0-9]+) processes\)", lines[0])
    assert m, lines[0]
    assert m.group(2) == events, (m.group(2), events)
named = [o.split("=", 1)[1] if o.startswith("-=") else f"{o} ({byte_size(os.path.getsize(o))})" for o in outputs]
assert m.group(1) == ", ".join(named), (m.group(1), named)
PY
}
events="$(sed -n 's/^record_all: \([0-9]*\) events.*/\1/p' <<<"${recorded}")"
"${tool}" convert "${run}" --chrome "${work}/s.json" --perfetto "${work}/s.perfetto-trace" --pstats "${work}/s.prof" \
  --folded - --table "${work}/s.txt" >"${work}/s.folded" 2>"${work}/convert.err" || fail "convert exits $?"
summary_check convert "${work}/convert.err" "${events}" "${work}/s.json" "${work}/s.perfetto-trace" "${work}/s.prof" \
  "-=standard output (--folded)" "${work}/s.txt" || fail "convert's summary: $(cat "${work}/convert.err")"
[[ -s "${work}/s.folded" ]] && ! grep -q 'ringtrace' "${work}/s.folded" || fail "the summary went to standard output"
# Chrome JSON over 256 MB: a second line says that --perfetto writes less (unless asked
# for too). Zones with a name of 2000 characters make that 130,000 zones.
"${record}" "${work}" large 130000 || fail "record_all large exits $?"
"${tool}" convert "${work}/large.rtrace" --chrome "${work}/large.json" 2>"${work}/large.err" || fail "convert large exits $?"
head -1 "${work}/large.err" >"${work}/large_summary.err"
summary_check convert "${work}/large_summary.err" 260000 "${work}/large.json" || fail "large summary: $(cat "${work}/large.err")"
[[ $(stat -c %s "${work}/large.json") -ge 256000000 ]] || fail "large.json is not large: $(stat -c %s "${work}/large.json")"
# A third says that chrome://tracing does not open it, with the command that splits it.
large_mb="$(awk -v b="$(stat -c %s "${work}/large.json")" 'BEGIN { printf "%.0f", b / 1e6 }')"
too_large="ringtrace convert: ${work}/large.json holds ${large_mb} MB of JSON, more than chrome://tracing opens (256 MB); in files that each open: ringtrace convert ${work}/large.rtrace --chrome ${work}/large.json"
[[ "$(sed -n 2p "${work}/large.err")" == "ringtrace convert: --perfetto OUT writes this trace in about a third of the size (for Perfetto UI and trace_processor)" \
   && "$(sed -n 3p "${work}/large.err")" == "${too_large} --split 200MB" \
   && $(wc -l <"${work}/large.err") -eq 3 ]] || fail "no hint on large JSON: $(cat "${work}/large.err")"
"${tool}" convert "${work}/large.rtrace" --chrome "${work}/large.json" --perfetto "${work}/large.perfetto-trace" \
  2>"${work}/large_both.err" || fail "convert large to both exits $?"
[[ $(wc -l <"${work}/large_both.err") -eq 2 \
   && "$(sed -n 2p "${work}/large_both.err")" == "${too_large} --perfetto ${work}/large.perfetto-trace --split 200MB" ]] \
  || fail "a hint with --perfetto given, or no split command: $(cat "${work}/large_both.err")"
rm -f "${work}/large.json"  # 270 MB

# merge: a copy of the recording is another file (another inode): merged, its pid
# marked as one that the reader renames; its summary names the output with its size.
cp "${run}" "${work}/copy.rtrace"
"${tool}" merge "${run}" "${work}/copy.rtrace" -o "${work}/merged.rtrace" >"${work}/merge.txt" 2>"${work}/merge.err" \
  || fail "merge exits $?: $(cat "${work}/merge.err")"
summary_check merge "${work}/merge.err" 2 "${work}/merged.rtrace" || fail "merge's summary: $(cat "${work}/merge.err")"
grep -q '(2 processes)$' "${work}/merge.err" || fail "merge's summary counts no 2 processes: $(cat "${work}/merge.err")"
[[ $(grep -c "its pid is an earlier one's: read under a new pid" "${work}/merge.txt") -eq 1 ]] \
  || fail "merge does not mark the pid seen twice: $(cat "${work}/merge.txt")"

# --- merge of one file given twice: refused, status 2, before any work ----------------
ln -s "${run}" "${work}/soft.rtrace"
ln "${run}" "${work}/hard.rtrace"
base="$(basename "${work}")"
for second in "${run}" "${work}/../${base}/run.rtrace" "${work}/soft.rtrace" "${work}/hard.rtrace"; do
  expect_error 2 merge "${run}" "${work}/copy.rtrace" "${second}" -o "${work}/twice.rtrace"
  if [[ "${second}" == "${run}" ]]; then
    want="'${run}' is given twice: give each recording once"
  else
    want="'${run}' and '${second}' are the same file: give each recording once"
  fi
  [[ "$(cat "${work}/err.txt")" == "ringtrace merge: ${want}" ]] || fail "merge ${second} twice: $(cat "${work}/err.txt")"
  [[ ! -s "${work}/out.txt" ]] || fail "merge ${second} twice printed: $(cat "${work}/out.txt")"
done
[[ ! -e "${work}/twice.rtrace" ]] && ! ls "${work}"/twice.rtrace.partial* >/dev/null 2>&1 \
  || fail "a refused merge wrote its output"

# --- info: aligned columns ---------------------------------------------------------------
# Threads and call sites with names of 1 to 51 characters (one with a tab), counts of 1
# to 4 digits, an interned site without a file: every row's columns start (left-aligned)
# or end (right-aligned) at one offset, names past 40 characters are cut to 37 and "...".
"${record}" "${work}" names || fail "record_all names exits $?"
"${tool}" info "${work}/names.rtrace" >"${work}/names_info.txt" || fail "info exits $?"
python3 - "${work}/names_info.txt" <<'PY' || fail "info's columns: $(cat "${work}/names_info.txt")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
def rows(title):
    at = next(i for i, l in enumerate(lines) if l.startswith(title))
    out = []
    for l in lines[at + 1:]:
        if not l.startswith("  "):
            break
        out.append(l)
    return out
threads = rows("threads:")
assert len(threads) == 3, threads
pattern = re.compile(r"  (?P<name>\S.*?)  +(?P<tid>tid [0-9]+)  +(?P<events>[0-9]+ events)  (?P<dropped>[0-9]+ dropped)")
found = [pattern.fullmatch(t) for t in threads]
assert all(found), threads
assert len({m.start("tid") for m in found}) == 1, threads
assert len({m.end("events") for m in found}) == 1, threads
assert len({m.end("dropped") for m in found}) == 1, threads
assert sorted(m.group("events") for m in found) == ["8 events", "800 events", "8000 events"], threads
assert sorted(m.group("name") for m in found) == ["a-thread-whose-name-is-longer-than-fo...", "t", "tab?here"], threads
sites = rows("call sites:")
assert len(sites) == 4, sites
located = [re.fullmatch(r"  (\S+)  +(\S+record_all\.cpp:[0-9]+)", s) for s in sites if "record_all.cpp" in s]
assert len(located) == 3 and all(located), sites
assert len({m.start(2) for m in located}) == 1, sites
assert sorted(m.group(1) for m in located) == ["a_zone_whose_name_is_longer_than_fort...", "medium_zone_name", "z"], sites
assert "  interned" in sites, sites
assert max(len(m.group(1)) for m in located) == 40, sites
PY

# --- report --sort-by KEY -----------------------------------------------------------------
# sorted_check <report file> <column> <numbers|names>: the table's rows are in that
# column's order (numbers and times largest first, names A to Z), over at least two
# distinct values (else the check proves nothing).
sorted_check() {
  python3 - "$@" <<'PY'
import re, sys
path, column, kind = sys.argv[1:]
lines = open(path).read().splitlines()
at = next(i for i, l in enumerate(lines) if l.startswith("Name "))
columns = re.split(r"\s{2,}", lines[at].strip())
rows = []
for l in lines[at + 2:]:
    if l.startswith("---"):
        break
    cells = re.split(r"\s{2,}", l.strip())
    assert len(cells) == len(columns), (columns, cells)
    rows.append(cells[columns.index(column)])
def number(text):
    m = re.fullmatch(r"([0-9.]+)\s*(s|ms|us|ns|%)?", text)
    return float(m.group(1)) * {"s": 1e9, "ms": 1e6, "us": 1e3}.get(m.group(2), 1)
keys = rows if kind == "names" else [-number(r) for r in rows]
assert len(set(keys)) >= 2, ("fewer than two distinct values", rows)
assert keys == sorted(keys), (column, rows)
PY
}
"${tool}" report "${run}" >"${work}/sort_default.txt" || fail "report exits $?"
for pair in calls:Calls max:Max p99:p99 avg:Avg total:Total name:Name self:Self; do
  key="${pair%%:*}"; column="${pair#*:}"
  "${tool}" report "${run}" --sort-by "${key}" >"${work}/sort_${key}.txt" 2>"${work}/sort_${key}.err" \
    || fail "--sort-by ${key} exits $?: $(cat "${work}/sort_${key}.err")"
  kind=numbers; [[ "${key}" == name ]] && kind=names
  sorted_check "${work}/sort_${key}.txt" "${column}" "${kind}" || fail "--sort-by ${key}: $(cat "${work}/sort_${key}.txt")"
  # The same rows as the default order, only ordered otherwise.
  [[ "$(grep -E '^[a-z]+ ' "${work}/sort_${key}.txt" | awk '{print $1}' | sort)" == \
     "$(grep -E '^[a-z]+ ' "${work}/sort_default.txt" | awk '{print $1}' | sort)" ]] || fail "--sort-by ${key}: other rows"
done
cmp -s "${work}/sort_default.txt" "${work}/sort_self.txt" || fail "--sort-by self is not the default order"
# An unknown key: a usage error that lists every key.
keys="name, self-percent, self, total-percent, total, avg, min, max, p50, p99, calls, on-cpu-self, on-cpu-total, on-cpu-avg, on-cpu-p50, on-cpu-p99, cpu-mem, self-cpu-mem, flops, first-seen"
expect_error 2 report "${run}" --sort-by busiest
[[ "$(cat "${work}/err.txt")" == "ringtrace report: --sort-by: unknown key 'busiest'; the keys are ${keys}" ]] \
  || fail "--sort-by busiest: $(cat "${work}/err.txt")"
expect_error 2 report "${run}" --sort-by
"${tool}" report --help | grep -F "  ${keys}" >/dev/null || fail "report --help does not list the keys"
# '_' for '-'; an on-CPU key on a recording without switches: the table, and one line saying so.
"${tool}" report "${run}" --sort-by on_cpu_p99 >"${work}/sort_on_cpu.txt" 2>"${work}/sort_on_cpu.err" \
  || fail "--sort-by on_cpu_p99 exits $?"
grep -q '^Name ' "${work}/sort_on_cpu.txt" || fail "--sort-by on_cpu_p99: no table"
[[ $(wc -l <"${work}/sort_on_cpu.err") -eq 1 ]] && grep -q "^ringtrace report: .* has no context switches (no on-CPU columns): --sort-by on-cpu-p99 left the rows in name order" "${work}/sort_on_cpu.err" \
  || fail "--sort-by on_cpu_p99 without switches: $(cat "${work}/sort_on_cpu.err")"
# A memory key on a recording without allocations: the table, and one line saying so.
"${tool}" report "${run}" --sort-by self_cpu_mem >"${work}/sort_mem.txt" 2>"${work}/sort_mem.err" \
  || fail "--sort-by self_cpu_mem exits $?"
grep -q '^Name ' "${work}/sort_mem.txt" || fail "--sort-by self_cpu_mem: no table"
grep -q 'CPU Mem' "${work}/sort_mem.txt" && fail "--sort-by self_cpu_mem without allocations: CPU Mem columns"
[[ $(wc -l <"${work}/sort_mem.err") -eq 1 ]] && grep -q "^ringtrace report: .* has no allocations (no memory columns): --sort-by self-cpu-mem left the rows in name order" "${work}/sort_mem.err" \
  || fail "--sort-by self_cpu_mem without allocations: $(cat "${work}/sort_mem.err")"

# flops on a recording whose zones have no FLOPs: the table, and one line saying so; on
# one with FLOPs (record_all columns: matmul's, then small's 2 x 1000, relu none), no line
# and the rows by their FLOPs.
"${tool}" report "${run}" --sort-by flops >"${work}/sort_flops.txt" 2>"${work}/sort_flops.err" \
  || fail "--sort-by flops exits $?"
grep -q '^Name ' "${work}/sort_flops.txt" || fail "--sort-by flops: no table"
[[ "$(cat "${work}/sort_flops.err")" == "ringtrace report: ${run} has no FLOPs (no Total FLOPs column): --sort-by flops left the rows in name order (a zone gets its FLOPs with RINGTRACE_ZONE_FLOPS(n) or a \"flops\" argument)" ]] \
  || fail "--sort-by flops without FLOPs: $(cat "${work}/sort_flops.err")"
"${record}" "${work}" columns || fail "record_all columns exits $?"
"${tool}" report "${work}/columns_a.rtrace" --sort-by flops >"${work}/sort_flops_a.txt" 2>"${work}/sort_flops_a.err" \
  || fail "--sort-by flops (columns_a) exits $?"
[[ ! -s "${work}/sort_flops_a.err" && "$(sed -n '3,5s/ .*//p' "${work}/sort_flops_a.txt" | tr '\n' ' ')" == "matmul small relu " ]] \
  || fail "--sort-by flops with FLOPs: $(cat "${work}/sort_flops_a.err" "${work}/sort_flops_a.txt")"

# --- report: the captured-ops summary only with regions ----------------------------------
# names.rtrace (above) has zones and no capture region: the table, and no summary.
"${tool}" report "${work}/names.rtrace" >"${work}/names_report.txt" 2>&1 || fail "report of names.rtrace exits $?"
grep -q '^Name ' "${work}/names_report.txt" || fail "report without regions: no table: $(cat "${work}/names_report.txt")"
grep -Eqi 'captured|graph|outside any region' "${work}/names_report.txt" \
  && fail "report without regions prints a summary: $(cat "${work}/names_report.txt")"
# run.rtrace has regions: its summary is there.
grep -q '^Captured ops: 5 graphs 3000 graph calls ' "${work}/sort_default.txt" \
  || fail "report with regions: no summary: $(cat "${work}/sort_default.txt")"

if ((failures > 0)); then echo "cli_tests: ${failures} failure(s)"; exit 1; fi
echo "cli_tests: all checks passed"
