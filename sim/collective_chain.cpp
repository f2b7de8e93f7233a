// Broadcast/Reduce chains (collective_plan.hpp): the waves of a pipelined chain and each
// channel's own pipeline over them.
#include "sim/collective_plan.hpp"

#include "sim/platform.hpp"

#include <algorithm>
#include <limits>
#include <map>

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
                       double wire, int n, int K) {
  const int C = static_cast<int>(rings.size());
  const size_t hops = static_cast<size_t>(C) * (n - 1);
  // Each hop's time in a wave where positions lo..hi of every channel send at once (0 for the
  // others): step latency + wire over its share of its links among them.
  auto hop_times = [&](int lo, int hi) {
    std::map<int, int> users;
    for (const ChannelPlan& ch : rings)
      for (int p = lo; p <= hi; ++p)
        for (int l : ch.hops[p].links) ++users[l];
    std::vector<double> t(hops, 0.0);
    for (int c = 0; c < C; ++c)
      for (int p = lo; p <= hi; ++p) {
        const Hop2& h = rings[c].hops[p];
        double share = std::numeric_limits<double>::infinity();
        for (int l : h.links) {
          const Link& link = topo.link(l / 2);
          share = std::min(share, link.bandwidth_Bps * eff.of(link.kind) / users[l]);
        }
        t[static_cast<size_t>(c) * (n - 1) + p] = h.step_latency_s + wire / share;
      }
    return t;
  };
  // Each channel's own pipeline below needs every distinct wave's hop times; skipped (the waves'
  // sum stands) above 2,048 hops or 4 M grid cells per channel.
  const bool pipelines = n >= 2 && hops <= 2048 && static_cast<long long>(n - 1) * K <= (1LL << 22);
  ChainWaves cw;
  std::vector<std::vector<double>>& times = cw.hop_s;  // by distinct wave (pipelines only)
  const long long W = static_cast<long long>(n - 1) + K - 1;
  std::vector<int>& id = cw.wave_id;
  id.assign(pipelines ? static_cast<size_t>(W) : 0, 0);
  const int last = n - 2;  // the last sending position
  const long long steady_from = last, steady_to = K - 1;  // every position busy
  auto wave = [&](int lo, int hi) {
    std::vector<double> t = hop_times(lo, hi);
    const double slowest = *std::max_element(t.begin(), t.end());
    if (pipelines) times.push_back(std::move(t));
    return slowest;
  };
  for (long long w = 0; w < W; ++w) {
    if (w >= steady_from && w <= steady_to) {
      if (cw.steady == 0) cw.steady_s = wave(0, last);
      cw.steady = steady_to - steady_from + 1;
      if (pipelines) std::fill(id.begin() + w, id.begin() + steady_to + 1, static_cast<int>(times.size()) - 1);
      w = steady_to;
      continue;
    }
    const int lo = static_cast<int>(std::max(0LL, w - K + 1)), hi = static_cast<int>(std::min<long long>(w, last));
    (cw.steady == 0 ? cw.fill : cw.drain).push_back(wave(lo, hi));
    if (pipelines) id[w] = static_cast<int>(times.size()) - 1;
  }
  if (!pipelines) return cw;
  // Each channel's own pipeline: slice k leaves position p in wave p + k at that hop's time in
  // that wave; it waits for slice k at p − 1 and slice k − 1 at p (longest path over the grid).
  // On hops alike every wave's hops take its time, so this is the waves' sum; where they differ
  // (NVLink and NIC) a slice pays each hop's own time, not the wave's slowest.
  cw.ends.assign(C, std::vector<double>(n, 0.0));
  std::vector<double> row(K, 0.0);
  for (int c = 0; c < C; ++c) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int p = 0; p <= last; ++p) {
      for (int k = 0; k < K; ++k) {
        const double before = std::max(p > 0 ? row[k] : 0.0, k > 0 ? row[k - 1] : 0.0);
        row[k] = before + times[id[p + k]][static_cast<size_t>(c) * (n - 1) + p];
      }
      cw.ends[c][p] = row[K - 1];
    }
    cw.ends[c][n - 1] = row[K - 1];
  }
  return cw;
}

}  // namespace overlapsim
