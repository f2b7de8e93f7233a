// Broadcast/Reduce chains (collective_plan.hpp): the waves of a pipelined chain and each
// channel's own pipeline over them.
#include "sim/collective_plan.hpp"

#include "sim/platform.hpp"

#include <algorithm>
#include <limits>

namespace overlapsim {

double ChainWaves::end_of(long long w) const {
  if (w < 0) return 0;
  const long long nf = static_cast<long long>(fill.size());
  double t = 0;
  for (long long i = 0; i < std::min(w + 1, nf); ++i) t += fill[i];
  if (w < nf) return t;
  t += std::min(w - nf + 1, steady) * steady_s;
  for (long long i = 0; i < std::min(w - nf - steady + 1, static_cast<long long>(drain.size())); ++i) t += drain[i];
  return t;
}

ChainWaves chain_waves(const Topology& topo, const LinkEfficiency& eff, const std::vector<ChannelPlan>& rings,
                       double wire, int n, int K, double share_cap_Bps) {
  const int C = static_cast<int>(rings.size());
  const size_t hops = static_cast<size_t>(C) * (n - 1);
  ChainWaves cw;
  if (n < 2) return cw;
  const int last = n - 2;  // the last sending position
  const long long W = static_cast<long long>(n - 1) + K - 1;
  const long long steady_from = last, steady_to = K - 1;  // every position busy
  // Users of each directed link among the hops sending in the current wave (positions lo..hi of
  // every channel), kept as the window slides: each wave adds position hi and drops lo − 1.
  std::vector<int> users(2 * static_cast<size_t>(topo.num_links()), 0);
  auto enter = [&](int p, int d) {
    for (const ChannelPlan& ch : rings)
      for (int l : ch.hops[p].links) users[static_cast<size_t>(l)] += d;
  };
  // A hop's time in the current wave: step latency + wire over its share of its links (at most
  // the protocol's cap).
  auto hop_time = [&](const Hop2& h) {
    double share = share_cap_Bps;
    for (int l : h.links) {
      const Link& link = topo.link(l / 2);
      share = std::min(share, link.bandwidth_Bps * eff.of(link.kind) / users[static_cast<size_t>(l)]);
    }
    return h.step_latency_s + wire / share;
  };
  // The flows' floors (Task::Step) read every distinct wave's hop times; kept where that table
  // has at most 4 M cells (distinct waves · hops), else left empty and the replay times the
  // chain by this closed form (collective_flows.cpp).
  const long long distinct = std::min<long long>(W, static_cast<long long>(n - 1) + std::min(K, n - 1));
  const bool table = distinct * static_cast<long long>(hops) <= (1LL << 22);
  if (table) cw.wave_id.assign(static_cast<size_t>(W), 0);
  // Each channel's own pipeline: slice k leaves position p in wave p + k at that hop's time in
  // that wave; it waits for slice k at p − 1 and slice k − 1 at p (longest path over the grid).
  // dep[c][p]: when the latest slice left position p. On hops alike every wave's hops take its
  // time, so this is the waves' sum; where they differ (NVLink and NIC) a slice pays each hop's
  // own time, not the wave's slowest.
  std::vector<std::vector<double>> dep(C, std::vector<double>(n - 1, 0.0));
  cw.ends.assign(C, std::vector<double>(n, 0.0));
  std::vector<double> t(hops, 0.0);  // this wave's hop times, by c · (n − 1) + p
  int lo = 0, hi = -1;               // the window of sending positions
  for (long long w = 0; w < W; ++w) {
    const int new_lo = static_cast<int>(std::max(0LL, w - K + 1)), new_hi = static_cast<int>(std::min<long long>(w, last));
    const bool moved = new_lo != lo || new_hi != hi;
    for (; hi < new_hi;) enter(++hi, +1);
    for (; lo < new_lo;) enter(lo++, -1);
    // Hop times change only when the window does (the steady waves repeat the first of them).
    if (moved) {
      double slowest = 0;
      for (int c = 0; c < C; ++c)
        for (int p = lo; p <= hi; ++p) {
          double& x = t[static_cast<size_t>(c) * (n - 1) + p];
          x = hop_time(rings[c].hops[p]);
          slowest = std::max(slowest, x);
        }
      if (table) {
        std::vector<double> row(hops, 0.0);
        for (int c = 0; c < C; ++c)
          for (int p = lo; p <= hi; ++p) row[static_cast<size_t>(c) * (n - 1) + p] = t[static_cast<size_t>(c) * (n - 1) + p];
        cw.hop_s.push_back(std::move(row));
      }
      if (w >= steady_from && w <= steady_to) {
        cw.steady_s = slowest;
        cw.steady = steady_to - steady_from + 1;
      } else {
        (cw.steady == 0 ? cw.fill : cw.drain).push_back(slowest);
      }
    }
    if (table) cw.wave_id[static_cast<size_t>(w)] = static_cast<int>(cw.hop_s.size()) - 1;
    for (int c = 0; c < C; ++c) {
      std::vector<double>& d = dep[c];
      for (int p = hi; p >= lo; --p) {  // descending: d[p − 1] still holds the last wave's value
        const double before = std::max(p > 0 ? d[p - 1] : 0.0, d[p]);
        d[p] = before + t[static_cast<size_t>(c) * (n - 1) + p];
        if (w - p == K - 1) cw.ends[c][p] = d[p];
      }
    }
  }
  for (int c = 0; c < C; ++c) cw.ends[c][n - 1] = cw.ends[c][last];
  return cw;
}

}  // namespace overlapsim
