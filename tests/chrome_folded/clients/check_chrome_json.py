#!/usr/bin/env python3
"""Strict JSON check of a Chrome trace with Python's json module.

    check_chrome_json.py <trace.json> [<trace.json.gz> <expected.json>]

Rejects NaN/Infinity and duplicate keys; checks the Trace Event Format shape (array
form, ph/pid/tid/ts types, ts with exactly three decimals, dur exact in nanoseconds), that the gzip file
holds the same text, and, with expected.json, that every zone of the session is there
with its exact start and duration in nanoseconds, on its thread, with its name, and
that the zones per name and the instants are what the program counted it made.
"""
import collections
import decimal
import gzip
import math
import json
import sys

failures = 0


def check(condition, message):
    global failures
    if not condition:
        failures += 1
        print("FAIL:", message, file=sys.stderr)


def reject_constant(name):
    raise ValueError("non-standard JSON constant " + name)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate keys: %r" % keys)
    return dict(pairs)


def strict_load(text):
    return json.loads(text, parse_constant=reject_constant, parse_float=decimal.Decimal,
                      object_pairs_hook=no_duplicates)


def ns(value):
    """Microseconds with exactly three decimals -> integer nanoseconds."""
    check(isinstance(value, decimal.Decimal) and value.as_tuple().exponent == -3,
          "time %r is not a number with three decimals" % (value,))
    return int(value * 1000)


def dur_ns(value):
    """A dur: three decimals, or (docs/formats/chrome_trace.md) the shortest text of the
    double just above the three-decimal value, when the value's own double times 1000
    truncates one nanosecond short."""
    if isinstance(value, decimal.Decimal) and value.as_tuple().exponent == -3:
        exact = int(value * 1000)
        check(int(float(value) * 1000) == exact,
              "dur %s: written with three decimals, but its double times 1000 truncates to %d"
              % (value, int(float(value) * 1000)))
        return exact
    check(isinstance(value, decimal.Decimal), "dur %r is not a number" % (value,))
    exact = int((value * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))
    three = decimal.Decimal(exact) / 1000
    check(float(value) == math.nextafter(float(three), math.inf) and int(float(value) * 1000) == exact,
          "dur %s is neither three decimals nor the next double above %s" % (value, three))
    return exact


def main(argv):
    with open(argv[1], "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # strict: invalid UTF-8 raises
    trace = strict_load(text)
    # The array form, with no displayTimeUnit (old Perfetto builds then read every ts as
    # nanoseconds); the session's counts ride in the args of the last event, a
    # process_name that states the first one's name again (no metadata name of its own,
    # which Catapult would warn about).
    check(isinstance(trace, list), "top level is not an array")
    events = trace
    session = [e for e in events if "ringtrace_session" in e.get("args", {})]
    check(len(session) == 1 and events[-1] is session[0], "ringtrace_session is not in the one last event")
    process_names = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    check(len(process_names) >= 2 and process_names[-1] is events[-1] and events[0] is process_names[0]
          and events[-1]["args"]["name"] == events[0]["args"]["name"] and events[-1]["pid"] == events[0]["pid"],
          "the last event is not a process_name with the first one's name and pid")
    check(all(e.get("ph") != "M" or e.get("name") in ("process_name", "thread_name", "thread_sort_index")
              for e in events), "a metadata event of another name: %r"
          % [e["name"] for e in events if e.get("ph") == "M"][:3])
    zones = collections.Counter()
    names = {}
    for e in events:
        ph = e.get("ph")
        check(ph in ("X", "i", "C", "M"), "unexpected ph %r" % ph)
        check(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), "pid/tid not integers: %r" % e)
        check(isinstance(e.get("name"), str), "name not a string: %r" % e)
        if ph == "X":
            begin, dur = ns(e["ts"]), dur_ns(e["dur"])
            check(dur >= 0, "negative duration %r" % e)
            zones[(e["tid"], e["name"], begin, dur)] += 1
        elif ph == "i":
            ns(e["ts"])
            check(e.get("s") == "t", "instant without thread scope: %r" % e)
        elif ph == "C":
            ns(e["ts"])
            check(list(e["args"].keys()) == ["value"], "counter args %r" % e)
            value = e["args"]["value"]
            check(isinstance(value, (int, decimal.Decimal)), "counter value %r" % e)
        elif ph == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
    check(sum(zones.values()) > 0, "no zones")

    if len(argv) > 2:
        with open(argv[2], "rb") as f:
            check(gzip.decompress(f.read()) == raw, "the .gz file does not hold the same trace")
        with open(argv[3], "rb") as f:
            expected = strict_load(f.read().decode("utf-8"))
        want = collections.Counter()
        for thread in expected["threads"]:
            check(names.get(thread["tid"]) == thread["name"],
                  "thread %d named %r, expected %r" % (thread["tid"], names.get(thread["tid"]), thread["name"]))
            for z in thread["zones"]:
                want[(thread["tid"], z[0], z[1], z[2])] += 1
        missing, extra = want - zones, zones - want
        check(not missing and not extra, "zones differ: missing %r, unexpected %r"
              % (list(missing)[:3], list(extra)[:3]))
        # Against what the program made, counted by itself beside each macro (read from
        # no stream): zones per name, and the instants.
        made = expected.get("made")
        check(made is not None, "expected.json has no \"made\" counts")
        if made is not None:
            by_name = collections.Counter()
            for (_, name, _, _), n in zones.items():
                by_name[name] += n
            check(dict(by_name) == made["zones"], "zones per name %r, the program made %r" % (dict(by_name), made["zones"]))
            instants = sum(1 for e in events if e.get("ph") == "i")
            check(instants == made["instants"], "%d instants, the program made %d" % (instants, made["instants"]))
        other = session[0]["args"]["ringtrace_session"]
        check(other["closed_at_stop"] == expected["closed_at_stop"], "otherData.closed_at_stop")
        check(other["recorded_events"] == expected["recorded"], "otherData.recorded_events")
        check(other["dropped_events"] == 0, "otherData.dropped_events")
    if failures:
        print("%s: %d check(s) failed" % (argv[1], failures), file=sys.stderr)
        return 1
    print("%s: strict JSON, %d events, %d zones: all checks passed" % (argv[1], len(events), sum(zones.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
