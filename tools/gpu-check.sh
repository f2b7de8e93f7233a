#!/usr/bin/env bash
# tools/gpu-check.sh — check the calibration harness on a GPU machine, in under 10 minutes.
#
# Needs only what a bare GPU machine has: the NVIDIA driver, CUDA 13 (nvcc, cuBLASLt), NCCL (in
# the CUDA toolkit, under NCCL_ROOT, or from a pip-installed PyTorch's nvidia-nccl package, found
# through python3), CMake >= 3.20 and, if present, ninja. No SimGrid, Boost or other -dev package:
# it builds calibrate/harness/ standalone (not the overlapsim simulator), runs the quick
# calibration and prints its summary: GEMM TFLOP/s at key transformer shapes against the dense
# peak and the SM clock range over the GEMM points (NVML; each grid starts after a heat-up),
# memory bandwidth, launch overhead, interference factors, collectives (with >= 2 GPUs).
#
# usage: tools/gpu-check.sh [--full] [--out RAW.json] [--build-dir DIR]
#   --full       the full grids instead of --quick (longer than 10 minutes)
#   --out        where the raw measurements go (default: BUILD_DIR/gpu-check-raw.json); fit them
#                into a profile on any machine with overlapsim:
#                  overlapsim calibrate --from-raw RAW.json --out PROFILE.json
#   --build-dir  default: build-harness/ in the repository root
# Environment: NCCL_ROOT (where NCCL is), CUDA_ARCH (e.g. 90; default: the GPU's own),
#              GPU_CHECK_TIMEOUT (seconds for the measurement, default 540).
# Exit status: 0 measured; 2 no GPU, no nvcc or no CMake (nothing measured); 1 build or run failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-harness"
out=""
mode="--quick"
while [ $# -gt 0 ]; do
  case "$1" in
    --full) mode="" ;;
    --out|--build-dir)
      # (A flag without its value is bad usage, status 2: it was bash's "unbound variable", status 1.)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "gpu-check: $1 needs a path (see --help)" >&2; exit 2; fi
      if [ "$1" = --out ]; then out="$2"; else build="$2"; fi
      shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="$build/gpu-check-raw.json"
start=$(date +%s)
say() { echo "gpu-check: $*"; }

# 1. A GPU, and the tools to build for it.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  say "no NVIDIA GPU on this machine (nvidia-smi is missing or lists no GPU); nothing to check" >&2
  exit 2
fi
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu-check: GPU /'
nvcc="$(command -v nvcc || true)"
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; } || true
if [ -z "$nvcc" ]; then
  say "no nvcc (CUDA compiler) in PATH or /usr/local/cuda/bin; install the CUDA toolkit" >&2
  exit 2
fi
command -v cmake >/dev/null 2>&1 || { say "no cmake in PATH" >&2; exit 2; }
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
arch="${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}"
[ -n "$arch" ] || arch="80;86;90"
say "nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), building for sm_$arch in $build"

# 2. Build the harness standalone (falls back to no NCCL if NCCL cannot be found).
mkdir -p "$build"
log="$build/gpu-check"
cfg=(-S "$root/calibrate/harness" -B "$build" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch")
[ -n "${NCCL_ROOT:-}" ] && cfg+=(-DNCCL_ROOT="$NCCL_ROOT")
if ! cmake "${cfg[@]}" >"$log.cmake.log" 2>&1; then
  if grep -q "NCCL not found" "$log.cmake.log"; then
    say "NCCL not found (set NCCL_ROOT); building without the collective benchmarks"
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
    cmake "${cfg[@]}" -DOVERLAPSIM_HARNESS_NCCL=OFF >"$log.cmake.log" 2>&1 || { cat "$log.cmake.log" >&2; exit 1; }
  else
    cat "$log.cmake.log" >&2
    say "configuring the harness failed (log above)" >&2
    exit 1
  fi
fi
grep -E "NCCL|Found CUDAToolkit" "$log.cmake.log" | sed 's/^-- /gpu-check: /' || true
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 4)" >"$log.build.log" 2>&1 || {
  tail -40 "$log.build.log" >&2
  say "building the harness failed (end of the log above; whole log in $log.build.log)" >&2
  exit 1
}
say "built in $(( $(date +%s) - start )) s"

# 3. Measure.
set +e
timeout "${GPU_CHECK_TIMEOUT:-540}" "$build/overlapsim-calibrate-harness" $mode --out "$out"
rc=$?
set -e
case $rc in
  0) ;;
  3) say "the harness found no usable CUDA GPU (driver or device problem; its message is above)" >&2; exit 2 ;;
  124) say "the measurement ran past ${GPU_CHECK_TIMEOUT:-540} s and was stopped" >&2; exit 1 ;;
  *) say "the harness failed (exit status $rc; its messages are above)" >&2; exit 1 ;;
esac
say "raw measurements in $out; fit them with: overlapsim calibrate --from-raw $out --out PROFILE.json"
say "done in $(( $(date +%s) - start )) s"
