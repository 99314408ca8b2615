#!/usr/bin/env bash
# messages_tests.sh <ringtrace tool> <crafted_files> <source dir> <work dir> [--memory]:
# what the tool says (issue 48), read word for word:
#  - the help texts say what `record` records (zones, -finstrument-functions calls, with
#    --memory the allocations of any dynamically linked program), not only programs
#    that link ringtrace;
#  - report of a recording without zones says so and what makes them, in place of an
#    empty table, then the memory lines (a hand-made stream; with --memory, given when the
#    preload is built, also `record --memory` of /bin/true);
#  - memory records of 2^47 bytes and more (crafted) are refused as damaged, the largest
#    real size read as any other;
#  - docs/tool-messages.md against the tool: every command of `ringtrace --help` and each
#    command's usage line are in it; every message's fixed words occur in the tool's
#    sources (tools/, runtime/, exporters/: string literals, adjacent ones joined) or in
#    what the tool printed here; and for each case run here (an error of each kind), the
#    line printed matches a row of the page whose exit column holds the status it exited with.
#    record --pid, snapshot and top too: their command lines refused, processes without a
#    control channel, and (RINGTRACE_TEST_CONTROL_TARGET: tests/control's control_target)
#    what a running process answers.
set -uo pipefail
tool="$1"; crafted="$2"; source="$3"; work="$4"; memory="${5:-}"
rm -rf "${work}"; mkdir -p "${work}/cases"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME COMMAND...: its output and errors in NAME.out and NAME.err, its status in $s.
run() { local name="$1"; shift; s=0; timeout 60 "$@" >"${name}.out" 2>"${name}.err" || s=$?; }
"${crafted}" . || { echo "crafted_files exits $?"; exit 1; }

# --- The help texts ------------------------------------------------------------------------
run help "${tool}" --help
[[ ${s} -eq 0 ]] || fail "--help exits ${s}"
[[ "$(sed -n 3,4p help.out)" == "Records programs (unmodified ones too: record --memory) and reads the binary trace files
(.rtrace) of their recordings." ]] || fail "--help does not say what the tool records: $(sed -n 3,4p help.out)"
grep -qxF "  record [-o OUT] -- PROGRAM ARGS  runs PROGRAM and records it whole: its zones and -finstrument-functions calls, and with --memory the allocations of any dynamically linked program" help.out \
  || fail "--help's record line: $(grep '^  record' help.out)"
grep -q 'runs a program that links ringtrace' help.out && fail "--help: record 'runs a program that links ringtrace'"
run record_help "${tool}" record --help
[[ ${s} -eq 0 ]] || fail "record --help exits ${s}"
[[ "$(sed -n 3,11p record_help.out)" == "Runs PROGRAM and records the whole run: the zones of a PROGRAM that links ringtrace
(RINGTRACE_ZONE and the other macros), the calls of code built with
-finstrument-functions (linked with ringtrace::functions), and with --memory every
allocation, in any dynamically linked PROGRAM: one that does not link ringtrace is
recorded through a preload, which records its -finstrument-functions calls too. The
runtime starts a session when the program starts and stops it at its exit (or at
SIGINT/SIGTERM). It sets the environment variables below for PROGRAM; they work the
same set by hand. Exits with PROGRAM's status (128 + N when signal N ended it), or 1
when PROGRAM exited 0 but an output was not written whole." ]] || fail "record --help: $(sed -n 3,11p record_help.out)"

# --- report of a recording without zones ------------------------------------------------------
no_zones="No zones in this recording, so no key-averages table. Zones come from RINGTRACE_ZONE and
the other macros in a program that links ringtrace, and from the calls of code built with
-finstrument-functions (linked with ringtrace::functions, or run under record --memory)."
run no_zones "${tool}" report no_zones.rtrace
# The stream's own count: 3 allocations of 600 bytes, a free of 100 (crafted_files.cpp).
[[ ${s} -eq 0 && ! -s no_zones.err && "$(cat no_zones.out)" == "${no_zones}

Memory: 3 allocations (600 B), 1 free (100 B), peak 600 B live at 20 ns after the start; live at the end by the events' sizes: 500 B (which blocks: unknown, this file carries sizes and no addresses)" ]] \
  || fail "report of a recording without zones: status ${s}: $(cat no_zones.out no_zones.err)"
grep -qE 'Self time total|^Name ' no_zones.out && fail "report without zones prints the empty table"
# A recording with zones keeps its table.
run zones "${tool}" report zones.rtrace
[[ ${s} -eq 0 ]] && grep -q '^Name ' zones.out && grep -q '^parse ' zones.out && ! grep -q 'No zones' zones.out \
  || fail "report of zones.rtrace: status ${s}: $(cat zones.out zones.err)"
if [[ "${memory}" == --memory ]]; then
  run true_record "${tool}" record --memory -o true.rtrace -- /bin/true
  [[ ${s} -eq 0 ]] || fail "record --memory of /bin/true: status ${s}: $(cat true_record.err)"
  run true_report "${tool}" report true.rtrace
  [[ ${s} -eq 0 && "$(head -3 true_report.out)" == "${no_zones}" && -z "$(sed -n 4p true_report.out)" ]] \
    && grep -q '^Memory: [0-9]* allocation' true_report.out && [[ $(wc -l <true_report.out) -eq 5 ]] \
    || fail "report of /bin/true under record --memory: status ${s}: $(cat true_report.out true_report.err)"
fi

# --- Memory sizes no process allocates ------------------------------------------------------
for pair in huge_alloc:9223372036854775808 huge_free:140737488355328; do
  name="${pair%%:*}"; bytes="${pair#*:}"
  for command in report dump; do
    run "${name}_${command}" "${tool}" "${command}" "${name}.rtrace"
    [[ ${s} -eq 1 && $(wc -l <"${name}_${command}.err") -eq 1 ]] \
      && grep -qx "ringtrace ${command}: ${name}.rtrace: a memory record of ${bytes} bytes, more than a process can allocate (2^47, x86-64's user address space; chunk at byte [0-9]*): damaged file" "${name}_${command}.err" \
      || fail "${command} ${name}.rtrace: status ${s}: $(cat "${name}_${command}.err")"
  done
  grep -q 'EB\|GB' "${name}_report.out" && fail "${name}: a size past the address space in the totals: $(cat "${name}_report.out")"
done
# What came before the refused record is read: the allocation of 64 bytes.
grep -q '^Memory: 1 allocation (64 B), 0 frees (0 B)' huge_alloc_report.out || fail "huge_alloc: $(cat huge_alloc_report.out)"
run largest "${tool}" report largest_alloc.rtrace
[[ ${s} -eq 0 && ! -s largest.err ]] && grep -q '^Memory: 1 allocation (131072.00 GB), 0 frees (0 B)' largest.out \
  || fail "an allocation of 2^47 - 1 bytes: status ${s}: $(cat largest.out largest.err)"

# --- docs/tool-messages.md against the tool --------------------------------------------------
# Cases: an error (or note) of each kind; NAME STATUS COMMAND... (the status it must exit with).
mkfifo in.fifo
mkdir -p dir
head -c 300 no_zones.rtrace >cut.rtrace
case_list=cases.txt
: >"${case_list}"
case_run() {
  local name="$1" want="$2"; shift 2
  run "cases/${name}" "$@"
  echo "${name} ${want} ${s}" >>"${case_list}"
  [[ ${s} -eq ${want} ]] || fail "case ${name}: status ${s}, not ${want}: $(cat "cases/${name}.err")"
}
case_run no_command 2 "${tool}"
case_run unknown_command 2 "${tool}" frobnicate
case_run version_argument 2 "${tool}" version x
case_run missing 1 "${tool}" report missing.rtrace
case_run fifo 1 "${tool}" report in.fifo
case_run directory 1 "${tool}" info dir
case_run dash 1 "${tool}" report -
case_run dash_convert 1 "${tool}" convert - --chrome x.json
case_run cut 1 "${tool}" report cut.rtrace
case_run huge 1 "${tool}" report huge_alloc.rtrace
case_run rows 2 "${tool}" report zones.rtrace --rows x
case_run rows_missing 2 "${tool}" report zones.rtrace --rows
case_run sort_key 2 "${tool}" report zones.rtrace --sort-by busiest
case_run sort_flops 0 "${tool}" report zones.rtrace --sort-by flops
case_run sort_on_cpu 0 "${tool}" report zones.rtrace --sort-by on-cpu-self
case_run sort_memory 0 "${tool}" report zones.rtrace --sort-by cpu-mem
case_run stragglers 0 "${tool}" report zones.rtrace --stragglers
case_run by_arg 2 "${tool}" report zones.rtrace --by-arg ''
case_run report_twice 2 "${tool}" report zones.rtrace zones.rtrace
case_run report_many_stragglers 2 "${tool}" report zones.rtrace no_zones.rtrace --stragglers
case_run report_empty_dir 1 "${tool}" report dir
case_run diff_usage 2 "${tool}" diff zones.rtrace
case_run diff_option 2 "${tool}" diff zones.rtrace zones.rtrace --bogus
case_run diff_threshold 2 "${tool}" diff zones.rtrace zones.rtrace --threshold much
case_run diff_alpha 2 "${tool}" diff zones.rtrace zones.rtrace --alpha 1
case_run diff_samples 2 "${tool}" diff zones.rtrace zones.rtrace --samples 10
case_run diff_stdout 2 "${tool}" diff zones.rtrace zones.rtrace --csv - --json -
case_run diff_same_output 2 "${tool}" diff zones.rtrace zones.rtrace --csv d.out --json d.out
case_run diff_nodir 1 "${tool}" diff zones.rtrace zones.rtrace --json nodir/d.json
case_run diff_common 1 "${tool}" diff zones.rtrace no_zones.rtrace
case_run diff_empty_dir 1 "${tool}" diff zones.rtrace dir
case_run diff_cut 1 "${tool}" diff zones.rtrace cut.rtrace
case_run report_option 2 "${tool}" report zones.rtrace --bogus
case_run report_nothing 2 "${tool}" report
case_run convert_nothing 2 "${tool}" convert zones.rtrace
case_run convert_two 2 "${tool}" convert zones.rtrace no_zones.rtrace --chrome x.json
case_run convert_nodir 1 "${tool}" convert zones.rtrace --chrome nodir/x.json
case_run convert_same 2 "${tool}" convert zones.rtrace --chrome a.json --perfetto a.json
case_run convert_stdout 2 "${tool}" convert zones.rtrace --chrome - --folded -
case_run convert_input 2 "${tool}" convert zones.rtrace --table zones.rtrace
case_run convert_pstats 2 "${tool}" convert zones.rtrace --pstats -
case_run folded_value 2 "${tool}" convert zones.rtrace --folded x.folded --folded-value most
case_run convert_done 0 "${tool}" convert zones.rtrace --chrome x.json
case_run convert_filtered 0 "${tool}" convert zones.rtrace --chrome x.json --min-duration 1us --exclude '^parse$'
case_run dump_filtered 0 "${tool}" dump zones.rtrace --time-range ,1s
case_run time_range 2 "${tool}" convert zones.rtrace --chrome x.json --time-range 5ms
case_run time_range_order 2 "${tool}" convert zones.rtrace --chrome x.json --time-range 2s,1s
case_run time_range_twice 2 "${tool}" report zones.rtrace --time-range 1s, --time-range ,2s
case_run min_duration 2 "${tool}" convert zones.rtrace --chrome x.json --min-duration soon
case_run filter_depth 2 "${tool}" dump zones.rtrace --max-depth 0
case_run filter_thread 2 "${tool}" report zones.rtrace --thread ''
case_run filter_zone 2 "${tool}" convert zones.rtrace --chrome x.json --zone '('
case_run report_filter_leaks 2 "${tool}" report zones.rtrace --leaks --max-depth 2
case_run split_size 2 "${tool}" convert zones.rtrace --chrome x.json --split 10kB
case_run split_nothing 2 "${tool}" convert zones.rtrace --table x.txt --split 10MB
case_run split_stdout 2 "${tool}" convert zones.rtrace --perfetto - --split 10MB
case_run split_done 0 "${tool}" convert zones.rtrace --chrome x.json --split 1MB
case_run dump_two 2 "${tool}" dump zones.rtrace zones.rtrace
case_run info_usage 2 "${tool}" info
case_run dump_usage 2 "${tool}" dump
case_run merge_usage 2 "${tool}" merge zones.rtrace
case_run merge_o 2 "${tool}" merge zones.rtrace -o
case_run merge_twice 2 "${tool}" merge zones.rtrace zones.rtrace -o m.rtrace
ln -s zones.rtrace link.rtrace
case_run merge_same 2 "${tool}" merge zones.rtrace link.rtrace -o m.rtrace
case_run merge_option 2 "${tool}" merge zones.rtrace --bogus -o m.rtrace
case_run record_nothing 2 "${tool}" record --
case_run record_option 2 "${tool}" record --bogus -- /bin/true
case_run record_same 2 "${tool}" record -o a.rtrace --chrome a.rtrace -- /bin/true
case_run record_policy 2 "${tool}" record --policy often -- /bin/true
case_run record_depth 2 "${tool}" record --max-depth 0 -- /bin/true
case_run record_duration 2 "${tool}" record --min-duration soon -- /bin/true
case_run record_regex 2 "${tool}" record --include '(' -- /bin/true
case_run record_node 2 "${tool}" record --node-id '' -- /bin/true
case_run record_comma 2 "${tool}" record -o 'a,b.rtrace' -- /bin/true
case_run record_nodir 1 "${tool}" record -o nodir/x.rtrace -- /bin/true
case_run record_unlinked 1 "${tool}" record -o t.rtrace -- /bin/true
case_run record_missing 127 "${tool}" record -o t.rtrace -- ./no-such-program
RINGTRACE_PRELOAD=no-such.so case_run record_preload 1 "${tool}" record --memory -o t.rtrace -- /bin/true
# A running process (record --pid, snapshot, top): the command lines refused, processes
# without a channel, and, with RINGTRACE_TEST_CONTROL_TARGET (tests/control's
# control_target, a program that links ringtrace), what a process answers.
case_run pid_target 2 "${tool}" record --pid abc
case_run pid_empty 2 "${tool}" record --pid ''
case_run pid_option 2 "${tool}" record --pid 1 --bogus
case_run pid_for 2 "${tool}" record --pid 1 --for soon
case_run pid_policy 2 "${tool}" record --pid 1 --policy often
case_run pid_output 2 "${tool}" record --pid 1 -o ''
case_run snapshot_usage 2 "${tool}" snapshot
case_run snapshot_option 2 "${tool}" snapshot 1 --bogus
case_run snapshot_two 2 "${tool}" snapshot 1 2
case_run top_usage 2 "${tool}" top
case_run top_option 2 "${tool}" top 1 --bogus
case_run top_interval 2 "${tool}" top 1 --interval 10ms
case_run top_sort 2 "${tool}" top 1 --sort most
case_run no_process 1 "${tool}" snapshot 999999999
sleep 300 &
sleeper=$!
RINGTRACE_CONTROL=off sleep 300 &
sleeper_off=$!
case_run no_channel 1 "${tool}" snapshot "${sleeper}"
case_run channel_off 1 "${tool}" top "${sleeper_off}"
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  case_run other_user 1 setpriv --reuid=65534 --regid=65534 --clear-groups "${tool}" snapshot "${sleeper}"
fi
kill "${sleeper}" "${sleeper_off}"
wait "${sleeper}" "${sleeper_off}" 2>/dev/null
target="${RINGTRACE_TEST_CONTROL_TARGET:-}"
# start_target NAME ARGS...: control_target with ARGS, its commands from NAME.in (held
# open on descriptor target_fd); sets target_pid when it said "ready".
start_target() {
  local name="$1"; shift
  mkfifo "${name}.in"
  "${target}" "$@" <"${name}.in" >"${name}.said" 2>"${name}.target" &
  target_pid=$!
  exec {target_fd}>"${name}.in"
  for ((k = 0; k < 600; k++)); do
    grep -q '^ready ' "${name}.said" && return 0
    sleep 0.1
  done
  fail "control_target ${*} did not start: $(cat "${name}.target")"
}
stop_target() {
  echo quit >&"${target_fd}"
  exec {target_fd}>&-
  wait "${target_pid}" || fail "control_target exited $?"
}
if [[ -n "${target}" ]]; then
  start_target idle idle
  case_run snapshot_none 1 "${tool}" snapshot "${target_pid}"
  case_run pid_nodir 1 "${tool}" record --pid "${target_pid}" --for 100ms -o nodir/x.rtrace
  case_run pid_done 0 "${tool}" record --pid "${target_pid}" --for 100ms -o pid.rtrace
  stop_target
  mkdir -p own
  start_target recorder recorder 200 1000 "${work}/own"
  case_run pid_running 1 "${tool}" record --pid "${target_pid}" --for 100ms -o no.rtrace
  case_run snapshot_done 0 "${tool}" snapshot "${target_pid}" -o snap.rtrace
  stop_target
  start_target binary binary 1000 "${work}/own/binary.rtrace"
  case_run top_binary 1 "${tool}" top "${target_pid}" --count 1
  stop_target
fi
python3 - "${source}" "${tool}" "${work}" <<'PY' || fail "docs/tool-messages.md does not match the tool (above)"
import glob, os, re, subprocess, sys
source, tool, work = sys.argv[1:]
doc = open(os.path.join(source, "docs", "tool-messages.md")).read()
problems = []

# Every command of --help, and each command's usage line.
listing = subprocess.run([tool, "--help"], capture_output=True, text=True).stdout.splitlines()
if listing[0] not in doc:
    problems.append("the tool's usage line is not in the page: " + listing[0])
commands = [l.split()[0] for l in listing[listing.index("commands:") + 1:] if l.startswith("  ") and l.strip()]
assert len(commands) >= 7, commands
for c in commands:
    usage = subprocess.run([tool, c, "--help"], capture_output=True, text=True).stdout.splitlines()[0]
    if usage not in doc.splitlines():
        problems.append("%s: its usage line is not a line of the page: %s" % (c, usage))

# The texts the tool can print: its sources' string literals (adjacent ones joined, escapes
# read), and what it printed in this test.
def literals(text):
    """The string literals of C++ source, escapes read, those with only spaces, comments or
    a '+' between them joined ("a" "b" and s + "a" + "b" print "ab"); comments and
    character literals skipped (digit separators too)."""
    out, joined, i, n = [], None, 0, len(text)
    char = re.compile(r"'(\\.|[^'\\\n])'")
    string = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    between = True  # nothing but spaces and comments since the last literal
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == "'":
            m = char.match(text, i)
            i = m.end() if m and not (i > 0 and text[i - 1].isalnum()) else i + 1
            between = False
        elif text[i] == '"':
            m = string.match(text, i)
            if not m:
                i += 1
                continue
            value = m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
            if joined is not None and between:
                joined += value
            else:
                if joined is not None:
                    out.append(joined)
                joined = value
            between = True
            i = m.end()
        else:
            if not text[i].isspace() and text[i] != "+":
                between = False
            i += 1
    if joined is not None:
        out.append(joined)
    return out
corpus = []
for pattern in ("tools/*.cpp", "tools/*.hpp", "runtime/**/*.cpp", "runtime/**/*.hpp", "exporters/**/*.cpp"):
    for path in glob.glob(os.path.join(source, pattern), recursive=True):
        corpus += literals(open(path, encoding="utf-8").read())
printed = [open(p, errors="replace").read() for p in glob.glob(os.path.join(work, "**", "*.err"), recursive=True)]
printed += [open(p, errors="replace").read() for p in glob.glob(os.path.join(work, "**", "*.out"), recursive=True)]
corpus += printed

# The tables' rows: the message (the first cell's first `...`), the exit column, and
# whether it is one of the reader's problems (the last section).
rows = []
section = ""
for line in doc.splitlines():
    if line.startswith("## "):
        section = line
    cells = [c.strip() for c in re.split(r'(?<!\\)\|', line)[1:-1]]
    if len(cells) < 2 or not cells[0].startswith("`"):
        continue
    message = re.match(r'`([^`]*)`', cells[0]).group(1)
    goes_on = cells[0].rstrip().endswith("...")
    rows.append((message, cells[1] if len(cells) == 3 else "", goes_on, section.startswith("## What the reader says")))
assert len(rows) > 60, len(rows)
for message, _, _, _ in rows:
    for fragment in re.split(r'<[^>]*>|\.\.\.$', message):
        # A leading ": " is the tool's own joint between a name and what follows it
        # (`<process>: <what the process answered>`), not part of the words after it.
        fragment = fragment.strip().removeprefix(":").strip()
        if fragment and not any(fragment in text for text in corpus):
            problems.append("not in the tool's sources nor its output: '%s' (of '%s')" % (fragment, message))

# Each case's first line of standard error matches a row (the most specific: the most fixed
# words; rows of fewer than four fixed letters match nothing) whose exit column holds the
# status the case exited with. `<problem>` is one of the reader's problems.
def regex_of(message, goes_on, problem=".*"):
    parts = re.split(r'(<[^>]*>)', message)
    regex = "".join(problem if p == "<problem>" else ".*" if p.startswith("<") and p.endswith(">") else re.escape(p)
                    for p in parts)
    return regex + (".*" if goes_on else "")
problem = "(?:" + "|".join(regex_of(m, g) for m, _, g, reader in rows if reader) + ")"
def fixed(message):  # its fixed words' length; a reader's problem counts as many
    return len(re.sub(r'<[^>]*>', '', message)) + (40 if "<problem>" in message else 0)
compiled = [(re.compile(regex_of(m, g, problem), re.S), m, e) for m, e, g, reader in rows
            if not reader and (len(re.findall(r'[A-Za-z]', re.sub(r'<[^>]*>', '', m))) >= 4 or "<problem>" in m)]
for line in open(os.path.join(work, "cases.txt")):
    name, want, got = line.split()
    err = open(os.path.join(work, "cases", name + ".err"), errors="replace").read().splitlines()
    if not err:
        problems.append("case %s: nothing on standard error" % name)
        continue
    first = err[0]
    bare = re.sub(r'^ringtrace [a-z]+: ', '', first)
    found = [(fixed(m), m, e) for p, m, e in compiled if p.fullmatch(first) or p.fullmatch(bare)]
    if not found:
        problems.append("case %s: no row of the page says '%s'" % (name, first))
        continue
    _, message, exit_cell = max(found)
    if got not in re.findall(r'[0-9]+', exit_cell):
        problems.append("case %s exited %s; the page's row '%s' says '%s'" % (name, got, message, exit_cell))
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY

if ((failures > 0)); then echo "messages_tests: ${failures} failure(s)"; exit 1; fi
echo "messages_tests: all checks passed"
