#!/usr/bin/env bash
# Installs the Debian packages ringtrace needs that are missing.
#   scripts/install_deps.sh build   the library, demo and benches
#   scripts/install_deps.sh test    all of that, plus what the tests load files into
# Package list: scripts/debian-packages.txt. Runs apt-get update first when it has
# anything to install. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
want="${1:-build}"

missing=()
while read -r package purpose; do
  [[ -z "${package}" || "${package}" == \#* ]] && continue
  [[ "${want}" == "build" && "${purpose}" != "build" ]] && continue
  if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("${package}")
  fi
done < scripts/debian-packages.txt
# Node.js and npm load the trace files in the tests; any install of them will do.
if [[ "${want}" == "test" ]]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

if ((${#missing[@]} > 0)); then
  echo "ringtrace: installing Debian packages: ${missing[*]}"
  sudo=""
  if [[ "$(id -u)" != "0" ]]; then sudo="sudo"; fi
  ${sudo} apt-get update -qq
  DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${want}" == "test" && -f tests/clients/package.json ]]; then
  # The real clients the tests load output files into (trace importers, speedscope).
  (cd tests/clients && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
