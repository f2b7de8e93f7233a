#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite with ctest (2 jobs).
# Extra arguments go to ctest, e.g. `tools/run-tests.sh -R topology`.
#
#   tools/run-tests.sh [CTEST_ARGS...]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${OVERLAPSIM_BUILD_DIR:-$repo/build}
jobs=${OVERLAPSIM_JOBS:-2}

"$repo/tools/install-deps.sh"
"$repo/tools/build.sh"
echo "run-tests: ctest in $build_dir"
exec ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" "$@"
