#!/usr/bin/env bash
# Builds ringtrace (Release): the demo and the ringtrace tool; runs the demo from the
# directory it was called from, so that the commands it prints (files and tool by their
# paths from there) work where the user is. Output folder: the first argument (relative
# to that directory), else build/demo-out in the source tree.
set -euo pipefail
here="$PWD"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"
bash scripts/install_deps.sh build
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" --target ringtrace_demo ringtrace_tool
out="${1:-${root}/build/demo-out}"
cd "${here}"
exec "${root}/build/release/examples/ringtrace_demo" "${out}"
