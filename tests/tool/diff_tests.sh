#!/usr/bin/env bash
# diff_tests.sh <ringtrace tool> <diff_stats program> <diff_crafted> <python3 with scipy> <work dir> [traced suite]:
# `ringtrace diff` on real recordings of bench/diff_stats.cpp (five zones; --slow ZONE:P
# makes one zone's work P% longer), each result checked by check_diff.py against its own
# reading of the files (tools/python/rtrace.py) and scipy's mannwhitneyu: U, p, medians,
# p99s, verdicts, order, CSV = JSON; folders of runs (the runs' test), single files, small
# samples and crafted durations (the exact distribution, ties, zones of one side), a file against itself, --threshold, --samples; the
# exit statuses (3 on a regression only); the errors; and, given a Google Benchmark suite
# traced by ringtrace::benchmark, a row per benchmark and zone.
set -uo pipefail
tool="$1"; subject="$2"; crafted="$3"; python="$4"; work="$5"; suite="${6:-}"
check="$(cd "$(dirname "$0")" && pwd)/check_diff.py"
rm -rf "${work}"; mkdir -p "${work}"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"${python}" -c 'import scipy' || { echo "FAIL: ${python} has no scipy (python3-scipy, scripts/debian-packages.txt)"; exit 1; }
# diff_run NAME STATUS ARGS...: ringtrace diff ARGS, its output in NAME.out/.err, its status checked.
diff_run() {
  local name="$1" want="$2"; shift 2
  local s=0
  "${tool}" diff "$@" >"${name}.out" 2>"${name}.err" || s=$?
  [[ ${s} -eq ${want} ]] || fail "diff $*: status ${s}, not ${want}: $(cat "${name}.err")"
}

# Four runs a side (the fewest whose runs' test can reach p < 0.05), alternated; NEW's
# `work` 30% longer.
mkdir -p base new
for r in 1 2 3 4; do
  "${subject}" "base/run${r}.rtrace" --calls 150 || fail "diff_stats exits $?"
  "${subject}" "new/run${r}.rtrace" --calls 150 --slow work:30 || fail "diff_stats exits $?"
done
diff_run runs 3 base new --json runs.json --csv runs.csv
"${python}" "${check}" base new runs.json runs.csv || fail "check_diff of base/ and new/"
grep -q '"zone":"work","verdict":"regression"' runs.json || fail "work 30% slower is not a regression: $(cat runs.out)"
grep -q '^work .* SLOWER$' runs.out || fail "the text: $(cat runs.out)"
grep -q '^Slower beyond 5.0%: [0-9]* zones\? (exit status 3)$' runs.out || fail "the text's last line: $(tail -1 runs.out)"
grep -q "4 a side are the fewest whose exact test reaches 0.05" runs.out || fail "the runs' note: $(cat runs.out)"
# Four runs against three (the runs' test exact, or normal where run medians tie).
mkdir -p three && cp new/run1.rtrace new/run2.rtrace new/run3.rtrace three/
s=0; "${tool}" diff base three --json three.json >three.out 2>&1 || s=$?
[[ ${s} -eq 0 || ${s} -eq 3 ]] || fail "diff of 4 runs against 3: status ${s}"
"${python}" "${check}" base three three.json || fail "check_diff of 4 runs against 3"

# One file a side: the calls' test alone, said.
diff_run single 3 base/run1.rtrace new/run1.rtrace --json single.json --csv single.csv
"${python}" "${check}" base/run1.rtrace new/run1.rtrace single.json single.csv || fail "check_diff of single files"
grep -q "^One run on a side: the test is over calls" single.out || fail "the one-run note: $(cat single.out)"

# Few calls: U's exact distribution (a side of at most 8, no ties) and the minimum of 2.
for n in 1 2 3 5 8; do
  "${subject}" "few${n}.rtrace" --calls "${n}"
  "${subject}" "few${n}b.rtrace" --calls $((n + 1)) --slow work:30
  s=0; "${tool}" diff "few${n}.rtrace" "few${n}b.rtrace" --json "few${n}.json" >/dev/null 2>&1 || s=$?
  [[ ${s} -eq 0 || ${s} -eq 3 ]] || fail "diff of ${n} calls: status ${s}"
  "${python}" "${check}" "few${n}.rtrace" "few${n}b.rtrace" "few${n}.json" || fail "check_diff of ${n} calls"
done
grep -q '"verdict":"too_few_calls"' few1.json || fail "1 call a side: no test (compare.py's minimum of 2)"
cat few*.json | grep '"exact":true' >/dev/null || fail "no small sample took the exact distribution"

# Chosen durations (diff_crafted.cpp): U's exact distribution with a large side (5 against
# 300, 8 against 400, no ties), ties in small samples, and zones on one side only.
"${crafted}" crafted || fail "diff_crafted exits $?"
for pair in exact wide ties; do
  s=0; "${tool}" diff "crafted/${pair}_a.rtrace" "crafted/${pair}_b.rtrace" --json "${pair}.json" --csv "${pair}.csv" \
    >"${pair}.out" 2>&1 || s=$?
  [[ ${s} -eq 0 || ${s} -eq 3 ]] || fail "diff of crafted ${pair}: status ${s}: $(cat "${pair}.out")"
  "${python}" "${check}" "crafted/${pair}_a.rtrace" "crafted/${pair}_b.rtrace" "${pair}.json" "${pair}.csv" \
    || fail "check_diff of crafted ${pair}"
  grep -q '"zone":"gone","verdict":"only_base"' "${pair}.json" && grep -q '"zone":"new","verdict":"only_new"' "${pair}.json" \
    || fail "${pair}: the zones of one side: $(cat "${pair}.out")"
done
grep -q '"zone":"w","verdict":"[a-z_]*","base_calls":5,"new_calls":300,.*"exact":true' exact.json || fail "5 against 300: not exact"
grep -q '"zone":"w",.*"base_calls":8,"new_calls":400,.*"exact":true' wide.json || fail "8 against 400: not exact"
grep -q '"zone":"w",.*"exact":false' ties.json || fail "ties: exact"
grep -q '^gone .* only in BASE$' exact.out && grep -q '^new .* only in NEW$' exact.out || fail "only in: $(cat exact.out)"

# A file against itself: every p is 1, nothing flagged, status 0.
diff_run same 0 base/run1.rtrace base/run1.rtrace --json same.json
"${python}" - same.json <<'PY' || fail "a file against itself"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
bad = [r for r in rows if r["p_value"] != 1 or r["verdict"] != "not_significant" or r["median_change"] != 0]
sys.exit(1 if bad or len(rows) != 5 else 0)
PY
grep -q '^No zone is significantly slower beyond 5.0%.$' same.out || fail "same: $(tail -1 same.out)"

# --threshold 50%: a 30% slowdown is significant but within it: status 0.
diff_run threshold 0 base new --threshold 50% --json threshold.json
"${python}" "${check}" base new threshold.json --threshold 0.5 || fail "check_diff with --threshold 50%"
grep -q '"zone":"work","verdict":"below_threshold"' threshold.json || fail "--threshold 50%: $(cat threshold.out)"

# --samples 100 of 600 calls a side: a uniform sample, said; the counts are every call.
diff_run sampled 3 base new --samples 100 --json sampled.json
"${python}" "${check}" base new sampled.json --samples 100 || fail "check_diff with --samples 100"
grep -q '^\*: more than 100 calls on that side (5 zones): its statistics are of a uniform random sample of 100' sampled.out \
  || fail "the sample's note: $(cat sampled.out)"

# Standard output: the CSV in place of the text.
diff_run csv_stdout 3 base new --csv -
head -1 csv_stdout.out | grep -q '^benchmark,zone,verdict,' || fail "--csv -: $(head -2 csv_stdout.out)"

# Errors: the command line (2), an input (1), a file cut short (1, what was read compared).
diff_run usage 2 base
grep -q '^usage: ringtrace diff BASE NEW' usage.err || fail "usage: $(cat usage.err)"
diff_run bad_threshold 2 base new --threshold much
grep -qx "ringtrace diff: --threshold takes a percentage (5%, 2.5%), not 'much'" bad_threshold.err || fail "$(cat bad_threshold.err)"
diff_run bad_alpha 2 base new --alpha 2
diff_run two_stdout 2 base new --csv - --json -
diff_run bad_samples 2 base new --samples 10
diff_run missing 1 base nothing.rtrace
mkdir -p empty
diff_run empty 1 base empty
grep -qx "ringtrace diff: 'empty' holds no .rtrace file" empty.err || fail "empty: $(cat empty.err)"
size=$(stat -c %s new/run1.rtrace)
head -c $((size / 2)) new/run1.rtrace >cut.rtrace
diff_run cut 1 base/run1.rtrace cut.rtrace --json cut.json
grep -q '^ringtrace diff: cut.rtrace: file cut short at byte' cut.err || fail "cut: $(cat cut.err)"
grep -q '"problems":\["cut.rtrace: file cut short' cut.json || fail "cut: the JSON's problems"

# Google Benchmark traces (ringtrace::benchmark, --ringtrace_format=rtrace): a row per
# benchmark and zone, the benchmark named by the file's metadata.
if [[ -n "${suite}" ]]; then
  for side in suite_base suite_new; do
    "${suite}" --ringtrace_out="${side}" --ringtrace_format=rtrace --benchmark_min_time=0.01 \
      --benchmark_filter='BM_three_zones|BM_n_zones/4' >/dev/null || fail "the suite exits $?"
  done
  s=0; "${tool}" diff suite_base suite_new --json suite.json >suite.out 2>suite.err || s=$?
  [[ ${s} -eq 0 || ${s} -eq 3 ]] || fail "diff of the suite's traces: status ${s}: $(cat suite.err)"
  "${python}" - suite.json <<'PY' || fail "the suite's rows: $(cat suite.out)"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
benchmarks = {r["benchmark"] for r in rows}
print(sorted(benchmarks), sorted({(r["benchmark"], r["zone"]) for r in rows}))
sys.exit(0 if benchmarks == {"BM_three_zones", "BM_n_zones/4"} and all(r["verdict"] not in ("only_base", "only_new") for r in rows) else 1)
PY
  head -2 suite.out | tail -1 | grep -q '^Benchmark  *Zone ' || fail "no Benchmark column: $(head -3 suite.out)"
fi

if ((failures > 0)); then echo "diff_tests: ${failures} failure(s)"; exit 1; fi
echo "diff_tests: all checks passed"
