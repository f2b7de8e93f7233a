#!/usr/bin/env bash
# Installs the dependencies, builds, and simulates the default scenario (GPT-3 175B on 1024
# A100s) under each of its strategies. Extra arguments go to `overlapsim run`.
#
#   tools/run-default.sh [--strategy megatron] [--fidelity analytic] ...
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${OVERLAPSIM_BUILD_DIR:-$repo/build}

"$repo/tools/install-deps.sh"
"$repo/tools/build.sh"
cd "$repo"
exec "$build_dir/overlapsim" run scenarios/default.yaml "$@"
