#!/usr/bin/env bash
# own_code_test.sh <include dir> <library> <work dir> <compiler>...: ringtrace's own code
# is never instrumented in a program built with -finstrument-functions. own_code.cpp
# (every installed public header, every macro, in a session and without one) is built by
# each compiler at -O0 and -O2 with the flags docs/functions.md gives (g++:
# -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include, which
# leaves ringtrace's headers in, as any install outside /usr/include; clang:
# -finstrument-functions -finstrument-functions-after-inlining), against <library> (and
# Google Benchmark, for ringtrace/benchmark.hpp, when pkg-config finds it).
# Two checks per build, each failing on any function of namespace ringtrace (its mangled
# name, lambdas and thunks included) but the compiler's own constructors, destructors and
# assignments of ringtrace's aggregates (own_code.cpp lists them and asserts that each is
# one: they cannot carry the attribute), which are printed:
#   - run: the functions the program's hooks saw entered, named by the symbol table
#     (inlined ones too: g++ passes an inlined function's own address);
#   - objdump: every function whose address is loaded by code that calls the entry hook
#     (the function itself, or one inlined into it: g++ calls an inlined function's hooks
#     from the outer function), run or not.
# Each build must show the program's own functions in both, or the check proved nothing.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
include="$1"
library="$2"
work="$3"
shift 3
mkdir -p "${work}"
libs=(-lz -ldl $(pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf) -pthread)
[[ "${library}" == *.so ]] && libs+=("-Wl,-rpath,$(dirname "${library}")")
defines=()
if pkg-config --exists benchmark 2>/dev/null; then
  defines=(-DOWN_CODE_BENCHMARK=1)
  libs+=($(pkg-config --libs benchmark))
fi
# Itanium names of namespace ringtrace: _ZN9ringtrace..., const/volatile/ref-qualified
# members (_ZNK9ringtrace...), local entities and lambdas (_ZZN9ringtrace...), thunks.
ringtrace_re='^_Z(T[hv][0-9n_]*_)?Z?N[rVKRO]*9ringtrace'
own_re='^_ZN8own_code11every_macro'
# The aggregates' members, demangled: "ringtrace::T::T(", "ringtrace::T::~T(",
# "ringtrace::T::operator=(".
# A nested type (Outer::Inner) is named by its last part in its members.
aggregate_members="$(sed -n 's/^OWN_CODE_AGGREGATE(\([A-Za-z:]*\))$/\1/p' "${here}/own_code.cpp" |
  awk '{ n = split($1, part, "::"); printf "%s^ringtrace::%s::(~?%s|operator=)\\(", (NR > 1 ? "|" : ""), $1, part[n] }')"
if [[ -z "${aggregate_members}" ]]; then
  echo "FAIL: no OWN_CODE_AGGREGATE lines in own_code.cpp"
  exit 1
fi
# The names (mangled, one a line, in file $1) of namespace ringtrace, but the aggregates'
# members; and those members, demangled, without their parameters.
ringtrace_functions() {
  grep -E "${ringtrace_re}" "$1" | while read -r name; do
    c++filt "${name}" | grep -qE "${aggregate_members}" || echo "${name}"
  done
}
aggregates_instrumented() {
  grep -E "${ringtrace_re}" "$1" | c++filt | grep -E "${aggregate_members}" | sed 's/(.*//' | sort -u | paste -sd' '
}
status=0
builds=0
for cxx in "$@"; do
  if ! command -v "${cxx}" >/dev/null; then
    echo "FAIL: ${cxx}: not found"
    status=1
    continue
  fi
  if "${cxx}" --version | grep -i clang >/dev/null; then
    variants=("-O0 -finstrument-functions -finstrument-functions-after-inlining"
              "-O2 -finstrument-functions -finstrument-functions-after-inlining")
  else
    variants=("-O0 -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include"
              "-O2 -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include")
  fi
  for flags in "${variants[@]}"; do
    builds=$((builds + 1))
    what="$(basename "${cxx}") ${flags}"
    bin="${work}/own_code_${builds}"
    # shellcheck disable=SC2086  # the flags are words
    if ! "${cxx}" -std=c++20 ${flags} "${defines[@]}" -I"${include}" "${here}/own_code.cpp" -o "${bin}" \
        "${library}" "${libs[@]}" 2>"${bin}.log"; then
      echo "FAIL: ${what}: does not build"
      head -20 "${bin}.log"
      status=1
      continue
    fi
    if ! (cd "${work}" && "${bin}" >"${bin}.entered" 2>"${bin}.log"); then
      echo "FAIL: ${what}: the program failed"
      cat "${bin}.log"
      status=1
      continue
    fi
    # Functions (text symbols) by address; the program printed each function it entered
    # as its distance from the entry hook.
    nm --defined-only "${bin}" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $1, $3 }' >"${bin}.symbols"
    anchor="$(awk '$2 == "__cyg_profile_func_enter" { print $1 }' "${bin}.symbols")"
    while read -r offset; do
      printf '%016x\n' $((16#${anchor} + offset))
    done <"${bin}.entered" |
      awk 'NR == FNR { name[$1] = $2; next } { print ($1 in name) ? name[$1] : "unnamed:" $1 }' "${bin}.symbols" - |
      sort -u >"${bin}.names"
    # Every function whose address (`lea ...(%rip)`, annotated `# addr <name>`) is loaded
    # in a function that calls the entry hook: its own, or that of one inlined into it.
    objdump -d --no-show-raw-insn "${bin}" |
      awk 'function flush() { if (hooked) printf "%s", refs; refs = ""; hooked = 0 }
           /^[0-9a-f]+ <.*>:$/ { flush() }
           /(call|jmp) .*<__cyg_profile_func_enter[^>]*>/ { hooked = 1 }
           / # [0-9a-f]+ <[^>]+>$/ { s = $NF; gsub(/^<|>$/, "", s); sub(/\+0x[0-9a-f]+$/, "", s); refs = refs s "\n" }
           END { flush() }' | sort -u |
      awk 'NR == FNR { fn[$2] = 1; next } $1 in fn' "${bin}.symbols" - >"${bin}.hooked"
    entered="$(ringtrace_functions "${bin}.names")"
    hooked="$(ringtrace_functions "${bin}.hooked")"
    unnamed="$(grep '^unnamed:' "${bin}.names")"
    if [[ -n "${entered}" || -n "${hooked}" || -n "${unnamed}" ]]; then
      status=1
      echo "FAIL: ${what}: ringtrace's functions instrumented"
      [[ -n "${entered}" ]] && { echo "  entered at run time:"; c++filt <<<"${entered}" | sed 's/^/    /'; }
      [[ -n "${hooked}" ]] && { echo "  with hooks in the code:"; c++filt <<<"${hooked}" | sed 's/^/    /'; }
      [[ -n "${unnamed}" ]] && { echo "  addresses in no symbol:"; sed 's/^/    /' <<<"${unnamed}"; }
    elif ! grep -qE "${own_re}" "${bin}.names" || ! grep -qE "${own_re}" "${bin}.hooked"; then
      status=1
      echo "FAIL: ${what}: own_code::every_macro not seen instrumented" \
           "(entered: $(wc -l <"${bin}.names"), with hooks: $(wc -l <"${bin}.hooked"))"
    else
      echo "ok: ${what}: $(wc -l <"${bin}.names") functions entered, $(wc -l <"${bin}.hooked") with hooks," \
           "none of ringtrace's"
      allowed="$(aggregates_instrumented "${bin}.hooked")"
      [[ -n "${allowed}" ]] && echo "  its aggregates' implicit members, allowed: ${allowed}"
    fi
  done
done
if [[ ${builds} -eq 0 ]]; then
  echo "FAIL: no compiler"
  status=1
fi
exit "${status}"
