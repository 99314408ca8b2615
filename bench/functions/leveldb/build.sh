#!/usr/bin/env bash
# Builds the five db_bench binaries that run.sh measures (issue 35) from a leveldb checkout
# of yours (LEVELDB_SRC: fetched by you, never committed here; leveldb 1.23, 78a352f, is
# the one measured in docs/performance.md). Each build is the same leveldb, built by
# leveldb's own CMake into libleveldb.a (-DLEVELDB_BUILD_TESTS=OFF
# -DLEVELDB_BUILD_BENCHMARKS=OFF: leveldb's benchmark target needs its third_party/benchmark
# submodule, which db_bench does not use), and db_bench compiled beside it from
# benchmarks/db_bench.cc, util/histogram.cc and util/testutil.cc with the same flags and
# leveldb's own -fno-exceptions -fno-rtti -DLEVELDB_PLATFORM_POSIX=1 (their gmock/gtest
# includes come from libgmock-dev and libgtest-dev; nothing of them is linked). C++17 for
# both (-DCMAKE_CXX_STANDARD=17, -std=c++17): leveldb's CMakeLists.txt asks for C++11 when
# not told, but its code needs C++17 since 2025 (std::is_standard_layout_v).
# Every build is -O2 -g -DNDEBUG (no CMAKE_BUILD_TYPE, so nothing else), plus:
#   plain     g++, nothing more
#   pg        g++ -pg (for `uftrace record`)
#   cyg       g++ -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include
#             (docs/functions.md, "Building"), nothing linked (for `uftrace record`)
#   rt-gcc    g++, the same flags, linked with `pkg-config --libs ringtrace-functions`
#   rt-clang  clang++ -finstrument-functions -finstrument-functions-after-inlining
#             (docs/functions.md), linked the same way
# ringtrace is linked the way a user links it: RINGTRACE_BUILD (default build/release of
# this repository) installed with `cmake --install RINGTRACE_BUILD --prefix
# BUILD_DIR/ringtrace`, then `pkg-config --cflags --libs ringtrace-functions` from that
# prefix; or RINGTRACE_PREFIX, an installed ringtrace, used as it is.
#
#   LEVELDB_SRC=/path/to/leveldb bash bench/functions/leveldb/build.sh
#
# Prints, on standard output and only when all five are built, the assignments run.sh
# takes (DB_BENCH_PLAIN=... and so on, and RINGTRACE=, the installed prefix's tool); the
# rest (progress, timings, errors) goes to standard error. BUILD_DIR/NAME/ holds each
# build: leveldb/ (leveldb's CMake build), db_bench, build.txt (compiler, flags, link
# line) and the logs of each step; BUILD_DIR/ringtrace/ the ringtrace installed for them
# (replaced at each run).
#
# Environment:
#   LEVELDB_SRC       the leveldb checkout (required)
#   BUILD_DIR         where to build (default: a new /tmp/ringtrace-leveldb-build.XXXXXX,
#                     said on standard error); an existing one is built again in place
#                     (make rebuilds only what changed, db_bench is compiled again)
#   RINGTRACE_BUILD   the ringtrace build tree to install (default build/release)
#   RINGTRACE_PREFIX  an installed ringtrace instead (its lib/pkgconfig is used)
#   JOBS=2            make's -j for leveldb
#   CXX_GCC=g++ CC_GCC=gcc CXX_CLANG=clang++ CC_CLANG=clang   the compilers
# Needs g++/gcc, clang++/clang, cmake, make, pkg-config, libgmock-dev and libgtest-dev;
# checked (all of them) before anything is built. uftrace is needed only by run.sh.
set -euo pipefail

die() { echo "leveldb/build.sh: $*" >&2; exit 1; }
say() { echo "leveldb/build.sh: $*" >&2; }

if (($#)); then
  case $1 in
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "no arguments (the leveldb checkout comes from LEVELDB_SRC; see --help)" ;;
  esac
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
jobs=${JOBS:-2}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "JOBS=$jobs: a positive integer, please"

# The checkout.
src=${LEVELDB_SRC:-}
[[ -n "$src" ]] || die "LEVELDB_SRC not set: give a leveldb checkout (google/leveldb on GitHub; see --help)"
[[ -d "$src" ]] || die "LEVELDB_SRC=$src: no such directory"
src=$(cd "$src" && pwd)
missing=()
for file in CMakeLists.txt benchmarks/db_bench.cc util/histogram.cc util/testutil.cc include/leveldb/db.h port/port_config.h.in; do
  [[ -f "$src/$file" ]] || missing+=("$file")
done
((${#missing[@]} == 0)) || die "LEVELDB_SRC=$src is not a leveldb checkout: no ${missing[*]}"
grep -q 'project(leveldb' "$src/CMakeLists.txt" || die "LEVELDB_SRC=$src: its CMakeLists.txt is not leveldb's"

# The tools, every missing one named before anything is built.
cxx_gcc=${CXX_GCC:-g++}
cc_gcc=${CC_GCC:-gcc}
cxx_clang=${CXX_CLANG:-clang++}
cc_clang=${CC_CLANG:-clang}
missing=()
for tool in "$cxx_gcc" "$cc_gcc" "$cxx_clang" "$cc_clang" cmake make pkg-config; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) ||
  die "not found: ${missing[*]} (Debian: apt-get install g++ clang cmake make pkg-config)"
if ! echo '#include <gmock/gmock.h>
#include <gtest/gtest.h>' | "$cxx_gcc" -std=c++17 -E -x c++ - >/dev/null 2>&1; then
  die "$cxx_gcc finds no <gmock/gmock.h> or <gtest/gtest.h> (leveldb's util/testutil.h includes them): apt-get install libgmock-dev libgtest-dev"
fi

# The build directory.
if [[ -n "${BUILD_DIR:-}" ]]; then
  out=$BUILD_DIR
  mkdir -p "$out" || die "BUILD_DIR=$out: cannot create it"
else
  out=$(mktemp -d /tmp/ringtrace-leveldb-build.XXXXXX)
fi
out=$(cd "$out" && pwd)
say "building into $out"

# ringtrace, installed as a user would, and its pkg-config flags.
if [[ -n "${RINGTRACE_PREFIX:-}" ]]; then
  prefix=$RINGTRACE_PREFIX
  [[ -d "$prefix" ]] || die "RINGTRACE_PREFIX=$prefix: no such directory"
  prefix=$(cd "$prefix" && pwd)
else
  rt_build=${RINGTRACE_BUILD:-build/release}
  [[ "$rt_build" = /* ]] || rt_build="$repo/$rt_build"
  [[ -f "$rt_build/cmake_install.cmake" && -f "$rt_build/CMakeCache.txt" ]] ||
    die "RINGTRACE_BUILD=$rt_build: no ringtrace build there (build it: cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release && cmake --build build/release -j2; or set RINGTRACE_PREFIX to an installed ringtrace)"
  prefix=$out/ringtrace
  rm -rf "$prefix"
  cmake --install "$rt_build" --prefix "$prefix" >"$out/ringtrace-install.log" 2>&1 ||
    die "cmake --install $rt_build --prefix $prefix failed (is the build complete? cmake --build it first): see $out/ringtrace-install.log"
  say "ringtrace: $rt_build installed into $prefix"
fi
pc=
for dir in "$prefix"/lib/pkgconfig "$prefix"/lib64/pkgconfig "$prefix"/lib/*/pkgconfig "$prefix"/share/pkgconfig; do
  [[ -f "$dir/ringtrace-functions.pc" ]] && { pc=$dir; break; }
done
[[ -n "$pc" ]] || die "no ringtrace-functions.pc under $prefix (lib/pkgconfig): not a ringtrace install?"
rt_flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs ringtrace-functions 2>&1) ||
  die "pkg-config --cflags --libs ringtrace-functions (PKG_CONFIG_PATH=$pc) failed: $rt_flags"
read -r -a rt_flag_array <<<"$rt_flags"
rt_tool=
[[ -x "$prefix/bin/ringtrace" ]] && rt_tool=$prefix/bin/ringtrace

base_flags=(-O2 -g -DNDEBUG)
gcc_flags=(-finstrument-functions -finstrument-functions-exclude-file-list=/usr/include)
clang_flags=(-finstrument-functions -finstrument-functions-after-inlining)
leveldb_commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')

# build NAME CC CXX LINK_RINGTRACE(0|1) FLAGS...
declare -A seconds_of
build() {
  local name=$1 cc=$2 cxx=$3 link_rt=$4
  shift 4
  local flags=("${base_flags[@]}" "$@")
  local dir=$out/$name
  local lib_dir=$dir/leveldb
  local start
  start=$(date +%s)
  mkdir -p "$dir"
  rm -f "$dir/db_bench"
  say "$name: leveldb with $cxx ${flags[*]} ..."
  cmake -S "$src" -B "$lib_dir" -DCMAKE_BUILD_TYPE= \
    -DCMAKE_C_COMPILER="$(command -v "$cc")" -DCMAKE_CXX_COMPILER="$(command -v "$cxx")" \
    -DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_CXX_FLAGS="${flags[*]}" \
    -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
    -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=OFF -DLEVELDB_INSTALL=OFF \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$dir/cmake.log" 2>&1 ||
    die "$name: leveldb's cmake failed: see $dir/cmake.log: $(tail -n 5 "$dir/cmake.log")"
  cmake --build "$lib_dir" --target leveldb -j "$jobs" >"$dir/make.log" 2>&1 ||
    die "$name: building libleveldb.a failed: see $dir/make.log: $(grep -m 3 -i 'error' "$dir/make.log")"
  [[ -f "$lib_dir/libleveldb.a" ]] || die "$name: no $lib_dir/libleveldb.a after the build: see $dir/make.log"
  local compile=("$cxx" -std=c++17 "${flags[@]}" -fno-exceptions -fno-rtti -DLEVELDB_PLATFORM_POSIX=1
    -I"$src" -I"$src/include" -I"$lib_dir/include")
  local objects=() file object
  : >"$dir/db_bench.log"
  for file in benchmarks/db_bench.cc util/histogram.cc util/testutil.cc; do
    object=$dir/$(basename "$file" .cc).o
    echo "${compile[*]} -c $src/$file -o $object" >>"$dir/db_bench.log"
    "${compile[@]}" -c "$src/$file" -o "$object" >>"$dir/db_bench.log" 2>&1 ||
      die "$name: compiling $file failed: see $dir/db_bench.log: $(grep -m 3 'error' "$dir/db_bench.log")"
    objects+=("$object")
  done
  local link=("$cxx" "${flags[@]}" "${objects[@]}" "$lib_dir/libleveldb.a")
  ((link_rt)) && link+=("${rt_flag_array[@]}")
  link+=(-pthread -o "$dir/db_bench")
  echo "${link[*]}" >>"$dir/db_bench.log"
  "${link[@]}" >>"$dir/db_bench.log" 2>&1 || die "$name: linking db_bench failed: see $dir/db_bench.log: $(tail -n 3 "$dir/db_bench.log")"
  {
    echo "leveldb: $src at $leveldb_commit"
    echo "compiler: $("$cxx" --version | sed -n 1p)"
    echo "flags: ${flags[*]}"
    echo "libleveldb.a, a compile command: $(grep -m 1 '"command"' "$lib_dir/compile_commands.json" | sed 's/^ *"command": *"//; s/",$//')"
    echo "db_bench: ${compile[*]}"
    echo "link: ${link[*]}"
  } >"$dir/build.txt"
  seconds_of[$name]=$(($(date +%s) - start))
  say "$name: $dir/db_bench (${seconds_of[$name]} s)"
}

build plain "$cc_gcc" "$cxx_gcc" 0
build pg "$cc_gcc" "$cxx_gcc" 0 -pg
build cyg "$cc_gcc" "$cxx_gcc" 0 "${gcc_flags[@]}"
build rt-gcc "$cc_gcc" "$cxx_gcc" 1 "${gcc_flags[@]}"
build rt-clang "$cc_clang" "$cxx_clang" 1 "${clang_flags[@]}"

say "built (seconds): plain ${seconds_of[plain]}, pg ${seconds_of[pg]}, cyg ${seconds_of[cyg]}, rt-gcc ${seconds_of[rt-gcc]}, rt-clang ${seconds_of[rt-clang]}; leveldb $leveldb_commit; ringtrace from $prefix"
printf 'DB_BENCH_PLAIN=%q\n' "$out/plain/db_bench"
printf 'DB_BENCH_PG=%q\n' "$out/pg/db_bench"
printf 'DB_BENCH_CYG=%q\n' "$out/cyg/db_bench"
printf 'DB_BENCH_RT_GCC=%q\n' "$out/rt-gcc/db_bench"
printf 'DB_BENCH_RT_CLANG=%q\n' "$out/rt-clang/db_bench"
[[ -n "$rt_tool" ]] && printf 'RINGTRACE=%q\n' "$rt_tool"
exit 0
