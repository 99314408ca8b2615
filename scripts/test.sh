#!/usr/bin/env bash
# Builds and runs every test:
#   1. Release build with g++ and -Werror: every test (ctest).
#   2. clang++ with AddressSanitizer and UBSan, -Werror: every test but the client loads.
#   3. g++ with ThreadSanitizer: the concurrency tests.
# RINGTRACE_SKIP_SANITIZERS=1 runs only step 1. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh test
jobs="$(nproc)"
passed=0
failed=0

run_ctest() {  # run_ctest <build dir> <extra env...> -- <ctest args...>
  local dir="$1"; shift
  local env_args=()
  while [[ "$1" != "--" ]]; do env_args+=("$1"); shift; done
  shift
  local log="${dir}/ctest.log"
  local status=0
  (cd "${dir}" && env "${env_args[@]}" ctest --output-on-failure "$@") 2>&1 | tee "${log}" || status=$?
  local line
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "${log}" | tail -1 || true)"
  if [[ -n "${line}" ]]; then
    local total bad
    total="$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"${line}")"
    bad="$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"${line}")"
    passed=$((passed + total - bad))
    failed=$((failed + bad))
  elif [[ ${status} -ne 0 ]]; then
    failed=$((failed + 1))
  fi
}

echo "== release build (g++, -Werror), all tests"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGTRACE_WERROR=ON >/dev/null
cmake --build build/release -j"${jobs}"
run_ctest build/release -- -j1

if [[ "${RINGTRACE_SKIP_SANITIZERS:-0}" != "1" ]]; then
  echo "== clang++ with AddressSanitizer + UBSan (-Werror)"
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DRINGTRACE_SANITIZE=address \
    -DRINGTRACE_WERROR=ON -DRINGTRACE_BUILD_BENCH=OFF >/dev/null
  cmake --build build/asan -j"${jobs}"
  run_ctest build/asan RINGTRACE_TEST_SCALE=0.05 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    -- -j1 -LE "clients|consumer"

  echo "== g++ with ThreadSanitizer: concurrency tests"
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=thread -DRINGTRACE_BUILD_BENCH=OFF \
    -DRINGTRACE_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build/tsan -j"${jobs}" --target ringtrace_concurrency_tests  # only what it runs
  run_ctest build/tsan RINGTRACE_TEST_SCALE=0.05 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 -- -j1 -L concurrency
fi

echo
echo "ringtrace: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
