#!/usr/bin/env python3
"""make_synthetic.py DIR: writes small trace files by hand (docs/file-format.md) for
what no live session writes today, or only by chance: late events, messages, run-time
named zones, extended records, records after the stop, value records on sites of
other kinds, frames of a later minor version, damaged and malformed frames, merged
files with colliding pids and negative offsets, format 2.1's functions (also from a ring file)
and switches. run_tests.sh compares `ringtrace dump`
and rtrace.py on each: both readers must agree on every one, whatever they say."""

import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
from rtrace import crc32c, format1_checksum  # noqa: E402

MAGIC = b"\x89RTRACE\n"


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v & (1 << 64) - 1)


def s(b):
    b = b if isinstance(b, bytes) else b.encode()
    return u32(len(b)) + b


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    v = (v + (1 << 63)) % (1 << 64) - (1 << 63)  # as i64
    return ((v << 1) ^ (v >> 63)) & (1 << 64) - 1


def frame(ftype, payload, damage=False):
    header = u32(ftype) + u32(len(payload))
    crc = crc32c(header + u32(0) + u32(0) + payload)
    if damage:
        crc ^= 1
    return header + u32(crc) + u32(0) + payload


def session(pid=1000, gap=0, start_ns=1000, name="synthetic", host="host", realtime=5_000_000_000, monotonic=1000,
            flags=0):
    p = u32(pid) + bytes([0, 0]) + struct.pack("<H", flags) + struct.pack("<d", 1e9)
    p += u64(start_ns) + u64(realtime) + u64(monotonic) + u64(1_000_000) + u64(4096) + u64(gap)
    return frame(1, p + s(name) + s(host))


def segment(base_ticks, base_ns, mult):
    return frame(2, u64(base_ticks) + u64(base_ns) + u64(mult))


def site(index, name, kind=0, options=0, address=None, category=b""):
    address = index * 32 if address is None else address
    p = u32(index) + u64(address) + bytes([kind, options]) + struct.pack("<H", 1) + u32(7)
    return frame(3, p + s(name) + s("f") + s("file.cpp") + s(category))


def thread(fid, tid, name="t"):
    return frame(4, u32(fid) + u64(tid) + s(name))


def chunk(fid, records):
    """records: (kind, index, ticks or None, payload) with payload an int, a float, or
    (bytes, truncated) for texts, or bytes for kind 15."""
    out = bytearray(u32(fid))
    last = 0
    for kind, index, ticks, payload in records:
        out += varint(kind | index << 4)
        if kind not in (5, 6, 8, 15):
            out += varint(zigzag(ticks - last))
            last = ticks
        if kind in (4, 6):
            out += struct.pack("<d", payload)
        elif kind in (8, 11, 12):
            text, truncated = payload
            out += varint(len(text) | (truncated << 63)) + text
        elif kind == 15:
            out += varint(len(payload)) + payload
        elif kind in (3, 5, 7, 10):
            out += varint(zigzag(payload))
    return frame(5, bytes(out))


def pass_(ticks):
    return frame(9, u64(ticks))


def stop(ticks):
    return frame(6, u64(ticks))


def stats(drops):
    p = u64(0) + u64(sum(d for _, d in drops)) + u64(0) * 5 + u32(len(drops))
    for fid, d in drops:
        p += u32(fid) + u64(0) + u64(0) + u64(d)
    return frame(7, p)


def end():
    return frame(8, b"")


def metadata(key, value):
    if isinstance(value, int):
        return frame(11, s(key) + bytes([0]) + u64(value))
    return frame(11, s(key) + bytes([1]) + s(value))


def module(index, base, low, high, path, build_id=""):
    """Format 2.1's module frame (type 12)."""
    return frame(12, u32(index) + u32(0) + u64(base) + u64(low) + u64(high) + s(build_id) + s(path))


def function(index, module_index, address, name="", flags=0, file="", line=0):
    """Format 2.1's function frame (type 13); flags bit 0: name, file and line are the recording's."""
    p = u32(index) + u32(module_index) + u64(address) + u32(line) + bytes([flags, 0]) + struct.pack("<H", 0)
    return frame(13, p + s(name) + s(file))


def switches(fid, records, lost=0, fields=0, extra=b""):
    """Format 2.1's switches frame (type 14) of a thread: records (ns, bits, out) in order."""
    out = bytearray(u32(fid) + bytes([fields]) + varint(lost) + varint(len(records)))
    last = 0
    for ns, bits, out_ in records:
        out += varint((ns - last) << 4 | bits << 1 | int(out_))
        last = ns
    return frame(14, bytes(out) + extra)


def switches_summary(threads_without, why, extra=b""):
    return frame(14, u32(0xFFFFFFFF) + bytes([0]) + varint(threads_without) + s(why) + extra)


def header(minor=0, merged=False):
    return MAGIC + u32(2 << 16 | minor) + u32(1 if merged else 0)


def process(section, offset_ns=0, source="x.rtrace", length=None):
    p = u64(len(section) if length is None else length) + struct.pack("<q", offset_ns) + bytes(8) + s(source)
    return frame(10, p)


def sites_basic():
    return b"".join([
        site(1, "zone"), site(2, "instant", kind=1), site(3, "counter", kind=2), site(4, "region", kind=3),
        site(5, "value", kind=4), site(6, "flow", kind=5), site(7, "flow", kind=6), site(8, "upload", kind=7),
        site(9, "upload", kind=8), site(10, "step", kind=3, options=2), site(11, "cat zone", category=b"cat"),
    ])


def frame1(ftype, payload):
    """A frame of format 1 (checksum of the payload, not mixed)."""
    return u32(ftype) + u32(len(payload)) + u32(format1_checksum(payload, False)) + u32(0) + payload


def format1_steps():
    """A file of format 1 with steps: its step() wrote a zone end (of the step that ends)
    and a region begin of the step site whose value is the step number alone, on the
    calling thread; read as step zones of that thread."""
    session1 = u32(1000) + bytes([0, 0, 0, 0]) + struct.pack("<d", 1e9) + u64(1000) + u64(5_000_000_000) + \
        u64(1000) + u64(1_000_000) + u64(256) + s("format 1") + s("host") + u64(2)
    sites = b"".join(frame1(3, u64(0) + bytes([kind, options]) + struct.pack("<H", 1) + u32(0) + s(name) + s("") +
                            s("") + s("")) for name, kind, options in
                     (("zone", 0, 0), ("step", 3, 2), ("instant", 1, 0)))

    def chunk1(fid, records):  # (kind, index, ticks, value): 0 begin, 1 end, 2 instant, 5 region
        out = bytearray(u32(fid) + u32(1))
        last = 0
        for kind, index, ticks, value in records:
            out += varint(kind | index << 4) + varint(zigzag(ticks - last))
            last = ticks
            if kind == 5:
                out += varint(zigzag(value))
        return frame1(5, bytes(out))

    body = frame1(1, session1) + frame1(2, u64(0) + u64(0) + u64(1 << 32)) + sites + frame1(4, u32(1) + u64(11) + s("main"))
    body += chunk1(1, [(5, 2, 100, 0), (0, 1, 110, 0), (1, 1, 120, 0), (1, 1, 200, 0), (5, 2, 200, 1)])
    body += chunk1(2, [(2, 3, 150, 0), (5, 2, 160, 7), (0, 1, 170, 0)])
    body += frame1(9, u64(180))
    body += chunk1(1, [(0, 1, 210, 0), (1, 1, 220, 0), (1, 1, 300, 0), (5, 2, 300, 2)])
    return MAGIC + u32(1) + u32(0) + body + frame1(6, u64(400)) + frame1(8, b"")


def files():
    f = {}
    base = session(gap=3) + segment(100, 1_000_000, 1 << 32)

    # Late events: thread 2's records reach the file a pass after thread 1 delivered later ones.
    late = header() + base + sites_basic() + thread(1, 11) + thread(2, 22)
    late += chunk(1, [(1, 1, 200, None), (5, 5, None, 7), (2, 2, 300, None), (0, 0, 400, None)])
    late += pass_(1000)
    late += chunk(2, [(1, 1, 150, None), (5, 5, None, -3), (5, 6, None, 99), (3, 3, 160, 5), (0, 0, 170, None),
                      (1, 1, 2000, None)])
    late += chunk(1, [(2, 2, 2000, None)])
    late += pass_(3000) + stop(3000) + metadata("k", 1) + metadata("s", "v") + stats([]) + end()
    f["late"] = late

    # Every record kind, values on sites of other kinds, the boundary gap, ticks that go
    # back, records after the stop, drops reported by the stats only, an unbalanced end,
    # extended records (padding, a later subtype), messages and run-time named zones.
    kinds = header() + session(gap=5) + segment(100, 1_000_000, 3 << 31) + segment(10_000, 2_000_000, 1 << 31)
    kinds += sites_basic() + thread(1, 11, "one") + thread(2, 22, "two")
    kinds += chunk(3, [(5, 5, None, 1), (0, 0, 50, None), (1, 1, 50, None), (1, 1, 50, None), (0, 0, 40, None),
                       (0, 0, 40, None)])
    kinds += chunk(1, [
        (1, 1, 110, None), (1, 11, 110, None), (7, 4, 111, (1 << 64) - 5), (5, 5, None, -(1 << 63)), (6, 5, None, -0.0),
        (8, 5, None, (b"a\x00\"\\\n\x7f\x80\xff", True)), (8, 5, None, (b"", False)), (3, 5, 115, 42), (4, 3, 116, 1.5),
        (4, 6, 117, 2.0), (6, 3, None, float("inf")), (3, 8, 118, (1 << 64) - 1), (3, 9, 118, 3), (5, 7, None, 12),
        (11, 2, 120, (b"message\ttext", False)), (11, 2, 121, (b"cut", True)), (12, 1, 122, (b"named at run time", False)),
        (15, 0, None, b""), (15, 7, None, b"12345678abcdefgh"), (10, 0, 125, 17), (0, 0, 126, None), (0, 0, 126, None),
        (0, 0, 126, None), (0, 0, 127, None), (0, 0, 128, None), (7, 10, 130, 1), (7, 4, 5, 9),
        (2, 2, 20_000, None), (4, 3, 20_001, float("nan")), (4, 3, 20_001, -float("nan")), (4, 3, 20_002, 5e-324),
    ])
    kinds += pass_(20_000)
    kinds += chunk(2, [(1, 1, 20_100, None), (1, 4, 20_200, None), (2, 2, 40_000, None), (0, 0, 50_000, None)])
    kinds += chunk(1, [(0, 0, 20_500, None), (7, 10, 20_600, 2), (2, 2, 30_001, None)])
    kinds += frame(99, b"a frame of a later version") + frame(15, b"") + frame(200, b"xx")
    kinds += stop(30_000) + stats([(1, 20), (2, 4), (7, 1)]) + end()
    f["kinds"] = kinds

    # A later minor version: its frames skipped, said, the file still complete.
    f["minor"] = header(minor=9) + base + sites_basic() + thread(1, 11) + chunk(1, [(1, 1, 200, None)]) + \
        frame(77, b"new") + pass_(300) + chunk(1, [(0, 0, 400, None)]) + stop(500) + stats([]) + end()

    # Format 2.3's node frame after the session's: read (not printed by either reader); a
    # merged file whose second process names its node; one whose string runs past its end.
    f["node"] = header(minor=3) + base + frame(16, s("rank 7")) + sites_basic() + thread(1, 11) + \
        chunk(1, [(1, 1, 200, None)]) + pass_(300) + chunk(1, [(0, 0, 400, None)]) + stop(500) + stats([]) + end()
    plain = session(pid=1) + sites_basic() + thread(1, 11) + chunk(1, [(1, 1, 200, None), (0, 0, 300, None)]) + \
        stop(500) + end()
    named_node = session(pid=2) + frame(16, s("rank 8")) + sites_basic() + thread(1, 12) + \
        chunk(1, [(1, 1, 250, None), (0, 0, 350, None)]) + stop(500) + end()
    f["node_merged"] = header(minor=3, merged=True) + process(plain) + plain + process(named_node) + named_node
    f["bad_node"] = header(minor=3) + base + frame(16, u32(50) + b"short") + sites_basic() + thread(1, 11) + \
        chunk(1, [(1, 1, 200, None)]) + end()

    # A site name with a NUL byte (names are C strings to the stream's readers); no clock segment.
    f["nul"] = header() + session() + site(1, b"before\x00after") + thread(1, 11) + \
        chunk(1, [(1, 1, 5, None), (0, 0, 9, None)]) + stop(10) + end()

    # Memory records (a stream's file, session flag bit 1: sizes, no addresses): an
    # allocation of 64 bytes, then one of 2^63 and a free of 2^47 bytes, which no process
    # allocates: refused as damaged where it is met, what came before it kept.
    def memory(subtype, ticks_delta, size):
        return (15, subtype | 0x100, None, varint(zigzag(ticks_delta)) + varint(0) + varint(size))
    sized = header(minor=4) + session(flags=2) + segment(100, 1_000_000, 1 << 32) + sites_basic() + thread(1, 11)
    for name, subtype, size in (("huge_alloc", 1, 1 << 63), ("huge_free", 2, 1 << 47), ("largest_alloc", 1, (1 << 47) - 1)):
        f[name] = sized + chunk(1, [(1, 1, 200, None), memory(1, 10, 64), memory(subtype, 10, size),
                                    (0, 0, 230, None)]) + stop(500) + stats([]) + end()

    # Problems: each file is read up to its bad frame.
    good = header() + base + sites_basic() + thread(1, 11) + chunk(1, [(1, 1, 200, None), (1, 4, 210, None)])
    f["bad_function"] = good + chunk(1, [(2, 2, 220, None), (9, 1, 230, None), (2, 2, 240, None)]) + end()
    f["bad_index"] = good + chunk(1, [(2, 2, 220, None), (2, 40, 230, None)]) + end()
    f["bad_kind"] = good + frame(5, u32(1) + bytes([13, 2])) + end()
    f["bad_text"] = good + frame(5, u32(1) + varint(8 | 5 << 4) + varint(70000) + b"x" * 70000) + end()
    f["bad_cut_record"] = good + frame(5, u32(1) + varint(3 | 3 << 4) + varint(4)) + end()
    f["bad_crc"] = good + frame(2, u64(1) + u64(2) + u64(3), damage=True) + stop(150) + end()
    f["bad_length"] = good + u32(5) + u32(100 << 20) + u32(0) + u32(0) + stop(150) + end()
    f["bad_site_order"] = good + site(13, "skips 12") + end()
    f["bad_stats"] = good + frame(7, u64(1)) + end()
    f["bad_second_session"] = good + session() + end()
    f["bad_metadata"] = good + frame(11, s("k") + bytes([2]) + s("v")) + end()
    f["bad_first_frame"] = header() + base[len(session(gap=3)):] + session() + end()
    f["bad_process_in_section"] = good + process(b"") + end()
    f["cut_header"] = good + b"\x05\x00\x00"
    f["no_end"] = good + pass_(205)

    # Steps (docs/file-format.md, "Steps"): markers of two threads on the steps track the
    # reader makes (after thread 2, before thread 3 in its table), one decoded after a
    # later one of the other thread (it leaves the open step as the later one said), an
    # end without a begin, a begin without an end, an end of step 0 (none), markers tied
    # with other threads' events; a thread named "steps" whose tid is not 0 (not the
    # track); a zone site named "step" (step=0 in a dump); a legacy marker (neither bit)
    # on thread 1, ended by its next zone end; the step open at the stop closed after
    # every thread's zones.
    E, B = 1 << 62, 1 << 63
    steps = header() + base + sites_basic() + site(12, "step", options=2) + thread(1, 11) + \
        thread(2, 5, "steps")
    steps += chunk(1, [(7, 10, 200, 1 | B), (1, 1, 210, None), (7, 10, 300, 2 | E | B), (0, 0, 310, None),
                       (7, 10, 500, 4 | E | B), (7, 10, 600, 5 | E)])
    steps += chunk(2, [(7, 10, 400, 3 | E | B), (1, 12, 410, None), (0, 0, 420, None), (7, 10, 650, 0 | E),
                       (2, 2, 600, None)])
    steps += pass_(700)
    steps += chunk(3, [(2, 2, 690, None), (7, 10, 720, 6 | B), (7, 10, 730, 7), (1, 1, 740, None), (0, 0, 750, None),
                       (0, 0, 760, None), (7, 10, 770, 8 | E | B), (2, 2, 770, None)])
    steps += thread(3, 33)
    steps += chunk(1, [(7, 10, 780, 9 | E | B), (1, 1, 790, None)])
    steps += stop(1000) + end()
    f["steps"] = steps

    # A stream's steps track: a thread named "steps" with tid 0 holds the markers' zones
    # (whichever thread's chunk has them); one still open at the end is closed at the stop.
    stream = header() + base + sites_basic() + thread(1, 11) + thread(2, 0, "steps")
    stream += chunk(2, [(7, 10, 100, 0 | B), (7, 10, 200, 1 | E | B)])
    stream += chunk(1, [(1, 1, 150, None), (7, 10, 250, 2 | E | B), (0, 0, 260, None)])
    stream += pass_(300) + stop(400) + stats([]) + end()
    f["steps_stream"] = stream
    # A thread named "steps" with tid 0 described after the first marker: not the track.
    f["steps_late_track"] = header() + base + sites_basic() + thread(1, 11) + \
        chunk(1, [(7, 10, 100, 1 | B), (1, 1, 150, None)]) + thread(2, 0, "steps") + \
        chunk(2, [(7, 10, 200, 2 | E | B), (1, 1, 210, None)]) + stop(400) + end()
    f["steps_cut"] = steps[:len(steps) - 60]
    f["steps_format1"] = format1_steps()

    # Zones named at run time (kind 12): a site for each distinct (call site, name) with
    # the call site's options; a name cut at recording (the begin flagged), one with a NUL,
    # a name at two call sites, a call site "step" with option bit 1 (a name "step": a
    # step zone to a dump); past 65,536 distinct names, one overflow site.
    named = header() + base + site(1, "", options=2) + site(2, "") + thread(1, 11)
    records = []
    for k, (where, name, cut) in enumerate([(1, b"a", False), (2, b"a", False), (1, b"a", False), (1, b"x" * 256, True),
                                           (1, b"nul\x00after", False), (1, b"step", False), (2, b"step", False)]):
        records += [(12, where, 100 + 10 * k, (name, cut)), (0, 0, 105 + 10 * k, None)]
    named += chunk(1, records) + pass_(200)
    for base_k in range(0, 65540, 4096):
        records = []
        for k in range(base_k, min(base_k + 4096, 65540)):
            records += [(12, 2, 1000 + 6 * k, (b"n%d" % k, False)), (0, 0, 1003 + 6 * k, None)]
        named += chunk(1, records)
    named += chunk(1, [(12, 2, 500_000, (b"n65539", False)), (0, 0, 500_010, None),
                       (12, 2, 500_020, (b"n7", False)), (0, 0, 500_030, None)])
    f["named"] = named + stop(1_000_000) + end()

    # Merged: two processes with the same pid, one with pid 0, offsets (one negative).
    one = session(pid=77, host="a") + segment(0, 0, 1 << 32) + sites_basic() + thread(1, 7) + \
        chunk(1, [(1, 1, 100, None), (2, 2, 150, None), (0, 0, 200, None)]) + pass_(200) + \
        chunk(1, [(1, 1, 300, None)]) + stop(400) + end()
    two = session(pid=77, host="b") + segment(0, 0, 1 << 32) + sites_basic() + thread(1, 8) + thread(2, 9) + \
        chunk(2, [(1, 1, 120, None), (0, 0, 130, None)]) + pass_(150) + \
        chunk(1, [(2, 2, 100, None), (1, 1, 140, None), (0, 0, 250, None)]) + stop(300) + stats([(2, 3)]) + end()
    zero = session(pid=0, host="c") + sites_basic() + thread(1, 10) + chunk(1, [(2, 2, 1000, None)]) + stop(2000) + end()
    merged = header(merged=True) + process(one) + one + process(two, 50) + two + process(zero, -900) + zero
    merged += process(steps[16:], 30) + steps[16:] + process(stream[16:], -50) + stream[16:]
    f["merged"] = merged
    f["merged_cut"] = merged[:len(merged) - 30]
    f["merged_bad_process"] = header(merged=True) + process(one) + one + frame(4, b"")

    # The header's feature bits (byte 12; bit 0: merged) against what follows, and process
    # frames missing, malformed or empty: read up to there, said in the same words by both
    # readers (a merged flag on a file of one process once crashed rtrace.py).
    body = one  # a process's frames, after the file's header
    f["flag_merged_one_process"] = header(merged=True) + body
    f["flag_merged_one_process_21"] = header(minor=1, merged=True) + body
    f["flag_merged_nothing"] = header(merged=True)
    f["flag_other_bits"] = MAGIC + u32(2 << 16) + u32(6) + body
    f["flag_other_bits_merged"] = MAGIC + u32(2 << 16) + u32(0x80000001) + body
    f["flag_v1_merged_nothing"] = MAGIC + u32(2) + u32(0)
    f["flag_v1_merged_one_process"] = MAGIC + u32(2) + u32(0) + body
    f["header_only"] = header()
    f["version_3_1"] = MAGIC + u32(3 << 16 | 1) + u32(0) + body
    f["version_0_7"] = MAGIC + u32(7) + u32(0) + body
    f["process_short"] = header(merged=True) + frame(10, u64(0))
    f["process_source_past_end"] = header(merged=True) + frame(10, u64(0) + u64(0) + bytes(8) + u32(99))
    f["process_empty_section"] = header(merged=True) + process(b"")
    f["process_empty_then_one"] = header(merged=True) + process(b"", source=b"\xffnot utf-8.rtrace") + process(body) + body
    f["process_no_session"] = header(merged=True) + process(end()) + end() + process(body) + body
    f["process_longer_than_file"] = header(merged=True) + process(body, length=1 << 62) + body
    f["process_then_bytes"] = header(merged=True) + process(body) + body + b"\0\0"
    f["process_inside_one_process"] = header() + body[:-len(end())] + process(b"") + end()

    # Format 2.1's functions (docs/file-format.md, frames 12 and 13): function entries
    # (kind 9) of functions the file names (one with a NUL, one named "step": no step
    # zone), and of unnamed ones, which a reader names as `ringtrace dump` does when the
    # module's file cannot be read (its path does not exist): `<basename>+0x<offset>` in
    # the module's range, the address in hex outside it, in no module, or in a module
    # without a range; a function left open at the stop.
    lib = "/nonexistent/ringtrace-python-test/libdemo.so"
    functions = header(minor=1) + base + sites_basic() + module(1, 0x1000, 0x401000, 0x402000, lib) + \
        module(2, 0, 0, 0, "/nonexistent/no-range", "abcd")
    functions += function(1, 1, 0x401100, "demo::run()", 3, "demo.cpp", 12) + function(2, 1, 0x401200) + \
        function(3, 0, 0x7F0000001234) + function(4, 1, 0x500000) + function(5, 2, 0x10) + \
        function(6, 0, 0x20, b"with\x00nul", 1) + function(7, 1, 0x401300, "step", 1)
    functions += thread(1, 11) + thread(2, 22)
    functions += chunk(1, [(9, 1, 200, None), (9, 2, 210, None), (1, 1, 215, None), (9, 3, 216, None), (0, 0, 220, None),
                           (0, 0, 230, None), (9, 4, 240, None), (0, 0, 250, None), (0, 0, 260, None)])
    functions += chunk(2, [(9, 5, 205, None), (9, 6, 206, None), (0, 0, 207, None), (9, 7, 212, None), (0, 0, 213, None)])
    functions += pass_(300) + function(8, 1, 0x401ABC) + chunk(1, [(9, 8, 310, None), (9, 1, 320, None)])
    functions += stop(400) + stats([]) + end()
    f["functions"] = functions
    fgood = header(minor=1) + base + sites_basic() + module(1, 0, 0x1000, 0x2000, lib) + function(1, 1, 0x1100) + \
        thread(1, 11) + chunk(1, [(9, 1, 200, None)])
    f["bad_function_order"] = fgood + function(3, 1, 0x1200) + end()
    f["bad_function_module"] = fgood + function(2, 2, 0x1200) + end()
    f["bad_module_order"] = fgood + module(3, 0, 0, 0, lib) + end()
    f["bad_function_index"] = fgood + chunk(1, [(9, 2, 210, None)]) + end()

    # Format 2.1's switches (docs/file-format.md, "Switches"): held until the pass frame
    # that follows, all of them, whatever their time; merged as a second lane (at one
    # time, the thread's own event first); a thread first seen in a switches frame; a
    # switch older than the last delivered: raised, late; lost counts; a switch after the
    # stop; the summary; a frame with a fields bit of a later version: skipped, said.
    sw = header(minor=1) + base + sites_basic() + thread(1, 11) + thread(2, 22)
    sw += chunk(1, [(1, 1, 200, None), (2, 2, 300, None)])
    sw += switches(1, [(1_000_100, 1, True), (1_000_150, 0, False)], lost=2)
    sw += switches(2, [(999_000, 2, True), (1_000_200, 0, False), (1_000_200, 5, True)])
    sw += switches(3, [(1_000_120, 7, True)])
    sw += pass_(250)
    sw += chunk(2, [(1, 1, 310, None), (0, 0, 320, None)])
    sw += switches(1, [(1_000_050, 4, True), (1_000_210, 0, False)], lost=1)
    sw += switches(2, [(1_000_220, 0, True)], fields=2)
    sw += switches(2, [], lost=5)
    sw += pass_(400)
    sw += chunk(1, [(0, 0, 500, None)]) + switches(1, [(1_000_900, 1, True)])
    sw += stop(600) + switches_summary(1, "why not") + stats([]) + end()
    f["switches"] = sw
    swgood = header(minor=1) + base + sites_basic() + thread(1, 11) + chunk(1, [(1, 1, 200, None)]) + \
        switches(1, [(1_000_100, 1, True)])
    f["bad_switches_trailing"] = swgood + switches(1, [(1_000_200, 0, False)], extra=b"\x01") + end()
    f["bad_switches_count"] = swgood + frame(14, u32(1) + bytes([0]) + varint(0) + varint(5) + varint(16)) + end()
    f["bad_switches_varint"] = swgood + frame(14, u32(1) + bytes([0]) + varint(0) + varint(2) + varint(16) +
                                              b"\x80\x80") + end()
    f["bad_switches_short"] = swgood + frame(14, u32(1)) + end()
    f["bad_switches_summary"] = swgood + switches_summary(0, "", extra=b"x") + end()
    f["switches_cut"] = sw[:len(sw) - 70]
    # Merged: the switches' times on the file's timeline (the section's offset added).
    f["switches_merged"] = header(minor=1, merged=True) + process(sw[16:], 70) + sw[16:] + process(one, -20) + one

    # A killed run's function entries in its ring file (docs/file-format.md, "The ring
    # file"): the header holds the function's address, mapped to its function frame, or
    # to a function of its own named from the module whose range holds it (or by its
    # address); read on after the file's chunk (32 bytes of ring records).
    killed = header(minor=1) + base + sites_basic() + module(1, 0x1000, 0x401000, 0x402000, lib) + \
        function(1, 1, 0x401100, "demo::run()", 1) + thread(1, 11) + chunk(1, [(9, 1, 200, None), (1, 1, 210, None)]) + \
        pass_(205)
    f["functions_killed"] = killed
    return f


def ring_file(records, fid=1, os_tid=11, written_before=32, pid=1000, start_ns=1000):
    """A ring file (version 2) of one slot, one 4096-byte ring whose records (8-byte
    words) start at ring position `written_before` (the bytes the trace file holds)."""
    capacity, ring_address = 4096, 0x10000
    out = bytearray(b"\x89RTRING\n" + u32(2) + u32(pid) + u64(start_ns) + u64(capacity) + u64(4096 + capacity) + u64(1))
    out += bytes(4096 - len(out))
    slot = bytearray(4096)
    struct.pack_into("<IIQI", slot, 0, 1, fid, os_tid, 1)
    slot[20:21] = b"k"
    words = b"".join(u64(w) for w in records)
    struct.pack_into("<Q", slot, 256, ring_address + written_before + len(words))
    struct.pack_into("<Q", slot, 280, 0)
    struct.pack_into("<Q", slot, 320, ring_address)
    ring = bytearray(capacity)
    ring[written_before:written_before + len(words)] = words
    return bytes(out + slot + ring)


def extra_files():
    """Files beside the traces: the ring file of synthetic_functions_killed.rtrace."""
    fn = lambda address: address << 5 | 9 << 1  # noqa: E731  a function entry's header
    return {"synthetic_functions_killed.rtrace.rings": ring_file([
        fn(0x401100), 220, fn(0x401500), 230, fn(0x900000), 235, (240 << 1) | 1, 32 | 1 << 1, 250,
        fn(0x401500), 260])}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in files().items():
        with open(os.path.join(out, "synthetic_%s.rtrace" % name), "wb") as fh:
            fh.write(data)
    for name, data in extra_files().items():
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(data)


if __name__ == "__main__":
    main()
