#!/usr/bin/env bash
# Installs what tessera needs to build and test, from Debian's archive, if it is missing. Idempotent: on a
# machine that has everything it only checks. Run as root or with sudo available.
set -euo pipefail

packages=(
  cmake g++ ninja-build pkg-config    # build
  libsystemc-dev                      # the simulation kernel (Debian's 2.3.4, built for C++17)
  libeigen3-dev                       # CPU reference and tile kernels
  libyaml-cpp-dev                     # machine and workload configs
  libcli11-dev                        # the command line
  nlohmann-json3-dev libfmt-dev       # reports and formatting
  libgtest-dev                        # tests
  python3 python3-matplotlib python3-yaml   # plots and sweep drivers (scripts/)
  python3-jsonschema                  # report.json against docs/report.schema.json (tests)
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "tessera setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
