#!/usr/bin/env bash
# zone_counts.sh [build dir] [iterations]
# Instructions (Ir) and data writes (Dw) that one enabled RINGTRACE_ZONE executes, begin
# and end together, counted exactly by valgrind's callgrind: a zone in a loop, net of the
# same loop without it, built with g++ and with clang++ (-O2) against the library of a
# Release build (default build/release). Prints the counts, then the loop's disassembly.
# Counts are the same on every x86-64 machine for the same compiler and library.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
build="$(cd "${1:-${root}/build/release}" && pwd)"
n="${2:-100000}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
command -v valgrind >/dev/null || { echo "zone_counts: valgrind is needed (apt-get install valgrind)"; exit 1; }
[[ -f "${build}/libringtrace.a" ]] || { echo "zone_counts: no ${build}/libringtrace.a (build Release first)"; exit 1; }
for cxx in g++ clang++; do
  command -v "${cxx}" >/dev/null || { echo "${cxx}: not installed, skipped"; continue; }
  bin="${work}/zone_loop_${cxx}"
  "${cxx}" -std=c++20 -O2 -I"${root}/include" "${here}/zone_loop.cpp" -o "${bin}" "${build}/libringtrace.a" -lz -ldl -pthread \
    $(pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf)  # the symbolizer in the library
  out="${work}/callgrind.${cxx}"
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="${out}" \
    --toggle-collect=loop_empty --toggle-collect=loop_zone "${bin}" "${n}" >/dev/null 2>&1
  callgrind_annotate --threshold=100 --show=Ir,Dw "${out}" 2>/dev/null |
    awk -v n="${n}" -v cxx="${cxx}" '
      /loop_empty|loop_zone/ {
        ir = $1; dw = $3; gsub(",", "", ir); gsub(",", "", dw)
        if ($0 ~ /loop_empty/) { eir += ir; edw += dw } else { zir += ir; zdw += dw }
      }
      END { printf "%-8s per zone (begin + end), net of the empty loop: %.2f instructions, %.2f data writes\n",
                   cxx, (zir - eir) / n, (zdw - edw) / n }'
  echo "--- ${cxx}: loop_zone"
  objdump -d --no-show-raw-insn "${bin}" | awk '/<loop_zone>:/,/^$/' | sed -n '1,80p'
done
