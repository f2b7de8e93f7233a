// Lookups in the measured tables (rules in profile_tables.hpp).
#include "calibrate/profile_tables.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>

namespace overlapsim {

namespace {

/// Bracketing indices and weight of `x` on an ascending axis, in log2 space, clamped.
struct Bracket {
  std::size_t lo = 0, hi = 0;
  double w = 0;  ///< weight of hi
};

Bracket bracket(const std::vector<int64_t>& axis, int64_t x) {
  Bracket b;
  if (axis.size() == 1 || x <= axis.front()) return b;
  if (x >= axis.back()) {
    b.lo = b.hi = axis.size() - 1;
    return b;
  }
  const auto it = std::upper_bound(axis.begin(), axis.end(), x);
  b.hi = static_cast<std::size_t>(it - axis.begin());
  b.lo = b.hi - 1;
  const double l0 = std::log2(static_cast<double>(axis[b.lo]));
  const double l1 = std::log2(static_cast<double>(axis[b.hi]));
  b.w = (std::log2(static_cast<double>(x)) - l0) / (l1 - l0);
  return b;
}

}  // namespace

double GemmEfficiencyTable::efficiency_at(int64_t m_, int64_t n_, int64_t k_) const {
  OVERLAPSIM_CHECK(!m.empty() && !n.empty() && !k.empty() && efficiency.size() == m.size() * n.size() * k.size(),
                   "GEMM efficiency table is malformed");
  OVERLAPSIM_CHECK(m_ >= 1 && n_ >= 1 && k_ >= 1, "GEMM dimensions must be >= 1");
  const Bracket bm = bracket(m, m_), bn = bracket(n, n_), bk = bracket(k, k_);
  double e = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c) {
        const double w = (a ? bm.w : 1 - bm.w) * (b ? bn.w : 1 - bn.w) * (c ? bk.w : 1 - bk.w);
        if (w == 0) continue;
        e += w * at(a ? bm.hi : bm.lo, b ? bn.hi : bn.lo, c ? bk.hi : bk.lo);
      }
  return e;
}

double attention_efficiency_at(const std::vector<AttentionPoint>& points, int64_t batch_heads, int64_t seq,
                               int64_t head_dim) {
  OVERLAPSIM_CHECK(batch_heads >= 1 && seq >= 1 && head_dim >= 1, "attention dimensions must be >= 1");
  if (points.empty()) return 0;
  const double want = std::log2(static_cast<double>(head_dim));
  int64_t dim = points.front().head_dim;
  for (const AttentionPoint& a : points) {
    const double d = std::abs(std::log2(static_cast<double>(a.head_dim)) - want);
    const double best = std::abs(std::log2(static_cast<double>(dim)) - want);
    if (d < best || (d == best && a.head_dim > dim)) dim = a.head_dim;
  }
  std::vector<int64_t> bh, sq;
  for (const AttentionPoint& a : points)
    if (a.head_dim == dim) {
      bh.push_back(a.batch * a.heads);
      sq.push_back(a.seq);
    }
  const std::size_t cells = bh.size();
  for (auto* axis : {&bh, &sq}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  if (bh.size() * sq.size() != cells) return 0;
  std::vector<double> e(cells, -1);
  for (const AttentionPoint& a : points) {
    if (a.head_dim != dim) continue;
    const auto i = std::lower_bound(bh.begin(), bh.end(), a.batch * a.heads) - bh.begin();
    const auto j = std::lower_bound(sq.begin(), sq.end(), a.seq) - sq.begin();
    double& cell = e[static_cast<std::size_t>(i) * sq.size() + static_cast<std::size_t>(j)];
    if (cell >= 0) return 0;  // two points in one cell (e.g. batch 2 × heads 8 beside batch 1 × heads 16)
    cell = a.efficiency;
  }
  const Bracket bi = bracket(bh, batch_heads), bj = bracket(sq, seq);
  double r = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const double w = (a ? bi.w : 1 - bi.w) * (b ? bj.w : 1 - bj.w);
      if (w != 0) r += w * e[(a ? bi.hi : bi.lo) * sq.size() + (b ? bj.hi : bj.lo)];
    }
  return r;
}

double CollectiveFit::time_s(double size_bytes) const {
  OVERLAPSIM_CHECK(busbw_Bps > 0, "collective fit without bus bandwidth");
  return alpha_s + size_bytes * bus_factor(collective, ranks) / busbw_Bps;
}

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                                 "broadcast",  "reduce",     "sendrecv"};
  return names;
}

double bus_factor(const std::string& collective, int ranks) {
  OVERLAPSIM_CHECK(ranks >= 1, "a collective needs at least one rank");
  const double n = ranks;
  if (collective == "all_reduce") return 2.0 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall") return (n - 1) / n;
  if (collective == "broadcast" || collective == "reduce" || collective == "sendrecv") return 1.0;
  std::string known;
  for (const auto& c : collective_names()) known += (known.empty() ? "" : ", ") + c;
  throw InputError("expected a collective (" + known + "), found '" + collective + "'");
}

double fit_sm_interference(const std::vector<InterferencePoint>& points, const std::string& companion, int sm_count) {
  OVERLAPSIM_CHECK(sm_count >= 1, "an SM count must be >= 1");
  double sxy = 0, sxx = 0;
  for (const auto& p : points) {
    if (p.companion != companion || p.num_sm <= 0 || !(p.compute_slowdown > 0)) continue;
    const double x = static_cast<double>(p.num_sm) / sm_count;
    const double y = 1.0 - 1.0 / p.compute_slowdown;
    sxy += x * y;
    sxx += x * x;
  }
  return sxx > 0 ? sxy / sxx : 0.0;
}

double interference_slowdown(const std::vector<InterferencePoint>& points, const std::string& companion, int num_sm) {
  std::vector<const InterferencePoint*> p;
  for (const auto& x : points)
    if (x.companion == companion) p.push_back(&x);
  if (p.empty()) return 1.0;
  std::sort(p.begin(), p.end(), [](auto* a, auto* b) { return a->num_sm < b->num_sm; });
  if (num_sm <= p.front()->num_sm) return p.front()->compute_slowdown;
  if (num_sm >= p.back()->num_sm) return p.back()->compute_slowdown;
  for (std::size_t i = 1; i < p.size(); ++i)
    if (num_sm <= p[i]->num_sm) {
      const double w = static_cast<double>(num_sm - p[i - 1]->num_sm) / (p[i]->num_sm - p[i - 1]->num_sm);
      return p[i - 1]->compute_slowdown + w * (p[i]->compute_slowdown - p[i - 1]->compute_slowdown);
    }
  return p.back()->compute_slowdown;
}

}  // namespace overlapsim
