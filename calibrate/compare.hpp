// Comparing two calibration profiles (e.g. datasheet against measured): where they differ and by
// how much, on the numbers the simulator uses — the scalar efficiencies and overheads, the time
// of the GEMMs a scenario runs (or a standard set of transformer GEMMs), the collectives both
// profiles fitted, and the interference factors.
//
// GEMM time under a profile (calibrated_gemm_time_s): with a measured table for the dtype,
//   t = max(2·b·M·N·K / (peak · e_table(b·M, N, K)), bytes / (HBM · e_mem)) + t_fixed
// (a batch of b GEMMs is looked up as one GEMM with b·M rows: the batch stacks output tiles as M
// does); without one, the v0 cost model (models/cost_model.hpp, wave quantisation).
#pragma once

#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "models/model_config.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace overlapsim {

/// One GEMM shape to compare on.
struct GemmQuery {
  std::string label;        ///< e.g. "fc1.fwd" or "gpt3-175b tp8 fc1"
  int64_t m = 1, n = 1, k = 1, batch = 1;
  DType dtype = DType::BF16;
  long long count = 1;      ///< how often a simulated rank runs it per iteration (1 for the standard set)
};

/// Seconds for one GEMM under `profile` on `device` (rule above).
double calibrated_gemm_time_s(const Profile& profile, const DeviceSpec& device, int64_t m, int64_t n, int64_t k,
                              DType dtype, int64_t batch = 1);

/// The standard set: the harness's key transformer shapes (calibrate/harness/grid.hpp: GPT-3 175B
/// at TP 8 and an h = 8192 model at TP 4, 2048 tokens, unchunked and chunked 4 ways), bf16.
std::vector<GemmQuery> standard_gemm_shapes();

/// The distinct GEMMs of one training iteration of a scenario (its workload as built for the
/// simulation, representative ranks), with how often each runs. Throws InputError for a bad
/// scenario (as `overlapsim run` would).
std::vector<GemmQuery> scenario_gemm_shapes(const std::string& scenario_path);

/// Prints the comparison: header (both profiles' provenance), scalars, GEMM shapes (time per call
/// and TFLOP/s under each, B/A), collectives and interference present in either. `shapes_from`
/// says where the shapes came from (a scenario path or "standard shapes").
void print_profile_comparison(std::ostream& out, const Profile& a, const Profile& b, const std::vector<GemmQuery>& shapes,
                              const std::string& shapes_from);

}  // namespace overlapsim
