#!/usr/bin/env bash
# check_demo.sh <demo binary> <output folder>: runs the demo as scripts/demo.sh does and
# checks what a new user sees: it exits 0, prints at most 25 lines, names its output
# folder and every file it wrote there (each with a way to open it), and shows the
# captured-ops line and the table's header.
set -euo pipefail
demo="$1"; dir="$2"
rm -rf "${dir}"
out="$("${demo}" "${dir}")" || { printf '%s\n' "${out}"; echo "check_demo: the demo exits non-zero"; exit 1; }
printf '%s\n' "${out}"
fail() { echo "check_demo: $*"; exit 1; }
lines="$(printf '%s\n' "${out}" | wc -l)"
((lines <= 25)) || fail "${lines} lines, more than 25"
grep -q "^Files in $(realpath "${dir}"):\$" <<<"${out}" || fail "the output folder is not named"
grep -Eq '^Captured ops: [0-9]+ graphs [0-9]+ graph calls ' <<<"${out}" || fail "no captured-ops line"
grep -Eq '^Name +Self % +Self +Total %' <<<"${out}" || fail "no table header"
! grep -q "exporter error" <<<"${out}" || fail "an exporter failed"
count=0
for file in "${dir}"/*; do
  name="$(basename "${file}")"
  [[ -s "${file}" ]] || fail "${name} is empty"
  grep -Eq "(^|[[:space:]])${name//./\\.}([[:space:]:,]|\$)" <<<"${out}" || fail "${name} is written but not named"
  count=$((count + 1))
done
((count >= 5)) || fail "only ${count} files written"
echo "check_demo: ok (${lines} lines, ${count} files named)"
