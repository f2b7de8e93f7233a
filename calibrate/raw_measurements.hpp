// The calibration harness's raw measurements (JSON written by overlapsim-calibrate-harness,
// schema "overlapsim-raw-measurements" version 1; calibrate/README.md documents every key), read
// back strictly. A section the harness skipped holds {"skipped": reason}; it reads as
// `skipped` set and no points.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim {

/// A timing summary (calibrate/harness/stats.hpp), seconds.
struct RawTiming {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0, spread = 0;
  int n = 0;
};

struct RawGemmPoint {
  std::string dtype;            ///< bf16, fp16, fp8
  int64_t m = 0, n = 0, k = 0;
  std::string label;            ///< key shapes only
  RawTiming time;
  int sm_clock_mhz = 0;         ///< the SM clock after the point (NVML); 0: not recorded
};

struct RawMemoryPoint {
  std::string kernel;           ///< copy, add, layernorm, softmax
  int64_t elements = 0;
  double bytes = 0;             ///< HBM bytes read + written
  RawTiming time;
};

struct RawAttentionPoint {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  double flops = 0;
  RawTiming time;
  double qk_s = 0, softmax_s = 0, pv_s = 0;
};

struct RawCollectivePoint {
  double size_bytes = 0;
  RawTiming time;
};

struct RawCollectiveGroup {
  std::string collective;
  int ranks = 0;
  std::vector<RawCollectivePoint> points;
};

struct RawInterferencePoint {
  std::string companion;
  int num_sm = 0;
  RawTiming gemm;
  double companion_bytes_per_s = 0;
};

struct RawMeasurements {
  std::string path;
  // provenance
  std::string host, date, gpu, driver, cuda_driver, cuda_runtime, cublaslt, nccl, compute_capability;
  int sm_count = 0, gpu_count = 0;
  // harness
  std::string command;
  bool quick = false;

  std::string gemm_skipped;
  std::vector<int64_t> gemm_m, gemm_n, gemm_k;  ///< grid axes
  std::vector<RawGemmPoint> gemm;

  std::string memory_skipped;
  std::vector<RawMemoryPoint> memory;

  std::string attention_skipped;
  std::vector<RawAttentionPoint> attention;

  std::string launch_skipped;
  RawTiming host_launch, gpu_kernel, sync_roundtrip;

  std::string collectives_skipped;
  std::string collective_algorithm = "auto", collective_protocol = "auto";
  int collective_nodes = 1;
  std::vector<RawCollectiveGroup> collectives;

  std::string interference_skipped;
  std::string interference_gemm;  ///< e.g. "bf16 8192x8192x8192"
  RawTiming interference_alone;
  std::vector<RawInterferencePoint> interference;

  std::vector<std::string> notes;
};

/// Reads a raw-measurement file. Throws InputError naming the file, the JSON key path and what
/// was expected (wrong schema or version, a missing key, a non-positive time).
RawMeasurements load_raw_measurements(const std::string& path);

}  // namespace overlapsim
