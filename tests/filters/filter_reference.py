#!/usr/bin/env python3
"""filter_reference.py [filters] --start-ns N < unfiltered dump > filtered dump

What `ringtrace dump FILE [filters]` should print, computed apart from the tool from the
unfiltered `ringtrace dump FILE`, by the rules docs/guide.md ("Filtered and split
outputs") gives:

  --time-range A,B   A, B: a number with a unit (ns, us, ms, s) is after --start-ns; a
                     bare number is absolute. Both included. Zones crossing A begin again
                     at A (opened_at_window_start) with the values and flows recorded on
                     them before A; zones open past B end at B (closed_at_window_end);
                     at A, a thread off the CPU is switched out (bits 2, plus its preempted
                     bit), async spans open begin again, each counter's last sample is
                     repeated; at B open spans end.
  --min-duration D   zones shorter than D (after the cut) left out, with their values and
                     flows.
  --max-depth N      zones with N kept zones outside them left out.
  --thread T         a thread by tid, pid/tid (--names maps tids to names for T a name).
  --zone RE          zones RE finds (re.search) and what they contain.
  --exclude RE       zones RE finds and what they contain left out.

Prints the expected lines; with --counts, one line more on standard error: "ZONES_IN
ZONES_LEFT_OUT". Thread ids (dense, in the order the recording registered threads) are
not in a dump: the made-up events at A and B are emitted thread by thread in the order
threads first appear in the dump, so compare per thread (compare_dumps.py)."""

import argparse
import re
import sys

UNITS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}
FLAGS = {"late", "closed_at_stop", "closed_at_window_end", "truncated", "size_unknown", "restored",
         "opened_at_window_start"}
LINE = re.compile(r'^(\d+) (\d+) (\d+) (\S+) ("(?:[^"\\]|\\.)*")(.*)$')
TOKEN = re.compile(r' (text="(?:[^"\\]|\\.)*"|\S+)')


def parse_time(text, start):
    m = re.fullmatch(r"(\d+)(?:\.(\d+))? ?(ns|us|ms|s)", text)
    if m:
        whole, frac, unit = m.group(1), m.group(2) or "", UNITS[m.group(3)]
        return start + int(whole) * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)
    return int(text)


def parse_duration(text):
    m = re.fullmatch(r"(\d+)(?:\.(\d+))? ?(ns|us|ms|s)?", text)
    whole, frac, unit = m.group(1), m.group(2) or "", UNITS[m.group(3) or "ns"]
    return int(whole) * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)


class Ev:
    __slots__ = ("time", "pid", "tid", "kind", "name", "fields", "flags", "line", "made")

    def __init__(self, line):
        m = LINE.match(line)
        if not m:
            raise SystemExit("not a dump line: " + line)
        self.time, self.pid, self.tid = int(m.group(1)), int(m.group(2)), int(m.group(3))
        self.kind, self.name = m.group(4), m.group(5)
        tokens = TOKEN.findall(m.group(6))
        self.fields = [t for t in tokens if t not in FLAGS]
        self.flags = [t for t in tokens if t in FLAGS]
        self.line = line
        self.made = False

    def field(self, key):
        for f in self.fields:
            if f.startswith(key + "="):
                return f[len(key) + 1:]
        return None

    def thread(self):
        return (self.pid, self.tid)

    def made_up(self, time, kind=None, flags=()):
        e = Ev.__new__(Ev)
        e.time, e.pid, e.tid, e.name, e.fields = time, self.pid, self.tid, self.name, list(self.fields)
        e.kind = kind or self.kind
        e.flags = list(flags)
        e.made = True
        e.line = None
        return e

    def text(self):
        if self.line is not None:
            return self.line
        return " ".join([str(self.time), str(self.pid), str(self.tid), self.kind, self.name] + self.fields + self.flags)


class Entry:  # a zone open in the input, on a selected thread
    def __init__(self, kept, in_zone, excluded, depth):
        self.kept, self.in_zone, self.excluded, self.depth = kept, in_zone, excluded, depth


class Filter:
    def __init__(self, o):
        self.o = o
        self.zones = [re.compile(z) for z in o.zone]
        self.excludes = [re.compile(x) for x in o.exclude]
        names = dict(kv.split("=", 1) for kv in o.names)
        self.selected_tids = set()
        for t in o.thread:
            if t.isdigit():
                self.selected_tids.add(("tid", int(t)))
            elif re.fullmatch(r"\d+/\d+", t):
                pid, tid = t.split("/")
                self.selected_tids.add(("pidtid", int(pid), int(tid)))
            for tid, name in names.items():
                if name == t:
                    self.selected_tids.add(("tid", int(tid)))
        self.A = parse_time(o.time_range.split(",")[0], o.start_ns) if o.time_range and o.time_range.split(",")[0] else None
        self.B = parse_time(o.time_range.split(",")[1], o.start_ns) if o.time_range and o.time_range.split(",")[1] else None
        self.stacks = {}      # thread -> [Entry]
        self.track_spans = self.A is not None or self.B is not None or bool(o.thread)
        # What is open among the kept events (the tool's OpenState).
        self.open_zones = {}  # thread -> [[begin Ev, [attached Ev]]]
        self.off = {}         # thread -> (off, preempted bit, switch_out Ev)
        self.spans = {}       # (name, id, pid) -> begin Ev, in order of their begins
        self.counters = {}    # (name, thread) -> last sample
        self.thread_order = []

    def selected(self, e):
        if not self.o.thread:
            return True
        return ("tid", e.tid) in self.selected_tids or ("pidtid", e.pid, e.tid) in self.selected_tids

    def judge(self, e):
        th = e.thread()
        if e.kind == "async_end" and self.track_spans:
            return (e.name, e.field("id"), e.pid) in self.spans
        if not self.selected(e):
            return False
        stack = self.stacks.setdefault(th, [])
        top = stack[-1] if stack else None
        if e.kind == "zone_begin":
            name = e.name
            excluded = (top is not None and top.excluded) or any(x.search(unquote(name)) for x in self.excludes)
            in_zone = not self.zones or (top is not None and top.in_zone) or any(
                z.search(unquote(name)) for z in self.zones)
            depth = 0 if top is None else top.depth + (1 if top.kept else 0)
            kept = not excluded and in_zone and (not self.o.max_depth or depth < self.o.max_depth)
            stack.append(Entry(kept, in_zone, excluded, depth))
            return kept
        if e.kind == "zone_end":
            return stack.pop().kept if stack else True
        if e.kind in ("arg", "flow_out", "flow_in"):
            return (not self.zones) if top is None else top.kept
        if e.kind in ("instant", "message", "counter", "alloc", "free"):
            return (not self.zones) if top is None else (not top.excluded and top.in_zone)
        return True  # dropped, switches, async begins

    def track(self, e):
        th = e.thread()
        zones = self.open_zones.setdefault(th, [])
        if e.kind == "zone_begin":
            zones.append([e, []])
            self.off[th] = (False, 0, None)
        elif e.kind == "zone_end":
            if zones:
                zones.pop()
            self.off[th] = (False, 0, None)
        elif e.kind in ("arg", "flow_out", "flow_in"):
            if zones and self.A is not None and not self.opened:
                zones[-1][1].append(e)
        elif e.kind in ("switch_out", "switch_in"):
            bits = int(e.field("bits"))
            self.off[th] = (e.kind == "switch_out", bits & 1, e)
        elif e.kind == "counter":
            self.counters[(e.name, th)] = e
        elif e.kind == "async_begin":
            key = (e.name, e.field("id"), e.pid)
            self.spans.pop(key, None)
            self.spans[key] = e
        elif e.kind == "async_end":
            self.spans.pop((e.name, e.field("id"), e.pid), None)

    def reopening(self, t):
        out = []
        for th in self.thread_order:
            off, preempted, sw = self.off.get(th, (False, 0, None))
            if off:
                s = sw.made_up(t, "switch_out")
                s.fields = ["bits=%d" % (2 | preempted)]
                out.append(s)
            for begin, attached in self.open_zones.get(th, []):
                out.append(begin.made_up(t, flags=["opened_at_window_start"]))
                for a in attached:
                    out.append(a.made_up(t, flags=[f for f in a.flags if f == "truncated"]))
        for span in self.spans.values():
            out.append(span.made_up(t, flags=["opened_at_window_start"]))
        for c in sorted(self.counters.values(), key=lambda c: c.time):
            out.append(c.made_up(t))
        return out

    def closing(self, t):
        out = []
        for th in self.thread_order:
            for begin, _ in reversed(self.open_zones.get(th, [])):
                out.append(begin.made_up(t, "zone_end", ["closed_at_window_end"]))
        for span in self.spans.values():
            out.append(span.made_up(t, "async_end", ["closed_at_window_end"]))
        return out

    def run(self, events):
        out = []
        self.opened = self.A is None
        closed = False
        for e in events:
            th = e.thread()
            if th not in self.thread_order:
                self.thread_order.append(th)
            if closed:
                continue
            if self.B is not None and e.time > self.B:
                out += self.closing(self.B)
                closed = True
                continue
            if not self.opened and e.time >= self.A:
                out += self.reopening(self.A)
                self.opened = True
            kept = self.judge(e)
            if not kept:
                continue
            self.track(e)
            if self.opened:
                out.append(e)
        return self.min_duration(out)

    def min_duration(self, events):
        if not self.o.min_duration:
            return events
        d = parse_duration(self.o.min_duration)
        short, stacks, owner = set(), {}, {}
        for i, e in enumerate(events):  # each zone's length as cut, and what attaches to it
            stack = stacks.setdefault(e.thread(), [])
            if e.kind == "zone_begin":
                stack.append(i)
            elif e.kind == "zone_end" and stack:
                b = stack.pop()
                if e.time - events[b].time < d:
                    short.add(b)
                    short.add(i)
            elif e.kind in ("arg", "flow_out", "flow_in") and stack:
                owner[i] = stack[-1]
        return [e for i, e in enumerate(events) if i not in short and owner.get(i) not in short]


def unquote(quoted):
    return re.sub(r'\\x([0-9a-f]{2})', lambda m: chr(int(m.group(1), 16)), quoted[1:-1]).replace('\\"', '"').replace(
        "\\\\", "\\")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--time-range")
    p.add_argument("--min-duration")
    p.add_argument("--max-depth", type=int, default=0)
    p.add_argument("--thread", action="append", default=[])
    p.add_argument("--zone", action="append", default=[])
    p.add_argument("--exclude", action="append", default=[])
    p.add_argument("--names", action="append", default=[], help="tid=name")
    p.add_argument("--start-ns", type=int, default=0)
    p.add_argument("--counts", action="store_true")
    o = p.parse_args()
    events = [Ev(line.rstrip("\n")) for line in sys.stdin if line.strip()]
    out = Filter(o).run(events)
    sys.stdout.write("".join(e.text() + "\n" for e in out))
    if o.counts:
        zones_in = sum(1 for e in events if e.kind == "zone_begin")
        zones_out = sum(1 for e in out if e.kind == "zone_begin")
        sys.stderr.write("%d %d\n" % (zones_in, zones_in - zones_out))


if __name__ == "__main__":
    main()
