#!/usr/bin/env bash
# filter_tests.sh <ringtrace> <filter_files> <functions_app> <demo.rtrace> <source dir> <work dir>:
# the tool's filters (docs/guide.md, "Filtered and split outputs") on three recordings: the
# demo's, a function recording made here (`ringtrace record` of functions_app, built with
# -finstrument-functions) and a synthetic one with every kind of event (filter_files).
# For each filter, alone and together:
#  - `ringtrace dump FILE <filters>` against filter_reference.py, an independent filter of
#    the unfiltered `ringtrace dump FILE` (per thread the same lines, in time order), and
#    the count of zones left out it prints against the reference's;
#  - `ringtrace convert FILE <filters>` writes the same zones into the Chrome trace, the
#    table and the folded stacks (check_outputs.py), and every other output;
#  - `ringtrace report FILE <filters>` says what was left out under its table.
# Then --split: Chrome and Perfetto files each under SIZE, named by the rule, the warning
# with the command that splits a file too large to open, and bad option values refused
# with status 2. The pieces are loaded in trace_processor by check_split.mjs (ctest
# filter_split_trace_processor, from the files written here).
set -uo pipefail
tool="$1"; files="$2"; app="$3"; demo="$4"; source="$5"; work="$6"
here="${source}/tests/filters"
rm -rf "${work}"; mkdir -p "${work}"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"${files}" . >/dev/null || { echo "filter_files exits $?"; exit 1; }
"${tool}" record -o functions.rtrace -- "${app}" 20 >/dev/null 2>record.err || { cat record.err; exit 1; }
cp "${demo}" demo.rtrace || exit 1

# clock_start_ns (what relative times count from) and the threads' names, from the
# unfiltered Chrome trace and `ringtrace info`: the reference's view of the file.
describe() {
  local f="$1"
  "${tool}" convert "${f}" --chrome "${f%.rtrace}.whole.json" 2>/dev/null || fail "convert ${f}"
  start_ns="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[-1]['args']['ringtrace_session']['clock_start_ns'])" "${f%.rtrace}.whole.json")"
  names=()
  while read -r name tid; do names+=(--names "${tid}=${name}"); done \
    < <("${tool}" info "${f}" | awk '/^threads:/ { t = 1; next } /^call sites:/ { t = 0 } t && $2 == "tid" { print $1, $3 }')
  "${tool}" dump "${f}" >"${f%.rtrace}.all.dump" || fail "dump ${f}"
}

n=0
check() {  # FILE FILTERS...
  local f="$1"; shift
  n=$((n + 1))
  local base="case${n}"
  "${tool}" dump "${f}" "$@" >"${base}.dump" 2>"${base}.dump.err"
  local s=$?
  [[ ${s} -eq 0 ]] || { fail "dump ${f} $*: status ${s}: $(cat "${base}.dump.err")"; return; }
  python3 "${here}/filter_reference.py" "$@" --start-ns "${start_ns}" "${names[@]}" --counts \
    <"${f%.rtrace}.all.dump" >"${base}.want" 2>"${base}.counts" || { fail "reference ${f} $*"; return; }
  python3 "${here}/compare_dumps.py" "${base}.dump" "${base}.want" "${f} $*" || failures=$((failures + 1))
  # "N of M zones left out", as the reference counts them.
  read -r zones_in left_out <"${base}.counts"
  local said
  said="$(python3 -c "import sys; print('{:,} of {:,} zones left out'.format(int(sys.argv[1]), int(sys.argv[2])))" "${left_out}" "${zones_in}")"
  grep -qF "${said}" "${base}.dump.err" || fail "${f} $*: dump says '$(cat "${base}.dump.err")', not '${said}'"
  # Every output of convert, from the same stage.
  "${tool}" convert "${f}" "$@" --chrome "${base}.json" --table "${base}.table" --rows 0 --folded "${base}.folded" \
    --folded-value calls --perfetto "${base}.perfetto-trace" --pstats "${base}.prof" --summary "${base}.summary" \
    --flamegraph "${base}.svg" 2>"${base}.convert.err" || { fail "convert ${f} $*: $(cat "${base}.convert.err")"; return; }
  grep -qF "ringtrace convert: filters (" "${base}.convert.err" || fail "convert ${f} $*: no filters line"
  grep -qF "${said}" "${base}.convert.err" || fail "convert ${f} $*: not '${said}': $(cat "${base}.convert.err")"
  python3 "${here}/check_outputs.py" "${base}.dump" "${base}.json" "${base}.table" "${base}.folded" "convert ${f} $*" \
    || failures=$((failures + 1))
  "${tool}" report "${f}" "$@" >"${base}.report" 2>"${base}.report.err" || fail "report ${f} $*: $(cat "${base}.report.err")"
  if [[ ${zones_in} -ne ${left_out} ]]; then
    grep -qF "Filters (" "${base}.report" && grep -qF "${said}" "${base}.report" \
      || fail "report ${f} $*: no line on what was left out: $(tail -3 "${base}.report")"
  else
    grep -qx "No zones left by the filters, so no key-averages table." "${base}.report" \
      || fail "report ${f} $*: $(head -2 "${base}.report")"
  fi
}

# --- The demo's recording -----------------------------------------------------------------
describe demo.rtrace
check demo.rtrace --time-range 20ms,40ms
check demo.rtrace --time-range 20ms,
check demo.rtrace --time-range ,35.5ms
check demo.rtrace --min-duration 10us
check demo.rtrace --max-depth 2
check demo.rtrace --thread worker-1
check demo.rtrace --zone 'matmul|relu'
check demo.rtrace --exclude compiled_graph
check demo.rtrace --time-range 10ms,50ms --min-duration 5us --exclude allreduce --max-depth 3 --thread worker-0 \
  --thread scheduler
check demo.rtrace --thread nobody
# Absolute times (as dump prints them): the same range as 20ms,40ms after the start.
check demo.rtrace --time-range "$((start_ns + 20000000)),$((start_ns + 40000000))"
cmp -s case1.dump "case${n}.dump" || fail "demo: --time-range 20ms,40ms and its absolute times differ"

# --- A function recording ------------------------------------------------------------------
describe functions.rtrace
check functions.rtrace --min-duration 20us
check functions.rtrace --max-depth 3
check functions.rtrace --zone '^app::compute' --max-depth 2
check functions.rtrace --exclude 'app::parse'
check functions.rtrace --thread walker-2 --time-range 5ms,15ms
tid="$("${tool}" info functions.rtrace | awk '$1 == "walker-1" { print $3 }')"
check functions.rtrace --thread "${tid}" --min-duration 100us

# --- Every kind of event ---------------------------------------------------------------------
describe synthetic.rtrace
check synthetic.rtrace --time-range 10ms,20ms
check synthetic.rtrace --min-duration 5us
check synthetic.rtrace --max-depth 2
check synthetic.rtrace --thread beta
check synthetic.rtrace --zone '^parse'
check synthetic.rtrace --exclude 'lock|io'
check synthetic.rtrace --time-range 10ms,20ms --min-duration 3us --exclude io --max-depth 3 --thread alpha --thread 1003
check synthetic.rtrace --zone capture --time-range 5ms,30ms

# --- --split ---------------------------------------------------------------------------------
split() {  # NAME FILE OUTPUT-FLAG OUT: pieces each under 1 MB, named OUT with .NNN before the extension
  local name="$1" f="$2" flag="$3" out="$4"
  "${tool}" convert "${f}" "${flag}" "${out}" --split 1MB 2>"${name}.err" || fail "${name}: $(cat "${name}.err")"
  local stem="${out%%.*}" ext="${out#*.}"
  local pieces=("${stem}".[0-9][0-9][0-9]."${ext}")
  ((${#pieces[@]} >= 2)) || fail "${name}: ${#pieces[@]} pieces"
  [[ "${pieces[0]}" == "${stem}.001.${ext}" ]] || fail "${name}: the first piece is ${pieces[0]}"
  for p in "${pieces[@]}"; do
    (($(stat -c %s "${p}") <= 1000000)) || fail "${name}: ${p} is $(stat -c %s "${p}") bytes"
  done
  grep -qE "^ringtrace convert: wrote ${stem}\.001\.${ext} \.\.\. ${pieces[-1]} \(${#pieces[@]} files, " "${name}.err" \
    || fail "${name}: $(cat "${name}.err")"
  echo "${name}: ${#pieces[@]} pieces"
}
split demo_chrome demo.rtrace --chrome demo_split.json
split large_perfetto large.rtrace --perfetto large_split.perfetto-trace
split large_chrome_gz large.rtrace --chrome large_split.json.gz
"${tool}" convert large.rtrace --perfetto large.perfetto-trace 2>/dev/null || fail "large"
"${tool}" convert demo.rtrace --chrome demo_whole.json 2>/dev/null || fail "demo whole"
# A later conversion into fewer pieces says the old ones are not its own.
"${tool}" convert demo.rtrace --chrome demo_split.json --split 2MB 2>fewer.err || fail "fewer: $(cat fewer.err)"
grep -qx "ringtrace convert: demo_split.003.json and any later pieces are from an earlier conversion, not this one" \
  fewer.err || fail "fewer pieces: $(cat fewer.err)"
"${tool}" convert demo.rtrace --chrome demo_split.json --split 1MB 2>/dev/null || fail "demo split again"

# A Chrome trace past what chrome://tracing opens (256 MB of JSON; gzip keeps the disk
# small, the JSON inside is what counts): the line with the command that splits it, and
# that command's pieces each hold at most 200 MB of JSON.
# (Left out of the sanitizer builds, whose RINGTRACE_TEST_SCALE scales the heavy tests
# down: a third of a gigabyte of JSON under AddressSanitizer takes minutes.)
if [[ "${RINGTRACE_TEST_SCALE:-1}" == 1 ]]; then
  "${files}" --huge . >/dev/null || fail "filter_files --huge"
  "${tool}" convert huge.rtrace --chrome huge.json.gz 2>huge.err || fail "huge: $(cat huge.err)"
  line="$(grep '^ringtrace convert: huge.json.gz holds ' huge.err)"
  [[ "${line}" =~ ^ringtrace\ convert:\ huge.json.gz\ holds\ [0-9.]+\ MB\ of\ JSON,\ more\ than\ chrome://tracing\ opens\ \(256\ MB\)\;\ in\ files\ that\ each\ open:\ (ringtrace\ convert\ huge.rtrace\ --chrome\ huge.json.gz\ --split\ 200MB)$ ]] \
    || fail "huge: no line with the command that splits it: $(cat huge.err)"
  command="${BASH_REMATCH[1]:-}"
  if [[ -n "${command}" ]]; then
    ${command/#ringtrace/${tool}} 2>huge_split.err || fail "${command}: $(cat huge_split.err)"
    pieces=(huge.[0-9][0-9][0-9].json.gz)
    ((${#pieces[@]} >= 2)) || fail "${command}: ${#pieces[@]} pieces"
    for p in "${pieces[@]}"; do
      bytes="$(gzip -dc "${p}" | wc -c)"
      ((bytes <= 200000000)) || fail "${command}: ${p} holds ${bytes} bytes of JSON"
    done
    grep -q "holds .* of JSON" huge_split.err && fail "${command}: its pieces said too large"
  fi
  rm -f huge.rtrace huge.json.gz huge.[0-9]*.json.gz
else
  echo "huge: left out at RINGTRACE_TEST_SCALE=${RINGTRACE_TEST_SCALE}"
fi

# --- Values the options cannot take: status 2, one line ---------------------------------------
refused() {  # WORDS... -- the message's start
  local words=() message
  while [[ "$1" != -- ]]; do words+=("$1"); shift; done
  message="$2"
  "${tool}" "${words[@]}" >/dev/null 2>refused.err
  local s=$?
  [[ ${s} -eq 2 && $(wc -l <refused.err) -eq 1 ]] && grep -qF -- "${message}" refused.err \
    || fail "${words[*]}: status ${s}: $(cat refused.err)"
}
refused convert demo.rtrace --chrome x.json --time-range 5ms -- "--time-range takes A,B"
refused convert demo.rtrace --chrome x.json --time-range 40ms,20ms -- "--time-range 40ms,20ms: its start is after its end"
refused convert demo.rtrace --chrome x.json --time-range 1h,2h -- "--time-range takes A,B"
refused convert demo.rtrace --chrome x.json --min-duration soon -- "--min-duration takes a duration above 0"
refused convert demo.rtrace --chrome x.json --max-depth 0 -- "--max-depth takes a count from 1 to 65536, not 0"
refused convert demo.rtrace --chrome x.json --zone '(' -- "--zone: '(' is no regular expression"
refused convert demo.rtrace --chrome x.json --exclude '[' -- "--exclude: '[' is no regular expression"
refused convert demo.rtrace --chrome x.json --thread '' -- "--thread: an empty thread"
refused convert demo.rtrace --chrome x.json --split 10kB -- "--split takes a size of at least 1 MB"
refused convert demo.rtrace --table x.txt --split 10MB -- "--split cuts the --chrome and --perfetto outputs"
refused convert demo.rtrace --chrome - --split 10MB -- "--split writes files, not standard output"
refused report demo.rtrace --leaks --thread main -- "report the whole recording: no filters with them"
refused dump demo.rtrace --max-depth x -- "--max-depth takes a count"

if ((failures > 0)); then echo "filter_tests: ${failures} failure(s)"; exit 1; fi
echo "filter_tests: all checks passed (${n} filtered conversions)"
