#!/usr/bin/env python3
"""Clock offsets measured from flows, end to end.

Two processes (tests/clocks/flow_peer.cpp) exchange 200 round trips over two FIFOs, each
message a flow; `ping` runs in a time namespace whose CLOCK_MONOTONIC is 5000 s ahead
(`unshare --time --monotonic 5000`), `pong` records a CLOCK_REALTIME anchor skewed by a
known amount (RINGTRACE_TEST_REALTIME_SKEW_NS, the test-only knob). So the true offset
between their clocks is 5000 s exactly, and CLOCK_REALTIME's is off by the skew. After
`ringtrace merge`:

- the bounds the messages give contain the true offset, the offset used is within its
  stated uncertainty of it, and the skew recovered (CLOCK_REALTIME's offset less the one
  used) is the skew injected, within the bounds; merge, info and the file (read by the
  independent reader tools/python/rtrace.py) say CLOCK_REALTIME disagrees;
- every receive is after its send on the merged timeline (rtrace.py's events), where
  CLOCK_REALTIME's offset would have put receives before their sends;
- with no skew, CLOCK_REALTIME agrees and is kept;
- a pair whose receives are stamped before their sends (--early-receive) is reported as
  contradicting every offset (merge exits 1, info says it);
- `ringtrace report --stragglers` names pong as the slowest of the step it slowed;
- the merged file's Chrome trace carries the clocks in its metadata; its Perfetto file is
  left for check_clocks_perfetto.mjs (with expect.json).

Exit 77 (skipped, said why) where `unshare --time` is refused.

    check_clocks.py RINGTRACE FLOW_PEER RTRACE_PY WORKDIR
"""

import json
import os
import re
import shutil
import subprocess
import sys

MONOTONIC_S = 5000
SKEW_NS = 123_456_789  # injected into pong's CLOCK_REALTIME anchor
ROUNDS = 200
SLOW_STEP = 57
ANCHOR_ERROR_NS = 20_000  # each anchor is two clock reads, not one

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240, **kw)


def unshare_refused():
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    r = run(["unshare", "--time", "--monotonic", str(MONOTONIC_S), "--fork", "cat", "/proc/self/timens_offsets"])
    if r.returncode != 0:
        return "unshare --time --monotonic refused: " + (r.stderr.strip() or "status %d" % r.returncode)
    if not re.search(r"monotonic\s+%d\s" % MONOTONIC_S, r.stdout):
        return "unshare --time gave no monotonic offset: " + r.stdout.strip()
    return None


def record_pair(peer, work, name, skew_ns, extra):
    """Runs ping (in its time namespace) and pong (skewed); returns the two trace paths."""
    to_pong, to_ping = os.path.join(work, name + ".a2b"), os.path.join(work, name + ".b2a")
    for fifo in (to_pong, to_ping):
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)
    ping_trace, pong_trace = os.path.join(work, name + ".ping.rtrace"), os.path.join(work, name + ".pong.rtrace")
    env = dict(os.environ, RINGTRACE_TEST_REALTIME_SKEW_NS=str(skew_ns))
    ping_env = {k: v for k, v in os.environ.items() if k != "RINGTRACE_TEST_REALTIME_SKEW_NS"}
    ping = subprocess.Popen(["unshare", "--time", "--monotonic", str(MONOTONIC_S), "--fork", peer, "ping", to_pong,
                             to_ping, ping_trace, str(ROUNDS)] + extra, env=ping_env)
    pong = subprocess.Popen([peer, "pong", to_ping, to_pong, pong_trace, str(ROUNDS)] + extra, env=env)
    check(pong.wait(timeout=120) == 0, name + ": pong failed")
    check(ping.wait(timeout=120) == 0, name + ": ping failed")
    return ping_trace, pong_trace


def clocks_of(rtrace_py, merged):
    """rtrace.py --clocks: {pid: {field: int or None}} in section order (ping, pong)."""
    r = run([sys.executable, rtrace_py, merged, "--clocks"])
    check(r.returncode == 0, "rtrace.py --clocks %s: %s" % (merged, r.stderr))
    out = []
    for line in r.stdout.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split())
        out.append({k: (None if v == "-" else int(v)) for k, v in fields.items()})
    return out


def flows_of(rtrace_py, merged):
    """{id: (out time, out pid, in time, in pid)} from rtrace.py's events of the merged file."""
    r = run([sys.executable, rtrace_py, merged])
    check(r.returncode == 0, "rtrace.py %s: %s" % (merged, r.stderr))
    ends = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts[3] in ("flow_out", "flow_in"):
            flow = int(parts[-1].split("=")[1])
            ends.setdefault(flow, {})[parts[3]] = (int(parts[0]), int(parts[1]))
    return {k: (v["flow_out"][0], v["flow_out"][1], v["flow_in"][0], v["flow_in"][1])
            for k, v in ends.items() if "flow_out" in v and "flow_in" in v}


def main(argv):
    tool, peer, rtrace_py, work = argv[1:5]
    why = unshare_refused()
    if why is not None:
        print("SKIPPED: two time namespaces are needed: " + why)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    # 1. CLOCK_REALTIME skewed: the flows find the offset, and say the anchors disagree.
    ping, pong = record_pair(peer, work, "skewed", SKEW_NS, ["--slow-step", str(SLOW_STEP)])
    merged = os.path.join(work, "merged.rtrace")
    m = run([tool, "merge", ping, pong, "-o", merged])
    print(m.stdout + m.stderr)
    check(m.returncode == 0, "merge exited %d" % m.returncode)
    check("CLOCK_REALTIME disagrees" in m.stdout, "merge does not say CLOCK_REALTIME disagrees")
    check("%d messages, every receive after its send" % (2 * ROUNDS) in m.stdout,
          "merge does not say every receive is after its send")
    clocks = clocks_of(rtrace_py, merged)
    if not check(len(clocks) == 2, "two processes in the merged file: %r" % clocks):
        return 1
    ping_c, pong_c = clocks
    placed = pong_c if pong_c["measured"] else ping_c
    reference = ping_c if placed is pong_c else pong_c
    # pong's times + 5000 s are ping's; the skew is in pong's anchor.
    truth = MONOTONIC_S * 10**9 if placed is pong_c else -MONOTONIC_S * 10**9
    skew = SKEW_NS if placed is pong_c else -SKEW_NS
    check(reference["measured"] == 0 and reference["offset_ns"] == 0, "the reference is at offset 0: %r" % reference)
    check(placed["measured"] == 1 and placed["contradicted"] == 0 and placed["agrees"] == 0,
          "flags of the placed process: %r" % placed)
    check(placed["messages"] == 2 * ROUNDS, "messages %r, want %d" % (placed["messages"], 2 * ROUNDS))
    low, high, offset = placed["low_ns"], placed["high_ns"], placed["offset_ns"]
    if not check(low is not None and high is not None, "bounded on both sides: %r" % placed):
        return 1
    uncertainty = max(offset - low, high - offset)
    check(low <= truth <= high, "bounds [%d, %d] do not hold the true offset %d" % (low, high, truth))
    check(abs(offset - truth) <= uncertainty, "offset %d is %d ns from the truth, more than its uncertainty %d"
          % (offset, offset - truth, uncertainty))
    check(uncertainty < 5_000_000, "uncertainty %d ns: the round trips should bound it to well under 5 ms" % uncertainty)
    recovered = placed["realtime_offset_ns"] - offset
    check(abs(placed["realtime_offset_ns"] - truth - skew) <= ANCHOR_ERROR_NS,
          "CLOCK_REALTIME's offset %d is not the truth plus the skew" % placed["realtime_offset_ns"])
    check(abs(recovered - skew) <= uncertainty + ANCHOR_ERROR_NS,
          "skew recovered %d ns, injected %d ns, uncertainty %d ns" % (recovered, skew, uncertainty))
    print("measured: true offset %d ns, used %d ns (+/- %d ns, bounds [%d, %d]); skew injected %d ns, recovered %d ns"
          % (truth, offset, uncertainty, low, high, skew, recovered))

    # Every receive after its send on the merged timeline; CLOCK_REALTIME's offset would
    # have put some before.
    flows = flows_of(rtrace_py, merged)
    check(len(flows) == 2 * ROUNDS, "%d flows paired in the merged file, want %d" % (len(flows), 2 * ROUNDS))
    placed_pid = placed["pid"]
    before = [k for k, (t_out, _, t_in, _) in flows.items() if t_in < t_out]
    check(not before, "%d receives before their sends, e.g. flow %r" % (len(before), before[:3]))
    moved = recovered  # what CLOCK_REALTIME's offset adds to the placed process's times

    def at_realtime(t, pid):
        return t + moved if pid == placed_pid else t
    anchors_before = sum(1 for t_out, p_out, t_in, p_in in flows.values()
                         if at_realtime(t_in, p_in) < at_realtime(t_out, p_out))
    check(anchors_before > 0, "CLOCK_REALTIME's offset would have put no receive before its send: the skew is unseen")
    print("receives before their sends: 0 of %d (with CLOCK_REALTIME's offset: %d)" % (len(flows), anchors_before))

    info = run([tool, "info", merged])
    check(info.returncode == 0 and "CLOCK_REALTIME disagrees" in info.stdout and
          ("+/- %d ns" % uncertainty) in info.stdout, "info does not carry the clock:\n" + info.stdout)
    print(info.stdout)

    # The straggler view: pong's step SLOW_STEP is the slowest.
    report = run([tool, "report", merged, "--stragglers"])
    print(report.stdout)
    check(report.returncode == 0, "report --stragglers exited %d: %s" % (report.returncode, report.stderr))
    labels = dict(re.findall(r"^  (\[\d+\]) .*\(pid (\d+)\)$", report.stdout, re.M))
    pong_label = [label for label, pid in labels.items() if int(pid) == pong_c["pid"]]
    row = re.search(r"^ *%d +(.*)$" % SLOW_STEP, report.stdout, re.M)
    if check(pong_label and row, "report --stragglers has no row for step %d or no pong" % SLOW_STEP):
        check(pong_label[0] in row.group(1).split(), "step %d's slowest is not pong %s: %s"
              % (SLOW_STEP, pong_label[0], row.group(0)))
    # Without a schedule, step N's zone runs from the Nth step() to the next: steps 1 to
    # ROUNDS - 1 complete, the last one unfinished.
    steps = [int(m) for m in re.findall(r"^ *(\d+) +\S+ +\S+ +\[\d+\] ", report.stdout, re.M)]
    check(steps == list(range(1, ROUNDS)), "step rows %s..., want 1 to %d" % (steps[:5], ROUNDS - 1))

    # The Chrome trace's metadata; the Perfetto file for check_clocks_perfetto.mjs.
    perfetto, chrome = os.path.join(work, "merged.perfetto-trace"), os.path.join(work, "merged.json")
    c = run([tool, "convert", merged, "--perfetto", perfetto, "--chrome", chrome])
    check(c.returncode == 0, "convert: " + c.stderr)
    with open(chrome) as f:
        events = json.load(f)
    meta = events[-1]["args"].get("ringtrace_metadata", {})
    key = "clock.pid %d" % placed_pid
    check(meta.get(key + ".offset_ns") == offset and meta.get(key + ".uncertainty_ns") == uncertainty and
          meta.get(key + ".agrees_with_realtime") == 0 and "disagrees" in meta.get(key, ""),
          "the Chrome trace's ringtrace_metadata lacks the clock: %r" % meta)
    with open(os.path.join(work, "expect.json"), "w") as f:
        json.dump({"ping": ping_c["pid"], "pong": pong_c["pid"], "placed": placed_pid, "offset_ns": offset,
                   "uncertainty_ns": uncertainty, "flows": 2 * ROUNDS}, f)

    # 2. No skew: CLOCK_REALTIME agrees with the messages and is kept.
    ping, pong = record_pair(peer, work, "agreeing", 0, [])
    agreeing = os.path.join(work, "agreeing.rtrace")
    m = run([tool, "merge", ping, pong, "-o", agreeing])
    check(m.returncode == 0 and "CLOCK_REALTIME agrees" in m.stdout, "no skew: merge says\n" + m.stdout + m.stderr)
    placed = [c for c in clocks_of(rtrace_py, agreeing) if c["measured"]]
    if check(len(placed) == 1, "one process placed: %r" % placed):
        p = placed[0]
        check(p["agrees"] == 1 and p["offset_ns"] == p["realtime_offset_ns"] and p["low_ns"] <= p["offset_ns"] <=
              p["high_ns"], "no skew: CLOCK_REALTIME's offset not kept: %r" % p)
        print("no skew: offset %d ns kept, bounds [%d, %d]" % (p["offset_ns"], p["low_ns"], p["high_ns"]))

    # 3. Receives stamped before their sends: the flows contradict every offset.
    ping, pong = record_pair(peer, work, "contradicting", SKEW_NS, ["--early-receive"])
    contradicting = os.path.join(work, "contradicting.rtrace")
    m = run([tool, "merge", ping, pong, "-o", contradicting])
    print(m.stdout + m.stderr)
    check(m.returncode == 1, "contradicting flows: merge exited %d, want 1" % m.returncode)
    check("contradict every clock offset" in m.stderr, "merge's stderr does not report the contradiction")
    placed = [c for c in clocks_of(rtrace_py, contradicting) if c["measured"]]
    check(len(placed) == 1 and placed[0]["contradicted"] == 1 and
          placed[0]["offset_ns"] == placed[0]["realtime_offset_ns"],
          "contradicting flows: the file does not say so, or the offset is not CLOCK_REALTIME's: %r" % placed)
    info = run([tool, "info", contradicting])
    check("contradict every clock offset" in info.stdout, "info does not report the contradiction:\n" + info.stdout)

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("clocks: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
