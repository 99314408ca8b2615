#!/usr/bin/env bash
# Builds ringtrace (Release) and runs the demo; prints where its files are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh build
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" --target ringtrace_demo
out="${1:-$PWD/build/demo-out}"
./build/release/examples/ringtrace_demo "${out}"
