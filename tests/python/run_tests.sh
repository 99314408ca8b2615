#!/usr/bin/env bash
# run_tests.sh <ringtrace tool> <record_all> <python3> <work dir>: tools/python/rtrace.py,
# the reader written from docs/file-format.md alone, prints byte for byte what
# `ringtrace dump` prints, with the same exit status, for: files of live sessions (every
# event kind and rich event, steps, several threads, many drainer passes; drops under
# the drop policy), a stream file (replay()) and window files, files of processes killed
# with SIGKILL (with their ring file and with --no-rings), a merged file, the format-1
# fixtures, a live session with context switches (format 2.1's switches frames), files
# with allocations (format 2.3: a killed run's ring file, a preloaded C program), hand-made
# files of what live sessions write rarely or never (make_synthetic.py: among them format
# 2.1's module and function frames and function entries, which record_all, built without
# -finstrument-functions, does not write; headers whose feature bits and process frames
# disagree with what follows), inputs that are no regular file, and copies cut short or
# with a flipped byte. The two also say the same on standard error (a problem in the same
# words, never a traceback). Prints the first differing lines.
set -uo pipefail
tool="$1"; record="$2"; python="$3"; work="$4"; memory_rings="${5:-}"; memory_app="${6:-}"
here="$(cd "$(dirname "$0")" && pwd)"
rtrace="${here}/../../tools/python/rtrace.py"
fixtures="${here}/../binary/fixtures/format1"
rm -rf "${work}"; mkdir -p "${work}/out"
failures=0
compared=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# compare FILE [--no-rings]: both readers' standard output, byte for byte, and exit status.
compare() {
  local file="$1"; shift
  local name; name="$(basename "${file}")$(printf '%s' "$@")"
  # (under timeout: a reader that waits, on a FIFO, fails instead of blocking CI)
  timeout 60 "${tool}" dump "${file}" "$@" >"${work}/out/${name}.dump" 2>"${work}/out/${name}.dump.err"
  local a=$?
  timeout 60 "${python}" "${rtrace}" "${file}" "$@" >"${work}/out/${name}.py" 2>"${work}/out/${name}.py.err"
  local b=$?
  compared=$((compared + 1))
  if ! cmp -s "${work}/out/${name}.dump" "${work}/out/${name}.py"; then
    fail "${file} $*: rtrace.py's output differs from ringtrace dump's (< dump, > rtrace.py):"
    diff "${work}/out/${name}.dump" "${work}/out/${name}.py" | head -20 | cut -c1-300
  fi
  if [[ ${a} -ne ${b} ]]; then
    fail "${file} $*: ringtrace dump exits ${a}, rtrace.py ${b}: $(cat "${work}/out/${name}.dump.err" "${work}/out/${name}.py.err")"
  fi
  # The same problem in the same words, each after its own prefix; never a traceback.
  if ! cmp -s <(sed 's/^ringtrace dump: //' "${work}/out/${name}.dump.err") \
              <(sed 's/^rtrace\.py: //' "${work}/out/${name}.py.err"); then
    fail "${file} $*: the readers say different things: dump '$(cat "${work}/out/${name}.dump.err")'," \
      "rtrace.py '$(cat "${work}/out/${name}.py.err")'"
  fi
  return "${a}"
}
# lines FILE [--no-rings]: lines the dump printed for the file (compare first).
lines() { local name; name="$(basename "$1")$(printf '%s' "${@:2}")"; wc -l <"${work}/out/${name}.dump"; }
# has FILE PATTERN: the dump of FILE has a line matching PATTERN (the files hold what they should).
has() { grep -q -- "$2" "${work}/out/$(basename "$1").dump" || fail "$(basename "$1") has no line matching '$2'"; }

# --- Live sessions, a stream, windows -------------------------------------------------
live="${work}/live"
"${record}" "${live}" rich >/dev/null || fail "record_all rich exits $?"
for f in "${live}"/rich.rtrace "${live}"/stream.rtrace "${live}"/window-*.rtrace "${live}"/drops.rtrace; do
  compare "${f}" || fail "ringtrace dump ${f} exits $?"
done
rich="${live}/rich.rtrace"
for pattern in ' 0 zone_begin "step" step=1$' ' 0 zone_end "step" step=1$' ' zone_begin "region" id=18446744073709551615$' ' zone_begin "recv"$' \
    ' instant "tick"$' ' counter "ints" i=-9223372036854775808$' ' counter "doubles" d=-nan$' ' d=inf$' \
    ' counter "per_thread_d" d=' ' arg "double" d=4.9406564584124654e-324$' ' arg "int" i=9223372036854775807$' \
    ' arg "text" text="a\\x00\\"\\\\\\x0a\\x01\\x7f\\x80\\xffz"$' ' arg "long" text="x*" truncated$' \
    ' zone_begin "esc \\"q\\" \\\\ \\x01\\xfe"$' ' zone_begin "nul"$' ' zone_begin "sampled"$' ' flow_out "flow" id=' \
    ' flow_in "flow" id=' ' async_begin "upload" id=' ' async_end "upload" id=' ' closed_at_stop$' \
    ' zone_begin "dyn 6"$' ' zone_begin "dyn 3n*" truncated$' ' zone_begin "with args"$' ' arg "half" d=' \
    ' message "message" text="a\\x00' ' zone_end "manual"$'; do
  has "${rich}" "${pattern}"
done
[[ $(cut -d' ' -f3 "${work}/out/rich.rtrace.dump" | sort -u | wc -l) -ge 4 ]] || fail "rich.rtrace: fewer than 4 threads"
has "${live}/stream.rtrace" ' arg "long" text="x*" truncated$'
has "${rich}" ' 0 zone_end "step" step=[0-9]* closed_at_stop$'  # the step open at the stop
has "${live}/stream.rtrace" ' 0 zone_begin "step" step=1$'
windows=("${live}"/window-*.rtrace)
# The last window's (numbered from 0) last step is closed by the stream (not in the file).
has "${live}/window-$((${#windows[@]} - 1)).rtrace" ' 0 zone_end "step" step=[0-9]* closed_at_stop$'
has "${live}/drops.rtrace" ' 0 zone_begin "step" step=8$'
has "${live}/drops.rtrace" ' arg "text" text="burst \\x01"$'
has "${live}/drops.rtrace" ' arg "long" text="y*" truncated$'
has "${live}/drops.rtrace" ' dropped "ringtrace: dropped events" count='
[[ $(grep -c ' dropped ' "${work}/out/drops.rtrace.dump") -ge 3 ]] || fail "drops.rtrace: fewer than 3 dropped events"

# --- Context switches (Config::context_switches): switches frames and their summary -----
"${record}" "${live}" switches >"${work}/switches.out" 2>&1 || fail "record_all switches exits $?: $(cat "${work}/switches.out")"
switches="${live}/switches.rtrace"
compare "${switches}" || fail "ringtrace dump ${switches} exits $?"
has "${switches}" ' zone_begin "sleeps"$'
# The kernel's switches depend on the machine (a refusal, or a thread whose stream opened
# after its sleeps on a loaded one): the comparison above holds either way, and the
# hand-made switches files below cover every switch case whatever the kernel gave.
if grep -q 'unavailable' "${work}/switches.out"; then
  echo "note: $(cat "${work}/switches.out"): the file has the summary frame and no switches"
else
  dumped="${work}/out/$(basename "${switches}").dump"
  echo "live switches compared: $(grep -c ' switch_out "ringtrace: switched out" bits=[0-7]' "${dumped}") out," \
    "$(grep -c ' switch_in "ringtrace: switched in" bits=[0-7]' "${dumped}") in"
fi
size=$(stat -c %s "${switches}")
head -c $((size * 2 / 3)) "${switches}" >"${work}/switches_cut.rtrace"
compare "${work}/switches_cut.rtrace"

# --- Killed with SIGKILL: with the rings in a file, and without ------------------------
killed="${work}/killed"
for mode in rings plain; do
  "${record}" "${killed}" killed-rich "${mode}" >/dev/null 2>&1
  partials=("${killed}/killed-${mode}.rtrace.partial."????????)
  [[ ${#partials[@]} -eq 1 && -f "${partials[0]}" ]] || { fail "killed-rich ${mode} left no temporary"; continue; }
  compare "${partials[0]}" && fail "ringtrace dump of a killed run exits 0"
  compare "${partials[0]}" --no-rings
done
if [[ -f "${killed}/killed-rings.rtrace.rings" ]]; then
  rings_partial=("${killed}"/killed-rings.rtrace.partial.????????)
  has "${rings_partial[0]}" ' zone_begin "(call site 0x[0-9a-f]*)"$'
  has "${rings_partial[0]}" ' closed_at_stop$'
  has "${rings_partial[0]}" ' 0 zone_end "step" step=[0-9]* closed_at_stop$'  # its marker only in the ring file
  [[ $(lines "${rings_partial[0]}") -gt $(lines "${rings_partial[0]}" --no-rings) ]] \
    || fail "the ring file added no events: $(lines "${rings_partial[0]}") lines, $(lines "${rings_partial[0]}" --no-rings) without"
  # Cut further: the ring file then holds what follows for some threads only.
  size=$(stat -c %s "${rings_partial[0]}")
  for keep in 50 97; do
    head -c $((size * keep / 100)) "${rings_partial[0]}" >"${work}/shorter_${keep}.rtrace"
    cp "${killed}/killed-rings.rtrace.rings" "${work}/shorter_${keep}.rtrace.rings"
    compare "${work}/shorter_${keep}.rtrace"
  done
else
  fail "the killed run left no ring file"
fi

# --- Merged: the live files, the stream (its pid taken: read under a new one), a killed run
plain_partial=("${killed}"/killed-plain.rtrace.partial.????????)
"${tool}" merge "${rich}" "${live}/stream.rtrace" "${live}/drops.rtrace" "${plain_partial[0]}" \
  -o "${work}/merged.rtrace" >/dev/null 2>&1
[[ -f "${work}/merged.rtrace" ]] || fail "ringtrace merge wrote nothing"
compare "${work}/merged.rtrace"
[[ $(cut -d' ' -f2 "${work}/out/merged.rtrace.dump" | sort -u | wc -l) -eq 4 ]] || fail "merged.rtrace: not 4 pids"
has "${work}/merged.rtrace" '^[0-9]* 4194305 '

# --- Allocations (format 2.3): a killed run with its rings in a file, a preloaded C program --
if [[ -n "${memory_rings}" ]]; then
  mem="${work}/memory"; mkdir -p "${mem}"
  "${memory_rings}" "${mem}" >/dev/null 2>&1
  mem_partial=("${mem}"/memory.rtrace.partial.????????)
  if [[ -f "${mem_partial[0]}" ]]; then
    compare "${mem_partial[0]}"
    compare "${mem_partial[0]}" --no-rings
    [[ $(grep -c ' alloc "ringtrace: allocated" ' "${work}/out/$(basename "${mem_partial[0]}").dump") -eq 501 ]] ||
      fail "memory.rtrace: not the 501 allocations (500 in the ring file only)"
    has "${mem_partial[0]}" ' free "ringtrace: freed" bytes=4096$'
  else
    fail "memory_rings left no partial file: $(ls "${mem}")"
  fi
  "${memory_rings}" "${mem}" stream >/dev/null 2>&1 || fail "memory_rings stream exits $?"
  compare "${mem}/whole.rtrace"
  compare "${mem}/stream.rtrace"
  has "${mem}/whole.rtrace" ' free "ringtrace: freed" bytes=0 size_unknown$'
  has "${mem}/stream.rtrace" ' free "ringtrace: freed" bytes=0 size_unknown$'
  has "${mem}/stream.rtrace" ' alloc "ringtrace: allocated" bytes=307$'
  cmp -s <(cut -d' ' -f4- "${work}/out/whole.rtrace.dump") <(cut -d' ' -f4- "${work}/out/stream.rtrace.dump") ||
    fail "stream.rtrace's events differ from whole.rtrace's"
  # The heap's totals too: the free of a block from before the recording stays out of the
  # stream file's live heap as it did where it was recorded.
  # Counts, bytes, the peak and the lines after it alike; the bytes live at the end alike
  # (the stream's file knows them by sizes, not by blocks: it says so).
  totals() { "${tool}" info "$1" | grep -A3 '^memory:' | sed -E 's/; live at the end by the events. sizes: ([^ ]* [KMG]?B) .*/; live \1/;
    s/; still live at the end: .* \(([^)]*)\)$/; live \1/'; }
  totals "${mem}/whole.rtrace" >"${work}/out/whole.memory" || fail "info whole.rtrace: no memory line"
  totals "${mem}/stream.rtrace" >"${work}/out/stream.memory" || fail "info stream.rtrace: no memory line"
  grep -q '^memory: .*; live ' "${work}/out/whole.memory" || fail "info whole.rtrace: $(cat "${work}/out/whole.memory")"
  cmp -s "${work}/out/whole.memory" "${work}/out/stream.memory" ||
    fail "stream.rtrace's memory totals differ from whole.rtrace's: $(cat "${work}/out/stream.memory") / $(cat "${work}/out/whole.memory")"
fi
if [[ -n "${memory_app}" ]]; then
  "${tool}" record --memory -o "${work}/memory_app.rtrace" -- "${memory_app}" >/dev/null 2>&1 ||
    fail "record --memory of memory_app exits $?"
  compare "${work}/memory_app.rtrace"
  has "${work}/memory_app.rtrace" ' alloc "ringtrace: allocated" bytes=12345$'
fi

# --- Format 1 ----------------------------------------------------------------------------
for f in "${fixtures}"/*.rtrace; do compare "${f}"; done

# --- Hand-made files ---------------------------------------------------------------------
"${python}" "${here}/make_synthetic.py" "${work}/synthetic" || fail "make_synthetic.py exits $?"
for f in "${work}"/synthetic/*.rtrace; do compare "${f}"; done
has "${work}/synthetic/synthetic_late.rtrace" ' late$'
has "${work}/synthetic/synthetic_kinds.rtrace" ' message "instant" text="cut" truncated$'
has "${work}/synthetic/synthetic_steps.rtrace" ' 0 zone_end "step" step=9 closed_at_stop$'
has "${work}/synthetic/synthetic_named.rtrace" ' zone_begin "ringtrace: run-time names past the limit"$'
has "${work}/synthetic/synthetic_named.rtrace" ' zone_begin "x*" truncated$'
has "${work}/synthetic/synthetic_steps.rtrace" ' 33 zone_end "step" step=7$'  # format 1's marker
has "${work}/synthetic/synthetic_functions.rtrace" ' zone_begin "demo::run()"$'
# Format 2.3's node frame: rtrace.py reads each process's node id (the frame's, else host:pid).
nodes=$("${python}" - "${rtrace}" "${work}/synthetic/synthetic_node_merged.rtrace" "${work}/synthetic/synthetic_node.rtrace" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("rtrace", sys.argv[1])
rtrace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rtrace)
for path in sys.argv[2:]:
    reader = rtrace.Reader(path, None)
    reader.read(lambda lines: None)
    print(" ".join(s.node_id().decode() for s in reader.sections))
PY
)
[[ "${nodes}" == $'host:1 rank 8\nrank 7' ]] || fail "rtrace.py's node ids: '${nodes}'"
grep -q 'malformed node frame at byte [0-9]' "${work}/out/synthetic_bad_node.rtrace.dump.err" \
  || fail "a malformed node frame: $(cat "${work}/out/synthetic_bad_node.rtrace.dump.err")"
has "${work}/synthetic/synthetic_functions.rtrace" ' zone_begin "libdemo.so+0x400200"$'  # unnamed, its module's file missing
has "${work}/synthetic/synthetic_functions.rtrace" ' zone_begin "0x7f0000001234"$'  # unnamed, in no module
has "${work}/synthetic/synthetic_functions.rtrace" ' zone_end "libdemo.so+0x400abc" closed_at_stop$'
has "${work}/synthetic/synthetic_functions_killed.rtrace" ' zone_begin "libdemo.so+0x400500"$'  # from its ring file
has "${work}/synthetic/synthetic_functions_killed.rtrace" ' zone_begin "0x900000"$'
compare "${work}/synthetic/synthetic_functions_killed.rtrace" --no-rings
has "${work}/synthetic/synthetic_switches.rtrace" ' 11 switch_out "ringtrace: switched out" bits=4 late$'
has "${work}/synthetic/synthetic_switches.rtrace" ' 0 switch_out "ringtrace: switched out" bits=7$'  # a thread seen first in a switches frame
# A switch at the time of its thread's zone begin: after it.
grep -A1 '^1000100 1000 11 zone_begin "zone"$' "${work}/out/synthetic_switches.rtrace.dump" | grep '^1000100 1000 11 switch_out ' >/dev/null \
  || fail "synthetic_switches.rtrace: the switch tied with its thread's zone begin is not right after it"
has "${work}/synthetic/synthetic_switches_merged.rtrace" ' switch_in "ringtrace: switched in" bits=0$'

has "${work}/synthetic/synthetic_flag_other_bits.rtrace" ' zone_begin "zone"$'  # feature bits but bit 0 ignored
# Memory sizes no process allocates (2^47 bytes and more): the file refused as damaged there.
for pair in huge_alloc:9223372036854775808 huge_free:140737488355328; do
  grep -q "^ringtrace dump: .*synthetic_${pair%%:*}.rtrace: a memory record of ${pair#*:} bytes, more than a process can allocate (2^47, x86-64's user address space; chunk at byte [0-9]*): damaged file$" \
    "${work}/out/synthetic_${pair%%:*}.rtrace.dump.err" || fail "${pair%%:*}: $(cat "${work}/out/synthetic_${pair%%:*}.rtrace.dump.err")"
done
has "${work}/synthetic/synthetic_largest_alloc.rtrace" ' alloc "ringtrace: allocated" bytes=140737488355327$'

# --- Inputs that are no regular file: refused before reading, in the same words ------------
inputs="${work}/inputs"
mkdir -p "${inputs}/directory.rtrace"
mkfifo "${inputs}/fifo.rtrace"
cp "${work}/synthetic/synthetic_no_end.rtrace" "${inputs}/rings_fifo.rtrace"
mkfifo "${inputs}/rings_fifo.rtrace.rings"
for f in "${inputs}/missing.rtrace" "${inputs}/directory.rtrace" "${inputs}/fifo.rtrace" "${inputs}/rings_fifo.rtrace"; do
  compare "${f}" && fail "ringtrace dump ${f} exits 0"
done
compare "${inputs}/rings_fifo.rtrace" --no-rings

# --- Cut short and damaged copies ----------------------------------------------------------
size=$(stat -c %s "${rich}")
for keep in 3 40 77; do
  head -c $((size * keep / 100)) "${rich}" >"${work}/rich_cut_${keep}.rtrace"
  compare "${work}/rich_cut_${keep}.rtrace"
done
for at in 100 $((size / 3)) $((size - 40)); do
  cp "${rich}" "${work}/rich_flip_${at}.rtrace"
  printf '\x55' | dd of="${work}/rich_flip_${at}.rtrace" bs=1 seek="${at}" conv=notrunc 2>/dev/null
  compare "${work}/rich_flip_${at}.rtrace"
done
size=$(stat -c %s "${work}/merged.rtrace")
head -c $((size / 2)) "${work}/merged.rtrace" >"${work}/merged_cut.rtrace"
compare "${work}/merged_cut.rtrace"

if ((failures > 0)); then echo "rtrace.py: ${failures} failure(s) in ${compared} comparisons"; exit 1; fi
echo "rtrace.py: all ${compared} comparisons equal"
