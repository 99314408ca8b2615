#!/usr/bin/env bash
# Builds the benches (Release) and runs each; the core bench prints its cost ladder as
# ratios to the raw clock read. Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh build
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)"
for bench in build/release/bench/bench_*; do
  [[ -x "${bench}" ]] || continue
  echo "== ${bench}"
  "${bench}" "$@"
done
