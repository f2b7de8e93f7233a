#include "sim/result.hpp"

#include <algorithm>

namespace overlapsim {

namespace {
using Interval = std::pair<double, double>;

/// Sorts and merges intervals in place; returns their total length.
double merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  v.swap(out);
  double total = 0;
  for (const auto& iv : v) total += iv.second - iv.first;
  return total;
}

/// Length of `a` not covered by `b` (both merged).
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  size_t j = 0;
  for (const auto& iv : a) {
    double cur = iv.first;
    while (j < b.size() && b[j].second <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < iv.second) {
      if (b[k].first > cur) total += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      if (cur >= iv.second) break;
      ++k;
    }
    if (cur < iv.second) total += iv.second - cur;
  }
  return total;
}
}  // namespace

Breakdown breakdown(const Schedule& s, const ReplayTimes& t) {
  Breakdown b;
  if (s.programs.empty()) return b;
  for (size_t ri = 0; ri < s.programs.size(); ++ri) {
    std::vector<Interval> compute, comm;
    const auto& ops = s.programs[ri].ops;
    for (size_t oi = 0; oi < ops.size(); ++oi) {
      const Interval iv{t.start_s[ri][oi], t.end_s[ri][oi]};
      (ops[oi].type == OpType::Compute ? compute : comm).push_back(iv);
    }
    const double c = merge(compute);
    merge(comm);
    const double exposed = uncovered(comm, compute);
    b.compute_s += c;
    b.exposed_comm_s += exposed;
    b.idle_s += t.makespan_s - c - exposed;
  }
  const double n = static_cast<double>(s.programs.size());
  b.compute_s /= n;
  b.exposed_comm_s /= n;
  b.idle_s /= n;
  if (b.idle_s < 0 && b.idle_s > -1e-9 * t.makespan_s) b.idle_s = 0;  // rounding, not a negative bubble
  return b;
}

}  // namespace overlapsim
