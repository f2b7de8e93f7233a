// Device catalog: datasheet figures, each with the document it comes from.
//
// Conventions:
// - FLOP/s are dense (no 2:4 structured sparsity); vendors often print the sparse figure,
//   which is exactly twice the dense one.
// - Memory capacity: vendors print "80GB" for what is 80 GiB of DRAM (DRAM dies are sized in
//   powers of two; nvidia-smi reports 81920 MiB on an A100 80GB and 49140 MiB ≈ 48 GiB on an
//   RTX A6000). We therefore store N·1024³ bytes for an "N GB" part. See S. Bekman, "Machine
//   Learning Engineering", chapter Accelerators, §"Accelerator memory size and speed"
//   (https://github.com/stas00/ml-engineering/tree/master/compute/accelerator), which calls the
//   A100 part "80GiB" and discusses the GB/GiB ambiguity. A few hundred MiB of it is not usable
//   (driver reservations; an H100 80GB reports 81559 MiB): that is not modelled here.
// - Memory bandwidth is decimal (1 GB/s = 1e9 B/s), as vendors mean it.
#include "models/device_catalog.hpp"

#include "sim/error.hpp"

#include <map>

namespace overlapsim {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const std::map<std::string, DeviceSpec>& catalog() {
  static const std::map<std::string, DeviceSpec> table = [] {
    std::map<std::string, DeviceSpec> t;

    DeviceSpec a100;
    a100.model = "a100-sxm4-80gb";
    a100.display_name = "NVIDIA A100-SXM4-80GB";
    // "NVIDIA A100 Tensor Core GPU" datasheet: FP32 19.5 TFLOPS, TF32 Tensor Core 156 TFLOPS
    // (312 sparse), BF16/FP16 Tensor Core 312 TFLOPS (624 sparse); no FP8.
    a100.peak_fp32_flops = 19.5 * kTera;
    a100.peak_tf32_flops = 156 * kTera;
    a100.peak_fp16_flops = 312 * kTera;
    a100.peak_fp8_flops = 0;
    // "NVIDIA A100 Tensor Core GPU Architecture" whitepaper: the A100 has 108 SMs.
    a100.sm_count = 108;
    a100.compute_capability = 80;
    // Datasheet: 80GB HBM2e (80 GiB, see above), 2,039 GB/s on the SXM module.
    a100.hbm_bytes = 80 * kGiB;
    a100.hbm_bandwidth_Bps = 2039e9;
    a100.source =
        "NVIDIA A100 Tensor Core GPU datasheet, "
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
        "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf; SM count: NVIDIA A100 Tensor Core "
        "GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/en-zz/Solutions/"
        "data-center/nvidia-ampere-architecture-whitepaper.pdf";
    t[a100.model] = a100;

    DeviceSpec h100;
    h100.model = "h100-sxm5-80gb";
    h100.display_name = "NVIDIA H100 80GB HBM3 (SXM5)";
    // "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (GTC'22), table comparing A100 and
    // H100 SXM5: FP32 66.9 TFLOPS (the datasheet rounds it to 67), TF32 Tensor 494.7, FP16/BF16
    // Tensor 989.4, FP8 Tensor 1978.9 TFLOPS dense, 132 SMs.
    h100.peak_fp32_flops = 66.9 * kTera;
    h100.peak_tf32_flops = 494.7 * kTera;
    h100.peak_fp16_flops = 989.4 * kTera;
    h100.peak_fp8_flops = 1978.9 * kTera;
    h100.sm_count = 132;
    h100.compute_capability = 90;
    // "NVIDIA H100 Tensor Core GPU" datasheet: H100 SXM 80GB (80 GiB, see above), 3.35 TB/s.
    h100.hbm_bytes = 80 * kGiB;
    h100.hbm_bandwidth_Bps = 3.35e12;
    h100.source =
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper, "
        "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper; NVIDIA H100 "
        "Tensor Core GPU datasheet, "
        "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
    t[h100.model] = h100;

    DeviceSpec h200;
    h200.model = "h200-sxm-141gb";
    h200.display_name = "NVIDIA H200 (SXM, 141GB HBM3e)";
    // "NVIDIA H200 Tensor Core GPU" datasheet: the same GH100 compute as H100 SXM (its table lists
    // the sparse figures 1,979 TFLOPS BF16/FP16 and 3,958 FP8, i.e. 989.4 / 1978.9 dense, TF32
    // 989 sparse = 494.7 dense, FP32 67), 132 SMs as H100 SXM; 141GB HBM3e at 4.8 TB/s.
    h200.peak_fp32_flops = 66.9 * kTera;
    h200.peak_tf32_flops = 494.7 * kTera;
    h200.peak_fp16_flops = 989.4 * kTera;
    h200.peak_fp8_flops = 1978.9 * kTera;
    h200.sm_count = 132;
    h200.compute_capability = 90;
    h200.hbm_bytes = 141 * kGiB;
    h200.hbm_bandwidth_Bps = 4.8e12;
    h200.source =
        "NVIDIA H200 Tensor Core GPU datasheet / product page, "
        "https://www.nvidia.com/en-us/data-center/h200/; compute and SM count as H100 SXM5: "
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper, "
        "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper";
    t[h200.model] = h200;

    DeviceSpec a6000;
    a6000.model = "rtx-a6000";
    a6000.display_name = "NVIDIA RTX A6000";
    // "NVIDIA Ampere GA102 GPU Architecture" whitepaper v2.0, Appendix C (RTX A6000): 84 SMs,
    // FP32 38.7 TFLOPS, peak FP16/BF16 Tensor TFLOPS with FP32 accumulate 154.8 (309.7 sparse —
    // the "Tensor Performance 309.7 TFLOPS" of the RTX A6000 datasheet), TF32 Tensor 77.4
    // (154.8 sparse); no FP8 on Ampere. Unlike GeForce GA102 parts, the A6000 does not halve the
    // FP32-accumulate tensor rate.
    a6000.peak_fp32_flops = 38.7 * kTera;
    a6000.peak_tf32_flops = 77.4 * kTera;
    a6000.peak_fp16_flops = 154.8 * kTera;
    a6000.peak_fp8_flops = 0;
    a6000.sm_count = 84;
    a6000.compute_capability = 86;
    // RTX A6000 datasheet: 48 GB GDDR6 with ECC (48 GiB, see above), 768 GB/s.
    a6000.hbm_bytes = 48 * kGiB;
    a6000.hbm_bandwidth_Bps = 768e9;
    a6000.source =
        "NVIDIA RTX A6000 datasheet / product page, "
        "https://www.nvidia.com/en-us/design-visualization/rtx-a6000/; NVIDIA Ampere GA102 GPU "
        "Architecture whitepaper v2.0, Appendix C, "
        "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
    t[a6000.model] = a6000;

    return t;
  }();
  return table;
}

}  // namespace

double DeviceSpec::peak_flops(DType d) const {
  double peak = 0;
  switch (d) {
    case DType::FP32: peak = peak_fp32_flops; break;
    case DType::TF32: peak = peak_tf32_flops; break;
    case DType::FP16:
    case DType::BF16: peak = peak_fp16_flops; break;
    case DType::FP8: peak = peak_fp8_flops; break;
  }
  if (!(peak > 0)) {
    std::string supported;
    for (DType x : {DType::FP32, DType::TF32, DType::FP16, DType::BF16, DType::FP8}) {
      const double p = x == DType::FP32   ? peak_fp32_flops
                       : x == DType::TF32 ? peak_tf32_flops
                       : x == DType::FP8  ? peak_fp8_flops
                                          : peak_fp16_flops;
      if (p > 0) supported += (supported.empty() ? "" : ", ") + std::string(to_string(x));
    }
    throw InputError("expected a dtype that " + model + " supports (" + supported +
                     "), found '" + to_string(d) + "'");
  }
  return peak;
}

bool is_known_device(const std::string& model) { return catalog().count(model) != 0; }

std::string device_models_text() {
  std::string known;
  for (const auto& [name, spec] : catalog()) known += (known.empty() ? "" : ", ") + name;
  return known;
}

std::vector<std::string> device_models() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : catalog()) names.push_back(name);
  return names;
}

const DeviceSpec& device_spec(const std::string& model) {
  auto it = catalog().find(model);
  if (it == catalog().end())
    throw InputError("expected a device model (" + device_models_text() + "), found '" + model + "'");
  return it->second;
}

}  // namespace overlapsim
