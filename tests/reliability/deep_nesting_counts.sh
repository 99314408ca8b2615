#!/usr/bin/env bash
# deep_nesting_counts.sh <deep_nesting_counts binary>: every exporter and stream processor
# stays linear in the nesting depth, counted: callgrind counts the instructions each one
# executes replaying depth 5,000 and depth 20,000 of nested zones (deep_nesting_counts.cpp),
# the same numbers on every x86-64 machine and under any load. Four times the depth must
# cost less than nine times the instructions (linear: about 4; n log n a little more;
# quadratic: 16; the quadratic exporters this was written against took 15 s to minutes
# at depth 200,000).
set -uo pipefail
binary="$1"
command -v valgrind >/dev/null || { echo "deep_nesting_counts: valgrind is needed (scripts/debian-packages.txt)"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
(cd "${work}" && valgrind --tool=callgrind --callgrind-out-file="${work}/cg.out" "${binary}") >"${work}/log" 2>&1 \
  || { tail -20 "${work}/log"; echo "FAIL: the replays under callgrind exit non-zero"; exit 1; }
python3 - "${work}" <<'PY'
import glob, re, sys
made = re.search(r"deep_nesting_counts: (\d+) cases, 4 shapes", open(sys.argv[1] + "/log").read())
expected = 4 * int(made.group(1)) if made else -1
counts = {}
for path in glob.glob(sys.argv[1] + "/cg.out*"):
    text = open(path, errors="replace").read()
    desc = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.M)
    total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if desc and total:
        case, shape, depth = desc.group(1).rsplit(" ", 2)
        counts[(case, shape, int(depth))] = int(total.group(1))
pairs = sorted({(case, shape) for case, shape, _ in counts})
if len(pairs) != expected or expected < 4 * 12:
    print(f"FAIL: {len(pairs)} exporter and shape pairs counted, expected {expected} (12 or more cases, 4 shapes)")
    sys.exit(1)
bad = 0
for case, shape in pairs:
    small, large = counts.get((case, shape, 5000)), counts.get((case, shape, 20000))
    if not small or not large:
        print(f"FAIL: {case} {shape}: a depth was not counted")
        bad += 1
        continue
    ratio = large / small
    verdict = "ok" if ratio < 9 else "FAIL"
    bad += verdict != "ok"
    print(f"{verdict:4} {case:28} {shape:16} {small:>14,} -> {large:>14,} instructions: x{ratio:.2f}")
sys.exit(1 if bad else 0)
PY
