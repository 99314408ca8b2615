#!/usr/bin/env bash
# `ringtrace record --memory-stacks` of a program that does not link ringtrace
# (memory_stacks.c): its two call chains, with the bytes it counts itself.
#   - the allocation sites (exact): big_leaf 50 calls of 4 MiB, none leaked; small_leaf
#     200,000 calls of 64 B, all leaked;
#   - the sampled stacks (estimates, one allocation per 64 KiB on average): the big chain
#     big_leaf < big_middle < big_top < main, every block sampled (each is 64 times the
#     mean gap), so its estimate is its bytes to 1%; the small chain
#     small_leaf < small_middle < small_top < main, about 195 samples, its estimate within
#     35% (five standard deviations) of 12,800,000 bytes, all of them leaked.
#   memory_stacks.sh RINGTRACE PROGRAM WORKDIR
set -euo pipefail
tool="$1" program="$2" work="$3"
rm -rf "${work}" && mkdir -p "${work}"
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then
    echo "FAIL: $1"
    echo "  expected: $2"
    echo "  actual:   $3"
    fail=1
  fi
}
"${tool}" record --memory-stacks=64K -o "${work}/s.rtrace" -- "${program}" > "${work}/out.txt"
truth="$(grep '^truth ' "${work}/out.txt")"
big="$(sed -E 's/.*big_bytes=([0-9]+).*/\1/' <<<"${truth}")"
small="$(sed -E 's/.*small_bytes=([0-9]+).*/\1/' <<<"${truth}")"
"${tool}" report --memory "${work}/s.rtrace" > "${work}/report.txt"
cat "${work}/report.txt"
thousands() { python3 -c "print(f'{int(\"$1\"):,}')"; }
# Sites: exact (bytes, calls, peak, leaked, function).
row() { grep -E "^ +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9,]+  $1 " "${work}/report.txt" | head -n 1 | awk '{print $1, $2, $4}' || true; }
check "big_leaf's site: bytes, calls, leaked" "$(thousands "${big}") 50 0" "$(row big_leaf)"
check "small_leaf's site: bytes, calls, leaked" "$(thousands "${small}") 200,000 $(thousands "${small}")" "$(row small_leaf)"
# The whole leak: small_leaf's blocks and whatever the C library keeps (stdout's buffer).
leaked="$(grep -oE '^Leaked: [0-9,]+ bytes in' "${work}/report.txt" | tr -dc 0-9 || true)"
check "the leaked line holds small_leaf's bytes" "yes" "$([[ -n "${leaked}" && "${leaked}" -ge "${small}" ]] && echo yes || echo "no: '${leaked}'")"
# Stacks: each chain's first four frames, innermost first, and its estimate.
python3 - "${work}/report.txt" "${big}" "${small}" <<'PY' || fail=1
import re, sys
text = open(sys.argv[1]).read()
big, small = int(sys.argv[2]), int(sys.argv[3])
part = text.split("Stacks of most bytes allocated:", 1)
if len(part) != 2:
    sys.exit("FAIL: no 'Stacks of most bytes allocated' list")
allocated = part[1].split("Stacks of most bytes leaked:", 1)[0]
units = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
stacks = []
for block in re.split(r"\n(?=  ~)", allocated.strip("\n")):
    m = re.match(r"\s*~([\d.]+) (B|KB|MB|GB) in ~[\d,]+ calls \((\d+) samples?\), ~[\d.]+ \w+ at the peak, ~([\d.]+) (B|KB|MB|GB) leaked:", block)
    if not m:
        continue
    frames = [l.strip() for l in block.splitlines()[1:] if l.strip()]
    stacks.append((float(m.group(1)) * units[m.group(2)], int(m.group(3)), float(m.group(4)) * units[m.group(5)], frames))
def find(chain):
    for s in stacks:
        if s[3][:4] == chain:
            return s
    sys.exit(f"FAIL: no sampled stack {' < '.join(chain)} among {[s[3][:4] for s in stacks]}")
b = find(["big_leaf", "big_middle", "big_top", "main"])
s = find(["small_leaf", "small_middle", "small_top", "main"])
bad = []
if b[1] != 50: bad.append(f"the big chain's samples: {b[1]}, every one of its 50 blocks expected")
if abs(b[0] - big) > 0.01 * big: bad.append(f"the big chain's estimate {b[0]:.0f} B, truth {big}")
if b[2] != 0: bad.append(f"the big chain leaked {b[2]} B, truth 0")
if abs(s[0] - small) > 0.35 * small: bad.append(f"the small chain's estimate {s[0]:.0f} B, truth {small} (+-35%)")
if abs(s[2] - s[0]) > 0.0001 * small + 0.01 * s[0]: bad.append(f"the small chain leaked ~{s[2]:.0f} B of its ~{s[0]:.0f}: all of it expected")
for line in bad: print("FAIL:", line)
sys.exit(1 if bad else 0)
PY
exit "${fail}"
