"""Opens ringtrace's pstats files in the tools users open them with.

pyprof2calltree (Debian package) converts the file to callgrind format and
callgrind_annotate (valgrind) reads the result; the self cost of every function and the
program total (pyprof2calltree's summary: the largest cumtime) must be what ringtrace wrote (pyprof2calltree truncates seconds *
1e9 to an integer, so each value may be 1 ns lower). gprof2dot is not checked: neither
Debian 12 nor the npm registry has it (docs/formats/pstats.md).

usage: check_clients.py <pstats_scenario_writer> <work dir>
"""
import os
import pstats
import shutil
import subprocess
import sys

WRITER = sys.argv[1]
WORK = sys.argv[2]
os.makedirs(WORK, exist_ok=True)
failures = []

SCENARIO = """\
func 1 10 /src/app/main.cpp main
func 2 20 /src/app/main.cpp parse
func 3 30 /src/app/main.cpp fib
func 4 0 - interned caf\u00e9 \u65e5\u672c
func 5 40 /src/app/\u00fcber.cpp \u03bb-op
thread 0
thread 1
B 0 1 0
B 0 2 1000
B 0 4 1500
E 0 2500
E 0 7000
B 0 3 8000
B 0 3 9000
B 0 3 9500
E 0 9700
E 0 9900
B 0 5 9950
E 0 9990
E 0 10000
E 0 20000
B 1 3 500
B 1 4 600
E 1 900
E 1 5000
B 1 1 6000
stop 30000
"""


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=120,
                            **kwargs)
    if result.returncode != 0:
        failures.append(f"{cmd[0]} exited {result.returncode}: {result.stderr[-1000:]}")
    return result


def main():
    scenario = os.path.join(WORK, "clients.txt")
    prof = os.path.join(WORK, "clients.prof")
    with open(scenario, "w", encoding="utf-8") as f:
        f.write(SCENARIO)
    subprocess.run([WRITER, scenario, prof], check=True, timeout=60)
    stats = pstats.Stats(prof).stats
    self_ns = {key: value[2] * 1e9 for key, value in stats.items()}
    total_ns = sum(self_ns.values())
    if abs(total_ns - 48500) > 1e-6:  # thread 0: 20000, thread 1: 4500 + (30000 - 6000) open at stop = 48500
        failures.append(f"sum of tottime {total_ns} ns, expected 48500")

    pyprof2calltree = shutil.which("pyprof2calltree")
    callgrind_annotate = shutil.which("callgrind_annotate")
    if not pyprof2calltree or not callgrind_annotate:
        print("pyprof2calltree and callgrind_annotate are needed (Debian: pyprof2calltree, valgrind)")
        sys.exit(1)
    callgrind = os.path.join(WORK, "clients.callgrind")
    run([pyprof2calltree, "-i", prof, "-o", callgrind])

    # Self costs in the callgrind file: "fl=", "fn=", then "<line> <self cost>".
    seen = {}
    with open(callgrind, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("fn=") and i > 0 and lines[i - 1].startswith("fl="):
            file = lines[i - 1][3:]
            name = line[3:]
            lineno, cost = lines[i + 1].split()
            seen[(file, int(lineno), name)] = int(cost)
    for key, ns in self_ns.items():
        matches = [cost for (file, line, name), cost in seen.items()
                   if file == key[0] and line == key[1] and name.startswith(key[2])]
        if len(matches) != 1 or not (ns - 1.0001 <= matches[0] <= ns + 1e-6):
            failures.append(f"callgrind self cost of {key}: {matches}, pstats tottime {ns} ns")

    annotate = run([callgrind_annotate, "--threshold=100", callgrind])
    out = annotate.stdout
    totals = [line for line in out.split("\n") if "PROGRAM TOTALS" in line]
    if not totals:
        failures.append("callgrind_annotate printed no PROGRAM TOTALS:\n" + out[-2000:])
    else:
        # pyprof2calltree's summary (what callgrind_annotate totals) is the largest
        # cumtime: main's, 20000 on thread 0 + 24000 on thread 1 (its first call there).
        total = int(totals[0].split()[0].replace(",", ""))
        max_cumtime_ns = max(value[3] for value in stats.values()) * 1e9
        if abs(max_cumtime_ns - 44000) > 1e-6 or not (44000 - 1 <= total <= 44000):
            failures.append(f"callgrind_annotate total {total}, largest cumtime {max_cumtime_ns} ns, expected 44000")
    for name in ("parse", "fib", "interned caf\u00e9 \u65e5\u672c", "\u03bb-op"):
        if name not in out:
            failures.append(f"callgrind_annotate does not list {name!r}")

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("pyprof2calltree and callgrind_annotate agree with the pstats file")


main()
