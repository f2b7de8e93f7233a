// Fitting the harness's raw measurements (raw_measurements.hpp) into a calibration profile.
//
// Each section of the profile is measured when the raw file has it, else kept from the device's
// datasheet profile (calibrate/profiles/<model>.json) with a source saying so. Rules:
//   gemm.tables         per dtype, efficiency = 2·M·N·K / median time / dense peak (device catalog)
//                       at every grid point; a grid point the harness skipped takes the value of
//                       the nearest measured point (fewest index steps, ties to smaller shapes)
//   gemm.key_shapes     the labelled shapes, measured and interpolated from the table
//   gemm.max_efficiency median efficiency of the bf16 (else fp16) grid shapes with M, N, K >= 4096
//                       ("large GEMMs", what the v0 cost model's max_efficiency stands for)
//   memory.efficiency   median over the four kernels of (bandwidth at the largest size / HBM
//                       datasheet bandwidth); memory.hbm_bandwidth_Bps: the copy kernel's at the
//                       largest size; memory.points: every kernel and size
//   attention.efficiency median over shapes of 4·b·h·s²·d / (peak · (QKᵀ time + PV time)): the
//                       GEMM part only, since the cost model adds the softmax at memory efficiency;
//                       attention.points: each shape's, which the cost model interpolates at a
//                       workload's shape (attention_efficiency_at, profile_tables.hpp)
//   kernel.launch_overhead_s  host time of one launch (median); fixed_overhead_s: GPU time per
//                       back-to-back empty kernel from a CUDA graph (median)
//   collectives         α and busbw per (collective, ranks) from the medians (collective_fit.hpp)
//   interference        compute_slowdown = GEMM time beside the companion / alone (medians);
//                       sm_interference = fit_sm_interference (profile_tables.hpp) over the NCCL
//                       companion's points when measured, else the copy kernel's
// Efficiencies above 1 (clocks above the datasheet's boost) are clamped to 1 with a note.
#pragma once

#include "calibrate/profile.hpp"
#include "calibrate/raw_measurements.hpp"

#include <string>
#include <vector>

namespace overlapsim {

struct FitOptions {
  std::string device;  ///< catalog model; empty: from the raw file's GPU name (gpu_names.hpp)
};

struct FitResult {
  Profile profile;
  std::vector<std::string> notes;  ///< what was kept from the datasheet, clamped, filled, skipped
};

/// Fits a profile. Throws InputError when the device cannot be told (unknown GPU name and no
/// --device) or --device names an unknown model.
FitResult fit_profile(const RawMeasurements& raw, const FitOptions& options = {});

}  // namespace overlapsim
