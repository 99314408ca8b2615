#!/usr/bin/env bash
# record_switches_tests.sh <ringtrace tool> <record_child> <refuse_perf> <perf_refusal> <work dir>:
# `ringtrace record --context-switches`.
#   - Where the kernel refuses switch records (here a seccomp filter, refuse_perf, as a
#     container's profile or perf_event_paranoid 3 would): the run is recorded all the
#     same, the tool says so once (one line for a script that runs two recorded
#     programs), and each file says why it has no switches (info).
#   - Where it gives them: a function that sleeps 20 ms per call shows, in `report`, an
#     on-CPU time far below its wall time; without the option there are no on-CPU columns.
#     Skipped (status 77, saying why) only where the machine refuses perf_event_open
#     (perf_refusal: EACCES or EPERM, perf_event_paranoid above 2, not root); any other
#     failure to open a stream fails.
set -uo pipefail
tool="$1"; child="$2"; refuse="$3"; perf_refusal="$4"; work="$5"
rm -rf "${work}"; mkdir -p "${work}"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME COMMAND...: runs it with its output and errors in NAME.out and NAME.err, its status in $s.
run() { local name="$1"; shift; s=0; timeout 60 "$@" >"${name}.out" 2>"${name}.err" || s=$?; }
refusal_line='^ringtrace record: --context-switches: the kernel refuses context switch records here \(perf_event_open: .*\); recording without on-CPU times$'

# --- Refused: recorded all the same, said once --------------------------------------------
run refused "${refuse}" "${tool}" record --context-switches -o 'r.%p.rtrace' -- sh -c "'${child}' sleep; '${child}' 0"
[[ ${s} -eq 0 ]] || fail "refused: status ${s}: $(cat refused.err)"
[[ $(grep -Ec "${refusal_line}" refused.err) -eq 1 ]] || fail "refused: not said once: $(cat refused.err)"
[[ $(grep -c 'context switch' refused.err) -eq 1 ]] || fail "refused: said more than once: $(cat refused.err)"
grep -q '^ringtrace record: wrote r\.[0-9]*\.rtrace (.*), r\.[0-9]*\.rtrace (.*) in ' refused.err \
  || fail "refused: the two files are not reported: $(cat refused.err)"
files=(r.*.rtrace)
[[ ${#files[@]} -eq 2 ]] || fail "refused: files: ${files[*]}"
for f in "${files[@]}"; do
  "${tool}" info "${f}" >"${f}.info" || fail "refused: info ${f} exits $?"
  grep -q '^status: *complete$' "${f}.info" || fail "refused: ${f} is not complete: $(cat "${f}.info")"
  grep -q '^switches: *unavailable: perf_event_open: Operation not permitted' "${f}.info" \
    || fail "refused: ${f} does not say why it has no switches: $(cat "${f}.info")"
done
for f in "${files[@]}"; do
  "${tool}" report "${f}" >"${f}.report" 2>&1 || fail "refused: report ${f} exits $?"
  grep -q 'On-CPU' "${f}.report" && fail "refused: ${f} has on-CPU columns: $(cat "${f}.report")"
  grep -Eq '^(sleeper|child_work) ' "${f}.report" || fail "refused: ${f}'s zones are not recorded: $(cat "${f}.report")"
done

if ((failures > 0)); then echo "record_switches_tests: ${failures} failure(s)"; exit 1; fi

# --- Given: on-CPU time far below wall time -----------------------------------------------
perf_access=0
perf_why="$("${perf_refusal}")" || perf_access=$?
if ((perf_access == 77)); then
  echo "SKIPPED: the on-CPU half of record_switches_tests did not run: ${perf_why}"
  exit 77
fi
((perf_access == 0)) || { echo "FAIL: given: ${perf_why}"; exit 1; }
run given "${tool}" record --context-switches -o s.rtrace -- "${child}" sleep
[[ ${s} -eq 0 ]] || fail "given: status ${s}: $(cat given.err)"
grep -Eq "${refusal_line}" given.err && fail "given: a stream opens here, yet record says: $(cat given.err)"
[[ $(wc -l <given.err) -eq 1 ]] || fail "given: more than the summary line: $(cat given.err)"
"${tool}" info s.rtrace >s.info || fail "given: info exits $?"
grep -Eq '^switches: *[1-9][0-9]* context switches' s.info || fail "given: the file has no switches: $(cat s.info)"
"${tool}" report s.rtrace >s.report 2>&1 || fail "given: report exits $?"
# The sleeper row: Total (wall) and On-CPU Total, from the aligned text table.
python3 - s.report <<'PY' || fail "given: $(cat s.report)"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
header = next(l for l in lines if l.startswith("Name "))
columns = re.split(r"\s{2,}", header.strip())
assert "On-CPU Total" in columns, ("no On-CPU Total column", columns)
row = next(l for l in lines if l.startswith("sleeper "))
cells = re.split(r"\s{2,}", row.strip())
assert len(cells) == len(columns), (columns, cells)
def ns(text):
    value, unit = re.fullmatch(r"([0-9.]+)\s*(s|ms|us|ns)", text).groups()
    return float(value) * {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}[unit]
wall, on_cpu = ns(cells[columns.index("Total")]), ns(cells[columns.index("On-CPU Total")])
calls = int(cells[columns.index("Calls")])
assert calls == 5, ("calls", calls)
assert wall >= 5 * 20e6, ("wall time below five 20 ms sleeps", wall)
# Five sleeps: a few wake-ups' worth of CPU, microseconds; far below a tenth of the wall
# time even on a loaded machine (where a wake-up may wait for a CPU: preempted, off-CPU too).
assert on_cpu < wall / 10, ("on-CPU time not far below wall time", on_cpu, wall)
print(f"sleeper: wall {wall / 1e6:.3f} ms, on-CPU {on_cpu / 1e6:.3f} ms")
PY
# Without the option: no switches, no on-CPU columns.
run plain "${tool}" record -o p.rtrace -- "${child}" sleep
[[ ${s} -eq 0 ]] || fail "plain: status ${s}: $(cat plain.err)"
"${tool}" report p.rtrace >p.report 2>&1 || fail "plain: report exits $?"
grep -q 'On-CPU' p.report && fail "plain: on-CPU columns without --context-switches: $(cat p.report)"
grep -q '^sleeper ' p.report || fail "plain: no sleeper row: $(cat p.report)"

if ((failures > 0)); then echo "record_switches_tests: ${failures} failure(s)"; exit 1; fi
echo "record_switches_tests: all checks passed"
