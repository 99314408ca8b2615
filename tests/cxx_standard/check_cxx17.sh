#!/usr/bin/env bash
# check_cxx17.sh <include dir> <work dir> <compiler>...: every public header, alone in a
# translation unit, compiled with -std=c++17 fails with one clear error first
# (ringtrace/requires_cxx20.hpp: the #error, then the compiler stops), and compiles with
# -std=c++20 (so the check never fires in C++20 and each header stands alone). The
# (compiler, header) pairs are checked on every core at once, each in a folder of its own.
set -uo pipefail
include_dir="$1"; work="$2"; shift 2
message='ringtrace needs C++20 (-std=c++20)'
rm -rf "${work}"; mkdir -p "${work}"
mapfile -t headers < <(cd "${include_dir}" && find ringtrace -name '*.hpp' -not -path '*/detail/*' | sort)
if ((${#headers[@]} < 10)); then
  echo "FAIL: only ${#headers[@]} public headers found under ${include_dir}"
  exit 1
fi

# check_one <cxx> <header> <folder>: prints FAIL lines; its status is the verdict.
check_one() {
  local cxx="$1" header="$2" dir="$3"
  mkdir -p "${dir}"
  local tu="${dir}/tu.cpp" log="${dir}/out.txt" status=0
  printf '#include <%s>\nint main() { return 0; }\n' "${header}" >"${tu}"
  if "${cxx}" -std=c++17 -I"${include_dir}" -fsyntax-only "${tu}" >"${log}" 2>&1; then
    echo "FAIL: ${cxx} -std=c++17 compiles ${header}"
    return 1
  fi
  local first errors
  first="$(grep -m1 -E '(error|fatal error):' "${log}")"
  errors="$(grep -c -E '(error|fatal error):' "${log}")"
  [[ "${first}" == *"error: "*"${message}"* ]] || { echo "FAIL: ${cxx} -std=c++17 ${header}: first error is: ${first}"; status=1; }
  # The #error and the fatal stop that repeats it: nothing from the code after.
  ((errors == 2)) || { echo "FAIL: ${cxx} -std=c++17 ${header}: ${errors} errors, expected 2"; sed -n 1,12p "${log}"; status=1; }
  "${cxx}" -std=c++20 -Wall -Wextra -Werror -I"${include_dir}" -fsyntax-only "${tu}" >"${log}" 2>&1 \
    || { echo "FAIL: ${cxx} -std=c++20 does not compile ${header} alone"; sed -n 1,12p "${log}"; status=1; }
  return "${status}"
}

jobs="$(nproc)"
running=0; n=0; failures=0
for cxx in "$@"; do
  for header in "${headers[@]}"; do
    check_one "${cxx}" "${header}" "${work}/${n}" >"${work}/${n}.result" 2>&1 &
    n=$((n + 1)); running=$((running + 1))
    if ((running >= jobs)); then
      wait -n || failures=$((failures + 1))
      running=$((running - 1))
    fi
  done
done
while ((running > 0)); do
  wait -n || failures=$((failures + 1))
  running=$((running - 1))
done
cat "${work}"/*.result
if ((failures > 0)); then exit 1; fi
echo "check_cxx17: ${n} header compiles checked (${#headers[@]} headers x $# compilers)"
