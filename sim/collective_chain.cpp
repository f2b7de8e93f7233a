// Broadcast/Reduce chains (collective_plan.hpp): the waves of a pipelined chain and each
// channel's own pipeline over them.
#include "sim/collective_plan.hpp"

#include "sim/link_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlapsim {

ChainWaves chain_waves(const Topology& topo, const LinkEfficiency& eff, const std::vector<ChannelPlan>& rings,
                       double wire, int n, int K, double share_cap_Bps, double wire_last) {
  // The last slice's wire part of a hop time, as a fraction of a full slice's.
  const double last_scale = wire_last < 0 || !(wire > 0) ? 1.0 : wire_last / wire;
  const int C = static_cast<int>(rings.size());
  const size_t hops = static_cast<size_t>(C) * (n - 1);
  ChainWaves cw;
  if (n < 2) return cw;
  const int last = n - 2;  // the last sending position
  const long long W = static_cast<long long>(n - 1) + K - 1;
  // Users of each directed link among the hops sending in the current wave (positions lo..hi of
  // every channel), kept as the window slides: each wave adds position hi and drops lo − 1.
  const size_t directed = 2 * static_cast<size_t>(topo.num_links());
  std::vector<int> users(directed, 0);
  // Links whose users changed since the hop times were last set (each once: `changed_at`).
  std::vector<int> changed;
  std::vector<char> changed_at(directed, 0);
  auto enter = [&](int p, int d) {
    for (const ChannelPlan& ch : rings)
      for (int l : ch.hops[p].links) {
        users[static_cast<size_t>(l)] += d;
        if (!changed_at[static_cast<size_t>(l)]) {
          changed_at[static_cast<size_t>(l)] = 1;
          changed.push_back(l);
        }
      }
  };
  // Each directed link's rate after link efficiency, bytes/s; and the hops crossing it
  // (c · (n − 1) + p, CSR by link: `crossing[crossing_at[l] .. crossing_at[l + 1])`).
  std::vector<double> rate(directed, 0.0);
  std::vector<int> crossing_at(directed + 1, 0), crossing;
  for (const ChannelPlan& ch : rings)
    for (int p = 0; p < n - 1; ++p)
      for (int l : ch.hops[p].links) ++crossing_at[static_cast<size_t>(l) + 1];
  for (size_t l = 0; l < directed; ++l) {
    crossing_at[l + 1] += crossing_at[l];
    if (crossing_at[l + 1] > crossing_at[l]) {
      const Link& link = topo.link(static_cast<int>(l / 2));
      rate[l] = link.bandwidth_Bps * eff.of(link.kind);
    }
  }
  crossing.resize(static_cast<size_t>(crossing_at[directed]));
  {
    std::vector<int> fill(crossing_at.begin(), crossing_at.end() - 1);
    for (int c = 0; c < C; ++c)
      for (int p = 0; p < n - 1; ++p)
        for (int l : rings[c].hops[p].links) crossing[static_cast<size_t>(fill[static_cast<size_t>(l)]++)] = c * (n - 1) + p;
  }
  // A hop's time in the current wave: step latency + wire over its share of its links (at most
  // the protocol's cap).
  auto hop_time = [&](const Hop2& h) {
    double share = share_cap_Bps;
    for (int l : h.links) share = std::min(share, rate[static_cast<size_t>(l)] / users[static_cast<size_t>(l)]);
    return h.step_latency_s + wire / share;
  };
  // The flows' floors (Task::Step) read every distinct wave's hop times; kept where that table
  // has at most 4 M cells (distinct waves · hops), else left empty and the replay times the
  // chain by this closed form (collective_flows.cpp).
  const long long distinct = std::min<long long>(W, static_cast<long long>(n - 1) + std::min(K, n - 1));
  const bool table = distinct * static_cast<long long>(hops) <= (1LL << 22);
  if (table) cw.wave_id.assign(static_cast<size_t>(W), 0);
  // Each channel's own pipeline (header): start[c][p] is when position p sent its latest slice,
  // e_last / d_last that slice's hop time and occupancy (its wave's).
  std::vector<std::vector<double>> start(C, std::vector<double>(n - 1, 0.0));
  std::vector<std::vector<double>> e_last = start, d_last = start;
  cw.ends.assign(C, std::vector<double>(n, 0.0));
  std::vector<double> t(hops, 0.0);  // this wave's hop times (e), by c · (n − 1) + p
  int lo = 0, hi = -1;               // the window of sending positions
  // The starts after the wave before, while every position sends (the waves that repeat). With
  // the same hop times each wave, position p sends at s_p(w) = max(s_{p−1}(w−1) + e_{p−1},
  // s_p(w−1) + d_p): once every position's start moves on by λ_p = max(λ_{p−1}, d_p) a wave
  // (λ_0 = d_0: the slowest occupancy up to p), it does so every wave until the window moves, and
  // those waves are skipped (s_p + R · λ_p): a Broadcast of 8 GiB over 256 DGX H100 nodes took
  // 4.2 s, 2.6 s with it. The fill's and the drain's waves are still stepped, about n² · C / 2
  // hop-steps each: over 2,048 nodes (n = 16,384) that is most of 4 minutes.
  std::vector<std::vector<double>> before;
  for (long long w = 0; w < W; ++w) {
    const int new_lo = static_cast<int>(std::max(0LL, w - K + 1)), new_hi = static_cast<int>(std::min<long long>(w, last));
    const bool moved = new_lo != lo || new_hi != hi;
    const int entered = hi + 1;  // the first position entering this wave, if any
    for (; hi < new_hi;) enter(++hi, +1);
    for (; lo < new_lo;) enter(lo++, -1);
    // Hop times change only when the window does (the waves with every position busy repeat),
    // and then only those of the hops crossing a link whose users changed (every hop of a
    // position that entered among them): recomputing the whole window each wave of the fill
    // and the drain was 90% of a Broadcast over 256 DGX H100 nodes.
    if (moved) {
      for (const int l : changed) {
        changed_at[static_cast<size_t>(l)] = 0;
        for (int k = crossing_at[static_cast<size_t>(l)]; k < crossing_at[static_cast<size_t>(l) + 1]; ++k) {
          const int hop = crossing[static_cast<size_t>(k)], p = hop % (n - 1);
          if (p >= lo && p <= hi) t[static_cast<size_t>(hop)] = hop_time(rings[hop / (n - 1)].hops[p]);
        }
      }
      changed.clear();
      for (int p = entered; p <= hi; ++p)  // (a hop crosses at least one link; this is for certainty)
        for (int c = 0; c < C; ++c) t[static_cast<size_t>(c) * (n - 1) + p] = hop_time(rings[c].hops[p]);
      if (table) {
        std::vector<double> row(hops, 0.0);
        for (int c = 0; c < C; ++c)
          for (int p = lo; p <= hi; ++p) row[static_cast<size_t>(c) * (n - 1) + p] = t[static_cast<size_t>(c) * (n - 1) + p];
        cw.hop_s.push_back(std::move(row));
      }
    }
    if (table) cw.wave_id[static_cast<size_t>(w)] = static_cast<int>(cw.hop_s.size()) - 1;
    for (int c = 0; c < C; ++c) {
      for (int p = hi; p >= lo; --p) {  // descending: position p − 1 still holds wave w − 1's slice
        const Hop2& h = rings[c].hops[p];
        const long long k = w - p;
        const double full = t[static_cast<size_t>(c) * (n - 1) + p];
        const double e = k == K - 1 && last_scale != 1.0 ? h.step_latency_s + (full - h.step_latency_s) * last_scale : full;
        const double d = e - h.step_latency_s + h.serial_s;
        const double arrived = p > 0 ? start[c][p - 1] + e_last[c][p - 1] : 0.0;
        const double s = k == 0 ? arrived : std::max(arrived, start[c][p] + d_last[c][p]);
        start[c][p] = s;
        e_last[c][p] = e;
        d_last[c][p] = d;
        // Its flow is done a route latency and the wire time after it is sent; the slice has
        // arrived its step latency after the send.
        const double flow_done = s + e - h.step_latency_s + h.route_latency_s;
        if (k == K - 1) {
          cw.ends[c][p] = flow_done;
          if (p == last) cw.ends[c][n - 1] = s + e;
        }
      }
    }
    // Waves w + 1 .. K − 2 send from every position with the same hop times and set no end: skip
    // them where every start moves on at its steady rate (within 1e-9 of it; the closed form is
    // then within that of its waves stepped one by one).
    const long long repeats = static_cast<long long>(K) - 2 - w;
    if (lo == 0 && hi == last && !moved && repeats > 0) {
      bool steady = !before.empty();
      for (int c = 0; c < C && steady; ++c) {
        double rate = 0;  // λ_{p−1}
        for (int p = 0; p <= last && steady; ++p) {
          rate = std::max(rate, d_last[c][p]);
          steady = std::abs((start[c][p] - before[c][p]) - rate) <= 1e-9 * rate;
        }
      }
      if (steady) {
        for (int c = 0; c < C; ++c)
          for (int p = 0; p <= last; ++p) start[c][p] += static_cast<double>(repeats) * (start[c][p] - before[c][p]);
        if (table)
          for (long long v = w + 1; v <= w + repeats; ++v) cw.wave_id[static_cast<size_t>(v)] = cw.wave_id[static_cast<size_t>(w)];
        w += repeats;
        before.clear();
        continue;
      }
      before = start;
    }
  }
  // No link carries its bytes faster than its bandwidth: each channel's tail ends no sooner than
  // the most loaded link it crosses has carried every channel's slices over it (K − 1 full slices
  // of wire each and the last).
  // On hops that share no link the pipeline above already takes that long; where channels meet
  // a link in different waves the waves' shares undercount them (regression: a Broadcast of
  // 64 MiB over 9 GPUs of two DGX H100 nodes on 64 channels, every one entering the ninth GPU
  // through its one NIC, took 967 us, below the 1.4 ms that NIC needs for 64 MiB).
  std::vector<double> load(2 * static_cast<size_t>(topo.num_links()), 0.0);  // wire bytes by directed link
  for (const ChannelPlan& ch : rings)
    for (int p = 0; p <= last; ++p)
      for (int l : ch.hops[p].links)
        load[static_cast<size_t>(l)] += last_scale == 1.0 ? K * wire : (K - 1) * wire + wire * last_scale;
  for (int c = 0; c < C; ++c) {
    double bound = 0;
    for (int p = 0; p <= last; ++p)
      for (int l : rings[c].hops[p].links) {
        const Link& link = topo.link(l / 2);
        bound = std::max(bound, load[static_cast<size_t>(l)] / (link.bandwidth_Bps * eff.of(link.kind)));
      }
    cw.ends[c][n - 1] = std::max(cw.ends[c][n - 1], bound);
  }
  return cw;
}

}  // namespace overlapsim
