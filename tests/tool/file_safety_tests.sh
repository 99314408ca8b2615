#!/usr/bin/env bash
# file_safety_tests.sh <ringtrace tool> <record_all> <work dir>: files ringtrace must not
# write, block on, or mix (docs/reliability.md): links planted at every path an output
# takes, FIFOs and devices as inputs and outputs (each command under `timeout`, so a
# hang fails instead of blocking CI), an output on the input itself or two outputs on one
# file, and two processes recording to the same paths at once.
set -uo pipefail
tool="$1"; record="$2"; work="$3"
rm -rf "${work}"; mkdir -p "${work}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
"${record}" "${work}" >/dev/null || { echo "record_all failed"; exit 1; }
run="${work}/run.rtrace"

# expect_refused <what> <word the message must hold> <command...>: exits non-zero (not
# 124: timeout's, a hang) within 10 s, one line on standard error naming `word`.
expect_refused() {
  local what="$1" word="$2"; shift 2
  timeout 10 "$@" >"${work}/out.txt" 2>"${work}/err.txt"
  local status=$?
  if [[ ${status} -eq 124 ]]; then fail "${what}: hangs"; return; fi
  [[ ${status} -ne 0 ]] || fail "${what}: exits 0"
  grep -qF -- "${word}" "${work}/err.txt" || fail "${what}: message does not name ${word}: $(cat "${work}/err.txt")"
}

# --- Links planted where outputs go: their targets are never written ----------------
echo precious >"${work}/victim"
echo also precious >"${work}/victim2"
ln -s "${work}/victim" "${work}/linked.json"                # at the output
ln -s "${work}/victim2" "${work}/planted.json.partial"       # at the temporary's old name
"${tool}" convert "${run}" --chrome "${work}/linked.json" --folded "${work}/planted.json" \
  || fail "convert over links exits $?"
[[ "$(cat "${work}/victim")" == precious && "$(cat "${work}/victim2")" == "also precious" ]] \
  || fail "a link's target was written"
[[ -f "${work}/linked.json" && ! -L "${work}/linked.json" ]] || fail "the link at the output was not replaced"
[[ -L "${work}/planted.json.partial" ]] || fail "the planted link was touched"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "${work}/linked.json" || fail "linked.json is not the trace"
ls "${work}"/*.partial.* >/dev/null 2>&1 && fail "temporaries left: $(ls "${work}"/*.partial.*)"
# merge writes OUT.partial (runtime/file): a link there is refused, not written through.
ln -s "${work}/victim" "${work}/merged.rtrace.partial"
expect_refused "merge over a planted .partial link" "merged.rtrace.partial" \
  "${tool}" merge "${run}" -o "${work}/merged.rtrace"
[[ "$(cat "${work}/victim")" == precious ]] || fail "merge wrote through a planted link"

# --- FIFOs and devices: refused at once, naming the file ------------------------------
mkfifo "${work}/in.fifo" "${work}/out.fifo"
ln -s "${work}/out.fifo" "${work}/link-to-fifo.json"
expect_refused "info of a FIFO" "in.fifo" "${tool}" info "${work}/in.fifo"
expect_refused "report of a FIFO" "in.fifo" "${tool}" report "${work}/in.fifo"
expect_refused "convert of a FIFO" "in.fifo" "${tool}" convert "${work}/in.fifo" --chrome "${work}/never.json"
expect_refused "merge of a FIFO" "in.fifo" "${tool}" merge "${run}" "${work}/in.fifo" -o "${work}/never.rtrace"
expect_refused "convert to a FIFO" "out.fifo" "${tool}" convert "${run}" --chrome "${work}/out.fifo"
expect_refused "convert to a link to a FIFO" "link-to-fifo.json" "${tool}" convert "${run}" --folded "${work}/link-to-fifo.json"
expect_refused "convert to a device" "/dev/null" "${tool}" convert "${run}" --table /dev/null
expect_refused "merge to a FIFO" "out.fifo" "${tool}" merge "${run}" -o "${work}/out.fifo"
expect_refused "info of a directory" "${work}" "${tool}" info "${work}"
expect_refused "standard input" "'-'" "${tool}" info -
[[ ! -e "${work}/never.json" && ! -e "${work}/never.rtrace" ]] || fail "a refused command wrote its output"
# The ring file read beside a cut input: a FIFO there is refused too.
head -c $(( $(stat -c %s "${run}") / 2 )) "${run}" >"${work}/cut.rtrace"
mkfifo "${work}/cut.rtrace.rings"
expect_refused "a FIFO as the ring file" "cut.rtrace.rings" "${tool}" info "${work}/cut.rtrace"
"${tool}" info "${work}/cut.rtrace" --no-rings >/dev/null || fail "info --no-rings reads no ring file"
# Standard output through '-': still fine.
"${tool}" convert "${run}" --folded - >"${work}/stdout.folded" && [[ -s "${work}/stdout.folded" ]] \
  || fail "convert to standard output"

# --- An output on the input, or two outputs on one file: refused before any work ------
cp "${run}" "${work}/self.rtrace"
ln "${work}/self.rtrace" "${work}/hard.json"
ln -s "${work}/self.rtrace" "${work}/soft.json"
base="$(basename "${work}")"
for out in "${work}/self.rtrace" "${work}/../${base}/self.rtrace" "${work}/./self.rtrace" "${work}/hard.json" \
           "${work}/soft.json"; do
  expect_refused "convert onto its input (${out})" "is the input file" \
    "${tool}" convert "${work}/self.rtrace" --chrome "${out}"
done
cmp -s "${run}" "${work}/self.rtrace" || fail "the recording was overwritten"
expect_refused "two outputs on one file" "--chrome and --folded both write" \
  "${tool}" convert "${run}" --chrome "${work}/o.txt" --folded "${work}/o.txt"
expect_refused "two outputs on one file, spelled apart" "--summary and --table both write" \
  "${tool}" convert "${run}" --summary "${work}/../${base}/o.txt" --table "${work}/o.txt"
expect_refused "two outputs on standard output" "standard output" \
  "${tool}" convert "${run}" --folded - --table -
[[ ! -e "${work}/o.txt" ]] || fail "a refused convert wrote its output"
expect_refused "merge onto its input" "is also an input" "${tool}" merge "${run}" -o "${run}"

# --- Two processes recording to the same paths at once -------------------------------
# Both start (each has written its files at least once) before either stops; beta
# stops first, alpha last: alpha owns every path, each file whole and valid.
shared="${work}/shared"
mkdir -p "${shared}"
for w in alpha beta; do mkfifo "${shared}/${w}.in" "${shared}/${w}.out"; done
"${record}" "${shared}" writer alpha <"${shared}/alpha.in" >"${shared}/alpha.out" &
alpha=$!
exec 5>"${shared}/alpha.in" 6<"${shared}/alpha.out"
"${record}" "${shared}" writer beta <"${shared}/beta.in" >"${shared}/beta.out" &
beta=$!
exec 7>"${shared}/beta.in" 8<"${shared}/beta.out"
read -r -t 60 -u 6 a_line; read -r -t 60 -u 8 b_line
[[ "${a_line:-}" == started && "${b_line:-}" == started ]] || fail "writers did not start: '${a_line:-}' '${b_line:-}'"
temporaries=$(ls "${shared}"/shared.json.partial.* 2>/dev/null | wc -l)
[[ ${temporaries} -eq 2 ]] || fail "two writers, ${temporaries} Chrome temporaries"
echo stop >&7; wait "${beta}" || fail "beta exits $?"
echo stop >&5; wait "${alpha}" || fail "alpha exits $?"
exec 5>&- 6<&- 7>&- 8<&-
python3 - "${shared}" <<'PY' || fail "the files of two writers"
import json, pstats, sys
d = sys.argv[1]
events = json.load(open(d + "/shared.json"))
names = {e.get("name") for e in events if e.get("ph") == "X"}
assert "alpha_zone" in names and "beta_zone" not in names, names
folded = open(d + "/shared.folded").read().splitlines()
assert folded and all(l.rsplit(" ", 1)[1].isdigit() for l in folded), folded[:3]
assert any("alpha_zone" in l for l in folded) and not any("beta_zone" in l for l in folded), folded
functions = {f[2] for f in pstats.Stats(d + "/shared.prof").stats}
assert "alpha_zone" in functions and "beta_zone" not in functions, functions
PY
"${tool}" info "${shared}/shared.rtrace" >"${work}/shared_info.txt" || fail "info of the shared .rtrace exits $?"
grep -q '^status: *complete$' "${work}/shared_info.txt" && grep -q 'process: *alpha ' "${work}/shared_info.txt" \
  || fail "the shared .rtrace: $(head -5 "${work}/shared_info.txt")"
ls "${shared}"/shared.*.partial.* >/dev/null 2>&1 && fail "temporaries left: $(ls "${shared}"/shared.*.partial.*)"

if ((failures > 0)); then echo "file_safety_tests: ${failures} failure(s)"; exit 1; fi
echo "file_safety_tests: all checks passed"
