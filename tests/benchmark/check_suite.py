#!/usr/bin/env python3
"""check_suite.py <traced_suite binary> <work dir> [ringtrace tool]: runs the suite with
and without --ringtrace_out and checks, against the JSON report's exact counts:
- one valid Chrome trace per benchmark, named after it, its process and thread 0 too;
- the bound: by default at most 250000 zones (the suite's zones are a few ns each, so
  the event count bites first), --ringtrace_max_events=N keeps exactly N zones,
  --ringtrace_max_ms=1 keeps only zones begun in the run's first millisecond, no bound
  keeps every zone of the run; every kept zone is whole (a zone per line in the file);
- what was left out, in the trace's metadata and in the report's counters: traced and
  untraced zones add up to zones per iteration x iterations, untraced iterations
  follow from them;
- --ringtrace_format=perfetto and rtrace write .perfetto-trace and .rtrace files (the
  .rtrace converted back by the tool, when given, with the same zones);
- file names distinct for distinct benchmarks (BM_collide/x and BM_collide_x), bounded
  (a 300-character name), never hidden or taken for an option (names starting with '.'
  or '-'), and a trace that cannot be written reported (standard error
  and the counter ringtrace_trace_error);
- a bad flag value is refused; without --ringtrace_out nothing is written, no counter."""
import json
import math
import os
import shutil
import subprocess
import sys

suite, work = sys.argv[1], sys.argv[2]
tool = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
LONG_NAME = "BM_long_" + "L" * 292
ZONES = {"BM_three_zones": 3, "BM_n_zones/4": 4, "BM_n_zones/7": 7, "BM_collide/x": 2, "BM_collide_x": 5,
         LONG_NAME: 6, "-rf": 2, ".hidden": 2}


def file_name(name):
    """The trace file of a benchmark, without its extension (include/ringtrace/benchmark.hpp):
    the name when it is made of [A-Za-z0-9._-], starts with neither '.' nor '-' and has at
    most 96 characters; else a readable prefix (a first '.' or '-' made '_'), '~' and 12
    hex digits of its 64-bit FNV-1a hash."""
    kept = 96
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_" or (i > 0 and c in ".-")) else "_"
                  for i, c in enumerate(name[:kept]))
    if not name or len(name) > kept or out != name:
        h = 0xCBF29CE484222325
        for b in name.encode():
            h = ((h ^ b) * 0x100000001B3) % (1 << 64)
        out += "~" + f"{h:016x}"[:12]
    return out


FILES = {name: file_name(name) for name in ZONES}


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def quiet(command):
    """Runs a command; its output only if it fails."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout, result.stderr, sep="\n")
        raise SystemExit(f"{command} exits {result.returncode}")


def run(name, *flags):
    """Runs the suite into work/<name>/; returns (report runs by name, trace dir)."""
    folder = os.path.join(work, name)
    os.makedirs(folder)
    report = os.path.join(folder, "report.json")
    quiet([suite, f"--ringtrace_out={folder}/traces", f"--benchmark_out={report}", *flags])
    runs = {r["name"]: r for r in json.load(open(report))["benchmarks"]}
    check(sorted(runs) == sorted(ZONES), f"{name}: benchmarks {sorted(runs)}")
    return runs, os.path.join(folder, "traces")


def chrome(path):
    """The trace's zones [(tid, ts, dur)], its last event's metadata, names."""
    events = json.load(open(path))
    zones = [(e["tid"], round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in events if e.get("ph") == "X"]
    last = events[-1]
    check(last.get("name") == "process_name" and "ringtrace_session" in last.get("args", {}),
          f"{path}: the last event is not the session's counts")
    processes = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    return zones, last["args"].get("ringtrace_metadata", {}), processes, threads


def check_counts(label, bench, run, meta, kept):
    """The trace's metadata and the report's counters against the exact counts."""
    per_iter, iterations = ZONES[bench], run["iterations"]
    total = per_iter * iterations
    check(run.get("ringtrace_zones_per_iter") == per_iter, f"{label}: zones per iteration {run.get('ringtrace_zones_per_iter')}")
    check(run.get("ringtrace_dropped") == 0, f"{label}: dropped {run.get('ringtrace_dropped')}")
    check(meta.get("benchmark") == bench and meta.get("iterations") == iterations, f"{label}: metadata {meta}")
    check(meta.get("traced_zones") == kept, f"{label}: traced_zones {meta.get('traced_zones')}, {kept} zones in the file")
    check(meta.get("traced_zones", 0) + meta.get("untraced_zones", 0) == total,
          f"{label}: traced + untraced zones {meta.get('traced_zones')} + {meta.get('untraced_zones')} != {total}")
    check(run.get("ringtrace_untraced_zones") == meta.get("untraced_zones"),
          f"{label}: report's untraced zones {run.get('ringtrace_untraced_zones')} vs {meta.get('untraced_zones')}")
    # Every iteration records the same zones: the traced ones are whole iterations and
    # at most one iteration's first zones.
    traced_iterations = meta.get("traced_iterations", -1)
    check(per_iter * traced_iterations <= kept < per_iter * (traced_iterations + 1) or kept == total,
          f"{label}: {kept} zones for {traced_iterations} traced iterations of {per_iter} zones")
    check(meta.get("untraced_iterations") == iterations - traced_iterations == run.get("ringtrace_untraced_iters"),
          f"{label}: untraced iterations {meta.get('untraced_iterations')}, report {run.get('ringtrace_untraced_iters')}")
    check(meta.get("traced_events") == 0 and meta.get("untraced_events") == 0, f"{label}: events {meta}")


# 1. Defaults: the event bound (250000) bites first on zones of a few ns.
runs, traces = run("default", "--benchmark_min_time=0.05")
names = sorted(os.listdir(traces))
check(names == sorted(f + ".json" for f in FILES.values()), f"default: trace files {names}")
check(len(set(FILES.values())) == len(FILES), "two benchmarks share a file")
check(all(len(n) <= 96 + 13 + 5 for n in names), f"a file name is too long: {names}")
check(FILES["BM_three_zones"] == "BM_three_zones" and FILES["BM_collide/x"].startswith("BM_collide_x~"),
      "the naming rule")
# Names safe to type and to see: no trace hidden, none taken for an option.
check(not any(n[0] in ".-" for n in names), f"a trace file starts with '.' or '-': {names}")
check(FILES["-rf"].startswith("_rf~") and FILES[".hidden"].startswith("_hidden~"), "the naming rule's first character")
for bench, run_ in runs.items():
    check("ringtrace_trace_error" not in run_, f"default {bench}: trace error")
for bench, run_ in runs.items():
    path = os.path.join(traces, FILES[bench] + ".json")
    if not check(os.path.exists(path), f"default: no {path}"):
        continue
    zones, meta, processes, threads = chrome(path)
    label = f"default {bench}"
    check(processes == {bench}, f"{label}: process names {processes}")
    check(bench in threads.values(), f"{label}: no thread named after the benchmark: {threads}")
    check(meta.get("max_ms") == 100 and meta.get("max_events") == 250000, f"{label}: bound {meta}")
    total = ZONES[bench] * run_["iterations"]
    if total > 250000:
        check(meta.get("cut_by") == "events" and len(zones) == 250000,
              f"{label}: {len(zones)} zones of {total}, cut by {meta.get('cut_by')}")
        check(os.path.getsize(path) < 64 << 20, f"{label}: {os.path.getsize(path)} bytes")
    check_counts(label, bench, run_, meta, len(zones))

# 2. --ringtrace_max_events=1000: exactly 1000 zones, whole (a begin and an end each).
runs, traces = run("events", "--benchmark_min_time=0.02", "--ringtrace_max_events=1000", "--ringtrace_max_ms=0")
for bench, run_ in runs.items():
    zones, meta, _, _ = chrome(os.path.join(traces, FILES[bench] + ".json"))
    check(len(zones) == 1000 and meta.get("cut_by") == "events" and meta.get("max_ms") == 0,
          f"events {bench}: {len(zones)} zones, cut by {meta.get('cut_by')}")
    check_counts(f"events {bench}", bench, run_, meta, len(zones))

# 3. --ringtrace_max_ms=1: only zones begun in the first millisecond of the run.
runs, traces = run("time", "--benchmark_min_time=0.02", "--ringtrace_max_ms=1", "--ringtrace_max_events=0")
for bench, run_ in runs.items():
    zones, meta, _, _ = chrome(os.path.join(traces, FILES[bench] + ".json"))
    label = f"time {bench}"
    first = min(ts for _, ts, _ in zones)
    check(max(ts for _, ts, _ in zones) < first + 1_000_000, f"{label}: a zone begins after the first ms")
    check(meta.get("cut_by") == "time" and meta.get("cut_after_ns", 0) >= 1_000_000,
          f"{label}: cut by {meta.get('cut_by')} after {meta.get('cut_after_ns')} ns")
    check(0 < len(zones) < ZONES[bench] * run_["iterations"], f"{label}: {len(zones)} zones")
    check_counts(label, bench, run_, meta, len(zones))

# 4. No bound: every zone of the run (as before bounds existed).
runs, traces = run("all", "--benchmark_min_time=0.005", "--ringtrace_max_ms=0", "--ringtrace_max_events=0")
for bench, run_ in runs.items():
    zones, meta, _, _ = chrome(os.path.join(traces, FILES[bench] + ".json"))
    check(len(zones) == ZONES[bench] * run_["iterations"] and meta.get("cut_by") == "none",
          f"all {bench}: {len(zones)} zones, expected {ZONES[bench]} x {run_['iterations']}")
    check_counts(f"all {bench}", bench, run_, meta, len(zones))
    check(run_.get("ringtrace_untraced_iters") == 0, f"all {bench}: untraced iterations")

# 5. Formats.
runs, traces = run("perfetto", "--benchmark_min_time=0.01", "--ringtrace_format=perfetto",
                   "--ringtrace_max_events=2000")
names = sorted(os.listdir(traces))
check(names == sorted(f + ".perfetto-trace" for f in FILES.values()), f"perfetto: trace files {names}")
runs, traces = run("rtrace", "--benchmark_min_time=0.01", "--ringtrace_format=rtrace", "--ringtrace_max_events=2000")
names = sorted(os.listdir(traces))
check(names == sorted(f + ".rtrace" for f in FILES.values()), f"rtrace: trace files {names}")
for f in names:
    path = os.path.join(traces, f)
    check(open(path, "rb").read(8) == b"\x89RTRACE\n", f"{path}: not a ringtrace file")
    if tool:
        converted = path + ".json"
        quiet([tool, "convert", path, "--chrome", converted])
        zones, _, processes, _ = chrome(converted)
        bench = next(b for b, name in FILES.items() if name + ".rtrace" == f)
        check(len(zones) == 2000 and processes == {bench}, f"{path}: {len(zones)} zones, process {processes}")

# 6. A trace that cannot be written (a directory in the way of its file): said on standard
# error and in the report, the other benchmarks' traces written.
blocked = os.path.join(work, "blocked")
os.makedirs(os.path.join(blocked, "BM_three_zones.json", "in_the_way"))
blocked_report = os.path.join(work, "blocked.json")
result = subprocess.run([suite, f"--ringtrace_out={blocked}", f"--benchmark_out={blocked_report}",
                         "--benchmark_min_time=0.01", "--benchmark_filter=BM_three_zones|BM_n_zones/4"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
check(result.returncode == 0, f"blocked run exits {result.returncode}")
check("BM_three_zones.json" in result.stderr, f"blocked run's standard error: {result.stderr!r}")
blocked_runs = {r["name"]: r for r in json.load(open(blocked_report))["benchmarks"]}
check(blocked_runs.get("BM_three_zones", {}).get("ringtrace_trace_error") == 1 and
      "ringtrace_trace_error" not in blocked_runs.get("BM_n_zones/4", {}), f"blocked run's report: {blocked_runs}")
check(os.path.exists(os.path.join(blocked, FILES["BM_n_zones/4"] + ".json")), "the other trace is not written")
shutil.rmtree(blocked)
os.remove(blocked_report)

# 7. Refused flag values; and without the flag, a plain suite.
for bad in ("--ringtrace_format=svg", "--ringtrace_max_ms=soon", "--ringtrace_max_events=-1"):
    result = subprocess.run([suite, f"--ringtrace_out={work}/bad", bad], capture_output=True, text=True)
    check(result.returncode == 1 and "ringtrace:" in result.stderr and not os.path.exists(f"{work}/bad"),
          f"{bad}: status {result.returncode}, {result.stderr.strip()}")
plain_path = os.path.join(work, "plain.json")
quiet([suite, f"--benchmark_out={plain_path}", "--benchmark_min_time=0.01"])
plain = json.load(open(plain_path))
check(all(not any(k.startswith("ringtrace") for k in r) for r in plain["benchmarks"]), "counters without --ringtrace_out")
check(not any(k.startswith("ringtrace") for k in plain["context"]), "context without --ringtrace_out")
check(sorted(os.listdir(work)) == sorted(["all", "default", "events", "perfetto", "plain.json", "rtrace", "time"]),
      f"files in {work}: {sorted(os.listdir(work))}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("check_suite: all checks passed")
