#!/usr/bin/env python3
"""What a recording adds to a process's start and exit (issue 44; docs/performance.md,
"Start and exit of a recorded process").

Each case runs a plain command and the same command under `ringtrace record`, in turn
(plain, recorded, plain, recorded, ...: on a shared, noisy machine the pair's two runs see
the same load), after one warm-up run of each. A run's wall time is taken around the
whole process (fork, exec, wait: the same for both), its CPU time from the kernel's
accounting of the finished process and its children (wait4). Printed per case: the
medians of the plain and recorded runs, the median of the pairs' differences (what the
recording added, ms) and of their ratios.

    startup.py BUILD [BUILD2 ...] [--pairs N] [--cases a,b,c] [--work DIR]

BUILD is a Release build directory (tools/ringtrace, libringtrace_preload.so and
bench/startup_short_program in it). With two or more builds (an older one first), every
round runs the plain command once and each build's recorded command once, in an order
that rotates from round to round, so that the builds are compared in the same minutes.

Cases:
  linking   bench/startup_short_program (links ringtrace, about 2 ms of work) under
            `ringtrace record -o DIR/%p.rtrace` (a new file for every run)
  replacing the same, `-o DIR/run.rtrace`: every run replaces the last one's file
  memory    `ls /usr` under `ringtrace record --memory -o DIR/%p.rtrace` (preloaded)
  make200   `make -j2` of 200 targets, each running the short program briefly, under
            `ringtrace record -o DIR/%p.rtrace`: each of the 200 processes records
            itself (make does not link ringtrace); the difference over 200 is the cost
            per process without the tool's own start
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MAKEFILE = """\
TARGETS := $(shell seq 1 200)
all: $(TARGETS)
$(TARGETS):
\t@$(PROGRAM) 50
.PHONY: all $(TARGETS)
"""


def run_once(argv, env=None):
    """Wall seconds and CPU seconds (the process and its children) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("%s: exit status %d" % (" ".join(argv), proc.returncode))
    return wall, usage.ru_utime + usage.ru_stime


def clean(directory):
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))


def commands(case, build, out, makefile):
    tool = os.path.join(build, "tools", "ringtrace")
    program = os.path.join(build, "bench", "startup_short_program")
    if case == "linking":
        plain = [program, "500"]
        return plain, [tool, "record", "-o", os.path.join(out, "%p.rtrace"), "--"] + plain
    if case == "replacing":
        plain = [program, "500"]
        return plain, [tool, "record", "-o", os.path.join(out, "run.rtrace"), "--"] + plain
    if case == "memory":
        plain = ["ls", "/usr"]
        return plain, [tool, "record", "--memory", "-o", os.path.join(out, "%p.rtrace"), "--"] + plain
    if case == "make200":
        plain = ["make", "-s", "-j2", "-f", makefile, "PROGRAM=" + program]
        return plain, [tool, "record", "-o", os.path.join(out, "%p.rtrace"), "--"] + plain
    sys.exit("unknown case " + case)


def measure(case, builds, pairs, work, makefile):
    outs = []
    for i, _ in enumerate(builds):
        out = os.path.join(work, "%s.%d" % (case, i))
        os.makedirs(out, exist_ok=True)
        outs.append(out)
    plain = commands(case, builds[0], outs[0], makefile)[0]
    recorded = [commands(case, b, o, makefile)[1] for b, o in zip(builds, outs)]
    runs = [("plain", plain)] + [("build %d" % i, r) for i, r in enumerate(recorded)]
    for _, argv in runs:  # warm-up: the files in the page cache, the directories made
        run_once(argv)
    walls = {name: [] for name, _ in runs}
    cpus = {name: [] for name, _ in runs}
    for round_ in range(pairs):
        order = runs[round_ % len(runs):] + runs[:round_ % len(runs)]
        for name, argv in order:
            wall, cpu = run_once(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
        if round_ % 5 == 4:
            for out in outs:
                clean(out)
    for out in outs:
        clean(out)
    print("%s (%d rounds): plain: wall %.2f ms, cpu %.2f ms (medians)" %
          (case, pairs, 1e3 * statistics.median(walls["plain"]), 1e3 * statistics.median(cpus["plain"])))
    for i, build in enumerate(builds):
        name = "build %d" % i
        added = [r - p for r, p in zip(walls[name], walls["plain"])]
        ratio = [r / p for r, p in zip(walls[name], walls["plain"])]
        added_cpu = [r - p for r, p in zip(cpus[name], cpus["plain"])]
        print("  %s: recorded wall %.2f ms; added per pair: wall %.2f ms (ratio %.2f), cpu %.2f ms; "
              "added wall min %.2f max %.2f ms" %
              (build, 1e3 * statistics.median(walls[name]), 1e3 * statistics.median(added),
               statistics.median(ratio), 1e3 * statistics.median(added_cpu), 1e3 * min(added), 1e3 * max(added)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--cases", default="linking,replacing,memory,make200")
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    builds = [os.path.abspath(b) for b in args.builds]
    work = args.work or tempfile.mkdtemp(prefix="ringtrace-startup.")
    os.makedirs(work, exist_ok=True)
    makefile = os.path.join(work, "Makefile")
    with open(makefile, "w") as f:
        f.write(MAKEFILE)
    print("machine: %s; load average %s" % (cpu_model(), " ".join("%.2f" % x for x in os.getloadavg())))
    for case in args.cases.split(","):
        measure(case, builds, args.pairs, work, makefile)
    print("load average after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    if args.work is None:
        shutil.rmtree(work)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + ", %d CPUs" % os.cpu_count()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
