#!/usr/bin/env python3
"""check_diff.py BASE NEW DIFF.json [DIFF.csv] [--threshold F] [--samples N]: checks
`ringtrace diff`'s JSON (and CSV) against a computation of its own: each zone's calls read
from the files with tools/python/rtrace.py (the format's independent reader), their
median and p99 (nearest rank), and scipy.stats.mannwhitneyu (two-sided, its defaults: what
Google Benchmark's compare.py calls) over the calls and over the runs' (files') medians;
the verdicts from those, the rows' order. BASE and NEW: a file or a directory of .rtrace
files. With --samples N (a cap the calls exceed), the counts and the sample sizes only.
"""

import csv
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
import rtrace  # noqa: E402

from scipy.stats import mannwhitneyu  # noqa: E402

failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message)


def files_of(argument):
    if not os.path.isdir(argument):
        return [argument]
    found = []
    for root, _, names in os.walk(argument):
        found += [os.path.join(root, n) for n in names if n.endswith(".rtrace")]
    return sorted(found)


def zone_calls(path):
    """{zone: [durations]} of one file, from rtrace.py's lines (as `ringtrace dump` prints)."""
    calls, stacks = {}, {}

    def emit(lines):
        for line in lines:
            parts = line.split(" ", 4)
            kind, tid = parts[3], parts[2]
            if kind not in ("zone_begin", "zone_end"):
                continue
            if kind == "zone_begin":
                name = parts[4][1:parts[4].index('"', 1)]
                stacks.setdefault(tid, []).append((name, int(parts[0])))
            else:
                name, begin = stacks[tid].pop()
                if "closed_at_stop" not in line:
                    calls.setdefault(name, []).append(int(parts[0]) - begin)

    reader = rtrace.Reader(path, False)
    if not reader.read(emit):
        fail("%s: rtrace.py: %s" % (path, reader.problem))
    return calls


def side(argument):
    """{zone: (pooled durations, [each file's median])}."""
    pooled = {}
    for path in files_of(argument):
        for zone, durations in zone_calls(path).items():
            entry = pooled.setdefault(zone, ([], []))
            entry[0].extend(durations)
            entry[1].append(nearest_rank(sorted(durations), 0.5))
    return pooled


def nearest_rank(values, p):
    rank = max(1, min(len(values), math.ceil(p * len(values) - 1e-9)))
    return values[rank - 1]


def change(old, new):
    if old == 0 and new == 0:
        return 0.0
    if old == 0:
        return (new - old) / ((old + new) / 2)
    return (new - old) / abs(old)


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b)) or abs(a - b) < 1e-300


def check_row(row, base, new, threshold, sampled):
    zone = row["zone"]
    if zone not in base or zone not in new:
        return
    b, n = base[zone], new[zone]
    if (row["base_calls"], row["new_calls"]) != (len(b[0]), len(n[0])):
        fail("%s: calls %s/%s, the files hold %d/%d" % (zone, row["base_calls"], row["new_calls"], len(b[0]), len(n[0])))
    if (row["base_runs"], row["new_runs"]) != (len(b[1]), len(n[1])):
        fail("%s: runs %s/%s, not %d/%d" % (zone, row["base_runs"], row["new_runs"], len(b[1]), len(n[1])))
    if sampled:
        return
    bs, ns = sorted(b[0]), sorted(n[0])
    expected = {"base_median_ns": nearest_rank(bs, 0.5), "new_median_ns": nearest_rank(ns, 0.5),
                "base_p99_ns": nearest_rank(bs, 0.99), "new_p99_ns": nearest_rank(ns, 0.99)}
    for key, value in expected.items():
        if row[key] != value:
            fail("%s: %s %s, not %s" % (zone, key, row[key], value))
    median_change = change(expected["base_median_ns"], expected["new_median_ns"])
    if not close(row["median_change"], median_change):
        fail("%s: median_change %s, not %s" % (zone, row["median_change"], median_change))
    if min(len(bs), len(ns)) < 2:
        if row["verdict"] != "too_few_calls" or row["p_value"] is not None:
            fail("%s: fewer than 2 calls a side and verdict %s, p %s" % (zone, row["verdict"], row["p_value"]))
        return
    test = mannwhitneyu(bs, ns, alternative="two-sided")
    if not close(row["u"], float(test.statistic)) or not close(row["p_value"], float(test.pvalue)):
        fail("%s: U %s p %s; scipy: U %s p %s" % (zone, row["u"], row["p_value"], test.statistic, test.pvalue))
    exact = (len(bs) <= 8 or len(ns) <= 8) and len(set(bs + ns)) == len(bs) + len(ns)
    if row["exact"] != exact:
        fail("%s: exact %s, scipy's choice %s" % (zone, row["exact"], exact))
    p = float(test.pvalue)
    if min(len(b[1]), len(n[1])) >= 2:
        runs = mannwhitneyu(sorted(b[1]), sorted(n[1]), alternative="two-sided")
        if not close(row["runs_u"], float(runs.statistic)) or not close(row["runs_p_value"], float(runs.pvalue)):
            fail("%s: runs U %s p %s; scipy: U %s p %s" % (zone, row["runs_u"], row["runs_p_value"], runs.statistic,
                                                           runs.pvalue))
        p = max(p, float(runs.pvalue))
    elif row["runs_p_value"] is not None:
        fail("%s: a runs test with fewer than 2 runs a side" % zone)
    verdict = ("not_significant" if p >= 0.05 else "regression" if median_change > threshold
               else "improvement" if median_change < -threshold else "below_threshold")
    if row["verdict"] != verdict:
        fail("%s: verdict %s, not %s (p %s, change %s)" % (zone, row["verdict"], verdict, p, median_change))
    low, high = row["median_change_low"], row["median_change_high"]
    if expected["base_median_ns"] > 0 and not (low <= median_change + 1e-12 and median_change - 1e-12 <= high):
        fail("%s: the interval [%s, %s] does not hold the estimate %s" % (zone, low, high, median_change))


def main():
    args = sys.argv[1:]
    threshold, samples = 0.05, None
    if "--threshold" in args:
        i = args.index("--threshold")
        threshold = float(args[i + 1])
        del args[i:i + 2]
    if "--samples" in args:
        i = args.index("--samples")
        samples = int(args[i + 1])
        del args[i:i + 2]
    base_arg, new_arg, json_path = args[:3]
    with open(json_path) as f:
        result = json.load(f)
    base, new = side(base_arg), side(new_arg)
    rows = result["rows"]
    zones = {r["zone"] for r in rows}
    if zones != set(base) | set(new):
        fail("rows %s, the files' zones %s" % (sorted(zones), sorted(set(base) | set(new))))
    for row in rows:
        sampled = samples is not None and (row["base_calls"] or 0) + (row["new_calls"] or 0) > 0 and (
            (row["base_calls"] or 0) > samples or (row["new_calls"] or 0) > samples)
        if sampled and (row["base_kept"] != min(row["base_calls"], samples)
                        or row["new_kept"] != min(row["new_calls"], samples)):
            fail("%s: kept %s/%s of %s/%s calls with --samples %d" % (row["zone"], row["base_kept"], row["new_kept"],
                                                                    row["base_calls"], row["new_calls"], samples))
        check_row(row, base, new, threshold, sampled)
    # Sorted: verdict, then p (the larger of the two tests'), then the median's change.
    order = ["regression", "improvement", "below_threshold", "not_significant", "too_few_calls", "only_base",
             "only_new"]

    def key(r):
        p = 2 if r["p_value"] is None else max(r["p_value"], r["runs_p_value"] or 0)
        return (order.index(r["verdict"]), p, -abs(r["median_change"] or 0))
    if [key(r) for r in rows] != sorted(key(r) for r in rows):
        fail("rows not sorted by verdict, p and change: %s" % [(r["zone"], key(r)) for r in rows])
    if result["regressions"] != sum(r["verdict"] == "regression" for r in rows):
        fail("regressions %s" % result["regressions"])
    if len(args) > 3:  # the CSV: the same rows, the same values
        with open(args[3], newline="") as f:
            table = list(csv.DictReader(f))
        if [r["zone"] for r in table] != [r["zone"] for r in rows]:
            fail("CSV rows %s" % [r["zone"] for r in table])
        for c, j in zip(table, rows):
            for key_name, value in j.items():
                text = "" if value is None else ("true" if value is True else "false" if value is False else value)
                if isinstance(value, float):
                    ok = c[key_name] != "" and close(float(c[key_name]), value)
                else:
                    ok = c[key_name] == str(text)
                if not ok:
                    fail("CSV %s %s: '%s', JSON %s" % (j["zone"], key_name, c[key_name], value))
    print("check_diff: %d rows, %d failure(s)" % (len(rows), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
