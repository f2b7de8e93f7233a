#include "sim/collective_plan.hpp"

#include "sim/error.hpp"
#include "sim/platform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace overlapsim {

namespace {

// NCCL src/graph/tuning.cc (ring rows; µs).
constexpr double kBaseLatRing[3] = {6.6e-6, 14.0e-6, 8.4e-6};
constexpr double kHwLatRing[3][3] = {
    {0.6e-6, 1.9e-6, 3.4e-6},   // NVLink: LL, LL128, Simple
    {1.0e-6, 2.5e-6, 5.7e-6},   // PCIe
    {2.7e-6, 4.0e-6, 14.0e-6},  // network
};
// Payload fraction on the wire (NCCL src/include/device.h: LL lines are 8 B data + 8 B flags;
// LL128 lines are 120 B data + 8 B flags).
constexpr double kWireFraction[3] = {0.5, 120.0 / 128.0, 1.0};
// NCCL's Simple protocol moves a channel's data in steps of NCCL_BUFFSIZE / NCCL_STEPS bytes.
constexpr double kSliceBytes = 4.0 * 1024 * 1024 / 8;

Hop2 measure_hop(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, int a, int b) {
  Hop2 h;
  h.src_pos = a;
  h.dst_pos = b;
  h.bandwidth_Bps = std::numeric_limits<double>::infinity();
  bool net = false, pcie = false;
  for (const Hop& hop : topo.route(ranks[a], ranks[b])) {
    const Link& l = topo.link(hop.link_id);
    // A half-duplex link is one resource for both directions.
    h.links.push_back(2 * hop.link_id + ((hop.forward || !l.full_duplex) ? 0 : 1));
    h.bandwidth_Bps = std::min(h.bandwidth_Bps, l.bandwidth_Bps * eff.of(l.kind));
    h.route_latency_s += l.latency_s;
    net |= l.kind == LinkKind::Network;
    pcie |= l.kind == LinkKind::Pcie || l.kind == LinkKind::Upi;
  }
  h.kind = net ? HopKind::Network : pcie ? HopKind::Pcie : HopKind::NvLink;
  return h;
}

/// Channel c's ring order: members grouped by node in order of first appearance; node 0 starts
/// at its member (c mod m); every next node starts at the member with the local index the
/// previous node left from, so that the hop between nodes stays on one rail.
std::vector<int> ring_order(const Topology& topo, const std::vector<int>& ranks, int c) {
  std::vector<int> node_order;
  std::map<int, std::vector<int>> by_node;
  for (int pos = 0; pos < static_cast<int>(ranks.size()); ++pos) {
    const int node = topo.node_of(ranks[pos]);
    if (!by_node.count(node)) node_order.push_back(node);
    by_node[node].push_back(pos);
  }
  std::vector<int> order;
  int exit_local = -1;
  for (size_t k = 0; k < node_order.size(); ++k) {
    const auto& members = by_node[node_order[k]];
    const int m = static_cast<int>(members.size());
    int start = c % m;
    if (k > 0 && exit_local >= 0)
      for (int i = 0; i < m; ++i)
        if (topo.gpu(ranks[members[i]]).local_index == exit_local) start = i;
    // The node's members visited from `start`; the last one visited leaves the node.
    for (int i = 0; i < m; ++i) order.push_back(members[(start + i) % m]);
    exit_local = topo.gpu(ranks[members[(start + m - 1) % m]]).local_index;
  }
  return order;
}

double channel_step_s(const ChannelPlan& ch, double wire_bytes, bool chain) {
  double t = 0, transfer = 0;
  for (const Hop2& h : ch.hops) {
    t = std::max(t, h.step_latency_s + wire_bytes / h.share_Bps);
    transfer = std::max(transfer, wire_bytes / h.share_Bps);
  }
  return chain ? t : ch.mean_step_latency_s + transfer;
}

}  // namespace

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

double CollectivePlan::closed_form_s() const {
  if (members <= 1 || steps == 0) return 0;
  double step = 0;
  for (const auto& ch : rings) step = std::max(step, channel_step_s(ch, wire_bytes, chain));
  const int waves = chain ? (members - 1) + (steps - 1) : steps;
  return base_latency_s + waves * step;
}

double received_bytes_per_rank(const CollectivePlan& p) {
  if (p.members <= 1) return 0;
  // Every ring (a merged ring carries all channels' bytes) delivers step_bytes per step.
  return p.step_bytes * p.steps * static_cast<double>(p.rings.size());
}

CollectivePlan plan_collective(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                               CollectiveKind kind, double bytes, int channels_wanted, const CollectiveOptions& opt) {
  OVERLAPSIM_CHECK(kind != CollectiveKind::AllToAll, "AllToAll is point-to-point, not planned as a ring");
  OVERLAPSIM_CHECK(!ranks.empty(), "empty group");
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::Ring;
  p.members = static_cast<int>(ranks.size());
  p.chain = kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
  p.channels = std::max(1, channels_wanted > 0 ? channels_wanted : opt.channels);
  const int n = p.members;
  if (n <= 1) return p;

  // Channel rings and their hops.
  std::vector<ChannelPlan> rings(p.channels);
  bool all_even = true;
  for (int c = 0; c < p.channels; ++c) {
    ChannelPlan& ch = rings[c];
    ch.order = ring_order(topo, ranks, c);
    const int nh = p.chain ? n - 1 : n;
    for (int i = 0; i < nh; ++i) ch.hops.push_back(measure_hop(topo, eff, ranks, ch.order[i], ch.order[(i + 1) % n]));
    for (int i = 0; i < nh; ++i) {
      const Hop2& h = ch.hops[i];
      const Hop2& b = ch.hops[ch.bottleneck];
      if (h.bandwidth_Bps < b.bandwidth_Bps || (h.bandwidth_Bps == b.bandwidth_Bps && h.route_latency_s > b.route_latency_s))
        ch.bottleneck = i;
    }
    for (const Hop2& h : ch.hops) ch.even &= h.bandwidth_Bps == ch.hops[0].bandwidth_Bps;
    all_even &= ch.even;
  }

  // Each hop's share of its links while every channel's hops of a step send at once.
  std::map<int, int> users;
  for (const auto& ch : rings)
    for (const Hop2& h : ch.hops)
      for (int l : h.links) ++users[l];
  for (auto& ch : rings)
    for (Hop2& h : ch.hops) {
      h.share_Bps = std::numeric_limits<double>::infinity();
      for (const Hop& hop : topo.route(ranks[h.src_pos], ranks[h.dst_pos])) {
        const Link& l = topo.link(hop.link_id);
        const int key = 2 * hop.link_id + ((hop.forward || !l.full_duplex) ? 0 : 1);
        h.share_Bps = std::min(h.share_Bps, l.bandwidth_Bps * eff.of(l.kind) / users[key]);
      }
    }

  // Steps and bytes per step.
  const double per_channel = bytes / p.channels;
  if (p.chain) {
    p.steps = std::max(1, static_cast<int>(std::ceil(per_channel / kSliceBytes)));
    p.step_bytes = per_channel / p.steps;
  } else {
    p.steps = kind == CollectiveKind::AllReduce ? 2 * (n - 1) : n - 1;
    p.step_bytes = per_channel / n;
  }

  // Protocol: forced, or the least modelled time.
  auto model = [&](Protocol proto) {
    const int pi = static_cast<int>(proto);
    CollectivePlan q = p;
    q.protocol = proto;
    q.base_latency_s = opt.textbook ? 0.0 : kBaseLatRing[pi];
    q.wire_bytes = q.step_bytes / kWireFraction[pi];
    q.rings = rings;
    for (auto& ch : q.rings) {
      ch.max_step_latency_s = 0;
      ch.mean_step_latency_s = 0;
      for (auto& h : ch.hops) {
        h.step_latency_s =
            opt.textbook ? h.route_latency_s : std::max(h.route_latency_s, kHwLatRing[static_cast<int>(h.kind)][pi]);
        ch.max_step_latency_s = std::max(ch.max_step_latency_s, h.step_latency_s);
        ch.mean_step_latency_s += h.step_latency_s / static_cast<double>(ch.hops.size());
      }
    }
    return q;
  };
  CollectivePlan best = model(opt.protocol_auto || opt.textbook ? Protocol::Simple : opt.protocol);
  if (opt.protocol_auto && !opt.textbook)
    for (Protocol proto : {Protocol::LL, Protocol::LL128}) {
      CollectivePlan q = model(proto);
      if (q.closed_form_s() < best.closed_form_s()) best = std::move(q);
    }
  // Even channels load the same links alike: simulate them as one ring carrying all of them,
  // at the full bandwidth of its hops (the closed form is unchanged: C times the bytes at C
  // times the share).
  if (all_even && best.rings.size() > 1) {
    best.rings.resize(1);
    best.step_bytes *= p.channels;
    best.wire_bytes *= p.channels;
    const int c = p.channels;
    for (Hop2& h : best.rings[0].hops) h.share_Bps *= c;
  }
  return best;
}

}  // namespace overlapsim
