#!/usr/bin/env bash
# Installs every build and test dependency of overlapsim from Debian packages (design §7b).
# Idempotent: when dpkg-query reports every package installed, apt-get is not run at all.
# Uses sudo only when not already root.
#
#   tools/install-deps.sh
set -euo pipefail

packages=(
  libsimgrid-dev      # SimGrid >= 3.32: the replay engine (pkg-config simgrid)
  libboost-graph-dev  # Boost.Graph: the topology graph
  libfmt-dev
  doctest-dev         # unit tests
  libyaml-cpp-dev     # topology and scenario files
  nlohmann-json3-dev  # profiles and JSON results
  libcli11-dev        # the command line
  libjemalloc-dev     # the overlapsim binary's allocator (a flow replay allocates millions of activities)
  pkg-config
  cmake
  ninja-build
  g++
  time                # GNU time: /usr/bin/time -v, used by tools/bench
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: apt-get not found; install them with your package manager" >&2
  exit 1
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: not root and sudo not found; run this script as root" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
