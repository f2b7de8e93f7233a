// Fitting α and bus bandwidth of a collective from measured (size, time) points, shared by the
// harness fit (calibrate/fit.cpp) and the nccl-tests importer (calibrate/nccl_tests_import.cpp).
//
// Model (profile_tables.hpp): t(S) = α + S · f(n) / busbw, i.e. t = α + β·x with x = S · f(n)
// and β = 1 / busbw. The fit minimises the sum of squared *relative* errors
//   Σ ((α + β·x_i − t_i) / t_i)²
// (weights 1/t_i², closed-form 2×2 normal equations), so that an 8-byte call at 20 µs and a
// 4 GiB call at 20 ms count alike; with α constrained to >= 0 (refitting β alone when the free
// fit gives α < 0) and β > 0.
#pragma once

#include "calibrate/profile_tables.hpp"

#include <string>
#include <vector>

namespace overlapsim {

struct SizeTime {
  double size_bytes = 0;  ///< nccl-tests' size S
  double time_s = 0;      ///< time of one call
};

struct AlphaBusbw {
  double alpha_s = 0;
  double busbw_Bps = 0;
  double max_relative_error = 0;  ///< max over the points of |model − t| / t
};

/// The least share of its fitted time that the largest measured size must spend moving bytes
/// (S · f / busbw over α + S · f / busbw) for a busbw to be fitted at all: below it the sweep
/// stopped where α dominates and the slope is the times' rounding noise.
inline constexpr double kMinBandwidthShare = 0.2;

/// Fits the model to the points of one collective on `ranks` ranks. Throws InputError (message
/// naming `what`, e.g. the log file) when there is no point, when a time or size is not
/// positive, when the times do not grow with the size (no bandwidth can be fitted), when the
/// busbw falls outside 1e6-1e15 B/s, or when the largest size spends less than
/// kMinBandwidthShare of its fitted time moving bytes.
AlphaBusbw fit_alpha_busbw(const std::vector<SizeTime>& points, const std::string& collective, int ranks,
                           const std::string& what);

/// A CollectiveFit with the fitted α and busbw and the points (busbw per point = S·f/t),
/// points sorted by size.
CollectiveFit make_collective_fit(const std::string& collective, int ranks, int nodes, const std::string& algorithm,
                                  const std::string& protocol, std::vector<SizeTime> points, const std::string& source);

}  // namespace overlapsim
