// Statistics of repeated timings, as plain C++ (standard library only; compiled into the CUDA
// harness and into the CPU tests).
//
// Each measurement is timed `repeats` times after `warmup` untimed runs; one sample is the CUDA-
// event time of `inner` back-to-back launches divided by `inner`, with `inner` chosen so that a
// sample lasts at least about 100 µs (CUDA events resolve about 0.5 µs; NVIDIA, CUDA C++ Best
// Practices Guide, §"Using CUDA GPU Timers"). The summary keeps the median (the figure the fit
// uses: robust to a stray slow sample), min, max, the 10th and 90th percentiles and the relative
// spread (p90 − p10) / median.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace overlapsim::harness {

struct Summary {
  int n = 0;              ///< number of samples
  double median = 0;      ///< seconds (or whatever unit the samples are in)
  double min = 0, max = 0;
  double p10 = 0, p90 = 0;
  double mean = 0;
  double spread = 0;      ///< (p90 - p10) / median; 0 when median is 0
};

/// Percentile `q` in [0, 1] of sorted samples, linear between closest ranks (the "R-7" rule of
/// Hyndman and Fan, numpy's default). REQUIRES: sorted non-empty.
inline double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted.front();
  q = std::min(1.0, std::max(0.0, q));
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

/// Summary of `samples`; all zeros (n = 0) when empty.
inline Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentile_sorted(samples, 0.5);
  s.p10 = percentile_sorted(samples, 0.1);
  s.p90 = percentile_sorted(samples, 0.9);
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(samples.size());
  s.spread = s.median > 0 ? (s.p90 - s.p10) / s.median : 0.0;
  return s;
}

/// How many launches one timed sample should hold so that it lasts at least `target_s`, given
/// one launch's time `single_s` (from the warm-up). At least 1, at most `max_inner`.
inline int choose_inner(double single_s, double target_s, int max_inner) {
  if (!(single_s > 0) || !std::isfinite(single_s)) return max_inner;
  const double want = std::ceil(target_s / single_s);
  if (want <= 1) return 1;
  if (want >= static_cast<double>(max_inner)) return max_inner;
  return static_cast<int>(want);
}

/// Timing plan of the harness: warm-up runs, timed samples, target sample length.
struct TimingPlan {
  int warmup = 5;
  int repeats = 20;
  double target_sample_s = 100e-6;
  int max_inner = 1000;
  /// Seconds of back-to-back large GEMMs before each dtype's GEMM grid, so that its first points
  /// are measured at the clock the GPU holds under sustained load, not an idle GPU's boost.
  double heat_up_s = 2.0;
};

inline TimingPlan timing_plan(bool quick) {
  TimingPlan p;
  if (quick) {
    p.warmup = 2;
    p.repeats = 7;
    p.heat_up_s = 0.5;
  }
  return p;
}

}  // namespace overlapsim::harness
