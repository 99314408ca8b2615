"""The pstats file of a recorded run against cProfile on the same call tree.

`ringtrace record --chrome run.json --pstats run.prof` writes both from one session. The
Chrome trace gives every instrumented call with its nanoseconds; the same call tree runs
as Python functions (one per (file, line, name) key of the pstats file) under
cProfile.Profile with a timer that returns the recorded times, so cProfile itself computes
what the file must hold: every function and caller edge, counts exactly, times to 1e-12 s.
Then `python3 -m pstats`'s loader reads it and prints it.

usage: check_cprofile.py run.json run.prof NAME=CALLS...   (calls each named function must have)
"""
import cProfile
import io
import json
import pstats
import sys
import types

trace_path, prof_path = sys.argv[1], sys.argv[2]
wanted = dict(arg.rsplit("=", 1) for arg in sys.argv[3:])
failures = []

ours = pstats.Stats(prof_path).stats  # {key: (cc, nc, tt, ct, callers)}
key_by_name = {}
for key in ours:
    if key[2] in key_by_name:
        failures.append(f"two functions named {key[2]}")
    key_by_name[key[2]] = key

# Calls per thread from the Chrome trace, nested by time.
events = json.load(open(trace_path))
if isinstance(events, dict):
    events = events["traceEvents"]
spans = {}
for e in events:
    if e.get("ph") == "X":
        begin = round(float(e["ts"]) * 1000)
        spans.setdefault(e["tid"], []).append((begin, begin + round(float(e["dur"]) * 1000), e["name"]))

now = [0]


def fake_timer():
    return now[0]


def body(node):
    for child in node[3]:
        now[0] = child[1]
        child[0](child)
    now[0] = node[2]


functions = {}


def python_function(key):
    if key not in functions:
        file, line, name = key
        changes = dict(co_name=name, co_filename=file, co_firstlineno=line)
        if sys.version_info >= (3, 11):
            changes["co_qualname"] = name
        functions[key] = types.FunctionType(body.__code__.replace(**changes), globals(), name)
    return functions[key]


roots = []
for tid, calls in spans.items():
    calls.sort(key=lambda c: (c[0], -c[1]))
    stack = []
    for begin, end, name in calls:
        if name not in key_by_name:
            failures.append(f"{name}: in the Chrome trace, not in the pstats file")
            continue
        while stack and stack[-1][2] <= begin:
            stack.pop()
        node = [python_function(key_by_name[name]), begin, end, []]
        (stack[-1][3] if stack else roots).append(node)
        stack.append(node)

profiler = cProfile.Profile(fake_timer, 1e-9, builtins=False)
profiler.enable()
for root in roots:
    now[0] = root[1]
    root[0](root)
profiler.disable()
profiler.create_stats()
expected = profiler.stats


def close(a, b):
    return abs(a - b) <= 1e-12 + 1e-12 * abs(b)


if set(ours) != set(expected):
    failures.append(f"keys differ: only ours {set(ours) - set(expected)}, only cProfile {set(expected) - set(ours)}")
for key, (cc, nc, tt, ct, callers) in expected.items():
    if key not in ours:
        continue
    occ, onc, ott, oct_, ocallers = ours[key]
    if (occ, onc) != (cc, nc):
        failures.append(f"{key}: calls {onc}/{occ}, cProfile {nc}/{cc}")
    if not close(ott, tt) or not close(oct_, ct):
        failures.append(f"{key}: tottime {ott!r} cumtime {oct_!r}, cProfile {tt!r} {ct!r}")
    if set(ocallers) != set(callers):
        failures.append(f"{key}: callers {sorted(ocallers)}, cProfile {sorted(callers)}")
        continue
    for caller, edge in callers.items():
        mine = ocallers[caller]
        if tuple(mine[:2]) != tuple(edge[:2]) or not close(mine[2], edge[2]) or not close(mine[3], edge[3]):
            failures.append(f"edge {caller[2]} -> {key[2]}: {mine}, cProfile {edge}")
for name, calls in wanted.items():
    key = key_by_name.get(name)
    if key is None:
        failures.append(f"{name}: not in the pstats file")
    elif ours[key][1] != int(calls):
        failures.append(f"{name}: {ours[key][1]} calls, not {calls}")
    elif not key[0].startswith("/") or key[1] <= 0:
        failures.append(f"{name}: file {key[0]!r}, line {key[1]}: not a source location")

printed = io.StringIO()
pstats.Stats(prof_path, stream=printed).sort_stats("cumulative").print_stats()
if "function calls" not in printed.getvalue():
    failures.append("pstats printed no table")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(expected)} functions agree with cProfile on the same call tree")
