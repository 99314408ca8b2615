#!/usr/bin/env bash
# `ringtrace record` on programs that include nothing of ringtrace (record_app.cpp, built
# with -finstrument-functions and linked with ringtrace::functions):
#   record_tests.sh <ringtrace> <record_app> <record_own_session> <strip> <source dir> <work dir> <compiler id>
set -euo pipefail
tool="$1"; app="$2"; own="$3"; strip="$4"; src="$5"; work="$6"; compiler="$7"
rm -rf "${work}"
mkdir -p "${work}"
cd "${work}"
fail() { echo "record_tests: $*" >&2; exit 1; }
# run OUT ERR COMMAND...: runs it with its output and errors in OUT and ERR, its status in $s.
run() { local out="$1" err="$2"; shift 2; s=0; "$@" >"${out}" 2>"${err}" || s=$?; }

# The program's own output and status come through; every output is written.
run out.txt err.txt "${tool}" record -o run.rtrace --pstats run.prof --chrome run.json -- "${app}" 50
[[ "${s}" == 7 ]] || { cat err.txt; fail "status ${s}, not the program's 7"; }
sum=0
for ((i = 0; i < 50; ++i)); do sum=$((sum + i % 7 + (i + 1) % 7)); done
[[ "$(cat out.txt)" == "${sum}" ]] || fail "the program's output: $(cat out.txt), not ${sum}"
grep -q "^ringtrace record: wrote run.rtrace (.*), run.prof (.*), run.json (.*) in .* from .*functions_record_app (exit status 7)$" err.txt \
  || { cat err.txt; fail "no summary line"; }
for f in run.rtrace run.prof run.json; do [[ -s "${f}" ]] || fail "${f} not written"; done

# Names, files and lines; exact calls; pstats equal to cProfile on the same call tree.
python3 "${src}/check_cprofile.py" run.json run.prof "app::run(int)=1" "app::work(int)=50" \
  "app::Tokenizer::next(int)=100" "main=1" || fail "pstats against cProfile"
"${tool}" report run.rtrace >report.txt 2>&1 || { cat report.txt; fail "report"; }
grep -Eq "^app::Tokenizer::next\(int\) .* 100$" report.txt || { cat report.txt; fail "report: Tokenizer::next"; }
# g++ calls the hooks of widen(), inlined into work(): left out, counted and listed by
# function, in report and info; clang's flags never instrument it (nothing to list).
if [[ "${compiler}" == GNU ]]; then
  grep -q "^Calls left out: 50 of functions g++ inlined" report.txt || { cat report.txt; fail "report: inlined calls not counted"; }
  grep -Eq "^ +50  app::widen\(int\)$" report.txt || { cat report.txt; fail "report: widen not listed"; }
  "${tool}" info run.rtrace | grep "^functions: *Calls left out: 50 of functions g++ inlined" >/dev/null \
    || { "${tool}" info run.rtrace; fail "info: inlined calls"; }
  grep -q "app::widen" run.json && fail "widen's calls are in the Chrome trace"
  "${tool}" record -o kept.rtrace --inlined -- "${app}" 50 >/dev/null 2>&1 || true
  "${tool}" report kept.rtrace >kept.txt 2>&1
  grep -Eq "^app::widen\(int\) .* 50$" kept.txt || { cat kept.txt; fail "record --inlined: widen not recorded"; }
  grep -q "^Calls left out" kept.txt && { cat kept.txt; fail "record --inlined: calls left out"; }
else
  grep -q "^Calls left out" report.txt && { cat report.txt; fail "report: calls left out under ${compiler}"; }
  grep -q "widen" report.txt && { cat report.txt; fail "report: widen listed under ${compiler}"; }
fi
# The binary file converts to the same pstats numbers.
"${tool}" convert run.rtrace --pstats again.prof 2>/dev/null
python3 - run.prof again.prof <<'PY' || fail "the file's pstats differ from the live session's"
import pstats, sys
a, b = (pstats.Stats(p).stats for p in sys.argv[1:])
assert set(a) == set(b), (set(a) ^ set(b))
for k in a:
    assert a[k][:2] == b[k][:2], (k, a[k][:2], b[k][:2])
PY

# The variables by hand, without the tool; "%p" is the process id.
run /dev/null hand.err env RINGTRACE_OUTPUT="hand-%p.rtrace" RINGTRACE_MAX_DEPTH=2 "${app}" 10
[[ "${s}" == 7 ]] || fail "by hand: status ${s}"
ls hand-*.rtrace >/dev/null 2>&1 || { cat hand.err; fail "RINGTRACE_OUTPUT by hand wrote nothing"; }
"${tool}" convert hand-*.rtrace --folded hand.folded 2>/dev/null
grep -q "app::Tokenizer::next" hand.folded && fail "RINGTRACE_MAX_DEPTH=2 kept a call 3 deep"
grep -q "^main;app::run(int) " hand.folded || { cat hand.folded; fail "by hand: main;app::run"; }
run /dev/null bad.err env RINGTRACE_OUTPUT="nothing.txt" "${app}" 1
[[ "${s}" == 7 ]] || fail "a wrong RINGTRACE_OUTPUT stops the program"
grep -q "^ringtrace: RINGTRACE_OUTPUT: 'nothing.txt' names no format.*; this run is not recorded$" bad.err \
  || { cat bad.err; fail "a wrong RINGTRACE_OUTPUT is not said"; }

# Filters through the tool: left out of the decoded outputs (the binary file keeps all).
"${tool}" record --pstats filtered.prof --exclude 'Tokenizer' -- "${app}" 20 >/dev/null 2>&1 || true
python3 - filtered.prof <<'PY' || fail "--exclude"
import pstats, sys
names = {k[2]: v for k, v in pstats.Stats(sys.argv[1]).stats.items()}
assert "app::Tokenizer::next(int)" not in names, names
assert names["app::work(int)"][1] == 20, names
PY

# A program that starts a Session of its own: told so, recorded by the one session.
run own.out own.err "${tool}" record -o own.rtrace -- "${own}" 20
[[ "${s}" == 7 ]] || { cat own.err; fail "own session: status ${s}"; }
grep -q "own session running: 0" own.out || fail "the program's own session runs too"
grep -q "^ringtrace: this process is recorded from the environment (RINGTRACE_OUTPUT=own.rtrace)" own.err \
  || { cat own.err; fail "no message for the program's own session"; }
"${tool}" convert own.rtrace --folded own.folded 2>/dev/null
grep -q "app::work(int)" own.folded || fail "own session: the calls are not in the environment's file"

# A stripped program: module+0x names, never a crash; named again from the unstripped
# binary (same build id) found with --symbols-path.
mkdir -p stripped
"${strip}" --strip-all -o "stripped/$(basename "${app}")" "${app}"
run /dev/null stripped.err "${tool}" record -o stripped.rtrace -- "stripped/$(basename "${app}")" 5
[[ "${s}" == 7 ]] || { cat stripped.err; fail "stripped: status ${s}"; }
"${tool}" convert stripped.rtrace --folded stripped.folded 2>/dev/null
grep -q "functions_record_app+0x[0-9a-f]*;" stripped.folded || { cat stripped.folded; fail "stripped: no module+0x names"; }
"${tool}" convert stripped.rtrace --symbols-path "$(dirname "${app}")" --folded named.folded 2>/dev/null
grep -q "^main;app::run(int);app::work(int);app::Tokenizer::next(int) " named.folded \
  || { cat named.folded; fail "--symbols-path: not named from the unstripped copy"; }

# Programs the tool cannot record.
run /dev/null none.err "${tool}" record -o none.rtrace -- /bin/true
[[ "${s}" == 1 ]] || fail "a program that does not link ringtrace: status ${s}"
grep -q "^ringtrace record: /bin/true (exit status 0) did not write none.rtrace: it does not link ringtrace" none.err \
  || { cat none.err; fail "no message for a program that does not link ringtrace"; }
run /dev/null missing.err "${tool}" record -o x.rtrace -- ./no-such-program
[[ "${s}" == 127 ]] || fail "a program that does not exist: status ${s}"
run /dev/null usage.err "${tool}" record -o x.rtrace
[[ "${s}" == 2 ]] || fail "no program: status ${s}"
echo "record_tests: all passed"
