#!/usr/bin/env python3
"""Reads the summaries' CSV files with a real CSV reader (miller, `mlr`) and checks
their columns and numbers.

  check_csv.py known <dir>  table.csv and summary.csv of csv_writer's hand-built
                            stream: every value is known.
  check_csv.py demo <dir>   the demo's table.csv and summary.csv: columns, types and
                            the relations between the numbers.
"""
import json
import shutil
import subprocess
import sys

TABLE_COLUMNS = ["name", "self_percent", "self_ns", "total_percent", "total_ns", "avg_ns",
                 "min_ns", "max_ns", "p50_ns", "p99_ns", "calls"]
SUMMARY_COLUMNS = ["scope", "thread", "os_tid", "thread_name", "unique_graphs", "graph_calls", "captured_ops",
                   "total_ops", "ops_percent", "captured_ns", "total_ns", "time_percent"]
# With context switches in the stream (Config::context_switches, on in the demo), both
# files end with on-CPU columns.
TABLE_ON_CPU = ["on_cpu_self_ns", "on_cpu_total_ns", "on_cpu_avg_ns", "on_cpu_p50_ns", "on_cpu_p99_ns"]
SUMMARY_ON_CPU = ["captured_on_cpu_ns", "total_on_cpu_ns", "on_cpu_time_percent"]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def mlr(*args):
    result = subprocess.run(["mlr", *args], check=True, capture_output=True, text=True)
    return json.loads(result.stdout) if result.stdout.strip() else []


def read(path, columns, on_cpu_columns=None):
    # -S: keep every field a string so that names are compared byte for byte; the
    # numbers are converted here.
    rows = mlr("--icsv", "--ojson", "-S", "cat", path)
    header = mlr("--icsv", "--ojson", "--implicit-csv-header", "--allow-ragged-csv-input", "head", "-n", "1", path)
    if on_cpu_columns and header and list(header[0].values()) == columns + on_cpu_columns:
        columns = columns + on_cpu_columns
    check(header and list(header[0].values()) == columns, f"{path}: columns {header[0] if header else None}")
    for row in rows:
        check(list(row.keys()) == columns, f"{path}: row keys {list(row.keys())}")
    return rows


def percent_text(part, whole):
    """What the CSV holds: the percentage rounded half up to two decimals."""
    if whole == 0:
        return "0.00"
    h = (part * 10000 + whole // 2) // whole
    return f"{h // 100}.{h % 100:02d}"


def integer(row, key):
    value = row[key]
    if value == "":
        return None
    check(str(int(value)) == value, f"not an integer: {key}={value!r}")
    return int(value)


def check_table(path, expected=None, on_cpu_allowed=False):
    rows = read(path, TABLE_COLUMNS, TABLE_ON_CPU if on_cpu_allowed else None)
    self_sum = sum(integer(r, "self_ns") for r in rows)
    sums = mlr("--icsv", "--ojson", "stats1", "-a", "sum", "-f", "self_ns,self_percent", path)
    if rows:
        check(int(sums[0]["self_ns_sum"]) == self_sum, f"mlr sum of self_ns {sums[0]['self_ns_sum']} != {self_sum}")
        check(abs(float(sums[0]["self_percent_sum"]) - 100.0) <= 0.005 * len(rows) or self_sum == 0,
              f"self_percent sums to {sums[0]['self_percent_sum']}")
    for r in rows:
        name = r["name"]
        for key in ("self_ns", "total_ns", "avg_ns", "min_ns", "max_ns", "p50_ns", "p99_ns", "calls"):
            integer(r, key)
        check(integer(r, "calls") >= 1, f"{name}: calls")
        check(integer(r, "min_ns") <= integer(r, "p50_ns") <= integer(r, "p99_ns") <= integer(r, "max_ns"),
              f"{name}: min <= p50 <= p99 <= max")
        check(integer(r, "min_ns") <= integer(r, "avg_ns") <= integer(r, "max_ns"), f"{name}: min <= avg <= max")
        check(integer(r, "self_ns") <= integer(r, "calls") * integer(r, "max_ns"), f"{name}: self bounded")
        if "on_cpu_self_ns" in r:  # on-CPU never exceeds wall
            check(integer(r, "on_cpu_self_ns") <= integer(r, "self_ns"), f"{name}: on-CPU self <= self")
            check(integer(r, "on_cpu_total_ns") <= integer(r, "total_ns"), f"{name}: on-CPU total <= total")
            check(integer(r, "on_cpu_avg_ns") <= integer(r, "avg_ns"), f"{name}: on-CPU avg <= avg")
            check(integer(r, "on_cpu_p50_ns") <= integer(r, "on_cpu_p99_ns"), f"{name}: on-CPU p50 <= p99")
        if self_sum:
            check(r["self_percent"] == percent_text(integer(r, "self_ns"), self_sum), f"{name}: self_percent")
            check(r["total_percent"] == percent_text(integer(r, "total_ns"), self_sum), f"{name}: total_percent")
    if expected is not None:
        got = {r["name"]: (integer(r, "calls"), integer(r, "self_ns"), integer(r, "total_ns")) for r in rows}
        check(got == expected, f"{path}: {got} != {expected}")
        check([r["name"] for r in rows] == sorted(expected), f"{path}: order {[r['name'] for r in rows]}")
    return rows


def check_summary(path, expected=None, on_cpu_allowed=False):
    rows = read(path, SUMMARY_COLUMNS, SUMMARY_ON_CPU if on_cpu_allowed else None)
    check(rows and rows[-1]["scope"] == "total", f"{path}: last row is not the total")
    threads = [r for r in rows if r["scope"] == "thread"]
    total = rows[-1]
    check(len(threads) == len(rows) - 1, f"{path}: scopes {[r['scope'] for r in rows]}")
    for key in ("graph_calls", "captured_ops", "total_ops", "captured_ns", "total_ns"):
        check(sum(integer(r, key) for r in threads) == integer(total, key), f"{path}: total {key}")
    for r in rows:
        check(integer(r, "captured_ops") <= integer(r, "total_ops"), "captured_ops <= total_ops")
        check(integer(r, "captured_ns") <= integer(r, "total_ns"), "captured_ns <= total_ns")
        check(r["ops_percent"] == percent_text(integer(r, "captured_ops"), integer(r, "total_ops")), "ops_percent")
        check(r["time_percent"] == percent_text(integer(r, "captured_ns"), integer(r, "total_ns")), "time_percent")
    if rows and "total_on_cpu_ns" in rows[0]:
        for key in ("captured_on_cpu_ns", "total_on_cpu_ns"):
            check(sum(integer(r, key) for r in threads) == integer(total, key), f"{path}: total {key}")
        for r in rows:
            check(integer(r, "captured_on_cpu_ns") <= integer(r, "captured_ns"), "captured on-CPU <= captured")
            check(integer(r, "total_on_cpu_ns") <= integer(r, "total_ns"), "total on-CPU <= total")
            check(r["on_cpu_time_percent"] == percent_text(integer(r, "captured_on_cpu_ns"), integer(r, "total_on_cpu_ns")),
                  "on_cpu_time_percent")
    check(integer(total, "unique_graphs") >= max([integer(r, "unique_graphs") for r in threads] + [0]),
          "unique graphs of the total")
    if expected is not None:
        got = [(r["scope"], r["thread_name"], r["os_tid"], integer(r, "unique_graphs"), integer(r, "graph_calls"),
                integer(r, "captured_ops"), integer(r, "total_ops"), integer(r, "captured_ns"),
                integer(r, "total_ns")) for r in rows]
        check(got == expected, f"{path}: {got} != {expected}")
    return rows


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("known", "demo"):
        print(__doc__)
        return 2
    if shutil.which("mlr") is None:
        print("mlr (Debian package miller) not found: install it (scripts/debian-packages.txt)")
        return 1
    mode, folder = sys.argv[1], sys.argv[2]
    if mode == "known":
        check_table(f"{folder}/table.csv", {
            "graph": (2, 620, 1600),
            "mat,mul": (1, 300, 300),
            'say "hi"': (1, 100, 100),
            "multi\nline": (1, 200, 300),
            " padded ": (1, 100, 100),
            "\u00fcn\u00efcode": (1, 580, 580),
            "plain": (1, 100, 100),
        })
        check_summary(f"{folder}/summary.csv", [
            ("thread", 'worker, "one"', "11", 1, 1, 2, 3, 400, 700),
            ("thread", "two", "12", 1, 1, 1, 2, 580, 680),
            ("total", "", "", 2, 2, 3, 5, 980, 1380),
        ])
    else:
        table = check_table(f"{folder}/table.csv", on_cpu_allowed=True)
        summary = check_summary(f"{folder}/summary.csv", on_cpu_allowed=True)
        names = {r["name"] for r in table}
        for name in ("matmul", "relu", "allreduce", "compiled_graph", "fibonacci"):
            check(any(n == name or n.endswith(name) or name in n for n in names), f"demo table lacks {name}")
        check(integer(summary[-1], "total_ops") > 0, "demo summary has ops")
        check(0 < integer(summary[-1], "captured_ops") < integer(summary[-1], "total_ops"),
              "demo summary: some ops captured, some not")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
