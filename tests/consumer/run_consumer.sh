#!/usr/bin/env bash
# run_consumer.sh <install|build-tree|subdirectory|shared|pkg-config|readme> <source dir> <build dir> <work dir>
#   install, build-tree, subdirectory, shared: the CMake ways (app/CMakeLists.txt).
#   pkg-config: installed with a prefix, app/ built by plain g++ with `pkg-config --cflags --libs ringtrace`.
#   readme: every ```cpp block of README.md built the same way; a block with main() is run
#           (in an empty folder), one without is compiled as a translation unit.
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
  pkg-config|readme)
    cmake --install "${build_dir}" --prefix "${work}/prefix" >/dev/null
    export PKG_CONFIG_PATH="$(dirname "$(find "${work}/prefix" -name ringtrace.pc)")"
    # As a shell user writes it: g++ ... $(pkg-config --cflags --libs ringtrace)
    read -r -a flags <<<"$(pkg-config --cflags --libs ringtrace)"
    cxx="${CXX:-g++}" ;;
esac
case "${mode}" in
  pkg-config)
    mkdir -p "${work}/build"
    "${cxx}" -std=c++20 -O2 -shared -fPIC "${source_dir}/tests/consumer/app/plugin.cpp" -o "${work}/build/plugin.so" \
      "${flags[@]}"
    "${cxx}" -std=c++20 -O2 "${source_dir}/tests/consumer/app/main.cpp" -o "${work}/build/consumer" \
      -DCONSUMER_PLUGIN="\"${work}/build/plugin.so\"" "${flags[@]}"
    "${work}/build/consumer" ;;
  readme)
    awk -v dir="${work}" '
      /^```cpp[[:space:]]*$/ { inside = 1; n += 1; file = sprintf("%s/block%02d.cpp", dir, n); printf "" > file; next }
      /^```/ { if (inside) close(file); inside = 0; next }
      inside { print >> file }' "${source_dir}/README.md"
    blocks=("${work}"/block*.cpp)
    [[ -e "${blocks[0]}" ]] || { echo "readme: no C++ block found in README.md"; exit 1; }
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
  *)
    cmake --build "${work}/build" -j2 >/dev/null
    "${work}/build/consumer" ;;
esac
