#!/usr/bin/env python3
"""check_bench_traces.py <traces dir> <report.json> <iterations> [format]: a suite
built against the package wrote one trace per benchmark of its report, each under 64
MB, named after its benchmark; a Chrome trace's metadata (its last event's
args.ringtrace_metadata) names the benchmark and its zones add up with the report's
(traced + untraced = zones per iteration x iterations; untraced as in the report), and
every benchmark ran at least <iterations> (N), or exactly N (=N: a count the suite sets)."""
import json
import os
import sys

traces, report_path = sys.argv[1], sys.argv[2]
exact = sys.argv[3].startswith("=")
iterations = int(sys.argv[3].lstrip("="))
fmt = sys.argv[4] if len(sys.argv) > 4 else "chrome"
extension = {"chrome": ".json", "perfetto": ".perfetto-trace", "rtrace": ".rtrace"}[fmt]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def file_name(name):
    """A benchmark's trace file, without its extension (include/ringtrace/benchmark.hpp)."""
    out = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name[:96])
    if not name or name[0] == "." or len(name) > 96 or out != name:
        h = 0xCBF29CE484222325
        for b in name.encode():
            h = ((h ^ b) * 0x100000001B3) % (1 << 64)
        out += "~" + f"{h:016x}"[:12]
    return out


runs = [r for r in json.load(open(report_path))["benchmarks"] if r["run_type"] == "iteration"]
check(runs, "no benchmark in the report")
files = sorted(os.listdir(traces))
check(len(files) == len(runs), f"{len(files)} traces for {len(runs)} benchmarks: {files}")
for run in runs:
    name = run["name"]
    path = os.path.join(traces, file_name(name) + extension)
    if not os.path.exists(path):
        check(False, f"{name}: no {path}")
        continue
    size = os.path.getsize(path)
    check(0 < size < 64 << 20, f"{name}: {size} bytes")
    if exact:
        check(run["iterations"] == iterations, f"{name}: {run['iterations']} iterations, expected {iterations}")
    else:
        check(run["iterations"] >= iterations, f"{name}: {run['iterations']} iterations, expected {iterations}+")
    line = f"{name}: {run['iterations']} iterations, {size / 1e6:.1f} MB"
    if fmt == "chrome":
        events = json.load(open(path))
        meta = events[-1]["args"]["ringtrace_metadata"]
        zones = sum(1 for e in events if e.get("ph") == "X")
        total = round(run["ringtrace_zones_per_iter"] * run["iterations"])
        check(meta["benchmark"] == name and meta["traced_zones"] == zones, f"{name}: metadata {meta}, {zones} zones")
        check(meta["traced_zones"] + meta["untraced_zones"] == total,
              f"{name}: {meta['traced_zones']} + {meta['untraced_zones']} zones, report {total}")
        check(meta["untraced_zones"] == run["ringtrace_untraced_zones"], f"{name}: untraced zones {meta} vs report")
        line += f", {zones} zones of {total} (cut by {meta['cut_by']})"
    print(line)
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
