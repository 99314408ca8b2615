#!/usr/bin/env python3
"""diff_stats.py: how often `ringtrace diff` flags a zone that did not change (A/A), and
how often it flags one slowed by 10% (docs/performance.md, "ringtrace diff"). Not in CI.

    bench/diff_stats.py TOOL SUBJECT WORK_DIR [--pairs 40] [--trials 100] [--runs R]
                        [--calls 1000] [--threshold 5%] [--slow work:10]

SUBJECT is bench/diff_stats.cpp built (build/release/bench/diff_stats): real recordings
of five zones. Each A/A pair records the same program twice for each side; each trial
records it for BASE and with --slow (one zone's work P% longer) for NEW. A side is R runs
(a directory of R files, calls / R calls of each zone each), BASE's and NEW's runs
alternated (ABAB...) so that the machine's drift falls on both. Counted: zones flagged
(a verdict of regression or improvement: significant and beyond the threshold), zones
significant at all (p < alpha: the calls' test's, and with 2 runs a side or more the runs'
test's too), and the trials where the slowed zone is a regression.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def record(subject, path, calls, slow):
    command = [subject, path, "--calls", str(calls)]
    if slow:
        command += ["--slow", slow]
    subprocess.run(command, check=True)


def pair(args, index, slow):
    """Records BASE and NEW (R runs each, alternated) and returns diff's JSON."""
    root = os.path.join(args.work, "pair%d" % index)
    shutil.rmtree(root, ignore_errors=True)
    base, new = os.path.join(root, "base"), os.path.join(root, "new")
    os.makedirs(base)
    os.makedirs(new)
    per_run = args.calls // args.runs
    for r in range(args.runs):
        record(args.subject, os.path.join(base, "run%d.rtrace" % r), per_run, None)
        record(args.subject, os.path.join(new, "run%d.rtrace" % r), per_run, slow)
    out = os.path.join(root, "diff.json")
    status = subprocess.run([args.tool, "diff", base, new, "--threshold", args.threshold, "--json", out],
                            stdout=subprocess.DEVNULL).returncode
    if status not in (0, 3):
        sys.exit("ringtrace diff exited %d on %s" % (status, root))
    with open(out) as f:
        result = json.load(f)
    if status != (3 if result["regressions"] else 0):
        sys.exit("ringtrace diff exited %d with %d regressions" % (status, result["regressions"]))
    shutil.rmtree(root)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("subject")
    parser.add_argument("work")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--threshold", default="5%")
    parser.add_argument("--slow", default="work:10")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    started = time.time()
    zones = flagged = significant = 0
    flagged_by_zone = {}
    for i in range(args.pairs):
        for row in pair(args, i, None)["rows"]:
            zones += 1
            flagged += row["verdict"] in ("regression", "improvement")
            p = max(row["p_value"], row["runs_p_value"] or 0) if row["p_value"] is not None else None
            significant += p is not None and p < 0.05
            if row["verdict"] in ("regression", "improvement"):
                flagged_by_zone[row["zone"]] = flagged_by_zone.get(row["zone"], 0) + 1
    slowed = args.slow.split(":")[0]
    detected = 0
    others = 0
    for i in range(args.trials):
        for row in pair(args, i, args.slow)["rows"]:
            if row["zone"] == slowed:
                detected += row["verdict"] == "regression"
            elif row["zone"] != "round":  # round holds the slowed zone: slower too
                others += row["verdict"] in ("regression", "improvement")
    print("A/A: %d pairs, %d zones compared: %d flagged (%.1f%%; by zone: %s), %d with p < 0.05 (%.1f%%)"
          % (args.pairs, zones, flagged, 100.0 * flagged / max(zones, 1), flagged_by_zone, significant,
             100.0 * significant / max(zones, 1)))
    print("slowdown %s: flagged as a regression in %d of %d trials; other zones (not round) flagged: %d of %d"
          % (args.slow, detected, args.trials, others, 3 * args.trials))
    print("runs per side %d, calls per side %d, threshold %s, %.0f s" % (args.runs, args.calls, args.threshold,
                                                                       time.time() - started))


if __name__ == "__main__":
    main()
