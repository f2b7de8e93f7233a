// Calibration profile: the measured (or datasheet) numbers the cost models read.
//
// JSON, versioned (schema "overlapsim-profile", version 1). Written by the calibration harness
// or an importer, or by hand from datasheets; every section records where its numbers came from.
// A datasheet profile per device ships in calibrate/profiles/. Fields (units in the key names):
//   schema, version, device (catalog key), provenance {kind: datasheet|measured|imported,
//   source, date, ...}, gemm {max_efficiency, tile_m, tile_n, source}, memory {efficiency, source},
//   kernel {launch_overhead_s, fixed_overhead_s, source},
//   network {nvlink_efficiency, network_efficiency, pcie_efficiency, source},
//   attention {efficiency, source}.
#pragma once

#include <string>

namespace overlapsim {

struct Profile {
  std::string path;                 ///< file it was loaded from
  std::string device;               ///< device-catalog key
  std::string provenance_kind;      ///< "datasheet", "measured" or "imported"
  std::string provenance_source;    ///< one line: where the numbers came from

  // GEMM on tensor cores: achieved = peak · max_efficiency · wave_efficiency(M, N) (see cost_model.hpp)
  double gemm_max_efficiency = 0.8;  ///< fraction of dense peak reached by large GEMMs
  int gemm_tile_m = 256;             ///< output tile of the cuBLAS kernel, rows
  int gemm_tile_n = 128;             ///< output tile, columns
  double attention_efficiency = 0.5; ///< fraction of dense peak reached by the attention kernels
  double memory_efficiency = 0.8;    ///< fraction of HBM bandwidth reached by memory-bound kernels
  double launch_overhead_s = 4e-6;   ///< host-side cost of one kernel launch, seconds
  double kernel_fixed_overhead_s = 2e-6; ///< GPU-side per-kernel start/tail cost, seconds
  double nvlink_efficiency = 0.8;    ///< fraction of NVLink/NVSwitch bandwidth NCCL reaches (busbw/peak)
  double network_efficiency = 0.9;   ///< fraction of NIC bandwidth NCCL reaches
  double pcie_efficiency = 0.8;      ///< fraction of PCIe bandwidth reached by P2P copies
};

/// Loads a profile. Throws InputError naming the file, the JSON key and what was expected for a
/// wrong schema or version, a missing key, a value out of range (efficiencies in (0, 1],
/// overheads >= 0) or an unknown device.
Profile load_profile(const std::string& path);

/// Default datasheet profile file for a device model: calibrate/profiles/<model>.json in the
/// source tree. Throws InputError when there is none.
std::string default_profile_path(const std::string& device_model);

}  // namespace overlapsim
