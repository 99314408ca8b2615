#!/usr/bin/env bash
# leveldb_scripts_test.sh <source dir> <work dir>: the leveldb db_bench scripts
# (bench/functions/leveldb/build.sh and run.sh) say what is wrong before they build or run
# anything: --help, an argument, LEVELDB_SRC unset, missing or not a leveldb checkout,
# LEVELDB_SRC given with DB_BENCH_*. Needs no leveldb, compiler or uftrace.
set -uo pipefail
source_dir="$1"
work="$2"
build="${source_dir}/bench/functions/leveldb/build.sh"
run="${source_dir}/bench/functions/leveldb/run.sh"
rm -rf "${work}"
mkdir -p "${work}/not-leveldb"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect NAME STATUS TEXT command...: the command exits with STATUS and its standard error
# (or output, for --help) holds TEXT; nothing is printed on standard output on a failure.
expect() {
  local name=$1 status=$2 text=$3
  shift 3
  local rc=0
  "$@" >"${work}/out.txt" 2>"${work}/err.txt" || rc=$?
  if ((rc != status)); then
    fail "${name}: exit ${rc}, expected ${status}; stderr: $(head -c 500 "${work}/err.txt")"
  elif ! grep -qF -- "${text}" "${work}/out.txt" "${work}/err.txt"; then
    fail "${name}: no '${text}' in its output: $(head -c 500 "${work}/out.txt" "${work}/err.txt")"
  elif ((status != 0)) && [[ -s "${work}/out.txt" ]]; then
    fail "${name}: printed on standard output while failing: $(head -c 300 "${work}/out.txt")"
  else
    echo "ok: ${name}"
  fi
}

unset LEVELDB_SRC DB_BENCH_PLAIN DB_BENCH_PG DB_BENCH_CYG DB_BENCH_RT_GCC DB_BENCH_RT_CLANG BUILD_DIR
expect "build.sh --help" 0 "LEVELDB_SRC" bash "${build}" --help
expect "build.sh --help names the variants" 0 "rt-clang" bash "${build}" --help
expect "build.sh argument" 1 "no arguments" bash "${build}" somewhere
expect "build.sh without LEVELDB_SRC" 1 "LEVELDB_SRC not set" bash "${build}"
expect "build.sh missing checkout" 1 "${work}/missing: no such directory" \
  env LEVELDB_SRC="${work}/missing" bash "${build}"
expect "build.sh not a checkout" 1 "is not a leveldb checkout: no CMakeLists.txt benchmarks/db_bench.cc" \
  env LEVELDB_SRC="${work}/not-leveldb" bash "${build}"
expect "build.sh bad JOBS" 1 "JOBS=x" env JOBS=x LEVELDB_SRC="${work}/not-leveldb" bash "${build}"
expect "run.sh --help" 0 "LEVELDB_SRC" bash "${run}" --help
expect "run.sh nothing given" 1 "set LEVELDB_SRC" bash "${run}"
expect "run.sh LEVELDB_SRC and DB_BENCH_PG" 1 "LEVELDB_SRC and DB_BENCH_PG both set" \
  env LEVELDB_SRC="${work}/not-leveldb" DB_BENCH_PG=/bin/true bash "${run}"
expect "run.sh missing checkout, said by build.sh" 1 "${work}/missing: no such directory" \
  env LEVELDB_SRC="${work}/missing" bash "${run}"
expect "run.sh stops when build.sh fails" 1 "build.sh failed" env LEVELDB_SRC="${work}/missing" bash "${run}"
if ((failures)); then
  echo "${failures} check(s) failed"
  exit 1
fi
echo "all checks passed"
