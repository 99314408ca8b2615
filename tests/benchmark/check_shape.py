#!/usr/bin/env python3
"""check_shape.py <BENCHMARK_MAIN suite> <RINGTRACE_BENCHMARK_MAIN suite> <work dir> [--from-copy]: the
same suite built with both macros, run with Google Benchmark's output flags (format
console/json/csv, --benchmark_out with each --benchmark_out_format, also through the
BENCHMARK_OUT variable, --benchmark_color, --benchmark_counters_tabular,
--benchmark_display_aggregates_only, --benchmark_list_tests), stdout a pipe. The outputs
must have the same shape (the same rows in the same order, the same JSON keys, CSV
columns and console columns; values differ), no escape codes where the plain suite has
none, and with --ringtrace_out only ringtrace's additions: the counters
ringtrace_zones_per_iter, ringtrace_dropped, ringtrace_untraced_iters and
ringtrace_untraced_zones on every iteration row, and ringtrace_* context entries; without
it, no word of ringtrace's own. Where the suite runs is no part of that: Google Benchmark
prints the binary's path and the host's name, and a checkout in a folder named ringtrace
(what `git clone` makes) must pass too. --from-copy runs copies of both suites from
<work dir>/ringtrace-checkout/build, with that folder as the working directory: the
proof that it does."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

plain_suite, traced_suite, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
if sys.argv[4:] == ["--from-copy"]:
    checkout = os.path.join(os.path.abspath(work), "ringtrace-checkout", "build")
    os.makedirs(checkout)
    plain_suite, traced_suite = (shutil.copy2(suite, checkout) for suite in (plain_suite, traced_suite))
    os.chdir(checkout)
failures = []
COUNTERS = {"ringtrace_zones_per_iter", "ringtrace_dropped", "ringtrace_untraced_iters", "ringtrace_untraced_zones"}
CONTEXT = {"ringtrace_out", "ringtrace_format", "ringtrace_max_ms", "ringtrace_max_events"}
ESC = "\x1b"


def check(condition, message):
    if not condition:
        failures.append(message)


# What Google Benchmark prints about where the suite runs, any of which may hold the word
# "ringtrace" without ringtrace having printed anything: the console's "Running <argv[0]>"
# line (standard error) and the JSON context's executable and host_name.
WHERE = re.compile(r'^Running .*$|"(executable|host_name)": "(?:[^"\\]|\\.)*"', re.M)


def own_words(text):
    """The output without where the suite runs (WHERE): what its code printed."""
    return WHERE.sub(lambda m: f'"{m.group(1)}": ""' if m.group(1) else "Running", text)


def run(binary, flags, out=None, env=None):
    """stdout, stderr and the --benchmark_out file's text of one run."""
    result = subprocess.run([binary, "--benchmark_min_time=0.002", *flags], capture_output=True, text=True,
                            env=dict(os.environ, **(env or {})))
    check(result.returncode == 0, f"{binary} {flags}: exits {result.returncode}: {result.stderr[-400:]}")
    text = None
    if out is not None and os.path.exists(out):
        text = open(out).read()
        os.remove(out)
    return result.stdout, result.stderr, text


# --- shapes: what must be equal, values left out --------------------------------------

def json_shape(text, traced):
    report = json.loads(text)
    context = set(report["context"])
    if traced:
        check(CONTEXT <= context, f"json context lacks {CONTEXT - context}")
    rows = []
    for r in report["benchmarks"]:
        keys = set(r)
        if traced and r["run_type"] == "iteration":
            check(COUNTERS <= keys, f"json row {r['name']} lacks {COUNTERS - keys}")
        rows.append((r["name"], r["run_type"], r.get("aggregate_name"), sorted(keys - (COUNTERS if traced else set()))))
    return sorted(context - (CONTEXT if traced else set())), rows


def context_and_table(text, first_column):
    """A report's context lines (in a --benchmark_out file; on the console they go to
    stderr) as their keys, and the table from its header on."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(first_column)), 0)
    keys = [line.split(":")[0].strip() for line in lines[:start] if ":" in line and not line[0].isdigit()]
    return keys, "".join(lines[start:])


def csv_shape(text, traced):
    context, text = context_and_table(text, "name,")
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    if traced:
        check(COUNTERS <= set(header), f"csv header lacks {COUNTERS - set(header)}")
        keep = [i for i, h in enumerate(header) if h not in COUNTERS]
    else:
        keep = list(range(len(header)))
    for row in rows[1:]:
        check(len(row) == len(header), f"csv row {row[:1]}: {len(row)} cells, header {len(header)}")
    return context_keys(context, traced), [header[i] for i in keep], [row[0] for row in rows[1:]]


def context_keys(keys, traced):
    if traced and keys:
        check(CONTEXT <= set(keys), f"context lacks {CONTEXT - set(keys)}")
    return [k for k in keys if not (traced and k in CONTEXT)]


def console_shape(text, traced):
    """The header's columns and, per row, its name and the names of its counters."""
    context, text = context_and_table(re.sub(ESC + r"\[[0-9;]*m", "", text), "Benchmark ")
    lines = [line for line in text.splitlines() if line.strip() and not set(line) <= {"-"}]
    header = lines[0].split()
    if traced and "UserCounters..." not in header:  # tabular: a column per counter
        check(COUNTERS <= set(header), f"console header lacks {COUNTERS - set(header)}")
        header = [h for h in header if h not in COUNTERS]
    rows = []
    for line in lines[1:]:
        if line.split()[0] == header[0]:  # tabular: a new header when the counters change
            rows.append(("header", [h for h in line.split() if h not in (COUNTERS if traced else set())]))
            continue
        counters = sorted(set(re.findall(r"(\w+)=", line)) - (COUNTERS if traced else set()))
        rows.append((line.split()[0], counters))
    return context_keys(context, traced), header, rows


SHAPES = {"json": json_shape, "csv": csv_shape, "console": console_shape}

# --- the runs -------------------------------------------------------------------------

out = os.path.join(work, "report.out")
scenarios = [
    ("console", [], None),
    ("console", ["--benchmark_color=false"], None),
    ("console", ["--benchmark_counters_tabular=true"], None),
    ("console", ["--benchmark_display_aggregates_only=true"], None),
    ("json", ["--benchmark_format=json"], None),
    ("csv", ["--benchmark_format=csv"], None),
    ("json", [f"--benchmark_out={out}"], "file"),
    ("json", [f"--benchmark_out={out}", "--benchmark_out_format=json", "--benchmark_format=csv"], "file"),
    ("csv", [f"--benchmark_out={out}", "--benchmark_out_format=csv"], "file"),
    ("console", [f"--benchmark_out={out}", "--benchmark_out_format=console", "--benchmark_color=true"], "file"),
    ("csv", ["--benchmark_out_format=csv"], "env"),  # BENCHMARK_OUT names the file
    ("json", ["--benchmark_report_aggregates_only=true", f"--benchmark_out={out}"], "file"),
]
traces = os.path.join(work, "traces")
for kind, flags, where in scenarios:
    env = {"BENCHMARK_OUT": out} if where == "env" else None
    plain = run(plain_suite, flags, out, env)
    for ringtrace in ([], [f"--ringtrace_out={traces}"]):
        traced = run(traced_suite, flags + ringtrace, out, env)
        label = f"{' '.join(flags + ringtrace)}{' BENCHMARK_OUT=' + out if env else ''}"
        on = bool(ringtrace)
        # The output that holds the report: stdout, or the --benchmark_out file.
        index = 0 if where is None else 2
        check(plain[index] is not None and traced[index] is not None, f"{label}: no report")
        if plain[index] is None or traced[index] is None:
            continue
        try:
            want, got = SHAPES[kind](plain[index], False), SHAPES[kind](traced[index], on)
        except (ValueError, IndexError, KeyError) as error:  # e.g. a console table where JSON was asked for
            check(False, f"{label}: the report is not {kind}: {error}: {traced[index][:200]!r}")
            continue
        check(want == got, f"{label}: {kind} shapes differ:\n  BENCHMARK_MAIN  {want}\n  RINGTRACE_...   {got}")
        # Escape codes: exactly where the plain suite has them (a pipe: only when asked).
        for i, stream in enumerate(("stdout", "stderr", "file")):
            if plain[i] is None:
                continue
            check((ESC in plain[i]) == (ESC in (traced[i] or "")),
                  f"{label}: escape codes in {stream}: BENCHMARK_MAIN {ESC in plain[i]}, RINGTRACE_BENCHMARK_MAIN {not not traced[i] and ESC in traced[i]}")
        check(ESC not in plain[0] or "--benchmark_color=true" in flags, f"{label}: the plain suite colours a pipe")
        said = own_words(traced[0] + traced[1] + (traced[2] or ""))
        if not on:
            check("ringtrace" not in said, f"{label}: ringtrace in the output: {said[max(0, said.find('ringtrace') - 80):][:200]!r}")
        else:  # the check above can see ringtrace's words when they are there
            check("ringtrace_zones_per_iter" in said, f"{label}: no ringtrace counter in the output")
        shutil.rmtree(traces, ignore_errors=True)

# --benchmark_list_tests: the same lines.
plain = run(plain_suite, ["--benchmark_list_tests=true"])
for ringtrace in ([], [f"--ringtrace_out={traces}"]):
    traced = run(traced_suite, ["--benchmark_list_tests=true", *ringtrace])
    check(plain[0] == traced[0] and len(plain[0].splitlines()) == 3, f"list_tests: {plain[0]!r} vs {traced[0]!r}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print(f"check_shape: {len(scenarios)} output setups, each with and without --ringtrace_out: same shapes")
