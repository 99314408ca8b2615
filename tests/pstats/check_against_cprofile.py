"""Checks ringtrace's pstats files against cProfile itself.

Each scenario is a set of call trees per thread with known nanosecond times. The C++
side (pstats_scenario_writer: TraceBuilder -> replay -> PstatsExporter) writes a .prof
file; the Python side runs the same call structure as real Python functions under
cProfile.Profile with a fake timer that returns the scenario's times, so cProfile itself
computes the expected numbers. Every function and every caller edge must agree: counts
exactly, times to 1e-12 s. Then Python's own pstats must load and print the file, and the
exporter's text report must equal pstats' print_stats output.

usage: check_against_cprofile.py <pstats_scenario_writer> <work dir>
"""
import cProfile
import io
import marshal
import os
import pstats
import random
import subprocess
import sys
import types

WRITER = sys.argv[1]
WORK = sys.argv[2]
os.makedirs(WORK, exist_ok=True)

failures = []


def fail(scenario, message):
    failures.append(f"[{scenario}] {message}")


# ---------------------------------------------------------------------------------------
# Scenarios: funcs = {id: (file or None, line, name)}; threads = list of event lists,
# each event ("B", func, t) | ("E", t) | ("D", t, count); stop = ns.

class Scenario:
    def __init__(self, name, funcs, stop=0):
        self.name = name
        self.funcs = funcs
        self.threads = []
        self.stop = stop

    def thread(self):
        self.threads.append([])
        return self.threads[-1]


def calls(events, t, spec):
    """Appends a nested call written as (func, duration_before_children, [children], duration_after)
    or (func, self_ns) starting at t; returns the end time."""
    func = spec[0]
    events.append(("B", func, t))
    if len(spec) == 2:
        t += spec[1]
    else:
        t += spec[1]
        for child in spec[2]:
            t = calls(events, t, child)
        t += spec[3]
    events.append(("E", t))
    return t


def named_scenarios():
    out = []
    F = "/src/model.cpp"

    s = Scenario("plain_nesting", {1: (F, 10, "main"), 2: (F, 20, "parse"), 3: (F, 30, "lex"),
                                   4: (F, 40, "eval")})
    ev = s.thread()
    t = calls(ev, 100, (1, 5, [(2, 7, [(3, 11), (3, 13)], 2), (4, 17)], 3))
    calls(ev, t + 50, (4, 19))  # a top-level call: no caller entry
    out.append(s)

    s = Scenario("direct_recursion", {1: (F, 50, "fact"), 2: (F, 60, "main"), 3: (F, 70, "leaf")})
    ev = s.thread()
    calls(ev, 0, (2, 1, [(1, 3, [(1, 5, [(1, 7, [(1, 11, [(3, 2)], 1)], 2)], 3)], 4),
                         (1, 9, [(1, 13)], 6)], 8))
    calls(ev, 1000, (1, 2, [(1, 4)], 1))  # recursion from the top level
    out.append(s)

    s = Scenario("mutual_recursion", {1: (F, 80, "even"), 2: (F, 90, "odd"), 3: (F, 95, "main")})
    ev = s.thread()
    calls(ev, 0, (3, 2, [(1, 3, [(2, 5, [(1, 7, [(2, 11, [(1, 13)], 1)], 2)], 3)], 4), (2, 17, [(1, 19)], 5)], 6))
    out.append(s)

    s = Scenario("indirect_edge_recursion", {1: (F, 100, "a"), 2: (F, 110, "b"), 3: (F, 120, "c")})
    ev = s.thread()
    # a -> b -> a -> b -> c, and a -> a -> b: the a->b edge is active twice at once
    calls(ev, 0, (1, 1, [(2, 2, [(1, 3, [(2, 4, [(3, 5)], 6)], 7)], 8), (1, 9, [(2, 10)], 11)], 12))
    out.append(s)

    s = Scenario("several_callers", {1: (F, 200, "helper"), 2: (F, 210, "alpha"), 3: (F, 220, "beta"),
                                     4: (F, 230, "gamma"), 5: (F, 240, "root")})
    ev = s.thread()
    calls(ev, 0, (5, 1, [(2, 2, [(1, 3), (1, 4)], 5), (3, 6, [(1, 7)], 8), (4, 9, [(2, 1, [(1, 2)], 3), (1, 5)], 6)],
                  7))
    out.append(s)

    s = Scenario("several_threads", {1: (F, 300, "worker"), 2: (F, 310, "step"), 3: (F, 320, "fib"),
                                     4: (F, 330, "io")})
    ev0, ev1, ev2 = s.thread(), s.thread(), s.thread()
    # overlapping in time: fib on thread 1 while thread 0 is inside fib is still primitive
    calls(ev0, 0, (1, 5, [(2, 3, [(3, 10, [(3, 20, [(3, 30)], 5)], 5)], 2), (2, 4, [(4, 50)], 1)], 3))
    calls(ev1, 12, (1, 2, [(3, 40, [(3, 7)], 1), (2, 6)], 9))
    calls(ev2, 1, (4, 1000))
    calls(ev2, 2000, (2, 1, [(4, 8)], 2))
    out.append(s)

    s = Scenario("open_at_stop", {1: (F, 400, "loop"), 2: (F, 410, "step"), 3: (F, 420, "rec"),
                                  4: (F, 430, "done")}, stop=10000)
    ev0, ev1 = s.thread(), s.thread()
    t = calls(ev0, 0, (4, 10))
    ev0 += [("B", 1, t + 5), ("B", 2, t + 20)]
    t = calls(ev0, t + 30, (4, 7))
    ev0 += [("B", 3, t + 1), ("B", 3, t + 9), ("B", 3, t + 15)]  # recursion still open
    ev1 += [("B", 1, 3), ("B", 3, 50)]
    calls(ev1, 60, (4, 40))
    out.append(s)

    s = Scenario("dropped_events", {1: (F, 500, "outer"), 2: (F, 510, "inner")})
    ev0, ev1 = s.thread(), s.thread()
    ev0.append(("D", 0, 17))
    t = calls(ev0, 5, (1, 3, [(2, 4)], 5))
    ev0.append(("D", t + 1, 1000))
    calls(ev0, t + 2, (1, 1, [(2, 2), (2, 3)], 4))
    ev1.append(("D", 7, 5))
    calls(ev1, 8, (2, 100))
    out.append(s)

    s = Scenario("keys_and_names", {
        1: (F, 600, "same_key"), 2: (F, 600, "same_key"),  # two sites, one key: merged
        3: (None, 0, "interned \u00e9t\u00e9 \u65e5\u672c \U0001F525"), 4: (None, 0, "<dynamic>"),
        5: ("/src/\u00fcber/caf\u00e9.cpp", 7, "\u03bb" * 300), 6: (F, 610, "n" * 5000)})
    ev = s.thread()
    calls(ev, 0, (1, 1, [(2, 2, [(3, 3, [(4, 4)], 5)], 6), (5, 7, [(6, 8), (1, 9)], 10)], 11))
    out.append(s)

    s = Scenario("zero_durations", {1: (F, 700, "z"), 2: (F, 710, "y")})
    ev0, ev1 = s.thread(), s.thread()
    ev0 += [("B", 1, 5), ("B", 2, 5), ("E", 5), ("B", 1, 5), ("E", 5), ("E", 5)]
    ev1 += [("B", 2, 5), ("E", 5)]
    out.append(s)

    s = Scenario("no_calls", {1: (F, 800, "unused")})
    s.thread().append(("D", 3, 2))
    out.append(s)
    return out


def random_scenarios(count, seed):
    rng = random.Random(seed)
    out = []
    for n in range(count):
        nfuncs = rng.randint(1, 6)
        funcs = {i: ("/src/r.cpp" if i % 3 else None, 10 * i if i % 3 else 0, f"f{i}") for i in range(1, nfuncs + 1)}
        s = Scenario(f"random_{seed}_{n}", funcs)
        last = 0
        for _ in range(rng.randint(1, 3)):
            ev = s.thread()
            t = rng.randint(0, 50)
            depth = 0
            for _ in range(rng.randint(0, 120)):
                t += rng.choice([0, 1, 2, 3, 10, 100, 1000])
                if depth > 0 and (rng.random() < 0.45 or depth > 12):
                    ev.append(("E", t))
                    depth -= 1
                elif rng.random() < 0.03:
                    ev.append(("D", t, rng.randint(1, 100)))
                else:
                    ev.append(("B", rng.randint(1, nfuncs), t))
                    depth += 1
            if rng.random() < 0.5:  # close everything, else leave open at stop
                for _ in range(depth):
                    t += rng.randint(0, 30)
                    ev.append(("E", t))
            last = max(last, t)
        s.stop = last + rng.randint(0, 100)
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------
# The C++ side

def write_scenario(s, path):
    with open(path, "w", encoding="utf-8") as f:
        for fid, (file, line, name) in s.funcs.items():
            f.write(f"func {fid} {line} {file if file else '-'} {name}\n")
        for ti, events in enumerate(s.threads):
            f.write(f"thread {ti}\n")
        for ti, events in enumerate(s.threads):
            for e in events:
                if e[0] == "B":
                    f.write(f"B {ti} {e[1]} {e[2]}\n")
                elif e[0] == "E":
                    f.write(f"E {ti} {e[1]}\n")
                else:
                    f.write(f"D {ti} {e[1]} {e[2]}\n")
        f.write(f"stop {s.stop}\n")


# ---------------------------------------------------------------------------------------
# The cProfile side: the same call trees as real Python functions, one per key.

now = [0]


def fake_timer():
    return now[0]


def body(node):
    # node = [function, begin ns, end ns, children]; the time is set just before each
    # call and each return, where cProfile reads its timer. No other calls happen here.
    for child in node[3]:
        now[0] = child[1]
        child[0](child)
    now[0] = node[2]


def key_of(s, fid):
    file, line, name = s.funcs[fid]
    return ("~", line, name) if file is None else (file, line, name)


def python_function(key, cache):
    if key not in cache:
        file, line, name = key
        changes = dict(co_name=name, co_filename=file, co_firstlineno=line)
        if sys.version_info >= (3, 11):
            changes["co_qualname"] = name
        code = body.__code__.replace(**changes)
        cache[key] = types.FunctionType(code, globals(), name)
    return cache[key]


def trees(s, events, cache):
    """Per-thread call trees; zones open at the end close at the stop time (or the
    thread's last event, if later), as TraceBuilder.build and a live stop() do."""
    roots, stack = [], []
    last = 0
    for e in events:
        if e[0] == "B":
            node = [python_function(key_of(s, e[1]), cache), e[2], None, []]
            (stack[-1][3] if stack else roots).append(node)
            stack.append(node)
            last = e[2]
        elif e[0] == "E":
            stack.pop()[2] = e[1]
            last = e[1]
        else:
            last = e[1]
    end = max(s.stop, last)
    while stack:
        stack.pop()[2] = end
    return roots


def cprofile_stats(s):
    cache = {}
    all_roots = [trees(s, events, cache) for events in s.threads]
    profiler = cProfile.Profile(fake_timer, 1e-9, builtins=False)

    def drive():
        profiler.enable()  # enabled inside drive(): the roots have no caller
        for roots in all_roots:  # threads one after another: stacks never mix
            for root in roots:
                now[0] = root[1]
                root[0](root)
        profiler.disable()

    drive()
    profiler.create_stats()
    return profiler.stats


# ---------------------------------------------------------------------------------------
# Comparison

def close(a, b):
    return abs(a - b) <= 1e-12 + 1e-12 * abs(b)


def compare(name, ours, expected):
    if set(ours) != set(expected):
        fail(name, f"keys differ: only ours {set(ours) - set(expected)}, only cProfile {set(expected) - set(ours)}")
        return
    for key, (cc, nc, tt, ct, callers) in expected.items():
        occ, onc, ott, oct_, ocallers = ours[key]
        if (occ, onc) != (cc, nc):
            fail(name, f"{key}: calls {onc}/{occ}, cProfile {nc}/{cc}")
        if not close(ott, tt) or not close(oct_, ct):
            fail(name, f"{key}: tottime {ott!r} cumtime {oct_!r}, cProfile {tt!r} {ct!r}")
        if set(ocallers) != set(callers):
            fail(name, f"{key}: callers {sorted(ocallers)} cProfile {sorted(callers)}")
            continue
        for caller, (enc, ecc, ett, ect) in callers.items():
            onc2, occ2, ott2, oct2 = ocallers[caller]
            if (onc2, occ2) != (enc, ecc):
                fail(name, f"edge {caller[2]}->{key[2]}: calls {onc2}/{occ2}, cProfile {enc}/{ecc}")
            if not close(ott2, ett) or not close(oct2, ect):
                fail(name, f"edge {caller[2]}->{key[2]}: times {ott2!r} {oct2!r}, cProfile {ett!r} {ect!r}")


def expected_self_total_ns(s):
    """Independent of both: the sum of tottime is the time covered by top-level zones."""
    total = 0
    for events in s.threads:
        depth, start, last = 0, 0, 0
        for e in events:
            if e[0] == "B":
                if depth == 0:
                    start = e[2]
                depth += 1
                last = e[2]
            elif e[0] == "E":
                depth -= 1
                if depth == 0:
                    total += e[1] - start
                last = e[1]
            else:
                last = e[1]
        if depth > 0:
            total += max(s.stop, last) - start
    return total


def exercise_pstats(name, path, report_path):
    stats = pstats.Stats(path, stream=io.StringIO())
    for sort in ("cumulative", "tottime", "ncalls", "pcalls", "filename", "name", "line", "stdname"):
        stats.sort_stats(sort)
    stats.sort_stats(pstats.SortKey.CUMULATIVE, pstats.SortKey.TIME)
    stats.print_stats()
    stats.print_callers()
    stats.print_callees()
    stats.print_stats(3)
    text = stats.stream.getvalue()
    if "function calls" not in text:
        fail(name, "print_stats printed no totals")
    # Our report must equal pstats' own print_stats (sorted by cumulative time).
    if report_path:
        buf = io.StringIO()
        pstats.Stats(path, stream=buf).sort_stats("cumulative").print_stats()
        theirs = buf.getvalue()
        theirs = theirs[theirs.index("\n\n") + 2:]  # drop "<mtime>    <path>" and the blank line
        with open(report_path, encoding="utf-8") as f:
            ours = f.read()
        ours = ours[ours.index("\n\n") + 2:]  # drop the title (the path)
        if ours != theirs:
            fail(name, "text report differs from pstats print_stats:\n--- ours\n" + ours + "\n--- pstats\n" + theirs)
    # The interactive browser too.
    browse = subprocess.run([sys.executable, "-m", "pstats", path], input="sort cumulative\nstats 5\ncallers\nquit\n",
                            capture_output=True, text=True, encoding="utf-8", timeout=60)
    if browse.returncode != 0 or "function calls" not in browse.stdout:
        fail(name, f"python -m pstats failed: {browse.returncode} {browse.stderr[-500:]}")


def run(s):
    scenario_path = os.path.join(WORK, s.name + ".txt")
    prof_path = os.path.join(WORK, s.name + ".prof")
    report_path = os.path.join(WORK, s.name + ".report.txt")
    write_scenario(s, scenario_path)
    subprocess.run([WRITER, scenario_path, prof_path, report_path], check=True, timeout=60)
    with open(prof_path, "rb") as f:
        ours = marshal.load(f)
    if not any(e[0] == "B" for events in s.threads for e in events):
        expected_placeholder = {("~", 0, "<ringtrace: no zones recorded>"): (0, 0, 0.0, 0.0, {})}
        if ours != expected_placeholder:
            fail(s.name, f"empty profile: {ours}")
        exercise_pstats(s.name, prof_path, report_path)
        return
    compare(s.name, ours, cprofile_stats(s))
    total_ns = expected_self_total_ns(s)
    tottime_sum = sum(v[2] for v in ours.values())
    if abs(tottime_sum - total_ns / 1e9) > 1e-12 * max(1, len(ours)):
        fail(s.name, f"sum of tottime {tottime_sum!r} s, top-level zones cover {total_ns} ns")
    exercise_pstats(s.name, prof_path, report_path)


def main():
    scenarios = named_scenarios() + random_scenarios(60, 4)
    for s in scenarios:
        before = len(failures)
        run(s)
        print(f"{s.name}: {'ok' if len(failures) == before else 'FAILED'}")

    # Hand-checked numbers for one scenario, so a shared mistake of cProfile's model and
    # ours cannot pass silently: direct_recursion, fact.
    with open(os.path.join(WORK, "direct_recursion.prof"), "rb") as f:
        stats = marshal.load(f)
    fact = stats[("/src/model.cpp", 50, "fact")]
    main_key = ("/src/model.cpp", 60, "main")
    # main(1, fact#1, fact#2, 8) at t=0: fact#1 = 3 + [5 + [7 + [11 + leaf 2 + 1] + 2] + 3] + 4 = 38;
    # fact#2 = 9 + 13 + 6 = 28; top-level fact at 1000: 2 + 4 + 1 = 7.
    # calls: 4 (chain) + 2 + 2 = 8; primitive: fact#1, fact#2, top-level = 3.
    # cumtime (primitive only) = 38 + 28 + 7 = 73 ns; tottime = all self times
    # = (3+4) + (5+3) + (7+2) + (11+1) + (9+6) + 13 + (2+1) + 4 = 71 ns.
    want = (3, 8, 71e-9, 73e-9)
    if fact[:2] != want[:2] or not close(fact[2], want[2]) or not close(fact[3], want[3]):
        fail("direct_recursion", f"fact {fact[:4]}, by hand {want}")
    # edges: main->fact 2 calls, both primitive: tottime (3+4)+(9+6) = 22, cumtime 38+28 = 66;
    # fact->fact 5 calls: chain 1 has 3 nested (only the outermost is a primitive edge
    # call: 31 ns inclusive), chain 2 one (13), the top-level chain one (4): 3 primitive.
    mf = fact[4][main_key]
    ff = fact[4][("/src/model.cpp", 50, "fact")]
    if mf[:2] != (2, 2) or not close(mf[2], 22e-9) or not close(mf[3], 66e-9):
        fail("direct_recursion", f"main->fact {mf}")
    # fact->fact tottime: (5+3)+(7+2)+(11+1)+13+4 = 46; cumtime: 31 + 13 + 4 = 48
    if ff[:2] != (5, 3) or not close(ff[2], 46e-9) or not close(ff[3], 48e-9):
        fail("direct_recursion", f"fact->fact {ff}")

    # The marshal subset with values beyond 32 bits, long and non-ASCII names.
    big_path = os.path.join(WORK, "big.prof")
    subprocess.run([WRITER, "--big", big_path], check=True, timeout=60)
    with open(big_path, "rb") as f:
        big = marshal.load(f)
    k0 = ("/src/caf\u00e9/\u65e5\u672c.cpp", 7, "\u03bb-zone \U0001F525")
    k1 = ("~", 0, "x" * 100000 + "-end")
    k2 = ("/src/a.cpp", 4000000000, "max")
    n = 2 ** 33 + 12345
    expected = {
        k0: (n - 1, n, 3.0, 9000.0, {k1: (n, 2 ** 31, 3.0, 9000.0)}),
        k1: (2 ** 31 - 1, 2 ** 31, 1e-9, 2e-9, {}),
        k2: (0, 2 ** 64 - 1, 0.0, 0.0, {}),
    }
    if big != expected:
        fail("big", f"round trip: {big!r}"[:2000])
    stats = pstats.Stats(big_path, stream=io.StringIO())
    stats.sort_stats("cumulative").print_stats()
    stats.print_callers()
    if f"{n}/{n - 1}" not in stats.stream.getvalue():
        fail("big", "print_stats does not show the 64-bit counts")

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"all {len(scenarios)} scenarios agree with cProfile")


main()
