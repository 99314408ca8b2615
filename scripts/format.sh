#!/usr/bin/env bash
# Formats the project's C++ files with .clang-format (clang-format 14, Debian 12's):
#   scripts/format.sh            every tracked C++ file, in place
#   scripts/format.sh --check    says which files differ and exits 1 (the CI test)
# Third-party copies (node_modules) are never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
format="${CLANG_FORMAT:-clang-format}"
if ! command -v "${format}" >/dev/null; then
  echo "format.sh: ${format} not found (Debian package clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.c' '*.cc' ':!:*node_modules/*')
if [[ "${1:-}" == "--check" ]]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "${format}" --dry-run --Werror "${f}" >/dev/null 2>&1; then
      echo "not formatted: ${f} (scripts/format.sh formats it)"
      bad=1
    fi
  done
  [[ ${bad} -eq 0 ]] && echo "format.sh: ${#files[@]} files formatted as .clang-format says"
  exit ${bad}
fi
"${format}" -i "${files[@]}"
