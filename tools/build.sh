#!/usr/bin/env bash
# Configures overlapsim (Release; Ninja when installed, else Unix Makefiles) into build/ and
# builds it with 2 jobs (CI machines have 2 cores). Works from any directory.
#
#   tools/build.sh
# Environment: OVERLAPSIM_BUILD_DIR  build folder (default: <repo>/build)
#              OVERLAPSIM_JOBS       parallel jobs (default: 2)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${OVERLAPSIM_BUILD_DIR:-$repo/build}
jobs=${OVERLAPSIM_JOBS:-2}

configure=(cmake -S "$repo" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release)
# A folder that is already configured keeps its generator (CMake refuses to switch).
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  if command -v ninja >/dev/null 2>&1; then
    configure+=(-G Ninja)
  else
    configure+=(-G "Unix Makefiles")
  fi
fi

echo "build: configuring $build_dir"
"${configure[@]}"
echo "build: building with $jobs jobs"
cmake --build "$build_dir" --parallel "$jobs"
echo "build: done ($build_dir)"
