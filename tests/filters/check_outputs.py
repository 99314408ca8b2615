#!/usr/bin/env python3
"""check_outputs.py FILTERED_DUMP CHROME_JSON TABLE FOLDED LABEL: the outputs of one
`ringtrace convert FILE [filters]` hold what `ringtrace dump FILE [filters]` holds: the
Chrome trace's zones (thread, name, start and length to the nanosecond, cut marks) are
the dump's zones, its metadata counts them; the key-averages table's calls per name and
the folded stacks' calls (--folded-value calls) add up to the same zones."""

import json
import re
import sys
from collections import Counter

LINE = re.compile(r'^(\d+) (\d+) (\d+) (\S+) ("(?:[^"\\]|\\.)*")(.*)$')


def unquote(q):
    s = re.sub(r'\\x([0-9a-f]{2})', lambda m: chr(int(m.group(1), 16)), q[1:-1])
    return s.replace('\\"', '"').replace("\\\\", "\\")


def dump_zones(path):
    stacks, zones = {}, []
    for line in open(path, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m or m.group(4) not in ("zone_begin", "zone_end"):
            continue
        time, tid, rest = int(m.group(1)), int(m.group(3)), m.group(6)
        stack = stacks.setdefault(tid, [])
        if m.group(4) == "zone_begin":
            step = re.search(r" step=(\d+)", rest)
            name = "step #" + step.group(1) if step else unquote(m.group(5))
            stack.append((name, time, "opened_at_window_start" in rest.split()))
        elif stack:
            name, begin, opened = stack.pop()
            zones.append((tid, name, begin, time - begin, opened, "closed_at_window_end" in rest.split()))
    return zones


def table_calls(path):
    """The text table's calls by name: the rows between the dashed lines under "Name ...",
    cells two spaces apart or more (a name cut to its column ends in "...")."""
    lines = open(path).read().splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Name ")), None)
    if header is None:
        return {}
    cells = re.split(r"\s{2,}", lines[header].strip())
    calls = cells.index("Calls")
    out = {}
    for line in lines[header + 2:]:
        if line.startswith("---"):
            break
        row = re.split(r"\s{2,}", line.strip())
        out[row[0]] = out.get(row[0], 0) + int(row[calls])
    return out


def main():
    dump, chrome, table, folded, label = sys.argv[1:6]
    want = dump_zones(dump)
    trace = json.load(open(chrome))
    got = []
    for e in trace:
        if e.get("ph") != "X" or e.get("cat") == "ringtrace.sched":
            continue
        args = e.get("args", {})
        got.append((e["tid"], e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000),
                    bool(args.get("opened_at_window_start")), bool(args.get("closed_at_window_end"))))
    problems = []
    if Counter(got) != Counter(want):
        extra, missing = Counter(got) - Counter(want), Counter(want) - Counter(got)
        problems.append("Chrome zones differ from the dump's: %d more, %d fewer; e.g. %s / %s" %
                        (sum(extra.values()), sum(missing.values()), list(extra)[:2], list(missing)[:2]))
    facts = trace[-1]["args"].get("ringtrace_metadata", {})
    if facts.get("filter.zones_out") != len(want):
        problems.append("Chrome metadata filter.zones_out %s, the dump has %d zones" % (facts.get("filter.zones_out"),
                                                                                     len(want)))
    calls = Counter(z[1] for z in want)
    rows = table_calls(table)
    for name in [n for n in rows if n.endswith("...")]:  # cut names: the dump's with that start
        matches = [n for n in calls if n.startswith(name[:-3])]
        if len(matches) == 1:
            rows[matches[0]] = rows.pop(name)
    if rows != dict(calls):
        problems.append("table calls by name %s, the dump's %s" % (sorted(rows.items())[:4], sorted(calls.items())[:4]))
    folded_calls = sum(int(line.rsplit(" ", 1)[1]) for line in open(folded) if line.strip())
    if folded_calls != len(want):
        problems.append("folded stacks count %d calls, the dump %d zones" % (folded_calls, len(want)))
    if problems:
        print("%s: %s" % (label, "\n  ".join(problems)))
        sys.exit(1)
    print("%s: %d zones in the Chrome trace, the table and the folded stacks, as in the dump" % (label, len(want)))


if __name__ == "__main__":
    main()
