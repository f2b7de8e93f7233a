#include "sim/result.hpp"

#include <algorithm>

namespace overlapsim {

namespace {
using Interval = std::pair<double, double>;

bool by_start(const Interval& a, const Interval& b) { return a.first < b.first; }

/// Sorts `v` by start, given the ends of its runs in `bounds` (each run one stream's ops, which
/// start in program order: a stream runs its ops one after another, so each run is sorted
/// already, checked): merges the runs (n · runs) rather than sorting all (n log n).
void sort_runs(std::vector<Interval>& v, const std::vector<size_t>& bounds) {
  size_t begin = 0;
  bool sorted_runs = true;
  for (size_t end : bounds) {
    sorted_runs &= std::is_sorted(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end), by_start);
    begin = end;
  }
  if (!sorted_runs) {
    std::sort(v.begin(), v.end(), by_start);
    return;
  }
  for (size_t i = 1; i < bounds.size(); ++i)
    std::inplace_merge(v.begin(), v.begin() + static_cast<long>(bounds[i - 1]), v.begin() + static_cast<long>(bounds[i]),
                       by_start);
}

/// Merges intervals sorted by start in place (intervals of equal start merge alike whatever
/// their order); returns their total length.
double merge(std::vector<Interval>& v) {
  size_t w = 0;  // v[0, w) is merged so far (w never passes the interval being read)
  for (size_t i = 0; i < v.size(); ++i) {
    const Interval iv = v[i];
    if (iv.second <= iv.first) continue;
    if (w > 0 && iv.first <= v[w - 1].second) v[w - 1].second = std::max(v[w - 1].second, iv.second);
    else v[w++] = iv;
  }
  v.resize(w);
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
  std::vector<Interval> sorted[2];  // [compute, communication]: intervals grouped by stream
  std::vector<size_t> bounds, offset[2];
  for (size_t ri = 0; ri < s.programs.size(); ++ri) {
    const auto& ops = s.programs[ri].ops;
    // Each kind's intervals stream by stream (program order within a stream), placed straight
    // at their stream's offset: a first pass counts them.
    size_t streams = static_cast<size_t>(std::max(1, s.programs[ri].num_streams));
    for (auto& o : offset) o.assign(streams + 1, 0);
    for (const Op& op : ops) {
      const size_t st = static_cast<size_t>(std::max<int>(0, op.stream));
      if (st >= streams) {  // (a stream past num_streams: validate() refuses it, counted all the same)
        streams = st + 1;
        for (auto& o : offset) o.resize(streams + 1, 0);
      }
      ++offset[op.type == OpType::Compute ? 0 : 1][st + 1];
    }
    for (auto& o : offset)
      for (size_t st = 0; st < streams; ++st) o[st + 1] += o[st];
    for (int k = 0; k < 2; ++k) sorted[k].resize(offset[k][streams]);
    {
      std::vector<size_t> at[2] = {offset[0], offset[1]};
      for (size_t oi = 0; oi < ops.size(); ++oi) {
        const int k = ops[oi].type == OpType::Compute ? 0 : 1;
        sorted[k][at[k][static_cast<size_t>(std::max<int>(0, ops[oi].stream))]++] = {t.start_s[ri][oi], t.end_s[ri][oi]};
      }
    }
    for (int k = 0; k < 2; ++k) {
      bounds.clear();
      for (size_t st = 0; st < streams; ++st)
        if (offset[k][st + 1] > offset[k][st]) bounds.push_back(offset[k][st + 1]);
      sort_runs(sorted[k], bounds);
    }
    std::vector<Interval>& compute = sorted[0];
    std::vector<Interval>& comm = sorted[1];
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
