#!/usr/bin/env python3
"""check_suite.py <traced_suite binary> <work dir>: runs the suite with and without
--ringtrace_out and checks one valid Chrome trace per benchmark, named after it, holding
exactly its reported run's zones, and the counters in the JSON report."""
import json
import os
import shutil
import subprocess
import sys

suite, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


traces = os.path.join(work, "traces")
report_path = os.path.join(work, "report.json")
subprocess.run([suite, f"--ringtrace_out={traces}", f"--benchmark_out={report_path}", "--benchmark_min_time=0.02"],
               check=True, stdout=subprocess.DEVNULL)
report = json.load(open(report_path))
expected = {"BM_three_zones": 3, "BM_n_zones/4": 4, "BM_n_zones/7": 7}
names = sorted(os.listdir(traces))
check(names == sorted(["BM_three_zones.json", "BM_n_zones_4.json", "BM_n_zones_7.json"]), f"trace files {names}")
for run in report["benchmarks"]:
    name = run["name"]
    check(run.get("ringtrace_zones_per_iter") == expected[name], f"{name}: zones per iteration {run.get('ringtrace_zones_per_iter')}")
    check(run.get("ringtrace_dropped") == 0, f"{name}: dropped {run.get('ringtrace_dropped')}")
    path = os.path.join(traces, name.replace("/", "_") + ".json")
    if not os.path.exists(path):
        continue
    events = json.load(open(path))
    zones = sum(1 for e in events if e.get("ph") == "X")
    check(zones == expected[name] * run["iterations"],
          f"{name}: {zones} zones in the trace, expected {expected[name]} x {run['iterations']} iterations")

# Without the flag: a plain suite, nothing recorded, no counters.
plain_path = os.path.join(work, "plain.json")
subprocess.run([suite, f"--benchmark_out={plain_path}", "--benchmark_min_time=0.01"], check=True, stdout=subprocess.DEVNULL)
plain = json.load(open(plain_path))
check(all("ringtrace_zones_per_iter" not in r for r in plain["benchmarks"]), "counters without --ringtrace_out")
check(sorted(os.listdir(work)) == ["plain.json", "report.json", "traces"], f"files in {work}: {os.listdir(work)}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("check_suite: all checks passed")
