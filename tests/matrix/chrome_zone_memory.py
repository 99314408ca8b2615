#!/usr/bin/env python3
"""Each zone's allocations in a Chrome trace JSON file ringtrace wrote (issue 42's memory
matrix): the args alloc_bytes and allocs of its complete events summed by process and zone
name, one line each: PID ALLOCS BYTES NAME (the name last: it may hold spaces). Written apart from ringtrace's code."""
import json
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    sums = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") != "X" or ("allocs" not in args and "alloc_bytes" not in args):
            continue
        key = (e.get("pid"), e.get("name"))
        allocs, alloc_bytes = sums.get(key, (0, 0))
        sums[key] = (allocs + int(args.get("allocs", 0)), alloc_bytes + int(args.get("alloc_bytes", 0)))
    for (pid, name), (allocs, alloc_bytes) in sorted(sums.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        print(pid, allocs, alloc_bytes, name)


if __name__ == "__main__":
    main()
