#!/usr/bin/env bash
# run_consumer.sh <install|build-tree|subdirectory|shared> <source dir> <build dir> <work dir>
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
esac
cmake --build "${work}/build" -j2 >/dev/null
"${work}/build/consumer"
