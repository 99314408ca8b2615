#!/usr/bin/env python3
"""A client of ringtrace's control channel written from docs/control.md alone, and a
fuzzer of it.

Usage: control_fuzz.py SOCKET COUNT PID

First a well-formed conversation, checked field by field against the docs page (status,
a request it cannot serve, a sample without top); then COUNT fuzzed messages: random
bytes of any length, headers with any type, version, reserved word or length, payloads
whose fields run past their end, half a frame and a close, half a frame left hanging,
a peer that sends requests and never reads the replies. Whatever the process sends back
must be well-formed frames. Prints "sent N messages" and exits 0, or says what was wrong
and exits 1. Deterministic (a fixed seed).
"""
import random
import socket
import struct
import sys

MAGIC = b"RTCL"
VERSION = 1
REQUESTS = {"status": 1, "record": 2, "stop": 3, "snapshot": 4, "top": 5, "sample": 6}
REPLIES = {100: "ok", 101: "error", 102: "table"}


def frame(kind, fields=(), version=VERSION, reserved=0, length=None):
    payload = b"".join(struct.pack("<HI", len(k), len(v)) + k + v for k, v in fields)
    size = len(payload) if length is None else length
    return MAGIC + struct.pack("<HHII", version, kind, size, reserved) + payload


def field(key, value):
    return (key.encode(), value if isinstance(value, bytes) else str(value).encode())


class Reply:
    def __init__(self, kind, fields):
        self.kind = kind
        self.fields = fields

    def get(self, key):
        for k, v in self.fields:
            if k == key:
                return v
        return None


def parse_fields(payload):
    fields, at = [], 0
    while at < len(payload):
        if len(payload) - at < 6:
            raise ValueError("a field's header runs past the payload")
        klen, vlen = struct.unpack_from("<HI", payload, at)
        at += 6
        if not 1 <= klen <= 64 or at + klen + vlen > len(payload):
            raise ValueError("a field runs past the payload")
        key = payload[at:at + klen].decode("ascii")
        if not all(c.islower() or c.isdigit() or c == "_" for c in key):
            raise ValueError("a key with other characters: %r" % key)
        fields.append((key, payload[at + klen:at + klen + vlen].decode("utf-8", "replace")))
        at += klen + vlen
    return fields


def read_replies(data):
    """Every whole frame in data (a process's replies), checked; the rest must be empty."""
    replies, at = [], 0
    while len(data) - at >= 16:
        magic, version, kind, length, reserved = struct.unpack_from("<4sHHII", data, at)
        if magic != MAGIC or version != VERSION or reserved != 0 or kind not in REPLIES:
            raise ValueError("a malformed reply header: %r" % data[at:at + 16])
        if length > 16 * 1024 * 1024:
            raise ValueError("a reply longer than the limit")
        if len(data) - at - 16 < length:
            break
        replies.append(Reply(REPLIES[kind], parse_fields(data[at + 16:at + 16 + length])))
        at += 16 + length
    if at != len(data):
        raise ValueError("%d bytes of a reply cut short" % (len(data) - at))
    return replies


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(path)
    return s


def exchange(path, data, expect_close=True):
    """Sends data, then reads until the process closes (or, if it keeps the connection,
    until the replies stop coming); returns the replies."""
    s = connect(path)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    if not expect_close:
        s.shutdown(socket.SHUT_WR)  # done sending: the process answers, then closes
    received = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    s.close()
    return read_replies(received)


def check(condition, what):
    if not condition:
        print("control_fuzz: " + what)
        sys.exit(1)


def conversation(path, pid):
    replies = exchange(path, frame(REQUESTS["status"]) + frame(REQUESTS["sample"]) +
                       frame(REQUESTS["stop"]), expect_close=False)
    check(len(replies) == 3, "three requests, %d replies" % len(replies))
    status = replies[0]
    check(status.kind == "ok", "status: %s" % status.kind)
    check(status.get("pid") == pid, "status pid %r, not %s" % (status.get("pid"), pid))
    check(status.get("protocol") == "1", "status protocol %r" % status.get("protocol"))
    check(status.get("session") in ("none", "program", "environment", "outside"), "status session")
    for key in ("program", "decodes", "recorder_keep_ms", "window_factories", "recorded", "dropped"):
        check(status.get(key) is not None, "status without " + key)
    check(replies[1].kind == "error" and replies[1].get("code") == "nothing", "sample without top: %r" %
          replies[1].fields)
    check(replies[2].kind == "error" and replies[2].get("code") == "nothing", "stop without record")
    # A header the process refuses before its payload arrives: the reply comes at once.
    replies = exchange(path, frame(REQUESTS["status"], length=1 << 20))
    check(len(replies) == 1 and replies[0].get("code") == "malformed", "an oversized length")


def fuzz(path, count):
    rng = random.Random(45)
    sent = 0
    hanging = []
    while sent < count:
        kind = rng.randrange(9)
        if kind == 0:  # any bytes, any length
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
            if rng.random() < 0.5:
                data = MAGIC + data
            exchange(path, data, expect_close=False)
            sent += 1
        elif kind == 1:  # a header with anything in it, and a random payload
            payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
            data = MAGIC + struct.pack("<HHII", rng.choice([0, 1, 1, 1, 2, 65535]), rng.randrange(0, 200),
                                       rng.choice([len(payload), rng.randrange(0, 1 << 32)]),
                                       rng.choice([0, 0, 0, 1])) + payload
            exchange(path, data, expect_close=False)
            sent += 1
        elif kind == 2:  # fields whose lengths run past the payload, or bad keys
            key = rng.choice([b"", b"x" * 65, b"BAD", b"out put", b"output", b"rows"])
            value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 32)))
            body = struct.pack("<HI", len(key) + rng.randrange(0, 3), len(value) + rng.randrange(0, 3)) + key + value
            data = MAGIC + struct.pack("<HHII", 1, rng.choice(list(REQUESTS.values())), len(body), 0) + body
            exchange(path, data, expect_close=False)
            sent += 1
        elif kind == 3:  # half a frame, then a close
            data = frame(REQUESTS["status"], [field("x", "y" * 40)])
            s = connect(path)
            s.sendall(data[:rng.randrange(1, len(data))])
            s.close()
            sent += 1
        elif kind == 4:  # half a frame, left hanging (at most 8 at a time; the process times them out)
            data = frame(REQUESTS["status"], [field("x", "y")])
            s = connect(path)
            s.sendall(data[:rng.randrange(1, len(data))])
            hanging.append(s)
            if len(hanging) > 8:
                hanging.pop(0).close()
            sent += 1
        elif kind == 5:  # a peer that never reads: many requests, replies left unread
            s = connect(path)
            n = rng.randrange(50, 200)
            try:
                s.sendall(frame(REQUESTS["status"]) * n)
            except (BrokenPipeError, ConnectionResetError):
                pass
            s.close()
            sent += n
        elif kind == 6:  # well-formed requests with random fields, several on one connection
            frames = b""
            n = rng.randrange(1, 20)
            for _ in range(n):
                name = rng.choice(["status", "sample", "stop", "snapshot", "record"])
                fields = [field(rng.choice(["output", "rows", "policy", "buffer", "zz"]),
                                bytes(rng.randrange(32, 127) for _ in range(rng.randrange(0, 20))))
                          for _ in range(rng.randrange(0, 4))]
                frames += frame(REQUESTS[name], fields)
            for r in exchange(path, frames, expect_close=False):
                check(r.kind in ("ok", "error", "table"), "a reply of kind " + r.kind)
            sent += n
        elif kind == 7:  # a frame's bytes one at a time
            data = frame(REQUESTS["status"], [field("a_b", "c")])
            s = connect(path)
            for i in range(len(data)):
                s.send(data[i:i + 1])
            s.shutdown(socket.SHUT_WR)
            received = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
            s.close()
            replies = read_replies(received)
            check(len(replies) == 1 and replies[0].kind == "ok", "a frame sent byte by byte")
            sent += 1
        else:  # a valid frame followed by garbage on the same connection
            data = frame(REQUESTS["status"]) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
            replies = exchange(path, data, expect_close=False)
            check(len(replies) >= 1 and replies[0].kind == "ok", "the valid frame before the garbage")
            sent += 1
    for s in hanging:
        s.close()
    return sent


def main():
    path, count, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    conversation(path, pid)
    sent = fuzz(path, count)
    conversation(path, pid)  # it still answers as the page says
    print("sent %d messages" % min(sent, count) if sent >= count else "sent only %d" % sent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
