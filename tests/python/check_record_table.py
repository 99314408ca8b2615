#!/usr/bin/env python3
"""check_record_table.py RTRACE_PY FILE_FORMAT_MD RECORD_H RECORD_TABLE_BIN

The ring record kinds, their sizes, and which have a time, are a zone boundary or carry a
text, three times over: docs/file-format.md's table ("Ring records") and its lists of
kinds with no time and of boundaries, the C++ runtime (record.hpp's RecordKind names and
what record_table, built from ring_records.hpp, prints), and tools/python/rtrace.py's own
tables. Fails, saying where, when any two differ."""

import importlib.util
import re
import subprocess
import sys

# The same kind in each: the document's name, rtrace.py's constant, the C++ enumerator.
# A kind added to one and not here fails the check, as it should: add it to all four.
NAMES = [
    (None, "R_END", "record_zone_end"),  # not a row of the table: the slot with bit 0 set
    ("zone begin", "R_BEGIN", "record_zone_begin"),
    ("instant", "R_INSTANT", "record_instant"),
    ("timed integer", "R_INT", "record_timed_int"),
    ("timed double", "R_DOUBLE", "record_timed_double"),
    ("integer argument", "R_ARG_INT", "record_arg_int"),
    ("double argument", "R_ARG_DOUBLE", "record_arg_double"),
    ("region begin", "R_REGION", "record_region_begin"),
    ("text argument", "R_TEXT", "record_arg_text"),
    ("function entry", "R_FUNCTION", "record_function_entry"),
    ("dropped", "R_DROPPED", "record_dropped"),
    ("message", "R_MESSAGE", "record_message"),
    ("named zone begin", "R_NAMED", "record_zone_begin_named"),
    ("extended", "R_EXTENDED", "record_extended"),
]
END, EXTENDED = 0, 15

failures = []


def expect(what, a, b, a_name, b_name):
    if a != b:
        failures.append("%s: %s says %s, %s says %s" % (what, a_name, a, b_name, b))


def kinds(text):
    return frozenset(int(k) for k in re.findall(r"\d+", text))


def from_document(path):
    """Kind -> (name, bytes before a text, has a time, has a text); the unassigned kinds;
    the kinds with no time and the boundaries, as the prose lists them."""
    doc = open(path, encoding="utf-8").read()
    section = doc[doc.index("## Ring records"):doc.index("## Chunks")]
    rows, unassigned = {}, set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"\d+(, \d+)*", cells[0]):
            continue
        numbers = kinds(cells[0])
        if cells[1] == "(not assigned)":
            unassigned |= numbers
            continue
        slots = cells[2].split(";")[0]  # what follows a ';' says something else than a slot
        for k in numbers:
            rows[k] = (cells[1], 8 * (1 + len(re.findall(r"`[^`]+`", slots))), "`ticks`" in slots, "bytes" in slots)
    untimed = re.search(r"Records with no time \(kinds ([\d, ]+)\)", doc)
    boundary = re.search(r"a \*\*boundary\*\* \(kinds ([\d, ]+)\)", doc)
    if not rows or not untimed or not boundary:
        sys.exit("check_record_table: %s: no ring records table, or no list of kinds with no time or of "
                 "boundaries, where this check looks for them" % path)
    return rows, frozenset(unassigned), kinds(untimed.group(1)), kinds(boundary.group(1))


def from_cxx(header, table):
    """The enumerators of RecordKind; kind -> (bytes, has a time, a boundary, has a text);
    the unassigned kinds."""
    source = open(header, encoding="utf-8").read()
    enum = source[source.index("enum RecordKind"):]
    enum = enum[:enum.index("};")]
    names = {name: int(value) for name, value in re.findall(r"\b(record_\w+) = (\d+)", enum)}
    rows, unassigned = {}, set()
    for line in subprocess.run([table], check=True, capture_output=True, text=True).stdout.splitlines():
        fields = line.split()
        if fields[1] == "unassigned":
            unassigned.add(int(fields[0]))
        else:
            rows[int(fields[0])] = (int(fields[1]), "t" in fields[2], "b" in fields[2], "x" in fields[2])
    return names, rows, frozenset(unassigned)


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    spec = importlib.util.spec_from_file_location("rtrace", argv[1])
    py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(py)
    doc_rows, doc_unassigned, doc_untimed, doc_boundary = from_document(argv[2])
    cxx_names, cxx_rows, cxx_unassigned = from_cxx(argv[3], argv[4])

    # The kinds' numbers, by name.
    for doc_name, py_name, cxx_name in NAMES:
        number = cxx_names.pop(cxx_name, None)
        expect("%s's number" % cxx_name, number, getattr(py, py_name, None), "record.hpp", "rtrace.py " + py_name)
        if doc_name is not None:
            in_doc = [k for k, row in doc_rows.items() if row[0] == doc_name]
            expect("%s's number" % cxx_name, number, in_doc[0] if len(in_doc) == 1 else in_doc, "record.hpp",
                   "the document's row '%s'" % doc_name)
    named = {n for n, _, _ in NAMES if n is not None}
    for k, row in sorted(doc_rows.items()):
        if row[0] not in named:
            failures.append("kind %d ('%s') of the document is not in this check's NAMES" % (k, row[0]))
    for name, value in sorted(cxx_names.items()):
        if not name.startswith("record_unassigned_"):
            failures.append("record.hpp's %s (%d) is not in this check's NAMES" % (name, value))

    # Which kinds exist.
    expect("kinds not assigned", cxx_unassigned, doc_unassigned, "the C++ runtime", "the document")
    expect("kinds not assigned", cxx_unassigned, py.UNASSIGNED, "the C++ runtime", "rtrace.py UNASSIGNED")
    expect("kinds assigned", sorted(cxx_rows), sorted(set(doc_rows) | {END}), "the C++ runtime",
           "the document (and the zone end)")

    # Sizes: the document's and rtrace.py's (which has no entry for a zone end's one slot
    # or an extended record, whose header says its size).
    for k, (size, timed, boundary, text) in sorted(cxx_rows.items()):
        if k in doc_rows:
            expect("kind %d's bytes before a text" % k, size, doc_rows[k][1], "the C++ runtime", "the document")
            expect("kind %d has a time" % k, timed, doc_rows[k][2], "the C++ runtime", "the document's slots")
            expect("kind %d has a text" % k, text, doc_rows[k][3], "the C++ runtime", "the document's slots")
        if k not in (END, EXTENDED):
            expect("kind %d's bytes before a text" % k, size, py.RING_BYTES.get(k), "the C++ runtime",
                   "rtrace.py RING_BYTES")
    expect("kinds with a fixed size", sorted(set(cxx_rows) - {END, EXTENDED}), sorted(py.RING_BYTES),
           "the C++ runtime", "rtrace.py RING_BYTES")
    expect("size of a zone end", cxx_rows.get(END, (None,))[0], 8, "the C++ runtime", "the document (one slot)")

    # Kinds with no time, boundaries, texts.
    untimed = frozenset(k for k, row in cxx_rows.items() if not row[1])
    boundaries = frozenset(k for k, row in cxx_rows.items() if row[2])
    texts = frozenset(k for k, row in cxx_rows.items() if row[3])
    expect("kinds with no time", untimed, doc_untimed, "the C++ runtime", "the document")
    expect("kinds with no time", untimed, py.UNTIMED, "the C++ runtime", "rtrace.py UNTIMED")
    expect("boundaries", boundaries, doc_boundary, "the C++ runtime", "the document")
    expect("boundaries", boundaries, py.BOUNDARY, "the C++ runtime", "rtrace.py BOUNDARY")
    expect("kinds with a text", texts, py.TEXT_KINDS, "the C++ runtime", "rtrace.py TEXT_KINDS")

    if failures:
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("ring record kinds: the document, the C++ runtime and rtrace.py agree on %d kinds" % len(cxx_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
