#!/usr/bin/env python3
"""compare_dumps.py ACTUAL EXPECTED [LABEL]: two dumps (ringtrace dump's lines) hold the
same events: per thread the same lines in the same order (a dump does not show the
dense thread ids the tool orders the events it makes up at a time range's edges by),
and ACTUAL is in time order. Exits 1 naming the first difference."""

import sys
from collections import defaultdict


def per_thread(path):
    threads = defaultdict(list)
    last = 0
    order = True
    for n, line in enumerate(open(path, errors="replace"), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        time, pid, tid = line.split(" ", 3)[:3]
        if int(time) < last:
            order = False
        last = int(time)
        threads[(pid, tid)].append((n, line))
    return threads, order


def main():
    actual, expected = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else actual
    got, ordered = per_thread(actual)
    want, _ = per_thread(expected)
    problems = []
    if not ordered:
        problems.append("the filtered dump is not in time order")
    for thread in sorted(set(got) | set(want)):
        a, b = got.get(thread, []), want.get(thread, [])
        for i in range(max(len(a), len(b))):
            la = a[i][1] if i < len(a) else "(nothing)"
            lb = b[i][1] if i < len(b) else "(nothing)"
            if la != lb:
                problems.append("thread %s/%s, its line %d (%s line %s): got  %s\n    want %s" %
                                (thread[0], thread[1], i + 1, actual, a[i][0] if i < len(a) else "-", la, lb))
                break
    if problems:
        print("%s: %d threads differ" % (label, len(problems)))
        for p in problems[:5]:
            print("  " + p)
        sys.exit(1)
    print("%s: %d events on %d threads, as expected" % (label, sum(len(v) for v in got.values()), len(got)))


if __name__ == "__main__":
    main()
