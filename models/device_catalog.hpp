// Device catalog: datasheet figures of the GPUs we model. Every number names its source
// (the vendor datasheet) in device_catalog.cpp; a calibration profile may override them.
#pragma once

#include "models/model_config.hpp"

#include <string>
#include <vector>

namespace overlapsim {

struct DeviceSpec {
  std::string model;               ///< catalog key, e.g. "a100-sxm4-80gb"
  std::string display_name;        ///< e.g. "NVIDIA A100-SXM4-80GB"
  double peak_fp32_flops = 0;      ///< FLOP/s, dense, non-tensor FP32
  double peak_tf32_flops = 0;      ///< FLOP/s, dense tensor-core TF32
  double peak_fp16_flops = 0;      ///< FLOP/s, dense tensor-core FP16 (= BF16)
  double peak_fp8_flops = 0;       ///< FLOP/s, dense tensor-core FP8; 0 if unsupported
  int sm_count = 0;
  /// CUDA compute capability × 10 (80: Ampere A100, 86: GA102, 90: Hopper), from NVIDIA's
  /// "CUDA GPUs — Compute Capability" list (https://developer.nvidia.com/cuda-gpus); NCCL picks
  /// per-generation constants by it (src/graph/tuning.cc).
  int compute_capability = 0;
  double hbm_bytes = 0;            ///< bytes of device memory
  double hbm_bandwidth_Bps = 0;    ///< bytes/s
  std::string source;              ///< datasheet title and URL

  /// Dense tensor peak for a dtype, FLOP/s. Throws InputError if the device lacks the dtype.
  double peak_flops(DType d) const;
};

/// Throws InputError listing the known models when `model` is unknown.
const DeviceSpec& device_spec(const std::string& model);
bool is_known_device(const std::string& model);
std::vector<std::string> device_models();
/// The catalog's models, comma-separated (for error messages).
std::string device_models_text();

}  // namespace overlapsim
