// α / bus-bandwidth fit (model and method in collective_fit.hpp).
#include "calibrate/collective_fit.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace overlapsim {

AlphaBusbw fit_alpha_busbw(const std::vector<SizeTime>& points, const std::string& collective, int ranks,
                           const std::string& what) {
  if (points.empty()) throw InputError(what + ": expected measured points of " + collective + ", found none");
  const double f = bus_factor(collective, ranks);
  if (f <= 0)
    throw InputError(what + ": " + collective + " on " + std::to_string(ranks) +
                     " rank(s) moves no data (bus factor 0); expected at least 2 ranks");
  for (const SizeTime& p : points)
    if (!(p.size_bytes > 0) || !(p.time_s > 0) || !std::isfinite(p.time_s))
      throw InputError(what + ": expected positive sizes and times, found size " + std::to_string(p.size_bytes) +
                       " B, time " + std::to_string(p.time_s) + " s");

  // α and busbw need at least two message sizes (regression: one row gave α 0 and a busbw of a
  // few MB/s, written without a word).
  std::vector<double> sizes;
  for (const SizeTime& p : points) sizes.push_back(p.size_bytes);
  std::sort(sizes.begin(), sizes.end());
  if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() < 2)
    throw InputError(what + ": " + collective + " was measured at one message size only; expected at least two "
                     "(an nccl-tests sweep such as -b 8 -e 8G -f 2)");

  // Weighted least squares, weights 1/t².
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (const SizeTime& p : points) {
    const double w = 1.0 / (p.time_s * p.time_s);
    const double x = p.size_bytes * f;
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swt += w * p.time_s;
    swxt += w * x * p.time_s;
  }
  double alpha = 0, beta = 0;
  const double det = sw * swxx - swx * swx;
  if (points.size() >= 2 && det > 1e-12 * sw * swxx) {
    alpha = (swxx * swt - swx * swxt) / det;
    beta = (sw * swxt - swx * swt) / det;
    if (!(beta > 0))
      throw InputError(what + ": the times of " + collective + " do not grow with the message size; expected a "
                       "curve from which a bandwidth can be fitted (measure sizes up to at least a few MiB)");
  }
  if (!(alpha > 0)) {
    // α clamped at 0 (or a single size): β alone, the same weighted criterion.
    alpha = 0;
    beta = swxt / swxx;
  }
  // A busbw the profile loader refuses (calibrate/profile.cpp: 1e6 to 1e15 B/s) is a curve too
  // flat to fit (small sizes only, their times flat to nccl-tests' two decimals: 1e23 B/s).
  if (!(1.0 / beta >= 1e6 && 1.0 / beta <= 1e15))
    throw InputError(what + ": the times of " + collective + " do not grow with the message size enough to fit a "
                     "bandwidth (" + fmt::format("{:.3g}", 1.0 / beta) + " B/s; expected 1e6 to 1e15): measure sizes up "
                     "to at least a few MiB");
  // A bandwidth is measured only where the bytes take a share of the time: a sweep that stops
  // while α dominates fits a busbw from noise (regression: 8 B - 32 KiB of an AllReduce, busbw
  // 3.1 GB/s at most, fitted 180.9 GB/s, which then timed an 8 GiB AllReduce as measured).
  const double largest = sizes.back() * f;
  const double share = beta * largest / (alpha + beta * largest);
  if (share < kMinBandwidthShare)
    throw InputError(what + ": " + collective + "'s largest size measured, " +
                     fmt::format("{:.0f} B, spends {:.0f}% of its fitted time ({:.3g} us + bytes at {:.3g} GB/s busbw) "
                                 "moving bytes: too little to measure a bandwidth; expected sizes up to where the bytes "
                                 "take at least {:.0f}% of the time (a sweep to a few MiB or more, nccl-tests -e 1G)",
                                 sizes.back(), 100 * share, alpha * 1e6, 1e-9 / beta, 100 * kMinBandwidthShare));
  AlphaBusbw out;
  out.alpha_s = alpha;
  out.busbw_Bps = 1.0 / beta;
  for (const SizeTime& p : points) {
    const double model = alpha + beta * p.size_bytes * f;
    out.max_relative_error = std::max(out.max_relative_error, std::fabs(model - p.time_s) / p.time_s);
  }
  return out;
}

CollectiveFit make_collective_fit(const std::string& collective, int ranks, int nodes, const std::string& algorithm,
                                  const std::string& protocol, std::vector<SizeTime> points, const std::string& source) {
  const AlphaBusbw ab = fit_alpha_busbw(points, collective, ranks, source);
  std::stable_sort(points.begin(), points.end(), [](const SizeTime& a, const SizeTime& b) { return a.size_bytes < b.size_bytes; });
  CollectiveFit fit;
  fit.collective = collective;
  fit.ranks = ranks;
  fit.nodes = nodes;
  fit.algorithm = algorithm;
  fit.protocol = protocol;
  fit.alpha_s = ab.alpha_s;
  fit.busbw_Bps = ab.busbw_Bps;
  fit.max_relative_error = ab.max_relative_error;
  fit.source = source;
  const double f = bus_factor(collective, ranks);
  for (const SizeTime& p : points) fit.points.push_back(CollectivePoint{p.size_bytes, p.time_s, p.size_bytes * f / p.time_s});
  return fit;
}

}  // namespace overlapsim
