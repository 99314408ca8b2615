#!/usr/bin/env bash
# The pictures' fixture: recordings of programs that count their own calls, and every
# picture with the pstats and folded files of the same recordings.
#   make_pictures.sh RINGTRACE PICTURES_PROGRAM FUNCTIONS_APP DIR
# DIR/zones: pictures_program's recording (zones, two threads, memory) converted;
# DIR/functions: pictures_functions_app recorded by `ringtrace record --callgraph`;
# DIR/nodot: the same with no Graphviz on PATH (the .dot written, said, exit status 1).
set -euo pipefail
tool=$1 program=$2 app=$3 dir=$4
rm -rf "${dir}"
mkdir -p "${dir}/functions" "${dir}/nodot"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

z=${dir}/zones
"${program}" "${z}"
"${tool}" convert "${z}/run.rtrace" --pstats "${z}/run.prof" --folded "${z}/run.folded" --callgraph "${z}/calls.svg" \
  --flamegraph "${z}/flame.svg"
"${tool}" convert "${z}/run.rtrace" --callgraph "${z}/threads.svg" --per-thread --thread-roots \
  --folded "${z}/threads.folded" --flamegraph "${z}/icicle.svg" --icicle
"${tool}" convert "${z}/run.rtrace" --callgraph "${z}/everything.dot" --node-threshold 0 --edge-threshold 0
"${tool}" convert "${z}/run.rtrace" --folded "${z}/alloc.folded" --alloc-bytes --flamegraph "${z}/memory.svg" --memory
"${tool}" convert "${z}/run.rtrace" --flamegraph "${z}/leaks.svg" --leaks

# An instrumented program that includes nothing of ringtrace: the environment's session
# writes the call graph (dot run at the program's exit) and the pstats file.
f=${dir}/functions
"${tool}" record --callgraph "${f}/calls.svg" --pstats "${f}/run.prof" -o "${f}/run.rtrace" -- \
  "${app}" "${f}/expected.json"
[[ -s "${f}/calls.svg" && -s "${f}/calls.dot" ]] || fail "record --callgraph wrote no calls.svg and calls.dot"

# No Graphviz: convert says so before converting, writes the .dot, exits 1; so does a
# recorded program, as it starts.
n=${dir}/nodot
status=0
PATH=/nonexistent "${tool}" convert "${z}/run.rtrace" --callgraph "${n}/calls.svg" 2>"${n}/convert.err" || status=$?
[[ ${status} == 1 ]] || fail "convert without dot: status ${status}, not 1"
grep -q "Graphviz's dot is not on PATH" "${n}/convert.err" || fail "convert without dot said: $(cat "${n}/convert.err")"
[[ -s "${n}/calls.dot" && ! -e "${n}/calls.svg" ]] || fail "convert without dot: not calls.dot alone"
PATH=/nonexistent "${tool}" record --callgraph "${n}/recorded.svg" -- "${app}" "${n}/expected.json" \
  2>"${n}/record.err" || true
grep -q "Graphviz's dot is not on PATH" "${n}/record.err" || fail "record without dot said: $(cat "${n}/record.err")"
[[ -s "${n}/recorded.dot" && ! -e "${n}/recorded.svg" ]] || fail "record without dot: not recorded.dot alone"
echo "pictures written in ${dir}"
