#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"

#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/error.hpp"
#include "sim/nccl_constants.hpp"
#include "sim/link_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace overlapsim {

using namespace plan_detail;

namespace {

// NCCL's ring latencies, wire fractions and Simple step (sim/nccl_constants.hpp).
using nccl::kBaseLatRing;
using nccl::kHwLatRing;
using nccl::kSliceBytes;
using nccl::kWireFraction;

// Ring Simple (src/enqueue.cc: chunkSize = stepSize · chunkSteps; src/include/collectives.h
// ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS NCCL_STEPS/2 = 4, SLICESTEPS NCCL_STEPS/4 = 2): a
// loop of a channel moves one 2 MiB chunk per rank, each step in chunkSteps / sliceSteps = 2
// slices of at least stepSize · sliceSteps / 32 = 32 KiB (src/device/prims_simple.h).
constexpr double kSimpleRingChunkBytes = 4 * kSliceBytes;
constexpr double kSimpleMinSliceBytes = 2 * kSliceBytes / 32;
// A chain's slice by protocol (LL, LL128, Simple), payload bytes: what a member receives before
// it forwards. Simple waits for NCCL's whole 512 KiB step (its flag follows the data: the
// receiver polls one flag per step, src/device/prims_simple.h); LL and LL128 carry a flag in
// every 16-byte or 128-byte line (prims_ll.h, prims_ll128.h), so a member forwards each line as
// it lands: LL as its 32 KiB step of payload (DEFAULT_LL_BUFFSIZE / NCCL_STEPS, half of it
// flags), LL128 within its 576,000 B step modelled as 64 KiB slices, so that a slice's fill
// along the chain costs about its latency (2.5 us of wire per NVLink hop of a DGX A100 at 8
// channels) as line-by-line forwarding does, for 8x the flows of a 512 KiB slice.
constexpr double kChainSliceBytes[3] = {32768.0, 65536.0, kSliceBytes};

/// The cap on one ring hop's share (wire bytes/s) that NCCL's protocol limits set for `proto`
/// over `nodes` nodes, for a plan of `channels` channels standing for NCCL's `nccl_channels`
/// (below); +inf for Simple.
//
// NCCL's per-protocol bandwidth limits of the ring (src/graph/tuning.cc ncclTopoTuneModel and
// its tuner constants llMaxBws, perChMaxRingLL128Bws; GB/s of busBw), by NCCL's compute
// capability index (Volta < 8.0 ≤ Ampere < 9.0 ≤ Hopper < 10.0 ≤ Blackwell):
//   LL    busBw ≤ llMaxBw: one node by GPU (39.0, 87.7, 141.0, 282.0); across nodes by the
//         nodes' CPU vendor (Topology::cpu_vendor): AMD 2 nodes 22.5, more 19.0; any other (or
//         not stated) 39.0 and 20.4;
//   LL128 busBw ≤ nChannels · perChMaxRingLL128Bw (20.0, 20.0, 36.7, 40.0).
// A ring's busBw is the payload rate of each of its hops summed over channels, so a channel's
// hop moves at most llMaxBw / C (LL) or perChMaxRingLL128Bw · C_nccl / C (LL128: NCCL's bound
// counts its own channels C_nccl, which the plan's C stand for) of payload: that over the
// protocol's wire fraction caps its share (wire bytes/s).
double ring_protocol_cap_Bps(const Topology& topo, Protocol proto, int nodes, int channels, int nccl_channels) {
  const int pi = static_cast<int>(proto);
  if (proto == Protocol::LL) {
    const double bus = nccl::ll_max_busbw(compute_capability_index(topo), topo.cpu_vendor == "amd", nodes);
    return bus / channels / kWireFraction[pi];
  }
  if (proto == Protocol::LL128)
    return nccl::kPerChRingLL128[compute_capability_index(topo)][0] * nccl_channels / channels / kWireFraction[pi];
  return std::numeric_limits<double>::infinity();
}

}  // namespace

namespace plan_detail {

std::vector<std::vector<int>> members_by_node(const Topology& topo, const std::vector<int>& ranks) {
  std::vector<std::vector<int>> out;
  std::map<int, size_t> index;
  for (int pos = 0; pos < static_cast<int>(ranks.size()); ++pos) {
    auto [it, fresh] = index.try_emplace(topo.node_of(ranks[pos]), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(pos);
  }
  return out;
}

int compute_capability_index(const Topology& topo) {
  const int cc = device_spec(topo.gpu_model()).compute_capability;
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

int communicator_channels(const Topology& topo, const std::vector<int>& ranks, int nodes, int fallback) {
  const int c = topo.nccl_channels(nodes, local_ranks(topo, ranks));
  return c > 0 ? c : std::max(1, fallback);
}

Hop2 measure_hop(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, int a, int b) {
  Hop2 h;
  h.src_pos = a;
  h.dst_pos = b;
  h.bandwidth_Bps = std::numeric_limits<double>::infinity();
  const std::vector<Hop>& route = topo.route(ranks[a], ranks[b]);
  for (const Hop& hop : route) {
    const Link& l = topo.link(hop.link_id);
    h.links.push_back(directed_link(hop, l));
    h.bandwidth_Bps = std::min(h.bandwidth_Bps, l.bandwidth_Bps * eff.of(l.kind));
    h.route_latency_s += l.latency_s;
  }
  h.kind = route_kind(topo, route);
  return h;
}

HopKind route_kind(const Topology& topo, const std::vector<Hop>& route) {
  bool net = false, pcie = false;
  for (const Hop& hop : route) {
    const LinkKind k = topo.link(hop.link_id).kind;
    net |= k == LinkKind::Network;
    pcie |= k == LinkKind::Pcie || k == LinkKind::Upi;
  }
  return net ? HopKind::Network : pcie ? HopKind::Pcie : HopKind::NvLink;
}

/// Each hop's share of its links while every hop in `hops` sends at once.
void set_shares(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                const std::vector<Hop2*>& hops) {
  std::map<int, int> users;
  for (const Hop2* h : hops)
    for (int l : h->links) ++users[l];
  for (Hop2* h : hops) {
    h->share_Bps = std::numeric_limits<double>::infinity();
    for (const Hop& hop : topo.route(ranks[h->src_pos], ranks[h->dst_pos])) {
      const Link& l = topo.link(hop.link_id);
      const int key = directed_link(hop, l);
      h->share_Bps = std::min(h->share_Bps, l.bandwidth_Bps * eff.of(l.kind) / users[key]);
    }
  }
}

}  // namespace plan_detail

void CollectiveOptions::read_profile(const Profile& profile) {
  tuning = profile.tuning;
  simple_slice_nvlink_s = profile.simple_slice_nvlink_s;
  ll128_step_nvlink_s = profile.ll128_step_nvlink_s;
  ll128_busbw_nvlink_Bps = profile.ll128_busbw_nvlink_Bps;
  nvls_loop_s = profile.nvls_loop_s;
  p2p_channel_nvlink_Bps = profile.p2p_channel_nvlink_Bps;
  p2p_round_s = profile.p2p_round_s;
}

namespace {

/// Channel c's ring order: members grouped by node in order of first appearance; node 0 starts
/// at its member (c mod m); every next node starts at the member with the local index the
/// previous node left from, so that the hop between nodes stays on one rail.
///
/// Nodes holding unlike numbers of members (a short last node, 3 + 3 + 2): NCCL's communicator
/// keeps the fewest channels any node's search found (src/init.cc, graphs[a]->nChannels = min
/// over the ranks' graphInfo), so every node's rings leave and enter through the NICs of as
/// many GPUs as the smallest node holds, r: ring c enters and leaves each node through its first
/// r members (node 0 at member c mod r), visiting the others in between (regression: 3 + 3 + 2
/// GPUs of DGX H100 nodes sent 5 of 8 rings through one NIC of the short node, 75.1 GB/s busbw
/// at 1 GiB where 2 + 2 + 2 + 2 gives 93.9).
std::vector<int> ring_order(const Topology& topo, const std::vector<int>& ranks, int c) {
  std::vector<int> node_order;
  std::map<int, std::vector<int>> by_node;
  for (int pos = 0; pos < static_cast<int>(ranks.size()); ++pos) {
    const int node = topo.node_of(ranks[pos]);
    if (!by_node.count(node)) node_order.push_back(node);
    by_node[node].push_back(pos);
  }
  size_t fewest = ranks.size(), most = 0;
  for (const auto& [node, members] : by_node) {
    fewest = std::min(fewest, members.size());
    most = std::max(most, members.size());
  }
  const bool uneven = fewest < most;
  std::vector<int> order;
  int exit_local = -1;
  for (size_t k = 0; k < node_order.size(); ++k) {
    const auto& members = by_node[node_order[k]];
    const int m = static_cast<int>(members.size());
    const int r = uneven ? static_cast<int>(fewest) : m;  // the members a ring may enter and leave by
    int start = c % r;
    if (k > 0 && exit_local >= 0)
      for (int i = 0; i < r; ++i)
        if (topo.gpu(ranks[members[i]]).local_index == exit_local) start = i;
    // The node's members visited from `start`: the ones past the first r (if any), then the rest
    // of the first r; the last one visited leaves the node.
    order.push_back(members[start]);
    for (int i = r; i < m; ++i) order.push_back(members[i]);
    for (int i = 1; i < r; ++i) order.push_back(members[(start + i) % r]);
    exit_local = topo.gpu(ranks[order.back()]).local_index;
  }
  return order;
}

/// Smallest p dividing n with v[i] == v[(i + p) mod n] for every i.
template <class Eq>
int cyclic_period(int n, Eq same) {
  for (int p = 1; p < n; ++p) {
    if (n % p != 0) continue;
    bool ok = true;
    for (int i = p; i < n && ok; ++i) ok = same(i, i - p);
    if (ok) return p;
  }
  return n;
}

}  // namespace

bool uniform_ring(const ChannelPlan& ch) {
  for (const Hop2& h : ch.hops) {
    const Hop2& a = ch.hops.front();
    if (h.route_latency_s != a.route_latency_s || h.step_latency_s != a.step_latency_s || h.share_Bps != a.share_Bps)
      return false;
  }
  return true;
}

double ring_channel_s(const ChannelPlan& ch, double wire_bytes, int steps) {
  const int n = static_cast<int>(ch.hops.size());
  if (n == 0 || steps <= 0) return 0;
  if (uniform_ring(ch)) return steps * (ch.hops[0].step_latency_s + wire_bytes / ch.hops[0].share_Bps);
  std::vector<double> d(n), e(n);
  for (int i = 0; i < n; ++i) {
    const Hop2& h = ch.hops[i];
    d[i] = wire_bytes / h.share_Bps;
    e[i] = h.step_latency_s + d[i];
  }
  // Longest path of `steps` edges ending with a move (e_i >= its hop's flow time, so a move
  // outweighs a final stay). A path from hop j with m moves pays Σ e over those m hops plus
  // (steps − m) times the largest d among the m hops it left. Starting hops one period apart
  // give the same paths, and once m >= n (every hop left) the weights of m and m + n differ by
  // Σe − n·max d, so m <= 2n and one extrapolation per m cover them all.
  const int p = cyclic_period(n, [&](int a, int b) { return d[a] == d[b] && e[a] == e[b]; });
  double sum_e = 0, max_d = 0;
  for (int i = 0; i < n; ++i) {
    sum_e += e[i];
    max_d = std::max(max_d, d[i]);
  }
  const double cycle = sum_e - n * max_d;
  double best = 0;
  for (int j = 0; j < p; ++j) {
    double moved = 0, top = 0;
    const int last = std::min(steps, 2 * n);
    for (int m = 1; m <= last; ++m) {
      top = std::max(top, d[(j + m - 1) % n]);
      moved += e[(j + m - 1) % n];
      const double w = moved + (steps - m) * top;
      best = std::max(best, w);
      if (m >= n && cycle > 0) best = std::max(best, w + ((steps - m) / n) * cycle);
    }
  }
  return best;
}

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
  if (runs_in_bulk()) return base_latency_s + bulk_s;
  if (algorithm == CollectiveAlgorithm::Tree) {
    double t = 0;
    for (const TreePlan& tp : trees) t = std::max(t, tp.pipeline_s(steps, wire_bytes, last_wire_bytes > 0 ? last_wire_bytes : -1));
    return base_latency_s + t;
  }
  double t = 0;
  for (const auto& ch : rings)
    t = std::max(t, chain ? chain_waves.chain_s() : ring_channel_s(ch, wire_bytes, steps));
  return base_latency_s + t;
}

long long CollectivePlan::tree_flows() const {
  long long f = 0;
  if (algorithm == CollectiveAlgorithm::Tree)
    for (size_t i = 0; i < trees.size(); ++i) f += 2LL * (members - 1) * steps;
  return f;
}

long long CollectivePlan::chain_flows() const {
  if (!chain) return 0;
  long long f = 0;
  for (const ChannelPlan& ch : rings) f += static_cast<long long>(ch.hops.size()) * steps;
  return f;
}

std::vector<double> CollectivePlan::member_ends_s() const {
  std::vector<double> e(members, 0.0);
  if (members <= 1 || steps == 0) return e;
  if (chain) {
    // Member at chain position p (per channel) ends when its last slice's flow is done; the
    // tail when that slice has arrived (ChainWaves::ends; the latest of them is the closed form).
    for (size_t c = 0; c < rings.size(); ++c)
      for (int p = 0; p < members; ++p)
        e[rings[c].order[p]] = std::max(e[rings[c].order[p]], base_latency_s + chain_waves.ends[c][p]);
    return e;
  }
  if (algorithm != CollectiveAlgorithm::Tree) return std::vector<double>(members, closed_form_s());
  for (const TreePlan& tp : trees) {
    const std::vector<double> t = tp.end_times(steps, wire_bytes, last_wire_bytes > 0 ? last_wire_bytes : -1);
    for (int v = 0; v < members; ++v) e[v] = std::max(e[v], base_latency_s + t[v]);
  }
  return e;
}

double tree_received_bytes(const CollectivePlan& p, int pos) {
  OVERLAPSIM_CHECK(p.algorithm == CollectiveAlgorithm::Tree, "not a tree plan");
  double b = 0;
  for (const TreePlan& tp : p.trees) {
    const int from = static_cast<int>(tp.children[pos].size()) + (pos == tp.root ? 0 : 1);
    b += tp.multiplicity * p.channel_bytes() * from;
  }
  return b;
}

double received_bytes_per_rank(const CollectivePlan& p) {
  if (p.members <= 1) return 0;
  // NVLS_TREE and NVLS across nodes: the result, through its NVSwitch port.
  if (p.algorithm == CollectiveAlgorithm::NvlsTree || (p.algorithm == CollectiveAlgorithm::Nvls && p.runs_in_bulk()))
    return p.step_bytes;
  if (p.algorithm == CollectiveAlgorithm::CollnetDirect || p.algorithm == CollectiveAlgorithm::CollnetChain) {
    double b = 0;  // the mean over members of what its flows deliver (a head's include the switch's result)
    for (const CollectivePlan::BulkFlow& f : p.bulk) b += f.bytes;
    return b / p.members;
  }
  if (p.algorithm == CollectiveAlgorithm::Pat) {  // what its flows deliver to each member: n − 1 parts
    double b = 0;
    for (const CollectivePlan::BulkFlow& f : p.bulk)
      if (f.dst_pos == 0) b += f.bytes;
    return b;
  }
  if (p.algorithm == CollectiveAlgorithm::Tree) {
    double sum = 0;
    for (int v = 0; v < p.members; ++v) sum += tree_received_bytes(p, v);
    return sum / p.members;
  }
  // Every ring (a merged ring carries all channels' bytes) delivers step_bytes per step (a
  // chain's last slice, last_step_bytes).
  return p.channel_bytes() * static_cast<double>(p.rings.size());
}

int node_count(const Topology& topo, const std::vector<int>& ranks) {
  std::vector<int> nodes;
  for (int r : ranks) nodes.push_back(topo.node_of(r));
  std::sort(nodes.begin(), nodes.end());
  return static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

int local_ranks(const Topology& topo, const std::vector<int>& ranks) {
  int least = 0;
  for (const std::vector<int>& on : plan_detail::members_by_node(topo, ranks)) {
    const int here = static_cast<int>(on.size());
    least = least == 0 ? here : std::min(least, here);
  }
  return least;
}

namespace plan_detail {

NcclTunerInputs tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, int nodes,
                             CollectiveKind kind, const CollectiveOptions& opt) {
  NcclTunerInputs in;
  in.ranks = static_cast<int>(ranks.size());
  in.nodes = nodes;
  in.cc_index = compute_capability_index(topo);
  in.amd_cpu = topo.cpu_vendor == "amd";
  const int comm = communicator_channels(topo, ranks, nodes, opt.channels);
  in.comm_channels = comm;
  in.graph_channels = topo.nccl_channels(nodes, local_ranks(topo, ranks)) > 0 ? std::max(1, comm / 2) : std::max(1, opt.channels);
  const Protocol simple = Protocol::Simple;
  const CollectivePlan rings =
      plan_ring(topo, eff, ranks, CollectiveKind::AllReduce, 0, in.graph_channels, opt, &simple);
  for (const ChannelPlan& ch : rings.rings) {
    double least = std::numeric_limits<double>::infinity();
    for (const Hop2& h : ch.hops) {
      least = std::min(least, h.share_Bps);
      in.intra_pcie |= h.kind == HopKind::Pcie;
    }
    if (!ch.hops.empty()) in.graph_busbw_Bps += least;
  }
  in.ll128 = !in.intra_pcie;
  in.fp8_ring_relegated = fp8_ring_relegated(opt, kind, in.ranks);
  return in;
}

}  // namespace plan_detail

namespace {

/// Channel rings of a plan with `channels` channels (hops measured, shares set); `all_even`: every
/// channel's hops have one bandwidth.
std::vector<ChannelPlan> build_rings(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                                     CollectiveKind kind, bool chain, int channels, bool* all_even) {
  const int n = static_cast<int>(ranks.size());
  std::vector<ChannelPlan> rings(channels);
  *all_even = true;
  for (int c = 0; c < channels; ++c) {
    ChannelPlan& ch = rings[c];
    ch.order = ring_order(topo, ranks, c);
    // A chain runs along the channel's ring from or to the root (member 0), as NCCL's ring
    // patterns do (src/device/broadcast.h, reduce.h runRing): Broadcast from the root to its
    // ring predecessor, which only receives; Reduce from the root's successor, which only sends,
    // to the root (regression: chains started at the channel's first member, so over 2 GPUs half
    // the channels ran 1 -> 0, and a Broadcast reached 336 GB/s over a 300 GB/s port).
    if (chain) {
      const auto root = std::find(ch.order.begin(), ch.order.end(), 0);
      std::rotate(ch.order.begin(), kind == CollectiveKind::Reduce ? root + 1 : root, ch.order.end());
    }
    const int nh = chain ? n - 1 : n;
    for (int i = 0; i < nh; ++i) ch.hops.push_back(measure_hop(topo, eff, ranks, ch.order[i], ch.order[(i + 1) % n]));
    for (int i = 0; i < nh; ++i) {
      const Hop2& h = ch.hops[i];
      const Hop2& b = ch.hops[ch.bottleneck];
      if (h.bandwidth_Bps < b.bandwidth_Bps || (h.bandwidth_Bps == b.bandwidth_Bps && h.route_latency_s > b.route_latency_s))
        ch.bottleneck = i;
    }
    for (const Hop2& h : ch.hops) ch.even &= h.bandwidth_Bps == ch.hops[0].bandwidth_Bps;
    *all_even &= ch.even;
  }
  // Each hop's share of its links while every channel's hops of a step send at once.
  std::vector<Hop2*> all;
  for (auto& ch : rings)
    for (Hop2& h : ch.hops) all.push_back(&h);
  set_shares(topo, eff, ranks, all);
  return rings;
}

}  // namespace

double simple_slices_per_step(double bytes, int ranks, int nccl_channels) {
  OVERLAPSIM_CHECK(bytes >= 0 && ranks >= 1 && nccl_channels >= 1, "simple_slices_per_step: bad arguments");
  const double loop = static_cast<double>(nccl_channels) * ranks * kSimpleRingChunkBytes;
  const double loops = std::max(1.0, std::ceil(bytes / loop));
  const double last_chunk = (bytes - (loops - 1) * loop) / (static_cast<double>(nccl_channels) * ranks);
  return 2 * (loops - 1) + std::clamp(std::ceil(last_chunk / kSimpleMinSliceBytes), 1.0, 2.0);
}

namespace plan_detail {

CollectivePlan plan_ring(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                         CollectiveKind kind, double bytes, int channels_forced, const CollectiveOptions& opt,
                         const Protocol* forced_protocol) {
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::Ring;
  p.members = static_cast<int>(ranks.size());
  p.chain = kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
  p.channels = std::max(1, channels_forced > 0 ? channels_forced : opt.channels);
  const int n = p.members;
  if (n <= 1) return p;
  const int nodes = node_count(topo, ranks);
  // Across nodes the rings leave each node through the NICs of the group's GPUs there, one rail
  // per ring in turn: a ring count those NICs do not divide (8 rings over 3) loads one NIC more
  // than the others, which NCCL's one channel per NIC does not. The rings are rounded up to a
  // multiple of the NICs (9 over 3; regression: 3, 5, 6 and 7 GPUs a node of a DGX H100 moved
  // no more than 4 at 8 rings). A Broadcast's or Reduce's chains leave through those NICs alike.
  if (channels_forced <= 0 && nodes > 1) {
    const int nics = topo.nccl_channels(nodes, local_ranks(topo, ranks)) / 2;
    // Fewer rings than NICs (a communicator set to 1 or 2 channels) stay as set: each still
    // leaves through a NIC of its own.
    if (nics > 0 && p.channels > nics && p.channels % nics != 0) p.channels = (p.channels / nics + 1) * nics;
  }

  // Rings by channel count (NCCL lowers the count for small sizes, per protocol: nccl_tuning.hpp),
  // kept in the options' memo where they have one (another size of this group builds the same).
  using Rings = RingMemo::Rings;
  std::map<int, Rings> by_count;
  const int chain_kind = p.chain ? static_cast<int>(kind) : -1;
  auto rings_for = [&](int channels) -> const Rings& {
    if (opt.ring_memo != nullptr) {
      auto [at, fresh] = opt.ring_memo->by_key.try_emplace(std::make_tuple(ranks, chain_kind, channels));
      if (fresh) at->second.rings = build_rings(topo, eff, ranks, kind, p.chain, channels, &at->second.all_even);
      return at->second;
    }
    auto found = by_count.find(channels);
    if (found != by_count.end()) return found->second;
    Rings& r = by_count[channels];
    r.rings = build_rings(topo, eff, ranks, kind, p.chain, channels, &r.all_even);
    return r;
  };
  // The ring's intra-node bandwidth over all its channels (NCCL's bwIntra · nChannels), for the
  // thread count of ring Simple: the communicator's channels' first hop.
  double ring_bw = 0;
  for (const ChannelPlan& ch : rings_for(p.channels).rings) ring_bw += ch.hops.empty() ? 0.0 : ch.hops[0].share_Bps;

  // Protocol: forced, or the least modelled time.
  auto model = [&](Protocol proto) {
    const int pi = static_cast<int>(proto);
    CollectivePlan q = p;
    q.protocol = proto;
    if (channels_forced <= 0 && !opt.textbook)
      q.channels = nccl_launch(CollectiveAlgorithm::Ring, proto, bytes, n, p.channels, ring_bw).channels;
    const Rings& r = rings_for(q.channels);
    // Steps and bytes per step.
    const double per_channel = bytes / q.channels;
    if (q.chain) {
      // Full slices and a last one of what is left (CollectivePlan::last_step_bytes).
      q.steps = std::max(1, static_cast<int>(std::ceil(per_channel / kChainSliceBytes[pi])));
      q.step_bytes = std::min(per_channel, kChainSliceBytes[pi]);
      q.last_step_bytes = per_channel - (q.steps - 1) * q.step_bytes;
      q.last_wire_bytes = q.last_step_bytes / kWireFraction[pi];
    } else {
      q.steps = kind == CollectiveKind::AllReduce ? 2 * (n - 1) : n - 1;
      q.step_bytes = per_channel / n;
    }
    q.base_latency_s = opt.textbook ? 0.0 : kBaseLatRing[pi];
    q.wire_bytes = q.step_bytes / kWireFraction[pi];
    q.rings = r.rings;
    // NCCL's thread blocks: its launch loop over the communicator's channels (header).
    const int comm = communicator_channels(topo, ranks, nodes, p.channels);
    const int nc = channels_forced > 0 || opt.textbook
                       ? q.channels
                       : nccl_launch(CollectiveAlgorithm::Ring, proto, bytes, n, comm, ring_bw).channels;
    q.sm_blocks = nc;
    // Simple's per-slice cost on NVLink hops (header): NCCL's slices per step of this plan.
    double slice_s = 0;
    if (proto == Protocol::Simple && !opt.textbook && opt.simple_slice_nvlink_s > 0) {
      // A chain's slice pays the fence once per hop on its way (header); a ring's step pays it
      // for each of NCCL's slices of the step.
      slice_s = q.chain ? opt.simple_slice_nvlink_s : opt.simple_slice_nvlink_s * simple_slices_per_step(bytes, n, nc);
    }
    const double cap = opt.textbook ? std::numeric_limits<double>::infinity()
                                    : ring_protocol_cap_Bps(topo, proto, nodes, q.channels, nc);
    // LL128 on NVLink hops as measured (header): a step cost and a busbw ceiling over the channels.
    const bool ll128_measured = proto == Protocol::LL128 && !opt.textbook && !q.chain;
    const double ll128_step_s = ll128_measured ? opt.ll128_step_nvlink_s : 0.0;
    const double ll128_nvlink_cap = ll128_measured && opt.ll128_busbw_nvlink_Bps > 0
                                        ? opt.ll128_busbw_nvlink_Bps / q.channels / kWireFraction[pi]
                                        : std::numeric_limits<double>::infinity();
    // A step across nodes with one member per node pays the tree's network hwLat, as NCCL's
    // tuner has it (tuning.cc: "with ppn=1 latencies are fully exposed, use the Tree network
    // latency"; LL 5.0 against 2.7 us, LL128 8.5 against 4.0), so that the ring is timed on
    // the terms NCCL ranks it against PAT by (nccl_tuning.cpp ring_latency_s). Not a chain:
    // NCCL's tuner times Broadcast and Reduce with the ring's own network hwLat.
    const bool ppn1 = nodes == n && !q.chain;
    for (auto& ch : q.rings) {
      for (auto& h : ch.hops) {
        const double hw_lat = ppn1 && h.kind == HopKind::Network ? nccl::kHwLatTree[2][pi]
                                                                 : kHwLatRing[static_cast<int>(h.kind)][pi];
        h.step_latency_s = opt.textbook ? h.route_latency_s : std::max(h.route_latency_s, hw_lat);
        if (h.kind == HopKind::NvLink) h.step_latency_s += slice_s + ll128_step_s;
        // A chain's step latency, the fence with it, overlaps the sender's next slice (header).
        h.serial_s = 0;
        h.share_Bps = std::min(h.share_Bps, cap);
        if (h.kind == HopKind::NvLink) h.share_Bps = std::min(h.share_Bps, ll128_nvlink_cap);
      }
    }
    if (q.chain) q.chain_waves = chain_waves(topo, eff, q.rings, q.wire_bytes, n, q.steps, cap, q.last_wire_bytes);
    return q;
  };
  // NCCL enables LL128 by default only where no GPU-to-GPU path crosses PCIe (tuning.cc: typeIntra
  // <= PATH_NVB; the GPU-NIC hop of a DGX node is within the PATH_PXB it allows across nodes).
  bool ll128_auto = true;
  for (const ChannelPlan& ch : rings_for(p.channels).rings)
    for (const Hop2& h : ch.hops) ll128_auto &= h.kind != HopKind::Pcie;
  CollectivePlan best = least_protocol(model, forced_protocol, opt, kind, ll128_auto);
  // Even channels over the same hops load the same links alike: simulate them as one ring
  // carrying all of them, at the full bandwidth of its hops (the closed form is unchanged: C
  // times the bytes at C times the share). Channels over other hops (chains along rings that
  // leave their nodes through different GPUs) stay apart (regression: a Broadcast chain's 8 channels were
  // merged onto channel 0's hops at 8 times their 1/7 share, beyond the link: flow 14% slow).
  auto hop_set = [](const ChannelPlan& ch) {
    std::vector<std::pair<int, int>> v;
    for (const Hop2& h : ch.hops) v.emplace_back(h.src_pos, h.dst_pos);
    std::sort(v.begin(), v.end());
    return v;
  };
  bool same_hops = true;
  for (size_t c = 1; c < best.rings.size() && same_hops; ++c)
    same_hops = hop_set(best.rings[c]) == hop_set(best.rings[0]);
  if (rings_for(best.channels).all_even && best.rings.size() > 1 && same_hops) {
    best.rings.resize(1);
    best.step_bytes *= best.channels;
    best.wire_bytes *= best.channels;
    best.last_step_bytes *= best.channels;
    best.last_wire_bytes *= best.channels;
    const int c = best.channels;
    for (Hop2& h : best.rings[0].hops) h.share_Bps *= c;
  }
  return best;
}

}  // namespace plan_detail

}  // namespace overlapsim
