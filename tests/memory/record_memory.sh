#!/usr/bin/env bash
# record_memory.sh <ringtrace tool> <memory_app> <work dir>: `ringtrace record --memory`
# of a C program that does not link ringtrace. The worker thread's allocations and frees
# (count and bytes) equal the program's own count exactly; the main thread's frees too,
# and its allocations are the program's plus what the C library allocated for it (stdio's
# buffer, the thread's); the 12345-byte block it never frees is live at the end (its
# free is nowhere); every free's size is known; a run killed with SIGKILL 300 ms after
# its last allocation gives every allocation up to the kill from its partial file. Built
# with -finstrument-functions (still not linking ringtrace), every allocation of the worker
# thread lands in its function's zone, `worker`, and main's in `main`'s (the C library's
# own at a thread's start and at the exit are outside every zone).
set -uo pipefail
tool="$1"; app="$2"; work="$3"; app_functions="${4:-}"; app_static="${5:-}"
rm -rf "${work}"; mkdir -p "${work}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"${tool}" record --memory -o "${work}/run.rtrace" -- "${app}" >"${work}/app.out" 2>"${work}/record.err" ||
  fail "record exits $?: $(cat "${work}/record.err")"
"${tool}" dump "${work}/run.rtrace" >"${work}/run.dump" || fail "dump exits $?"
main_tid=$(awk '{print $2; exit}' "${work}/run.dump")
# Per thread (main or worker) and kind: events and bytes.
awk -v main="${main_tid}" '$4 == "alloc" || $4 == "free" {
    split($7, b, "="); who = ($3 == main) ? "main" : "worker"; n[who " " $4] += 1; bytes[who " " $4] += b[2]
  } END { for (k in n) print k, n[k], bytes[k] }' "${work}/run.dump" | sort >"${work}/recorded.txt"
read -r _ m_allocs m_abytes m_frees m_fbytes < <(sed -n 's/^main: \([0-9]*\) allocations of \([0-9]*\) bytes, \([0-9]*\) frees of \([0-9]*\) bytes$/x \1 \2 \3 \4/p' "${work}/app.out")
read -r _ w_allocs w_abytes w_frees w_fbytes < <(sed -n 's/^worker: \([0-9]*\) allocations of \([0-9]*\) bytes, \([0-9]*\) frees of \([0-9]*\) bytes$/x \1 \2 \3 \4/p' "${work}/app.out")
got() { awk -v k="$1 $2" '$1 " " $2 == k { print $3, $4 }' "${work}/recorded.txt"; }
[[ "$(got worker alloc)" == "${w_allocs} ${w_abytes}" ]] || fail "worker allocations: recorded '$(got worker alloc)', the program counted '${w_allocs} ${w_abytes}'"
[[ "$(got worker free)" == "${w_frees} ${w_fbytes}" ]] || fail "worker frees: recorded '$(got worker free)', the program counted '${w_frees} ${w_fbytes}'"
[[ "$(got main free)" == "${m_frees} ${m_fbytes}" ]] || fail "main frees: recorded '$(got main free)', the program counted '${m_frees} ${m_fbytes}'"
read -r ra rb <<<"$(got main alloc)"
if [[ -z "${ra}" || ${ra} -lt ${m_allocs} || ${rb} -lt ${m_abytes} || ${ra} -gt $((m_allocs + 8)) ]]; then
  fail "main allocations: recorded '${ra} ${rb}', the program counted '${m_allocs} ${m_abytes}' (the C library's own: a few more)"
fi
grep -q ' size_unknown$' "${work}/run.dump" && fail "a free of unknown size: $(grep -m1 ' size_unknown$' "${work}/run.dump")"
grep -q ' alloc "ringtrace: allocated" bytes=12345$' "${work}/run.dump" || fail "no allocation of the leaked 12345 bytes"
# The program's exit status and standard output pass through.
grep -q '^leak: 12345 bytes' "${work}/app.out" || fail "the program's output: $(cat "${work}/app.out")"

# Killed: the allocations before the kill are in the partial file.
"${tool}" record --memory -o "${work}/killed.rtrace" -- "${app}" kill >"${work}/killed.out" 2>"${work}/killed.err"
status=$?
[[ ${status} -eq 137 ]] || fail "record of a killed program exits ${status}, not 137: $(cat "${work}/killed.err")"
partial=$(ls "${work}"/killed.rtrace.partial.* 2>/dev/null | grep -v '\.rings$' | head -1)
if [[ -z "${partial}" ]]; then
  fail "no partial file of the killed run: $(ls "${work}")"
else
  "${tool}" dump "${partial}" >"${work}/killed.dump" 2>"${work}/killed.dump.err"
  w=$(awk -v main="$(awk '{print $2; exit}' "${work}/killed.dump")" '$3 != main && $4 == "alloc"' "${work}/killed.dump" | wc -l)
  [[ ${w} -eq ${w_allocs} ]] || fail "killed run: ${w} worker allocations read back, not ${w_allocs}: $(cat "${work}/killed.dump.err")"
  grep -q ' alloc "ringtrace: allocated" bytes=12345$' "${work}/killed.dump" || fail "killed run: the last allocation before the kill is missing"
fi

# A static program: nothing can be preloaded into it; the tool says why and what to do
# (never that it "does not link ringtrace"), and exits 1 after the program's 0.
if [[ -n "${app_static}" ]]; then
  "${tool}" record --memory -o "${work}/static.rtrace" -- "${app_static}" >"${work}/static.out" 2>"${work}/static.err"
  status=$?
  [[ ${status} -eq 1 && "$(cat "${work}/static.out")" == static ]] || fail "static program: status ${status}"
  grep -q "did not write ${work}/static.rtrace: it is statically linked, and --memory's preload (LD_PRELOAD) cannot enter a static program: link it with ringtrace::memory" "${work}/static.err" \
    && ! grep -q 'does not link' "${work}/static.err" || fail "static program: $(cat "${work}/static.err")"
fi

# -finstrument-functions: the preload's hooks record the functions; allocations in them.
if [[ -n "${app_functions}" ]]; then
  "${tool}" record --memory -o "${work}/functions.rtrace" -- "${app_functions}" >/dev/null 2>"${work}/functions.err" ||
    fail "record of the instrumented program exits $?: $(cat "${work}/functions.err")"
  "${tool}" dump "${work}/functions.rtrace" >"${work}/functions.dump" || fail "dump exits $?"
  # Per thread, the innermost open zone of each alloc and free.
  awk '$4 == "zone_begin" { n[$3] += 1; top[$3, n[$3]] = $5 }
       $4 == "zone_end" { n[$3] -= 1 }
       $4 == "alloc" || $4 == "free" { print $3, (n[$3] > 0 ? top[$3, n[$3]] : "(none)") }' \
    "${work}/functions.dump" | sort | uniq -c >"${work}/functions.zones"
  in_worker=$(awk '$3 == "\"worker\"" { s += $1 } END { print s + 0 }' "${work}/functions.zones")
  [[ ${in_worker} -eq $((w_allocs + w_frees)) ]] ||
    fail "instrumented: ${in_worker} allocations and frees in worker's zone, not $((w_allocs + w_frees)): $(cat "${work}/functions.zones")"
  # main's own (the C library's at the thread's start and the process's exit are outside it).
  in_main=$(awk '$3 == "\"main\"" { s += $1 } END { print s + 0 }' "${work}/functions.zones")
  [[ ${in_main} -ge $((m_allocs + m_frees)) ]] ||
    fail "instrumented: ${in_main} allocations and frees in main's zone, fewer than $((m_allocs + m_frees))"
fi

if [[ ${failures} -ne 0 ]]; then
  echo "${failures} failure(s); files in ${work}"
  exit 1
fi
echo "record --memory: worker $(got worker alloc) / $(got worker free), main frees $(got main free), leak found, killed run read back"
