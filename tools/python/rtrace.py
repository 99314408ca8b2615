#!/usr/bin/env python3
"""rtrace.py: an independent reader of ringtrace's binary trace files (.rtrace).

Written from docs/file-format.md, with Python 3's standard library only:

    python3 tools/python/rtrace.py FILE [--no-rings]

prints the file's events exactly as `ringtrace dump FILE` prints them, one a line, in
the order a live session's exporters get them:

    TIME PID TID KIND "NAME" [FIELDS] [FLAGS]

(the comment at the top of tools/dump.cpp). CI compares the two outputs byte for byte on
files of live sessions (tests/python): the proof that the file format's description is
complete. A file that is cut short, damaged or did not stop is printed as far as it can
be read (and on from its ring file, `<file>.rings`, unless --no-rings); what was wrong
goes to standard error and the exit status is 1, as with `ringtrace dump`. It is not
fast: some seconds for a few hundred thousand events.
"""

import errno
import heapq
import math
import os
import re
import stat
import struct
import sys

MASK64 = (1 << 64) - 1
NEVER = MASK64  # a time after every other
MAX_PAYLOAD = 64 << 20
MAX_TEXT = 0xFFFF
MAX_RUNTIME_NAMES = 65536  # distinct run-time zone names a section's reader makes sites for
TRUNCATED_BIT = 1 << 63

# Frame types.
F_SESSION, F_SEGMENT, F_SITE, F_THREAD, F_CHUNK, F_STOP, F_STATS, F_END, F_PASS, F_PROCESS, F_METADATA = range(1, 12)
F_MODULE, F_FUNCTION, F_SWITCHES = 12, 13, 14  # format 2.1
F_FUNCTIONS = 15  # format 2.2: the calls of instrumented functions left out
F_NODE = 16  # format 2.3: the node id the process's session named
F_MEMORY, F_COUNTS = 17, 18  # format 2.4: the heap's accounting's settings; what was counted and not recorded
SWITCHES_SUMMARY = 0xFFFFFFFF  # a switches frame's thread: the session's summary
# A process frame's flags (merged files); the last three with format 2.3's clock check.
PROCESS_REALTIME, PROCESS_MEASURED, PROCESS_AGREES, PROCESS_CONTRADICTED = 1, 2, 4, 8
FUNCTION_NAMED = 1  # a function frame's flags: name, file and line are the recording's

# Site kinds and options.
S_ZONE, S_INSTANT, S_COUNTER, S_REGION, S_VALUE, S_FLOW_OUT, S_FLOW_IN, S_ASYNC_BEGIN, S_ASYNC_END = range(9)
OPT_STEP = 2
OPT_FUNCTION = 8

# A step marker's value: the step number and what the marker does (docs/file-format.md,
# "Steps"); neither bit: a marker of format 1.
STEP_ENDS = 1 << 62
STEP_BEGINS = 1 << 63
STEP_NUMBER = STEP_ENDS - 1

# Ring record kinds (0 stands for a zone end, whose slot has bit 0 set): docs/file-format.md's
# table, "Ring records". tests/python/check_record_table.py compares these tables with that
# one and with the C++ reader's.
R_END, R_BEGIN, R_INSTANT, R_INT, R_DOUBLE, R_ARG_INT, R_ARG_DOUBLE, R_REGION, R_TEXT = range(9)
R_FUNCTION, R_DROPPED, R_MESSAGE, R_NAMED, R_EXTENDED = 9, 10, 11, 12, 15
UNASSIGNED = frozenset((13, 14))  # a reader stops at them: their size is unknown
UNTIMED = frozenset((R_ARG_INT, R_ARG_DOUBLE, R_TEXT, R_EXTENDED))
BOUNDARY = frozenset((R_END, R_BEGIN, R_REGION, R_FUNCTION, R_NAMED))
TEXT_KINDS = frozenset((R_TEXT, R_MESSAGE, R_NAMED))  # a size slot last, then the text's bytes
# Bytes of a ring record of each kind with a header of a fixed size, a text's bytes aside.
RING_BYTES = {R_BEGIN: 16, R_INSTANT: 16, R_ARG_INT: 16, R_ARG_DOUBLE: 16, R_FUNCTION: 16, R_INT: 24,
              R_DOUBLE: 24, R_REGION: 24, R_DROPPED: 24, R_TEXT: 16, R_MESSAGE: 24, R_NAMED: 24}

# Event kinds, as `ringtrace dump` names them.
ZONE_BEGIN, ZONE_END, INSTANT, COUNTER, DROPPED, ARG, FLOW_OUT, FLOW_IN, ASYNC_BEGIN, ASYNC_END, MESSAGE = range(11)
SWITCH_OUT, SWITCH_IN = 11, 12  # a thread's context switches (switches frames)
ALLOC, FREE = 13, 14  # format 2.3: allocations and frees (extended records 1 and 2)
KIND_NAMES = ["zone_begin", "zone_end", "instant", "counter", "dropped", "arg", "flow_out", "flow_in",
              "async_begin", "async_end", "message", "switch_out", "switch_in", "alloc", "free"]
# Extended records (kind 15): the subtypes of memory records, the timed bit of a ring
# header (bit 16) and of a packed record's index (0x100), the session frame's memory flag.
X_ALLOC, X_FREE, X_ALLOC_AT = 1, 2, 3  # format 2.4: an allocation with its caller (and sampled stack)
X_TIMED_HEADER, X_TIMED_PACKED = 1 << 16, 0x100
# A memory record's flags: header bits 17-19, packed index bits 9-11 (2.4): made in a zone
# sampling left out, a failed realloc's restore, a sampled allocation.
X_SAMPLED_OUT, X_RESTORE, X_SAMPLED = 1 << 17, 1 << 18, 1 << 19
X_PACKED_FLAGS_SHIFT, X_PACKED_FLAGS = 8, 0xE00
X_FRAMES_SHIFT = 24  # an extended_alloc_at header: its stack's frames in bits 24-31
SESSION_MEMORY, SESSION_MEMORY_SIZED = 1, 2  # a stream's file: sizes only, no addresses
# A memory record's size from which no block is real (x86-64's user address space): the
# file is damaged or crafted.
ADDRESS_SPACE_BYTES = 1 << 47
# What a value record (kinds 3-6) becomes, by its site's kind.
VALUE_EVENT = {S_VALUE: ARG, S_FLOW_OUT: FLOW_OUT, S_FLOW_IN: FLOW_IN, S_ASYNC_BEGIN: ASYNC_BEGIN,
               S_ASYNC_END: ASYNC_END}

# Event flags (include/ringtrace/event.hpp's bits).
DOUBLE, REGION, CLOSED_AT_STOP, LATE, TEXT, TRUNCATED = 1, 2, 4, 8, 16, 32
SIZE_UNKNOWN = 128  # a free whose block's size is not known
RESTORED = 32  # an alloc: a failed realloc's, which undoes its thread's last free
NOT_LATE = (ARG, FLOW_OUT, FLOW_IN)  # raised without the flag: they take their zone's time


class Problem(Exception):
    """What ends the reading of a process's frames: what was read before stays."""


class Refused(Exception):
    """Not a ringtrace trace file, or of a major version this reader does not know."""


# ---------------------------------------------------------------------------------
# Checksums

def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    """CRC-32C of `data`, continuing from `crc` (the CRC of the bytes before it)."""
    crc ^= 0xFFFFFFFF
    table = CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def format1_checksum(payload, mixed):
    lanes = [1, 2, 3, 4]
    n = len(payload)
    padded = bytes(payload) + b"\0" * (-n % 8)
    for i, w in enumerate(struct.unpack("<%dQ" % (len(padded) // 8), padded)):
        lane = ((lanes[i & 3] ^ w) * 0x9E3779B97F4A7C15) & MASK64
        lanes[i & 3] = lane ^ (lane >> 29)
    if mixed:
        for i in range(4):
            h = lanes[i]
            h ^= h >> 33
            h = (h * 0xFF51AFD7ED558CCD) & MASK64
            h ^= h >> 33
            h = (h * 0xC4CEB9FE1A85EC53) & MASK64
            lanes[i] = h ^ (h >> 33)
    h = lanes[0]
    for lane in lanes[1:]:
        h = (h * 31 + lane) & MASK64
    return (h ^ n) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------
# Printing

_ESCAPES = []
for _b in range(256):
    if _b in (0x22, 0x5C):
        _ESCAPES.append("\\" + chr(_b))
    elif 0x20 <= _b <= 0x7E:
        _ESCAPES.append(chr(_b))
    else:
        _ESCAPES.append("\\x%02x" % _b)


def quoted(data):
    return '"' + "".join([_ESCAPES[b] for b in data]) + '"'


def double_text(bits):
    """printf's %.17g of the double whose bits are `bits`."""
    d = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isnan(d):
        return "-nan" if bits >> 63 else "nan"
    if math.isinf(d):
        return "-inf" if d < 0 else "inf"
    return "%.17g" % d


def signed64(u):
    return u - (1 << 64) if u >> 63 else u


def zone_fields(site, flags, value):
    """A zone begin's or end's FIELDS: a region's id, a step zone's number."""
    if flags & REGION:
        return " id=%d" % value
    return " step=%d" % value if site.is_step else ""


def fields_of(kind, flags, value, text):
    """An event's FIELDS, as tools/dump.cpp prints them (zones: zone_fields)."""
    if kind == COUNTER or (kind == ARG and not flags & TEXT):
        return " d=" + double_text(value) if flags & DOUBLE else " i=%d" % signed64(value)
    if kind in (ARG, MESSAGE):
        return " text=" + quoted(text)
    if kind in (FLOW_OUT, FLOW_IN, ASYNC_BEGIN, ASYNC_END):
        return " id=%d" % value
    if kind == DROPPED:
        return " count=%d" % value
    return ""


# ---------------------------------------------------------------------------------
# Tables

class Site:
    __slots__ = ("kind", "options", "quoted", "is_step")

    def __init__(self, name, kind, options):
        self.kind, self.options = kind, options
        # Names are C strings to the readers of the stream: they end at a NUL byte.
        name = name.split(b"\0", 1)[0]
        self.quoted = quoted(name)
        # The step zones' site (a zone site, option bit 1, named "step"): step=N in a dump.
        self.is_step = kind == S_ZONE and bool(options & OPT_STEP) and name == b"step"


DROPPED_SITE = Site(b"ringtrace: dropped events", S_INSTANT, 0)
SWITCH_SITES = {True: Site(b"ringtrace: switched out", S_INSTANT, 0), False: Site(b"ringtrace: switched in", S_INSTANT, 0)}
MEMORY_SITES = {X_ALLOC: Site(b"ringtrace: allocated", S_INSTANT, 0), X_FREE: Site(b"ringtrace: freed", S_INSTANT, 0)}
MEMORY_SITES[X_ALLOC_AT] = MEMORY_SITES[X_ALLOC]


class Event:
    __slots__ = ("time", "kind", "site", "fields", "flags", "thread")

    def __init__(self, time, kind, site, fields, flags, thread):
        self.time, self.kind, self.site, self.fields, self.flags, self.thread = time, kind, site, fields, flags, thread

    def line(self, pid):
        flags = self.flags
        s = "%d %d %d %s %s%s" % (self.time, pid, self.thread.os_tid, KIND_NAMES[self.kind], self.site.quoted,
                                 self.fields)
        if flags & LATE:
            s += " late"
        if flags & CLOSED_AT_STOP:
            s += " closed_at_stop"
        if flags & TRUNCATED and self.kind != ALLOC:
            s += " truncated"
        if flags & SIZE_UNKNOWN and self.kind == FREE:
            s += " size_unknown"
        if flags & RESTORED and self.kind == ALLOC:
            s += " restored"
        return s


class Thread:
    """A thread of one process: its decoding state and its events not yet delivered."""

    def __init__(self, fid, order):
        self.fid = fid
        self.order = order          # its first thread or chunk frame: ties in the merge
        self.os_tid = 0
        self.named = False          # a thread frame (or its ring's slot) named it
        self.open = []              # open zones, innermost last: (site, flags, value)
        self.last_ticks = 0         # the previous record's ticks, as raised
        self.last_ns = 0
        self.past_stop = False      # a record after the stop: the rest is not captured
        self.pending = []           # decoded, not delivered: pending[taken:]
        self.taken = 0
        self.reported_drops = 0     # the counts of its dropped records
        self.ring_bytes = 0         # bytes of ring records its chunks unpacked to
        self.switches = []          # its context switches read, not delivered (all go at the next pass)
        self.switches_lost = 0
        self.switches_last_ns = 0   # a switch before the thread's previous one is raised to it


# ---------------------------------------------------------------------------------
# Packed chunks: records as (kind, index, ticks, value, text), ticks None for kinds
# without a time, value the 64-bit word (a double's bits), text (bytes, truncated)

def _varint(data, pos, end, what):
    """A varint at pos; Problem(what) if it runs past end or past ten bytes."""
    result = 0
    shift = 0
    while shift < 64:
        if pos >= end:
            break
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & MASK64, pos
        shift += 7
    raise Problem(what)


def unzigzag(u):
    return ((u >> 1) ^ -(u & 1)) & MASK64


def unpack_chunk2(data, pos, end):
    """Format 2's packed records; also the bytes they unpack to (the thread's ring position)."""
    records = []
    ring_bytes = 0
    last = 0
    varint = _varint
    append = records.append
    begin = record = pos
    try:
        while pos < end:
            record = pos
            h, pos = varint(data, pos, end, "a header cut short")
            kind = h & 15
            index = h >> 4
            if kind in UNASSIGNED:
                raise Problem("a record kind this reader does not know (a newer format?)")
            if kind not in (R_END, R_DROPPED, R_EXTENDED) and (index == 0 or index > 0xFFFFFFFF):
                raise Problem("a call site index out of range")
            if kind == R_EXTENDED:  # skippable: its length says how far
                n, pos = varint(data, pos, end, "an extended record cut short")
                if n > end - pos:
                    raise Problem("an extended record cut short")
                ticks, value = None, 0
                if index & X_TIMED_PACKED and index & 0xFF in (X_ALLOC, X_FREE, X_ALLOC_AT):
                    # A memory record: its time's delta, its address, its size (format 2.3);
                    # an allocation with its caller (2.4): the caller, then its stack's frames,
                    # each a zigzag delta from the one before it.
                    stop = pos + n
                    q = pos
                    frames = 0
                    try:
                        d, q = varint(data, q, stop, "a memory record malformed")
                        address, q = varint(data, q, stop, "a memory record malformed")
                        size, q = varint(data, q, stop, "a memory record malformed")
                        if index & 0xFF == X_ALLOC_AT:
                            _, q = varint(data, q, stop, "a memory record malformed")
                            while q < stop:
                                _, q = varint(data, q, stop, "a memory record malformed")
                                frames += 1
                    except Problem:
                        raise Problem("a memory record malformed")
                    if q != stop or frames > 64:
                        raise Problem("a memory record malformed")
                    last = ticks = (last + unzigzag(d)) & MASK64
                    value = (address, size, (index & X_PACKED_FLAGS) << X_PACKED_FLAGS_SHIFT)
                    # The ring record it was: header, ticks, address, size (and the caller, the frames).
                    ring_bytes += 32 if index & 0xFF != X_ALLOC_AT else 40 + 8 * frames
                else:
                    ring_bytes += 8 + (n + 7) // 8 * 8
                pos += n
                append((R_EXTENDED, index & 0xFF, ticks, value, None))
                continue
            ticks = None
            if kind not in UNTIMED:
                d, pos = varint(data, pos, end, "a time cut short")
                last = ticks = (last + unzigzag(d)) & MASK64
            if kind == R_END:
                ring_bytes += 8
                append((R_END, 0, ticks, 0, None))
                continue
            value = 0
            text = None
            if kind in (R_BEGIN, R_INSTANT, R_FUNCTION):
                pass
            elif kind in (R_DOUBLE, R_ARG_DOUBLE):
                if end - pos < 8:
                    raise Problem("a double cut short")
                value = struct.unpack_from("<Q", data, pos)[0]
                pos += 8
            elif kind in TEXT_KINDS:
                size, pos = varint(data, pos, end, "a text's size cut short")
                n = size & ~TRUNCATED_BIT
                if n > MAX_TEXT:
                    raise Problem("a text longer than 65535 bytes")
                if n > end - pos:
                    raise Problem("a text cut short")
                text = (bytes(data[pos:pos + n]), bool(size & TRUNCATED_BIT))
                pos += n
                ring_bytes += (n + 7) // 8 * 8
            else:  # integer values, region ids, drop counts
                u, pos = varint(data, pos, end, "a value cut short")
                value = unzigzag(u)
            ring_bytes += RING_BYTES[kind]
            append((kind, 0 if kind == R_DROPPED else index, ticks, value, text))
    except Problem as p:
        raise Problem("%s at byte %d of the chunk's records" % (p, record - begin))
    return records, ring_bytes


def unpack_chunk1(data, pos, end):
    """Format 1's packed records, as format 2's ring records."""
    records = []
    last = 0
    varint = _varint
    append = records.append
    begin = record = pos
    try:
        while pos < end:
            record = pos
            h, pos = varint(data, pos, end, "a header cut short")
            kind = h & 7
            timed = not h & 8
            index = h >> 4
            if kind != 6 and (index == 0 or index > 0xFFFFFFFF):
                raise Problem("a call site index out of range")
            ticks = 0
            if timed:
                d, pos = varint(data, pos, end, "a time cut short")
                last = ticks = (last + unzigzag(d)) & MASK64
            if kind == 1:
                append((R_END, 0, ticks, 0, None))
            elif kind in (0, 2):
                append((R_BEGIN if kind == 0 else R_INSTANT, index, ticks, 0, None))
            elif kind == 4:
                if end - pos < 8:
                    raise Problem("a double cut short")
                value = struct.unpack_from("<Q", data, pos)[0]
                pos += 8
                append((R_DOUBLE, index, ticks, value, None) if timed else (R_ARG_DOUBLE, index, None, value, None))
            elif kind == 7:  # a text: size (bit 63: truncated), the size before truncation (not kept), bytes
                size, pos = varint(data, pos, end, "a text's size cut short")
                _original, pos = varint(data, pos, end, "a text's size cut short")
                n = size & ~TRUNCATED_BIT
                if n > MAX_TEXT:
                    raise Problem("a text longer than 65535 bytes")
                if n > end - pos:
                    raise Problem("a text cut short")
                append((R_TEXT, index, None, 0, (bytes(data[pos:pos + n]), bool(size & TRUNCATED_BIT))))
                pos += n
            else:  # 3 integer value, 5 region begin, 6 dropped
                u, pos = varint(data, pos, end, "a value cut short")
                value = unzigzag(u)
                if kind == 5:
                    append((R_REGION, index, ticks, value, None))
                elif kind == 6:
                    append((R_DROPPED, 0, ticks, value, None))
                elif timed:
                    append((R_INT, index, ticks, value, None))
                else:
                    append((R_ARG_INT, index, None, value, None))
    except Problem as p:
        raise Problem("%s at byte %d of the chunk's records" % (p, record - begin))
    return records, 0


# ---------------------------------------------------------------------------------
# One process: a file of one process after its header, or a merged file's section

class Section:
    def __init__(self, data, begin, end, major, mixed, offset_ns=0, source=""):
        self.data, self.pos, self.end = data, begin, end
        self.major, self.mixed = major, mixed
        self.offset_ns = offset_ns
        self.source = source           # a merged file's process frame: the file it came from
        self.problem = None
        self.have_session = False
        self.complete = False          # its end frame was read
        self.done = False
        self.pid = 0
        self.host = b""
        self.node = None               # the node frame's id (format 2.3); None: named none
        self.start_ns = 0              # the session's, on the file's timeline
        self.raw_start_ns = 0
        self.gap = 0
        self.stop_ticks = NEVER
        self.has_stop = False
        self.footer = None             # the stats frame's drops by file thread id
        self.function_stats = None     # the functions frame (format 2.2), a dict
        self.memory = False            # the session recorded allocations (format 2.3 session flags)
        self.memory_sized = False      # ... in a stream's file: sizes only
        self.live_blocks = {}          # address -> size: the heap's accounting (account_memory)
        self.last_freed = {}           # thread -> (address, size) of its last free of a live block
        self.max_blocks = 1 << 22      # the recording's limit of live blocks (memory frame, 2.4)
        self.segments = []             # the last 16 clock segments
        self.sites = [None]            # by index
        self.index_by_address = {}
        self.modules = []              # (base, low, high, build_id, path), index 1 first
        self.functions = [None]        # by index: the sites of instrumented functions
        self.function_index_by_address = {}
        self.runtime_names = {}        # (call site index, name): the site of a zone named at run time
        self.runtime_overflow = None   # the site of the names past MAX_RUNTIME_NAMES
        self.step_zone = None          # the step zones' site, made at the first marker
        self.steps_thread = None       # the steps track (a thread frame's, or made at the first marker)
        # The steps track's zone as of the latest marker by time, across threads.
        self.steps_open = False
        self.steps_number = 0
        self.steps_last_ns = 0
        self.steps_seen = False
        self.threads = {}
        self.thread_list = []
        self.last_emitted = 0
        self.out = []                  # delivered, not yet handed on: out[out_pos:]
        self.out_pos = 0
        self.skipped_frames = 0
        self.rings = None              # the ring file to read if the section ends early
        self.rings_note = None
        self.out_pid = 0
        self.read_whole = False

    def node_id(self):
        """The process's node id (docs/file-format.md, "Node"): the node frame's, else
        b"host:pid" (the pid alone without a host)."""
        if self.node is not None:
            return self.node
        return (self.host + b":" if self.host else b"") + str(self.pid).encode()

    def horizon(self):
        return NEVER if self.done else self.last_emitted

    # --- clock
    def to_ns(self, ticks):
        if ticks == NEVER:
            return ticks
        segments = self.segments
        if not segments:
            ns = ticks
        else:
            for base_ticks, base_ns, mult in reversed(segments):
                if ticks >= base_ticks:
                    ns = (base_ns + (((ticks - base_ticks) * mult) >> 32 & MASK64)) & MASK64
                    break
            else:
                base_ticks, base_ns, mult = segments[0]
                back = ((base_ticks - ticks) * mult) >> 32 & MASK64
                ns = 0 if back > base_ns else base_ns - back
        return self.shift(ns)

    def shift(self, ns):
        """Onto the file's timeline: the process frame's offset, at least 0."""
        offset = self.offset_ns
        return ns + offset if offset >= 0 else max(0, ns + offset)

    # --- frames
    def next_frame(self):
        """The next frame, checked: (type, payload start, payload end, offset), or None at
        the end of the section (self.problem set if it could not be read)."""
        data, pos, end = self.data, self.pos, self.end
        if pos == end:
            return None
        if pos + 16 > end:
            self.problem = "file cut short at byte %d (inside a frame header)" % pos
            return None
        ftype, length, check = struct.unpack_from("<III", data, pos)
        if length > MAX_PAYLOAD:
            # Format 2 checks the header too: a damaged length is a damaged frame, not a claim.
            self.problem = ("frame at byte %d claims %d bytes (at most %d): damaged file" % (pos, length, MAX_PAYLOAD)
                            if self.major == 1 else "damaged frame at byte %d (its header claims %d bytes, more than "
                            "a frame holds): read up to there" % (pos, length))
            return None
        if pos + 16 + length > end:
            self.problem = "file cut short at byte %d (a frame of %d bytes, %d left)" % (pos, length, end - pos - 16)
            return None
        if not self.checksum_ok(pos, length, check):
            self.problem = "checksum mismatch in the frame at byte %d%s: damaged file, read up to there" % (
                pos, " (type %d)" % ftype if self.major == 1 else "")
            return None
        self.pos = pos + 16 + length
        return ftype, pos + 16, pos + 16 + length, pos

    def checksum_ok(self, pos, length, check):
        data = self.data
        if self.major == 1:
            return format1_checksum(data[pos + 16:pos + 16 + length], self.mixed) == check
        crc = crc32c(data[pos:pos + 8])
        crc = crc32c(b"\0\0\0\0", crc)
        return crc32c(data[pos + 12:pos + 16 + length], crc) == check

    def peek_stop(self):
        """The stop time comes last but decides what the capture holds: the last intact stop
        frame of 8 bytes, found by walking the frame headers to the section's end."""
        data, pos, end = self.data, self.pos, self.end
        while pos + 16 <= end:
            ftype, length, check = struct.unpack_from("<III", data, pos)
            if length > MAX_PAYLOAD or pos + 16 + length > end:
                break
            if ftype == F_STOP and length == 8 and self.checksum_ok(pos, length, check):
                self.stop_ticks = struct.unpack_from("<Q", data, pos + 16)[0]
                self.has_stop = True
            pos += 16 + length

    def open_session(self):
        self.peek_stop()
        frame = self.next_frame()
        if frame is None:
            if self.problem is None:
                self.problem = "no session frame: not a complete ringtrace trace"
        elif frame[0] != F_SESSION:
            self.problem = "the first frame (byte %d) is not the session's" % frame[3]
        else:
            try:
                self.apply(*frame)
                return
            except Problem as p:
                self.problem = str(p)
        self.done = True
        self.finish()

    def step(self):
        """Reads frames up to the next pass frame, or to the end (then finishes)."""
        while not self.done:
            frame = self.next_frame()
            if frame is not None:
                try:
                    self.apply(*frame)
                    if frame[0] == F_PASS:
                        return
                    continue
                except Problem as p:
                    self.problem = str(p)
            self.done = True
            if not self.complete and self.have_session and self.rings:
                self.recover()
            self.finish()

    def apply(self, ftype, start, end, offset):
        data = self.data
        f = Fields(data, start, end)
        v1 = self.major == 1
        if ftype == F_SESSION:
            if self.have_session:
                raise Problem("malformed second session frame at byte %d" % offset)
            self.pid, _tsc, _per_thread, session_flags, _tps = f.unpack("<IBBHd", offset, "session")
            self.memory = bool(session_flags & (SESSION_MEMORY | SESSION_MEMORY_SIZED)) and not v1
            self.memory_sized = bool(session_flags & SESSION_MEMORY_SIZED) and not v1
            self.raw_start_ns, self.realtime_anchor, self.monotonic_anchor, _grace, _ring = \
                f.unpack("<5Q", offset, "session")
            if not v1:
                self.gap = f.unpack("<Q", offset, "session")[0]
            f.string(offset, "session")
            self.host = f.string(offset, "session")
            if v1:  # format-1 files written before boundaries were spaced end here
                self.gap = f.unpack("<Q", offset, "session")[0] if end - f.pos >= 8 else 0
            self.start_ns = self.shift(self.raw_start_ns)
            self.have_session = True
        elif ftype == F_SEGMENT:
            self.segments.append(f.unpack("<QQQ", offset, "clock segment"))
            del self.segments[:-16]
        elif ftype == F_SITE:
            index = len(self.sites) if v1 else f.unpack("<I", offset, "call site")[0]
            address, kind, options, _every, _line = f.unpack("<QBBHI", offset, "call site")
            name = f.string(offset, "call site")
            f.string(offset, "call site")
            f.string(offset, "call site")
            f.string(offset, "call site")
            if kind > S_ASYNC_END:
                raise Problem("malformed call site frame at byte %d" % offset)
            if index != len(self.sites):
                raise Problem("malformed call site (out of order) frame at byte %d" % offset)
            self.sites.append(Site(name, kind, options))
            self.index_by_address.setdefault(address, index)
        elif ftype == F_THREAD:
            fid, os_tid = f.unpack("<IQ", offset, "thread")
            name = f.string(offset, "thread")
            t = self.thread(fid)
            t.named = True
            t.os_tid = os_tid
            if os_tid == 0 and name == b"steps" and self.steps_thread is None:
                self.steps_thread = t  # a stream's steps track: its markers' zones go there
        elif ftype == F_CHUNK:
            fid = f.unpack("<I", offset, "chunk")[0]
            if v1 and f.unpack("<I", offset, "chunk")[0] != 1:
                raise Problem("chunk at byte %d has an encoding this reader does not know" % offset)
            try:
                if v1:
                    records, ring_bytes = unpack_chunk1(data, f.pos, end)
                else:
                    records, ring_bytes = unpack_chunk2(data, f.pos, end)
            except Problem as p:
                raise Problem("malformed chunk frame at byte %d: %s" % (offset, p))
            t = self.thread(fid)
            t.ring_bytes += ring_bytes
            self.decode(t, records, offset)
        elif ftype == F_PASS:
            self.deliver(self.to_ns(f.unpack("<Q", offset, "pass")[0]))
        elif ftype == F_STOP:
            pass  # read by peek_stop()
        elif ftype == F_STATS:
            f.unpack("<7Q", offset, "stats")
            n = f.unpack("<I", offset, "stats")[0]
            if n > (end - start) // 28:
                raise Problem("malformed stats frame at byte %d" % offset)
            footer = {}
            for _ in range(n):
                fid, _os_tid, _recorded, dropped = f.unpack("<IQQQ", offset, "stats")
                footer.setdefault(fid, dropped)
            self.footer = footer
        elif ftype == F_END:
            self.complete = True
        elif ftype == F_PROCESS:
            raise Problem("malformed process section header inside a process section: damaged frame at byte %d" % offset)
        elif ftype == F_METADATA:
            if not v1:
                f.string(offset, "metadata")
                kind = f.unpack("<B", offset, "metadata")[0]
                if kind == 0:
                    f.unpack("<q", offset, "metadata")
                else:
                    f.string(offset, "metadata")
                if kind > 1:
                    raise Problem("malformed metadata frame at byte %d" % offset)
        elif ftype == F_MODULE:
            index, _zero, base, low, high = f.unpack("<IIQQQ", offset, "module")
            build_id = f.string(offset, "module")
            path = f.string(offset, "module")
            if index != len(self.modules) + 1:
                raise Problem("malformed module (out of order) frame at byte %d" % offset)
            self.modules.append((base, low, high, build_id, path))
        elif ftype == F_FUNCTION:
            index, module, address, _line, flags, _z8, _z16 = f.unpack("<IIQIBBH", offset, "function")
            name = f.string(offset, "function")
            f.string(offset, "function")
            if module > len(self.modules):
                raise Problem("malformed function frame at byte %d" % offset)
            if index != len(self.functions):
                raise Problem("malformed function (out of order) frame at byte %d" % offset)
            self.functions.append(self.function_site(address, module, name, bool(flags & FUNCTION_NAMED)))
            self.function_index_by_address.setdefault(address, index)
        elif ftype == F_SWITCHES and not v1:
            self.read_switches(f, start, end, offset)
        elif ftype == F_FUNCTIONS and not v1:
            # u64 unwound, too_deep, short_calls, excluded, inlined; u32 n; n times
            # (u8 list: 0 short, 1 inlined; u64 calls; str name)
            counts = f.unpack("<5Q", offset, "functions")
            n = f.unpack("<I", offset, "functions")[0]
            if n > (end - start) // 13:
                raise Problem("malformed functions frame at byte %d" % offset)
            lists = ([], [])
            for _ in range(n):
                which, calls = f.unpack("<BQ", offset, "functions")
                name = f.string(offset, "functions")
                if which > 1:
                    raise Problem("malformed functions frame at byte %d" % offset)
                lists[which].append((name, calls))
            self.function_stats = dict(zip(("unwound", "too_deep", "short_calls", "excluded", "inlined"), counts),
                                       short_by_function=lists[0], inlined_by_function=lists[1])
        elif ftype == F_NODE and not v1:
            self.node = f.string(offset, "node")
        elif ftype == F_MEMORY and not v1:
            self.max_blocks, _ = f.unpack("<QQ", offset, "memory")
            f.string(offset, "memory")
        elif ftype == F_COUNTS and not v1:
            pass  # counts `ringtrace dump` does not print
        else:
            self.skipped_frames += 1  # a frame type of a later minor version

    def function_site(self, address, module, name, named):
        """An instrumented function's zone site. Named by the file, or else as `ringtrace
        dump` names it when the module's file gives no name: `<module file's basename>+0x<offset
        from its base>` for an address in the module's executable range, `0x<address>`
        otherwise. (dump reads the module's file, if it is on this machine, for a better name:
        this reader does not read ELF or DWARF.)"""
        if not named:
            if module != 0:
                base, low, high, _build_id, path = self.modules[module - 1]
                if low <= address < high:
                    name = path.rsplit(b"/", 1)[-1] + b"+0x%x" % ((address - base) & MASK64)
                else:
                    name = b"0x%x" % address
            else:
                name = b"0x%x" % address
        return Site(name, S_ZONE, OPT_FUNCTION)

    def read_switches(self, f, start, end, offset):
        """docs/file-format.md, "Switches": a thread's context switches, held until the next
        pass frame, or the session's summary of them."""
        fid, fields = f.unpack("<IB", offset, "switches")
        if fields != 0:  # a layout of a later minor version
            self.skipped_frames += 1
            return
        data = self.data
        pos = f.pos

        def varint(what):
            nonlocal pos
            try:
                v, pos = _varint(data, pos, end, what)
            except Problem:
                raise Problem("malformed %s frame at byte %d" % (what, offset))
            return v

        if fid == SWITCHES_SUMMARY:
            varint("switches summary")
            rest = Fields(data, pos, end)
            rest.string(offset, "switches summary")
            if rest.pos != end:
                raise Problem("malformed switches summary frame at byte %d" % offset)
            return
        lost = varint("switches")
        count = varint("switches")
        if count > end - pos:  # a record takes a byte at least
            raise Problem("malformed switches frame at byte %d" % offset)
        t = self.thread(fid)
        t.switches_lost += lost
        time = 0
        append = t.switches.append
        for _ in range(count):
            record = varint("switches")
            time = (time + (record >> 4)) & MASK64
            out = bool(record & 1)
            ns = self.shift(time)
            if ns < t.switches_last_ns:
                ns = t.switches_last_ns
            t.switches_last_ns = ns
            append(Event(ns, SWITCH_OUT if out else SWITCH_IN, SWITCH_SITES[out],
                         " bits=%d" % (record >> 1 & 7), 0, t))
        if pos != end:
            raise Problem("malformed switches (bytes after its records) frame at byte %d" % offset)

    def thread(self, fid):
        t = self.threads.get(fid)
        if t is None:
            t = self.threads[fid] = Thread(fid, len(self.thread_list))
            self.thread_list.append(t)
        return t

    def named_site(self, index, name):
        """The site of a zone named at run time: one for each distinct (call site, name),
        with the call site's options; past the limit, one overflow site."""
        key = (index, name)
        site = self.runtime_names.get(key)
        if site is None:
            if len(self.runtime_names) >= MAX_RUNTIME_NAMES:
                if self.runtime_overflow is None:
                    self.runtime_overflow = Site(b"ringtrace: run-time names past the limit", S_ZONE, 0)
                return self.runtime_overflow
            site = self.runtime_names[key] = Site(name, S_ZONE, self.sites[index].options)
        return site

    def step_site(self):
        if self.step_zone is None:
            self.step_zone = Site(b"step", S_ZONE, OPT_STEP)
        return self.step_zone

    def steps_track(self):
        """The thread of the step zones, "steps" with OS tid 0, made at the first marker
        (in the merge its events take the place of the thread that recorded the marker)."""
        if self.steps_thread is None:
            self.steps_thread = Thread(None, -1)
        return self.steps_thread

    # --- records to events
    def decode(self, t, records, offset):
        """A thread's records into its pending events: times raised, zones matched."""
        if t.past_stop:
            return
        sites = self.sites
        n_sites = len(sites)
        gap = self.gap
        stop = self.stop_ticks
        to_ns = self.to_ns
        pending = t.pending
        append = pending.append
        open_ = t.open
        last_ticks, last_ns = t.last_ticks, t.last_ns
        try:
            for kind, index, raw, value, text in records:
                if kind == R_END:
                    least = last_ticks + gap
                    ticks = raw if raw >= least else least
                    if ticks > stop:
                        t.past_stop = True
                        return
                    last_ticks = ticks
                    if not open_:
                        continue  # unbalanced: counted, left out
                    ns = to_ns(ticks)
                    if ns < last_ns:
                        ns = last_ns
                    last_ns = ns
                    site, flags, zone_value = open_.pop()
                    append(Event(ns, ZONE_END, site, zone_fields(site, flags, zone_value), flags, t))
                    continue
                ticks, ns = last_ticks, last_ns
                if raw is not None:
                    least = last_ticks + gap if kind in BOUNDARY else last_ticks
                    ticks = raw if raw >= least else least
                    if ticks > stop:
                        t.past_stop = True
                        return
                    ns = to_ns(ticks)
                    if ns < last_ns:
                        ns = last_ns
                if kind == R_EXTENDED:
                    if raw is not None and index in (X_ALLOC, X_FREE, X_ALLOC_AT) and value:
                        if value[1] >= ADDRESS_SPACE_BYTES:
                            raise Problem("a memory record of %d bytes, more than a process can allocate (2^47, "
                                          "x86-64's user address space; chunk at byte %d): damaged file"
                                          % (value[1], offset))
                        # The address, size and flags until the heap's accounting (deliver) sizes it.
                        append(Event(ns, FREE if index == X_FREE else ALLOC, MEMORY_SITES[index], value, 0, t))
                elif kind == R_DROPPED:
                    t.reported_drops += value
                    append(Event(ns, DROPPED, DROPPED_SITE, " count=%d" % value, 0, t))
                elif kind == R_FUNCTION:
                    if index == 0 or index >= len(self.functions):
                        raise Problem("a record refers to a call site the file never described (chunk at byte %d):"
                                      " damaged file" % offset)
                    site = self.functions[index]
                    open_.append((site, 0, 0))
                    append(Event(ns, ZONE_BEGIN, site, "", 0, t))
                elif kind != R_EXTENDED:
                    if index == 0 or index >= n_sites:
                        raise Problem("a record refers to a call site the file never described (chunk at byte %d):"
                                      " damaged file" % offset)
                    site = sites[index]
                    if kind == R_BEGIN:
                        open_.append((site, 0, 0))
                        append(Event(ns, ZONE_BEGIN, site, " step=0" if site.is_step else "", 0, t))
                    elif kind == R_NAMED:  # named at run time: a site of its own for each name
                        site = self.named_site(index, text[0])
                        open_.append((site, 0, 0))
                        append(Event(ns, ZONE_BEGIN, site, " step=0" if site.is_step else "",
                                     TRUNCATED if text[1] else 0, t))
                    elif kind == R_REGION:
                        if site.kind == S_REGION and site.options & OPT_STEP and value & (STEP_ENDS | STEP_BEGINS):
                            # A step marker: the step zones' end and begin on the steps track.
                            step = self.step_site()
                            track = self.steps_track()
                            number = value & STEP_NUMBER
                            latest = not self.steps_seen or ns >= self.steps_last_ns
                            if value & STEP_ENDS and number != 0:
                                append(Event(ns, ZONE_END, step, " step=%d" % (number - 1), 0, track))
                                if latest:
                                    self.steps_open = False
                            if value & STEP_BEGINS:
                                append(Event(ns, ZONE_BEGIN, step, " step=%d" % number, 0, track))
                                if latest:
                                    self.steps_open = True
                                    self.steps_number = number
                            if latest:
                                self.steps_last_ns = ns
                                self.steps_seen = True
                        elif site.kind == S_REGION and site.options & OPT_STEP:
                            # Format 1's marker: step N's zone on the recording thread.
                            step = self.step_site()
                            open_.append((step, 0, value))
                            append(Event(ns, ZONE_BEGIN, step, " step=%d" % value, 0, t))
                        else:
                            open_.append((site, REGION, value))
                            append(Event(ns, ZONE_BEGIN, site, " id=%d" % value, REGION, t))
                    elif kind == R_INSTANT:
                        append(Event(ns, INSTANT, site, "", 0, t))
                    elif kind in (R_TEXT, R_MESSAGE):
                        flags = TEXT | (TRUNCATED if text[1] else 0)
                        event = ARG if kind == R_TEXT else MESSAGE
                        append(Event(ns, event, site, " text=" + quoted(text[0]), flags, t))
                    else:  # R_INT, R_DOUBLE, R_ARG_INT, R_ARG_DOUBLE: by the site's kind
                        event = VALUE_EVENT.get(site.kind, COUNTER)
                        flags = DOUBLE if kind in (R_DOUBLE, R_ARG_DOUBLE) else 0
                        append(Event(ns, event, site, fields_of(event, flags, value, None), flags, t))
                last_ticks, last_ns = ticks, ns
        finally:
            t.last_ticks, t.last_ns = last_ticks, last_ns

    # --- delivery
    def deliver(self, watermark):
        """Delivers every pending event at or before `watermark`, merged across threads by
        time, then thread; events older than the last delivered are raised to it."""
        runs = []
        taken = []
        for t in self.thread_list:
            pending = t.pending
            cut = t.taken
            n = len(pending)
            if watermark == NEVER:
                cut = n
            else:
                while cut < n and pending[cut].time <= watermark:
                    cut += 1
            if cut > t.taken:
                runs.append((pending, t.taken, cut, t.order * 2))
                taken.append((t, t.taken, cut))
            if t.switches:  # every one read: the live drainer delivered them in this pass
                runs.append((t.switches, 0, len(t.switches), t.order * 2 + 1))
                t.switches = []
        if not runs:
            return
        if len(runs) == 1:
            events, begin, cut, _order = runs[0]
            merged = events[begin:cut]
        else:
            merged = merge_runs(runs)
        floor = self.last_emitted
        for e in merged:
            if e.time >= floor:
                break
            e.time = floor
            if e.kind not in NOT_LATE:
                e.flags |= LATE
        if self.memory:
            self.account_memory(merged)
        self.out.extend(merged)
        self.last_emitted = merged[-1].time
        for t, begin, cut in taken:
            if cut == len(t.pending):
                t.pending = []
                t.taken = 0
            else:
                t.taken = cut
                if cut > 65536:
                    del t.pending[:cut]
                    t.taken = 0

    def account_memory(self, events):
        """The heap's accounting (runtime/core/heap.hpp): an allocation's size is its own, a
        free's that of the live block at its address (else its caller's, else unknown)."""
        live = self.live_blocks
        sized = self.memory_sized
        last_freed = self.last_freed
        for e in events:
            if sized and e.kind in (ALLOC, FREE):  # a stream's file: sizes as they were resolved
                size = e.fields[1]
                if e.kind == ALLOC and e.fields[2] & X_RESTORE and size:
                    e.flags |= RESTORED
                e.fields = " bytes=%d" % size
                if e.kind == FREE and size == 0:
                    e.flags |= SIZE_UNKNOWN
                continue
            if e.kind == ALLOC:
                address, size, flags = e.fields
                if flags & X_RESTORE:  # a failed realloc: the block its thread freed last is live again
                    freed = last_freed.pop(e.thread.fid, None)
                    if freed is not None and freed[0] == address and address not in live and \
                            len(live) < self.max_blocks:
                        size = freed[1]
                        live[address] = size
                        e.flags |= RESTORED
                    else:
                        size = 0
                elif address in live or len(live) < self.max_blocks:
                    live[address] = size
                e.fields = " bytes=%d" % size
            elif e.kind == FREE:
                address, size, _ = e.fields
                known = live.pop(address, None)
                if known is not None:
                    size = known
                    last_freed[e.thread.fid] = (address, known)
                elif size == 0:
                    e.flags |= SIZE_UNKNOWN
                e.fields = " bytes=%d" % size

    def finish(self):
        """The end: what is pending delivered; zones left open closed at the stop time (or
        the last time delivered), flagged closed_at_stop; drops not yet reported last."""
        if not self.have_session:
            return
        self.deliver(NEVER)
        end_ns = max(self.to_ns(self.stop_ticks) if self.has_stop else 0, self.last_emitted, self.start_ns)
        out = self.out
        footer = self.footer or {}
        for t in self.thread_list:
            while t.open:
                site, flags, value = t.open.pop()
                flags |= CLOSED_AT_STOP
                out.append(Event(end_ns, ZONE_END, site, zone_fields(site, flags, value), flags, t))
            dropped = max(t.reported_drops, footer.get(t.fid, 0))
            if dropped > t.reported_drops:
                out.append(Event(end_ns, DROPPED, DROPPED_SITE, " count=%d" % (dropped - t.reported_drops), 0, t))
        if self.steps_open:  # the step open at the stop: closed there, after every thread's zones
            out.append(Event(max(end_ns, self.steps_last_ns), ZONE_END, self.step_site(),
                             " step=%d" % self.steps_number, CLOSED_AT_STOP, self.steps_track()))
            self.steps_open = False
        # Complete: the end frame read and nothing wrong (frames of a later version skipped
        # are said, but leave the file complete).
        self.read_whole = self.complete and self.problem is None
        if not self.complete and self.problem is None:
            self.problem = "file cut short at byte %d (the recording did not stop)" % self.pos
        if self.skipped_frames and self.problem is None:
            self.problem = "%d frame(s) of a later format version skipped" % self.skipped_frames
        if self.rings_note:
            self.problem = (self.problem + "; " if self.problem else "") + self.rings_note

    # --- the ring file
    def recover(self):
        """Reads on from the rings kept in a file: what the drainer had not written."""
        path = self.rings
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        except OSError as e:
            self.rings_note = "ring file not read: %s" % e
            return
        if len(data) < 48 or data[:8] != b"\x89RTRING\n":
            self.rings_note = "ring file %s ignored: not a ringtrace ring file" % path
            return
        version, pid, start_ns, capacity, slot_bytes, slots = struct.unpack_from("<IIQQQQ", data, 8)
        if version != 2:
            self.rings_note = "ring file %s ignored: a ring file version this reader does not know" % path
            return
        if pid != self.pid or start_ns != self.raw_start_ns:
            self.rings_note = "ring file %s ignored: it belongs to another recording" % path
            return
        if capacity < 4096 or capacity > 1 << 34 or capacity & (capacity - 1) or slot_bytes != 4096 + capacity:
            self.rings_note = "ring file %s ignored: malformed header" % path
            return
        slots = min(slots, 0 if len(data) < 4096 else (len(data) - 4096) // slot_bytes)
        recovered = left_out = overwritten = 0
        for k in range(slots):
            at = 4096 + k * slot_bytes
            if at + 328 > len(data):
                break
            state, fid, os_tid, name_bytes = struct.unpack_from("<IIQI", data, at)
            if state != 1:
                continue
            nxt, = struct.unpack_from("<Q", data, at + 256)
            lap_base, = struct.unpack_from("<Q", data, at + 280)
            ring_address, = struct.unpack_from("<Q", data, at + 320)
            if nxt < ring_address or nxt - ring_address >= 2 * capacity:
                continue  # torn or damaged
            write = lap_base + (nxt - ring_address)
            # A thread the drainer had not seen: an id no thread of the file has.
            t = self.thread(fid if fid != 0xFFFFFFFF else 0x80000000 + k)
            if not t.named:
                t.os_tid = os_tid
                t.named = True
            start = t.ring_bytes
            if write <= start:
                continue
            if write - start > capacity:
                overwritten += 1
                continue
            if at + 4096 + capacity > len(data):
                break
            ring = data[at + 4096:at + 4096 + capacity]
            records, pos, skipped = self.ring_records(ring + ring, capacity, start, write)
            left_out += skipped
            before = len(t.pending)  # decoding adds to the thread's events only (its steps' too)
            try:
                self.decode(t, records, at)
            except Problem as p:
                self.problem = str(p)  # in the place of what ended the file's frames
                return
            finally:
                t.ring_bytes = pos
            # Events recorded: a dropped marker is not one.
            recovered += sum(1 for e in t.pending[before:] if e.kind != DROPPED)
        self.rings_note = "%d events recovered from %s" % (recovered, path)
        if left_out:
            self.rings_note += (" (%d values or texts of call sites first used after the last drainer pass left out)"
                                % left_out)
        if overwritten:
            self.rings_note += "; %d ring(s) no longer held what the file lacks" % overwritten

    def ring_records(self, ring, capacity, pos, write):
        """The ring records from position pos up to write, their call-site addresses turned
        into the file's indices (an address no site frame has: a placeholder for zones and
        instants; values and texts left out). Returns (records, position reached, left out)."""
        records = []
        left_out = 0
        mask = capacity - 1
        while pos < write:
            at = pos & mask
            limit = write - pos
            h, = struct.unpack_from("<Q", ring, at)
            if h == 0:
                break  # reserved, never written: nothing after it is whole
            if h & 1:
                kind, n = R_END, 8
            else:
                kind = (h >> 1) & 15
                if kind == R_EXTENDED:
                    n = (h >> 32) * 8
                elif kind in TEXT_KINDS:
                    fixed = RING_BYTES[kind] // 8  # header, [time], size
                    if limit < fixed * 8:
                        break
                    size, = struct.unpack_from("<Q", ring, at + (fixed - 1) * 8)
                    text = size & ~TRUNCATED_BIT
                    if text > limit:
                        break
                    n = fixed * 8 + (text + 7) // 8 * 8
                else:
                    n = RING_BYTES.get(kind, 0)
            if n == 0 or n > limit:
                break  # a kind this reader does not know, or torn
            pos += n
            if kind == R_END:
                records.append((R_END, 0, h >> 1, 0, None))
                continue
            if kind == R_EXTENDED:
                subtype = (h >> 8) & 0xFF
                if subtype == 0:
                    continue  # padding: nothing of the file's
                words = struct.unpack_from("<%dQ" % (n // 8 - 1), ring, at + 8) if n > 8 else ()
                timed = h & X_TIMED_HEADER and words
                memory = n == 32 if subtype in (X_ALLOC, X_FREE) else \
                    subtype == X_ALLOC_AT and n == 40 + 8 * ((h >> X_FRAMES_SHIFT) & 0xFF)
                value = (words[1], words[2], h & (X_SAMPLED_OUT | X_RESTORE | X_SAMPLED)) if timed and memory else 0
                records.append((R_EXTENDED, subtype, words[0] if timed else None, value, None))
                continue
            words = struct.unpack_from("<%dQ" % (n // 8 - 1), ring, at + 8)
            ticks = None if kind in UNTIMED else words[0]
            value = 0
            text = None
            if kind in TEXT_KINDS:
                fixed = RING_BYTES[kind] // 8
                size = words[fixed - 2]
                text = (bytes(ring[at + fixed * 8:at + fixed * 8 + (size & ~TRUNCATED_BIT)]),
                        bool(size & TRUNCATED_BIT))
            elif kind not in (R_BEGIN, R_INSTANT):
                value = words[-1]
            if kind == R_DROPPED:
                records.append((kind, 0, ticks, value, text))
                continue
            if kind == R_FUNCTION:
                # The header holds the function's address: its function frame's, or a function
                # first called after the last pass, named from the module whose range holds it.
                function = h >> 5
                index = self.function_index_by_address.get(function)
                if index is None:
                    module = 0
                    for i, (_base, low, high, _build_id, _path) in enumerate(self.modules):
                        if low <= function < high:
                            module = i + 1
                    self.functions.append(self.function_site(function, module, b"", False))
                    index = self.function_index_by_address[function] = len(self.functions) - 1
                records.append((kind, index, ticks, value, text))
                continue
            address = h & ~31 & MASK64
            index = self.index_by_address.get(address)
            if index is None:
                if kind in (R_BEGIN, R_REGION, R_INSTANT):
                    self.sites.append(Site(b"(call site 0x%x)" % address, S_INSTANT if kind == R_INSTANT else S_ZONE, 0))
                    index = len(self.sites) - 1
                    self.index_by_address[address] = index
                else:
                    left_out += 1
                    continue
            records.append((kind, index, ticks, value, text))
        return records, pos, left_out


class Fields:
    """Reads a frame's fields; reading past its payload makes it malformed."""

    def __init__(self, data, start, end):
        self.data, self.pos, self.end = data, start, end

    def unpack(self, fmt, offset, what):
        size = struct.calcsize(fmt)
        if self.pos + size > self.end:
            raise Problem("malformed %s frame at byte %d" % (what, offset))
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def string(self, offset, what):
        n = self.unpack("<I", offset, what)[0]
        if n > self.end - self.pos:
            raise Problem("malformed %s frame at byte %d" % (what, offset))
        s = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return s


def merge_runs(runs):
    """K-way merge of the threads' runs (each in time order) by time, then thread, then
    lane (a thread's own events, then its context switches): runs of (events, begin, cut,
    thread order * 2 + lane)."""
    heap = [(events[begin].time, order, begin, cut, events) for events, begin, cut, order in runs]
    heapq.heapify(heap)
    out = []
    append = out.append
    while heap:
        _time, order, i, cut, pending = heap[0]
        append(pending[i])
        i += 1
        if i < cut:
            heapq.heapreplace(heap, (pending[i].time, order, i, cut, pending))
        else:
            heapq.heappop(heap)
    return out


# ---------------------------------------------------------------------------------
# The file

def ring_file_of(path):
    """`run.rtrace.rings` for run.rtrace, run.rtrace.partial and a killed run's temporary
    run.rtrace.partial.XXXXXXXX (eight characters)."""
    m = re.match(r"^(.*)\.partial(\.[^/]{8})?$", path, re.S)
    return (m.group(1) if m else path) + ".rings"


class Unreadable(Exception):
    """An input that is no regular file that can be read, in `ringtrace dump`'s words."""


def check_input(path):
    """As `ringtrace dump` checks its input and its ring file before reading
    (runtime/output/file_paths.cpp, open_input): a regular file, opened without waiting
    for the writer of a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise Unreadable("cannot open '%s': %s" % (path, os.strerror(e.errno)))
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISDIR(mode):
        raise Unreadable("cannot read '%s': %s" % (path, os.strerror(errno.EISDIR)))
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise Unreadable("cannot read '%s': it is %s, not a regular file" % (path, kind))


def process_clock(data, start, end, after_source):
    """How a merged file's process is placed (docs/file-format.md, "Merged files"): the flags
    byte and, from format 2.3, the clock check after the source (absent: None)."""
    flags = data[start + 16]
    clock = {"realtime": bool(flags & PROCESS_REALTIME), "measured": bool(flags & PROCESS_MEASURED),
             "agrees": bool(flags & PROCESS_AGREES), "contradicted": bool(flags & PROCESS_CONTRADICTED),
             "realtime_offset_ns": None, "low_ns": None, "high_ns": None, "messages": None}
    if end - after_source >= 32:
        realtime, low, high, messages = struct.unpack_from("<qqqQ", data, after_source)
        clock.update(realtime_offset_ns=realtime, messages=messages,
                     low_ns=None if low == -(1 << 63) else low, high_ns=None if high == (1 << 63) - 1 else high)
    return clock


class Reader:
    def __init__(self, path, rings):
        self.path = path
        self.rings = rings
        self.problem = None
        self.sections = []

    def read(self, emit):
        """Reads the file, calling emit(lines) as events are delivered. Returns whether the
        file was complete."""
        with open(self.path, "rb") as f:
            data = memoryview(f.read())
        if len(data) < 16:
            raise Refused("empty file, not a ringtrace trace" if len(data) == 0 else "too short for a ringtrace trace")
        if bytes(data[:8]) != b"\x89RTRACE\n":
            raise Refused("not a ringtrace trace file (bad magic)")
        version, word = struct.unpack_from("<II", data, 8)
        if version in (1, 2):
            major, merged, mixed = 1, version == 2, bool(word & 1)
        elif version >> 16 == 2:
            major, merged, mixed = 2, bool(word & 1), False
        else:
            raise Refused("file format %d.%d, this reader knows formats 1 and 2 (a newer ringtrace wrote it)"
                          % (version >> 16, version & 0xFFFF))
        if merged:
            self.find_sections(data, major, mixed)
        else:
            section = Section(data, 16, len(data), major, mixed)
            if self.rings:
                section.rings = ring_file_of(self.path)
            self.sections.append(section)
        sections = self.sections
        for s in sections:
            s.open_session()
        self.name_processes()
        while True:
            best = None
            for s in sections:
                if not s.done and (best is None or s.horizon() < best.horizon()):
                    best = s
            if best is not None:
                best.step()
            emit(self.flush())
            if best is None:
                break
        complete = self.problem is None and bool(sections)
        for s in sections:
            if not s.read_whole:
                complete = False
            if self.problem is None and s.problem:
                source = " (from %s)" % s.source if s.source else ""
                self.problem = s.problem if len(sections) == 1 else "process %d%s: %s" % (s.pid, source, s.problem)
        return complete

    def find_sections(self, data, major, mixed):
        """A merged file: a process frame, then that process's frames, for each process."""
        size = len(data)
        at = 16
        while at < size:
            probe = Section(data, at, size, major, mixed)
            frame = probe.next_frame()
            if frame is None:
                self.problem = ("file cut short at byte %d (inside a process frame)" % at
                                if "cut short" in (probe.problem or "") else probe.problem)
                break
            ftype, start, end, _offset = frame
            if ftype != F_PROCESS or end - start < 28:
                self.problem = "no process frame at byte %d of a merged file: damaged or cut short" % at
                break
            section_bytes, offset_ns = struct.unpack_from("<Qq", data, start)
            n, = struct.unpack_from("<I", data, start + 24)
            if n > end - start - 28:
                self.problem = "malformed process frame at byte %d" % at
                break
            source = bytes(data[start + 28:start + 28 + n]).decode("utf-8", "surrogateescape")
            begin = end
            stop = size if section_bytes > size - begin else begin + section_bytes
            section = Section(data, begin, stop, major, mixed, offset_ns, source)
            section.clock = process_clock(data, start, end, start + 28 + n)
            self.sections.append(section)
            at = stop
        if not self.sections and self.problem is None:
            self.problem = "a merged file with no process in it"

    def name_processes(self):
        """Every thread carries its process's pid; in a merged file a pid seen in an earlier
        section (or 0) is replaced by an unused one above Linux's largest pid_max."""
        several = len(self.sections) > 1
        used = set()
        next_free = 4194305
        for s in self.sections:
            pid = s.pid
            if several and (pid == 0 or pid in used):
                while next_free in used:
                    next_free += 1
                pid = next_free
                next_free += 1
            used.add(pid)
            s.out_pid = pid
        if not several and self.sections:
            self.sections[0].out_pid = self.sections[0].pid

    def flush(self):
        """The events no section can precede any more, by time, ties to the earlier section."""
        sections = self.sections
        lines = []
        if not sections:  # a merged file whose first process frame is missing or malformed
            return lines
        if len(sections) == 1:
            s = sections[0]
            pid = s.out_pid
            lines = [e.line(pid) for e in s.out]
            s.out = []
            return lines
        horizon = min(s.horizon() for s in sections)
        heads = []
        for i, s in enumerate(sections):
            if s.out_pos < len(s.out) and s.out[s.out_pos].time <= horizon:
                heads.append((s.out[s.out_pos].time, i))
        heapq.heapify(heads)
        while heads:
            _time, i = heads[0]
            s = sections[i]
            e = s.out[s.out_pos]
            s.out_pos += 1
            lines.append(e.line(s.out_pid))
            if s.out_pos < len(s.out) and s.out[s.out_pos].time <= horizon:
                heapq.heapreplace(heads, (s.out[s.out_pos].time, i))
            else:
                heapq.heappop(heads)
        for s in sections:
            if s.out_pos == len(s.out):
                s.out = []
                s.out_pos = 0
        return lines


def print_clocks(reader):
    """One line per process: pid (as its threads carry it), offset_ns, then the clock
    check's fields as key=value (`-` where the file has none or a side is unbounded)."""
    for s in reader.sections:
        c = getattr(s, "clock", None) or {}

        def value(key):
            v = c.get(key)
            return "-" if v is None else ("%d" % v if not isinstance(v, bool) else ("1" if v else "0"))
        fields = " ".join("%s=%s" % (k, value(k)) for k in ("realtime", "measured", "agrees", "contradicted",
                                                            "realtime_offset_ns", "low_ns", "high_ns", "messages"))
        sys.stdout.write("pid=%d offset_ns=%d %s\n" % (s.out_pid, s.offset_ns, fields))


def main(argv):
    args = argv[1:]
    rings = True
    clocks = False
    if len(args) == 2 and args[1] == "--no-rings":
        rings = False
        args = args[:1]
    if len(args) == 2 and args[1] == "--clocks":
        clocks = True
        args = args[:1]
    usage = ("usage: rtrace.py FILE [--no-rings | --clocks]\n\n"
             "Prints the file's events as `ringtrace dump FILE` does, one a line (docs/file-format.md).\n"
             "--clocks: instead, one line per process of a merged file: how it is placed on the\n"
             "timeline (offset, CLOCK_REALTIME's offset, the bounds the flows gave, the flags).\n")
    if len(args) == 1 and args[0] in ("-h", "--help"):
        sys.stdout.write(usage)
        return 0
    if len(args) != 1:
        sys.stderr.write(usage)
        return 2
    out = sys.stdout.buffer

    def emit(lines):
        if lines:
            out.write(("\n".join(lines) + "\n").encode("ascii"))

    reader = Reader(args[0], rings)
    try:
        check_input(args[0])
        if rings and os.path.lexists(ring_file_of(args[0])):
            check_input(ring_file_of(args[0]))
        complete = reader.read((lambda lines: None) if clocks else emit)
        if clocks:
            print_clocks(reader)
        out.flush()
    except Unreadable as e:
        sys.stderr.write("rtrace.py: %s\n" % e)
        return 1
    except Refused as e:
        sys.stderr.write("rtrace.py: %s: %s\n" % (args[0], e))
        return 1
    except OSError as e:
        sys.stderr.write("rtrace.py: %s\n" % e)
        return 1
    if not complete:
        # A merged file's source names are the file's bytes, written back as they are.
        sys.stderr.flush()
        sys.stderr.buffer.write(("rtrace.py: %s: %s\n" % (args[0], reader.problem)).encode("utf-8", "surrogateescape"))
        return 1
    # Complete, but with frames of a later version skipped: said by nothing, as
    # `ringtrace dump` (docs/file-format.md, "Frames").
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
