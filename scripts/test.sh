#!/usr/bin/env bash
# Builds and runs every test:
#   1. Release build with g++ and -Werror: every test (ctest).
#   2. clang++ with AddressSanitizer and UBSan, -Werror: every test but the client loads.
#   3. g++ with ThreadSanitizer: the concurrency tests.
# RINGTRACE_SKIP_SANITIZERS=1 runs only step 1. Ends with one summary line, skips counted
# apart from passes: a test skips only where the machine refuses what it needs, and each
# skipped test is listed with the reason it printed (ctest shows a skipped test's output
# nowhere else).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh test
jobs="$(nproc)"
passed=0
failed=0
skipped=0

# skipped_tests <console log> <LastTest.log>: one line per test ctest did not run (its
# "did not run" list: skipped by GTEST_SKIP or SKIP_RETURN_CODE, or disabled), with the
# first line of its output that says why.
skipped_tests() {
  python3 - "$1" "$2" <<'PY'
import re, sys
console, details = (open(p, errors="replace").read() for p in sys.argv[1:3])
names = []
if "The following tests did not run:" in console:
    for line in console.split("The following tests did not run:", 1)[1].splitlines()[1:]:
        m = re.match(r"\s+\d+ - (.+) \((Skipped|Disabled)\)$", line)
        if not m:
            break
        names.append(m.group(1))
blocks = {}
for block in re.split(r"\n(?=\d+/\d+ Testing: )", details):
    m = re.match(r"\d+/\d+ Testing: (.+)", block)
    if m:
        blocks[m.group(1).strip()] = block
for name in names:
    output = blocks.get(name, "").split("<end of output>")[0]
    lines = output.split("Output:\n", 1)[-1].splitlines()
    why = "(no reason printed)"
    for i, line in enumerate(lines):
        if re.search(r": Skipped$", line) and i + 1 < len(lines):
            why = lines[i + 1].strip()
            break
        if re.match(r"(SKIPPED|perf_event_open refused|.*skipped)", line, re.I) and "[  SKIPPED ]" not in line:
            why = line.strip()
            break
    print(f"skipped: {name}: {why}")
PY
}

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
    local total bad skips
    total="$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"${line}")"
    bad="$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"${line}")"
    skipped_tests "${log}" "${dir}/Testing/Temporary/LastTest.log" | tee "${dir}/ctest.skipped"
    skips="$(wc -l <"${dir}/ctest.skipped")"
    # ctest counts a skipped test among those passed.
    passed=$((passed + total - bad - skips))
    failed=$((failed + bad))
    skipped=$((skipped + skips))
  elif [[ ${status} -ne 0 ]]; then
    failed=$((failed + 1))
  fi
}

echo "== release build (g++, -Werror), all tests"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGTRACE_WERROR=ON >/dev/null
cmake --build build/release -j"${jobs}"
run_ctest build/release -- -j"${jobs}"

if [[ "${RINGTRACE_SKIP_SANITIZERS:-0}" != "1" ]]; then
  echo "== clang++ with AddressSanitizer + UBSan (-Werror)"
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DRINGTRACE_SANITIZE=address \
    -DRINGTRACE_WERROR=ON -DRINGTRACE_BUILD_BENCH=OFF >/dev/null
  cmake --build build/asan -j"${jobs}"
  run_ctest build/asan RINGTRACE_TEST_SCALE=0.05 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    -- -j"${jobs}" -LE "clients|consumer"

  echo "== g++ with ThreadSanitizer: concurrency tests"
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=thread -DRINGTRACE_BUILD_BENCH=OFF \
    -DRINGTRACE_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build/tsan -j"${jobs}" --target ringtrace_concurrency_tests  # only what it runs
  run_ctest build/tsan RINGTRACE_TEST_SCALE=0.05 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 -- -j"${jobs}" -L concurrency
fi

echo
echo "ringtrace: ${passed} passed, ${failed} failed, ${skipped} skipped"
[[ ${failed} -eq 0 ]]
