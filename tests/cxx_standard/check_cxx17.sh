#!/usr/bin/env bash
# check_cxx17.sh <include dir> <work dir> <compiler>...: every public header, alone in a
# translation unit, compiled with -std=c++17 fails with one clear error first
# (ringtrace/requires_cxx20.hpp: the #error, then the compiler stops), and compiles with
# -std=c++20 (so the check never fires in C++20 and each header stands alone).
set -uo pipefail
include_dir="$1"; work="$2"; shift 2
message='ringtrace needs C++20 (-std=c++20)'
rm -rf "${work}"; mkdir -p "${work}"
failures=0; checked=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mapfile -t headers < <(cd "${include_dir}" && find ringtrace -name '*.hpp' -not -path '*/detail/*' | sort)
((${#headers[@]} >= 10)) || fail "only ${#headers[@]} public headers found under ${include_dir}"
for cxx in "$@"; do
  for header in "${headers[@]}"; do
    tu="${work}/tu.cpp"
    printf '#include <%s>\nint main() { return 0; }\n' "${header}" >"${tu}"
    log="${work}/out.txt"
    if "${cxx}" -std=c++17 -I"${include_dir}" -fsyntax-only "${tu}" >"${log}" 2>&1; then
      fail "${cxx} -std=c++17 compiles ${header}"
      continue
    fi
    first="$(grep -m1 -E '(error|fatal error):' "${log}")"
    errors="$(grep -c -E '(error|fatal error):' "${log}")"
    [[ "${first}" == *"error: "*"${message}"* ]] || fail "${cxx} -std=c++17 ${header}: first error is: ${first}"
    # The #error and the fatal stop that repeats it: nothing from the code after.
    ((errors == 2)) || { fail "${cxx} -std=c++17 ${header}: ${errors} errors, expected 2"; sed -n 1,12p "${log}"; }
    "${cxx}" -std=c++20 -Wall -Wextra -Werror -I"${include_dir}" -fsyntax-only "${tu}" >"${log}" 2>&1 \
      || { fail "${cxx} -std=c++20 does not compile ${header} alone"; sed -n 1,12p "${log}"; }
    checked=$((checked + 1))
  done
done
if ((failures > 0)); then exit 1; fi
echo "check_cxx17: ${checked} header compiles checked (${#headers[@]} headers x $# compilers)"
