#!/usr/bin/env bash
# run_consumer.sh <mode> <source dir> <build dir> <work dir>
#   install, build-tree, subdirectory, shared: the CMake ways (app/CMakeLists.txt).
#   pkg-config: installed with a prefix, app/ built by plain g++ with `pkg-config --cflags --libs ringtrace`
#           (and its function hooks with `... ringtrace-functions`, its allocation functions with
#           `... ringtrace-memory`, and the installed tool's `record --memory`).
#   readme: every ```cpp block of README.md and docs/guide.md built the same way; a block with main() is run
#           (in an empty folder), one without is compiled as a translation unit.
#   benchmark-install, benchmark-build-tree, benchmark-pkg-config: a Google Benchmark
#           suite (bench_app/suite.cpp) built against the component `benchmark`
#           (find_package(ringtrace COMPONENTS benchmark), installed or build tree) or
#           with `pkg-config --cflags --libs ringtrace-benchmark`, run with a small
#           --benchmark_min_time and --ringtrace_out: a trace per benchmark, under 64 MB.
#   benchmark-big: bench_app/big_suite.cpp against the installed package: each benchmark
#           exactly 2,000,000 iterations (a count the suite sets, not what a time allows),
#           each trace under 64 MB, in Chrome and Perfetto format, and in trace_processor
#           exactly the zones it says it kept.
set -euo pipefail
mode="$1"; source_dir="$2"; build_dir="$3"; work="$4/${mode}"
rm -rf "${work}"
mkdir -p "${work}"
case "${mode}" in
  install)
    cmake --install "${build_dir}" --prefix "${work}/prefix" >/dev/null
    cmake -S "${source_dir}/tests/consumer/app" -B "${work}/build" -DCMAKE_PREFIX_PATH="${work}/prefix" >/dev/null ;;
  build-tree)
    cmake -S "${source_dir}/tests/consumer/app" -B "${work}/build" -Dringtrace_DIR="${build_dir}" >/dev/null ;;
  subdirectory)
    cmake -S "${source_dir}/tests/consumer/app" -B "${work}/build" -DRINGTRACE_CONSUMER_MODE=subdirectory \
      -DRINGTRACE_SOURCE_DIR="${source_dir}" >/dev/null ;;
  shared)  # libringtrace.so, linked by the program and by the plugin it opens
    cmake -S "${source_dir}/tests/consumer/app" -B "${work}/build" -DRINGTRACE_CONSUMER_MODE=subdirectory \
      -DRINGTRACE_SOURCE_DIR="${source_dir}" -DRINGTRACE_SHARED=ON >/dev/null ;;
  pkg-config|readme|benchmark-pkg-config)
    cmake --install "${build_dir}" --prefix "${work}/prefix" >/dev/null
    export PKG_CONFIG_PATH="$(dirname "$(find "${work}/prefix" -name ringtrace.pc)")"
    package=ringtrace
    [[ "${mode}" == benchmark-pkg-config ]] && package=ringtrace-benchmark
    # As a shell user writes it: g++ ... $(pkg-config --cflags --libs ringtrace)
    read -r -a flags <<<"$(pkg-config --cflags --libs "${package}")"
    cxx="${CXX:-g++}" ;;
  benchmark-install|benchmark-big)
    cmake --install "${build_dir}" --prefix "${work}/prefix" >/dev/null
    cmake -S "${source_dir}/tests/consumer/bench_app" -B "${work}/build" -DCMAKE_PREFIX_PATH="${work}/prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null ;;
  benchmark-build-tree)
    cmake -S "${source_dir}/tests/consumer/bench_app" -B "${work}/build" -Dringtrace_DIR="${build_dir}" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null ;;
esac
# A suite's run: traces and report in ${work}/<name>, checked by check_bench_traces.py.
run_suite() {
  local name="$1" binary="$2" iterations="$3"; shift 3  # N: at least N; =N: exactly N
  local format=chrome
  for arg in "$@"; do [[ "${arg}" == --ringtrace_format=* ]] && format="${arg#--ringtrace_format=}"; done
  mkdir -p "${work}/${name}"
  "${binary}" --ringtrace_out="${work}/${name}/traces" --benchmark_out="${work}/${name}/report.json" "$@" \
    >"${work}/${name}/stdout.txt" 2>&1 || { cat "${work}/${name}/stdout.txt"; echo "${name}: the suite fails"; exit 1; }
  python3 "${source_dir}/tests/consumer/check_bench_traces.py" "${work}/${name}/traces" "${work}/${name}/report.json" \
    "${iterations}" "${format}" || { echo "${name}: traces"; exit 1; }
}
case "${mode}" in
  pkg-config)
    mkdir -p "${work}/build"
    "${cxx}" -std=c++20 -O2 -shared -fPIC "${source_dir}/tests/consumer/app/plugin.cpp" -o "${work}/build/plugin.so" \
      "${flags[@]}"
    "${cxx}" -std=c++20 -O2 "${source_dir}/tests/consumer/app/main.cpp" -o "${work}/build/consumer" \
      -DCONSUMER_PLUGIN="\"${work}/build/plugin.so\"" "${flags[@]}"
    "${work}/build/consumer"
    # ringtrace-functions.pc: the hooks, and ringtrace after them.
    read -r -a function_flags <<<"$(pkg-config --cflags --libs ringtrace-functions)"
    "${cxx}" -std=c++20 -O2 -g -finstrument-functions -c "${source_dir}/tests/consumer/app/functions_work.cpp" \
      -o "${work}/build/functions_work.o"
    "${cxx}" -std=c++20 -O2 "${source_dir}/tests/consumer/app/functions_main.cpp" "${work}/build/functions_work.o" \
      -o "${work}/build/consumer_functions" "${function_flags[@]}"
    "${work}/build/consumer_functions"
    # ringtrace-memory.pc: the allocation functions; and the installed tool's record
    # --memory, which finds the installed libringtrace_preload.so beside it.
    read -r -a memory_flags <<<"$(pkg-config --cflags --libs ringtrace-memory)"
    "${cxx}" -std=c++20 -O2 "${source_dir}/tests/consumer/app/memory_main.cpp" -o "${work}/build/consumer_memory" \
      "${memory_flags[@]}"
    "${work}/build/consumer_memory"
    if [[ -x "${work}/prefix/bin/ringtrace" ]]; then
      "${work}/prefix/bin/ringtrace" record --memory -o "${work}/build/ls.rtrace" -- ls -l / >/dev/null
      "${work}/prefix/bin/ringtrace" dump "${work}/build/ls.rtrace" >"${work}/build/ls.dump"  # (not into grep -q: pipefail)
      grep -q ' alloc "ringtrace: allocated" ' "${work}/build/ls.dump" ||
        { echo "pkg-config: the installed record --memory recorded no allocation of ls"; exit 1; }
    fi ;;
  readme)
    awk -v dir="${work}" '
      /^```cpp[[:space:]]*$/ { inside = 1; n += 1; file = sprintf("%s/block%02d.cpp", dir, n); printf "" > file; next }
      /^```/ { if (inside) close(file); inside = 0; next }
      inside { print >> file }' "${source_dir}/README.md" "${source_dir}/docs/guide.md"
    blocks=("${work}"/block*.cpp)
    [[ -e "${blocks[0]}" ]] || { echo "readme: no C++ block found in README.md"; exit 1; }
    ((${#blocks[@]} >= 6)) || { echo "readme: ${#blocks[@]} C++ blocks in README.md and docs/guide.md, expected 6 or more"; exit 1; }
    for block in "${blocks[@]}"; do
      name="$(basename "${block}" .cpp)"
      if grep -q '^int main(' "${block}"; then
        "${cxx}" -std=c++20 -Wall -Wextra -Werror "${block}" -o "${work}/${name}" "${flags[@]}" \
          || { echo "readme: ${name} does not build"; exit 1; }
        mkdir -p "${work}/${name}.run"
        (cd "${work}/${name}.run" && "${work}/${name}") >"${work}/${name}.out" 2>&1 \
          || { cat "${work}/${name}.out"; echo "readme: ${name} exits non-zero"; exit 1; }
        echo "readme: ${name} builds and runs: $(tail -1 "${work}/${name}.out")"
      else
        "${cxx}" -std=c++20 -Wall -Wextra -Werror -c "${block}" -o "${work}/${name}.o" "${flags[@]}" \
          || { echo "readme: ${name} does not compile"; exit 1; }
        echo "readme: ${name} compiles"
      fi
    done ;;
  benchmark-pkg-config)
    mkdir -p "${work}/build"
    "${cxx}" -std=c++20 -O2 "${source_dir}/tests/consumer/bench_app/suite.cpp" -o "${work}/build/bench_consumer" \
      "${flags[@]}"
    run_suite small "${work}/build/bench_consumer" 1 --benchmark_min_time=0.01 ;;
  benchmark-install|benchmark-build-tree)
    cmake --build "${work}/build" -j2 --target bench_consumer >/dev/null
    run_suite small "${work}/build/bench_consumer" 1 --benchmark_min_time=0.01
    run_suite perfetto "${work}/build/bench_consumer" 1 --benchmark_min_time=0.01 --ringtrace_format=perfetto ;;
  benchmark-big)
    cmake --build "${work}/build" -j2 --target bench_consumer_big >/dev/null
    # big_suite.cpp's kIterations, exactly; the default trace bound.
    run_suite big "${work}/build/bench_consumer_big" =2000000
    run_suite big_perfetto "${work}/build/bench_consumer_big" =2000000 --ringtrace_format=perfetto \
      --benchmark_filter=BM_concat
    node="$(command -v node)" || { echo "benchmark-big: node not found: install it"; exit 1; }
    RINGTRACE_NODE_MODULES="${source_dir}/tests/clients/node_modules" "${node}" \
      "${source_dir}/tests/benchmark/check_trace_slices.mjs" "${work}"/big/traces/* "${work}"/big_perfetto/traces/* ;;
  *)
    cmake --build "${work}/build" -j2 >/dev/null
    "${work}/build/consumer"
    "${work}/build/consumer_functions" ;;
esac
