#!/usr/bin/env bash
# record_tests.sh <ringtrace tool> <record_child> <work dir>: what `ringtrace record` finds
# and says after the run: outputs named with %p (one file per process, a program that
# forks included), a program that does not link ringtrace, an output in a missing
# directory (refused before the run), a program killed with SIGKILL (its temporary
# named), and the exit status (the program's, or 1 when it exited 0 unrecorded).
set -uo pipefail
tool="$1"; child="$2"; work="$3"
rm -rf "${work}"; mkdir -p "${work}/d"
cd "${work}" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME COMMAND...: runs it with its output and errors in NAME.out and NAME.err, its status in $s.
run() { local name="$1"; shift; s=0; timeout 60 "$@" >"${name}.out" 2>"${name}.err" || s=$?; }
lines() { wc -l <"$1"; }

# %p: the runtime names the file after the process; the tool finds that file (and not a
# file of an earlier run that matches too), reports it, and exits with the program's 0.
echo stale >d/f.1.rtrace
run pid "${tool}" record -o 'd/f.%p.rtrace' -- "${child}" 0
written=(d/f.*.rtrace)
[[ ${s} -eq 0 ]] || fail "%p: status ${s}: $(cat pid.err)"
[[ ${#written[@]} -eq 2 ]] || fail "%p: files ${written[*]}"
file=""
for f in "${written[@]}"; do [[ "${f}" == d/f.1.rtrace ]] || file="${f}"; done
grep -Eq "^ringtrace record: wrote ${file//./\\.} \([0-9]+ bytes\) in .* from .*tool_record_child \(exit status 0\)$" pid.err \
  && [[ $(lines pid.err) -eq 1 ]] || fail "%p: not one summary line naming ${file}: $(cat pid.err)"
grep -q 'f\.1\.rtrace' pid.err && fail "%p: an earlier run's file reported: $(cat pid.err)"
"${tool}" info "${file}" | grep '^status: *complete$' >/dev/null || fail "%p: ${file} is not a complete recording"

# A program that forks (a script running two recorded programs): one file per process,
# each with its pid, all reported; the script's own status (its last command's) passed on.
run fork "${tool}" record -o 'd/g.%p.rtrace' --chrome 'd/g.%p.json' -- sh -c "'${child}' 0; '${child}' 3"
[[ ${s} -eq 3 ]] || fail "fork: status ${s}, not the script's 3: $(cat fork.err)"
traces=(d/g.*.rtrace)
jsons=(d/g.*.json)
[[ ${#traces[@]} -eq 2 && ${#jsons[@]} -eq 2 ]] || fail "fork: files $(ls d)"
for f in "${traces[@]}" "${traces[@]/%.rtrace/.json}"; do
  grep -qF " ${f} (" fork.err || fail "fork: ${f} not reported: $(cat fork.err)"
done
[[ $(lines fork.err) -eq 1 ]] || fail "fork: not one line: $(cat fork.err)"
pids=$(for f in "${traces[@]}"; do "${tool}" info "${f}" | sed -n 's/^process:.*(pid \([0-9]*\)).*/\1/p'; done | sort -u | wc -l)
[[ ${pids} -eq 2 ]] || fail "fork: the files are not of two processes"

# A whole recording by default (the block policy): the smallest rings, flooded, lose
# nothing; --policy drop counts what it dropped, and the two add up to the same events.
run flood "${tool}" record --buffer 64 -o d/flood.rtrace -- "${child}" flood
[[ ${s} -eq 0 ]] || fail "flood: status ${s}: $(cat flood.err)"
"${tool}" info d/flood.rtrace >flood_info.txt
grep -q '^events: *1000000 recorded, 0 dropped$' flood_info.txt || fail "flood (default policy): $(grep '^events' flood_info.txt)"
run flood_drop "${tool}" record --buffer 64 --policy drop -o d/flood_drop.rtrace -- "${child}" flood
"${tool}" info d/flood_drop.rtrace >flood_drop_info.txt
read -r kept lost < <(sed -n 's/^events: *\([0-9]*\) recorded, \([0-9]*\) dropped$/\1 \2/p' flood_drop_info.txt)
[[ -n "${kept:-}" && $((kept + lost)) -eq 1000000 ]] || fail "flood --policy drop: $(grep '^events' flood_drop_info.txt)"

# The program's own status is passed on, with the summary.
run status "${tool}" record -o d/s.rtrace -- "${child}" 5
[[ ${s} -eq 5 && -s d/s.rtrace ]] || fail "status: ${s}, not the program's 5: $(cat status.err)"
grep -q '^ringtrace record: wrote d/s.rtrace (.*) in .* from .*(exit status 5)$' status.err || fail "status: $(cat status.err)"

# A program that does not link ringtrace: said once, on one line; it exited 0 unrecorded: 1.
for output in none.rtrace 'none.%p.rtrace'; do
  run none "${tool}" record -o "${output}" -- /bin/true
  [[ ${s} -eq 1 ]] || fail "/bin/true -o ${output}: status ${s}"
  [[ "$(cat none.err)" == "ringtrace record: /bin/true (exit status 0) did not write ${output}: it does not link ringtrace"* ]] \
    && [[ $(lines none.err) -eq 1 ]] || fail "/bin/true -o ${output}: $(cat none.err)"
done
# ... and a program that fails unrecorded: its status.
run none_failed "${tool}" record -o none.rtrace -- /bin/false
[[ ${s} -eq 1 ]] && grep -q 'does not link ringtrace' none_failed.err || fail "/bin/false: status ${s}: $(cat none_failed.err)"
run none_status "${tool}" record -o none.rtrace -- sh -c 'exit 4'
[[ ${s} -eq 4 ]] || fail "sh -c 'exit 4': status ${s}, not 4"

# A program that ends with _exit (no atexit handler runs): ringtrace's _exit stops the
# session first, so the file is whole, with every zone.
run underscore "${tool}" record -o e.rtrace -- "${child}" _exit
[[ ${s} -eq 0 ]] && grep -q "^ringtrace record: wrote e.rtrace (" underscore.err && [[ $(lines underscore.err) -eq 1 ]] \
  || fail "_exit: status ${s}: $(cat underscore.err)"
"${tool}" info e.rtrace | grep '^status: *complete$' >/dev/null || fail "_exit: e.rtrace is not complete"
[[ $("${tool}" dump e.rtrace | grep -c 'zone_begin.*child_work') -eq 10 ]] || fail "_exit: not the 10 zones"

# A program that links ringtrace but is killed before its session's first write: the
# process (its program and pid, as it reported its start) and why nothing was written.
run early "${tool}" record -o e2.rtrace -- "${child}" early
[[ ${s} -eq 137 ]] && grep -Eq "did not write e2.rtrace: .*tool_record_child \(pid [0-9]+\) ended before its session's first write" early.err \
  && ! grep -q 'does not link' early.err || fail "early SIGKILL: status ${s}: $(cat early.err)"

# A program that replaces itself with exec: the new image records itself into the same
# file (the pid is the same), replacing the first image's recording, and the tool says so.
run exec "${tool}" record -o 'x.%p.rtrace' -- "${child}" exec
written=(x.*.rtrace)
[[ ${s} -eq 7 && ${#written[@]} -eq 1 ]] || fail "exec: status ${s}, files ${written[*]}: $(cat exec.err)"
grep -q "holds the recording of .*tool_record_child: .*tool_record_child (pid [0-9]*) became it with exec" exec.err \
  || fail "exec: not said: $(cat exec.err)"
[[ $("${tool}" dump "${written[0]}" | grep -c 'zone_begin.*child_work') -eq 10 ]] \
  && [[ $("${tool}" dump "${written[0]}" | grep -c 'before_exec') -eq 0 ]] || fail "exec: not the new image's recording"

# Two outputs on one file (the same name, or a link to it): refused before the run, as
# convert refuses them, never blamed on the program.
echo earlier >dup_target
ln -sf dup_target dup_link1
ln -sf dup_target dup_link2
for pair in "dup.rtrace dup.rtrace" "dup_link1 dup_link2"; do
  read -r first second <<<"${pair}"
  run dup "${tool}" record -o "${first}" --chrome "${second}" -- sh -c "touch ran; '${child}' 0"
  [[ ${s} -eq 2 && ! -e ran ]] && grep -q "^ringtrace record: --rtrace and --chrome both write '${second}': one file per output$" dup.err \
    || fail "two outputs on ${pair}: status ${s}: $(cat dup.err)"
  rm -f ran
done
[[ "$(cat dup_target)" == earlier ]] || fail "two outputs on one file: the links' target was written"

# A write that fails (a file size limit: as a full disk does) is said with the runtime's
# reason, and the temporary kept, never taken for a crash; rings that cannot be made (the
# same limit on the rings' memory files) are said with theirs: both exit 1.
limited=(bash -c "trap '' XFSZ; ulimit -f 64; exec \"\$@\"" limited)
run full "${limited[@]}" "${tool}" record --buffer 256 -o full.rtrace -- "${child}" flood
[[ ${s} -eq 1 ]] && grep -q "^ringtrace record: .*tool_record_child (pid [0-9]*): full.rtrace: cannot write 'full.rtrace.partial.[A-Za-z0-9]*': File too large$" full.err \
  && grep -q "what was written before the error above is in full.rtrace.partial" full.err && ! grep -q 'killed or crashed' full.err \
  || fail "a write that fails: status ${s}: $(cat full.err)"
run noring "${limited[@]}" "${tool}" record --buffer 1048576 -o noring.rtrace -- "${child}" 0
[[ ${s} -eq 1 ]] && grep -q "^ringtrace record: .*tool_record_child (pid [0-9]*): 20 events lost: cannot make a thread's ring of 16 MiB: File too large$" noring.err \
  || fail "no ring: status ${s}: $(cat noring.err)"

# Several processes writing one file (no %p): each replaces the one before; said, with how
# to keep them all.
run shared "${tool}" record -o shared.rtrace -- sh -c "'${child}' 0; '${child}' 0"
[[ ${s} -eq 0 ]] && grep -q "shared.rtrace was written by 2 processes, each replacing the one before: it holds the recording of .*tool_record_child (pid [0-9]*), the last to finish; put %p in the file name" shared.err \
  || fail "shared output: status ${s}: $(cat shared.err)"

# Values the runtime would refuse: usage errors before the run (the runtime only said so
# as the program started, and the tool then blamed linking).
for option in "--policy often" "--min-duration soon" "--min-duration -1ms" "--max-depth 0" "--buffer 0" "--include (" \
              "--exclude [z-a]"; do
  # shellcheck disable=SC2086  # an option and its value
  run usage "${tool}" record ${option} -o u.rtrace -- sh -c "touch ran; '${child}' 0"
  [[ ${s} -eq 2 && $(lines usage.err) -eq 1 && "$(cat usage.err)" == "ringtrace record: ${option%% *}"* && ! -e ran ]] \
    || fail "${option}: status ${s}: $(cat usage.err)"
  rm -f ran
done

# An output in a missing directory: refused before the program runs, as that (the
# runtime's reason), not as a program that does not link ringtrace.
run nodir "${tool}" record -o nodir/x.rtrace -- sh -c "touch ran; '${child}' 0"
[[ ${s} -eq 1 ]] || fail "missing directory: status ${s}"
[[ "$(cat nodir.err)" == "ringtrace record: cannot open for writing 'nodir/x.rtrace': No such file or directory" ]] \
  || fail "missing directory: $(cat nodir.err)"
[[ ! -e ran ]] || fail "missing directory: the program ran"
run nodir_pid "${tool}" record --chrome 'nodir/x.%p.json' -- "${child}" 0
[[ ${s} -eq 1 ]] && grep -q "No such file or directory" nodir_pid.err && ! grep -q 'does not link' nodir_pid.err \
  || fail "missing directory, %p: status ${s}: $(cat nodir_pid.err)"
run isdir "${tool}" record -o d -- "${child}" 0
[[ ${s} -eq 1 ]] && grep -q "'d'" isdir.err && ! grep -q 'does not link' isdir.err || fail "a directory: status ${s}: $(cat isdir.err)"

# SIGKILL: the temporary it left is named (this run's, not an earlier one's), and it is
# what convert, report and info read as a file cut short.
touch -d '1 hour ago' k.rtrace.partial.Earlier1
run killed "${tool}" record -o k.rtrace -- "${child}" killed
[[ ${s} -eq 137 ]] || fail "killed: status ${s}, not 128 + 9"
left=""
for f in k.rtrace.partial.*; do [[ "${f}" == k.rtrace.partial.Earlier1 ]] || left="${f}"; done
[[ -n "${left}" && ! -e k.rtrace ]] || fail "killed: no temporary: $(ls)"
grep -q "^ringtrace record: .*tool_record_child (killed by signal 9 (Killed)): .* left .* in ${left} ([0-9]* bytes); ringtrace convert, report and info read" killed.err \
  && [[ $(lines killed.err) -eq 1 ]] || fail "killed: the temporary ${left} is not named: $(cat killed.err)"
grep -qE 'may hold|Earlier1' killed.err && fail "killed: $(cat killed.err)"
"${tool}" info "${left}" >killed_info.txt || fail "killed: info exits $?"
grep -q '^status: *file cut short' killed_info.txt && grep -q 'child_work' killed_info.txt \
  || fail "killed: info: $(cat killed_info.txt)"

# Thread names: a thread the program named with pthread_setname_np only, and the main
# thread it never named, have their kernel names in every output, never "(unnamed)".
run named "${tool}" record -o n.rtrace --chrome n.json -- "${child}" thread
[[ ${s} -eq 0 ]] || fail "named thread: status ${s}: $(cat named.err)"
"${tool}" info n.rtrace >named_info.txt || fail "named thread: info exits $?"
grep -Eq '^  kname  +tid [0-9]+ ' named_info.txt && grep -Eq '^  tool_record_chi  +tid [0-9]+ ' named_info.txt \
  && grep -q '^threads: *2$' named_info.txt && ! grep -q '(unnamed)' named_info.txt \
  || fail "named thread: info: $(cat named_info.txt)"
python3 - n.json <<'PY' || fail "named thread: the Chrome trace's thread names"
import json, sys
events = json.load(open(sys.argv[1]))
names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
work = {e["tid"] for e in events if e.get("ph") == "X" and e.get("name") == "named_work"}
assert len(work) == 1 and names[work.pop()] == "kname", names
main = {e["tid"] for e in events if e.get("ph") == "X" and e.get("name") == "main_work"}
assert len(main) == 1 and names[main.pop()] == "tool_record_chi", names  # comm: 15 bytes of the program's name
assert all(not n.startswith("thread ") for n in names.values()), names
PY

# --node-id: the program's node id, kept in its file; merged with a run that named none
# (host:pid), report --by-node keys the rows by node and shows the Node ID column.
run node9 "${tool}" record --node-id rank-9 -o d/n9.rtrace -- "${child}" 0
[[ ${s} -eq 0 ]] || fail "--node-id: status ${s}: $(cat node9.err)"
run node0 "${tool}" record -o d/n0.rtrace -- "${child}" 0
run nodes "${tool}" merge d/n9.rtrace d/n0.rtrace -o d/nodes.rtrace
[[ ${s} -eq 0 ]] || fail "merge of the node runs: status ${s}: $(cat nodes.err)"
"${tool}" report d/nodes.rtrace --by-node >nodes_report.txt || fail "report --by-node exits $?"
grep -q '^Name .* Calls  *Node ID$' nodes_report.txt || fail "report --by-node: no Node ID column: $(head -3 nodes_report.txt)"
rows9=$(grep -c '  rank-9$' nodes_report.txt)
rows0=$(grep -c "  $(uname -n):[0-9]*\$" nodes_report.txt)
[[ ${rows9} -ge 1 && ${rows9} -eq ${rows0} ]] || fail "report --by-node: rows of rank-9 ${rows9}, of host:pid ${rows0}: $(cat nodes_report.txt)"
"${tool}" report d/nodes.rtrace >nodes_plain.txt || fail "report exits $?"
grep -q 'Node ID' nodes_plain.txt && fail "report without --by-node shows a Node ID column"
"${tool}" report d/n9.rtrace --by-node | grep 'Node ID' >/dev/null && fail "one node: a Node ID column"
run bad_node "${tool}" record --node-id '' -o d/bad.rtrace -- "${child}" 0
[[ ${s} -eq 2 ]] || fail "--node-id '': status ${s}"

if ((failures > 0)); then echo "record_tests: ${failures} failure(s)"; exit 1; fi
echo "record_tests: all checks passed"
