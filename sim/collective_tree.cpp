// NCCL's double binary tree (collective_plan.hpp): which member sends to which, the pipeline's
// contention-free end times, and the tree AllReduce's plan (its chunks, shares and protocol).
#include "sim/collective_plan.hpp"

#include "sim/collective_plan_detail.hpp"
#include "sim/error.hpp"
#include "sim/nccl_constants.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/link_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace overlapsim {

namespace {

/// Parent of i in the binary tree of n indices rooted at 0 that alternates leaves and interior
/// indices (NCCL src/graph/trees.cc ncclGetBtree): the odd indices are leaves; an index whose
/// lowest set bit is b hangs under (i xor b) | 2b, or under i xor b when that is out of range.
int btree_parent(int n, int i) {
  if (i == 0) return -1;
  int bit = 1;
  while (!(i & bit)) bit <<= 1;
  const int up = (i ^ bit) | (bit << 1);
  return up < n ? up : (i ^ bit);
}

/// Index of node i in tree t's own numbering, and back (tree 1: mirrored or shifted).
int to_tree(int n, int t, int i) { return t == 0 ? i : n % 2 == 0 ? n - 1 - i : (i - 1 + n) % n; }
int from_tree(int n, int t, int x) { return t == 0 ? x : n % 2 == 0 ? n - 1 - x : (x + 1) % n; }

}  // namespace

int dtree_parent(int n, int t, int i) {
  OVERLAPSIM_CHECK(n >= 1 && i >= 0 && i < n && (t == 0 || t == 1), "dtree_parent out of range");
  const int up = btree_parent(n, to_tree(n, t, i));
  return up < 0 ? -1 : from_tree(n, t, up);
}

bool dtree_first_child(int n, int t, int i) {
  const int x = to_tree(n, t, i);
  const int up = btree_parent(n, x);
  OVERLAPSIM_CHECK(up >= 0, "the root has no parent");
  return x < up;
}

TreePlan build_tree(const Topology& topo, const std::vector<int>& ranks, int channel) {
  const std::vector<std::vector<int>> by_node = plan_detail::members_by_node(topo, ranks);
  const int nn = static_cast<int>(by_node.size());
  const int t = channel % 2;
  TreePlan tp;
  tp.parent.assign(ranks.size(), -1);
  tp.children.assign(ranks.size(), {});
  // intra[k][j]: node k's chain, rotated by the channel.
  std::vector<std::vector<int>> intra(nn);
  for (int k = 0; k < nn; ++k) {
    const auto& m = by_node[k];
    const int sz = static_cast<int>(m.size());
    for (int j = 0; j < sz; ++j) intra[k].push_back(m[(channel + j) % sz]);
  }
  auto link = [&](int child, int parent) {
    tp.parent[child] = parent;
    tp.children[parent].push_back(child);
  };
  // Chains first, so that a member's first child is its chain successor (NCCL's down[0]).
  for (int k = 0; k < nn; ++k)
    for (size_t j = 1; j < intra[k].size(); ++j) link(intra[k][j], intra[k][j - 1]);
  for (int k = 0; k < nn; ++k) {
    const int up = dtree_parent(nn, t, k);
    if (up < 0) {
      tp.root = intra[k][0];
      continue;
    }
    // Balanced tree: the first child node hangs under the parent's intra[1], the second under
    // its intra[0] (NCCL src/graph/connect.cc, NCCL_TOPO_PATTERN_BALANCED_TREE).
    const auto& pc = intra[up];
    const int at = dtree_first_child(nn, t, k) && pc.size() > 1 ? pc[1] : pc[0];
    link(intra[k][0], at);
  }
  return tp;
}

std::vector<double> TreePlan::end_times(int slices, double wire_bytes, double last_wire_bytes) const {
  // Recurrences (collective_plan.hpp): a hop h with predecessors P(h) (the up hops of its
  // sender's children; for a down hop, its sender's own down hop, or every up hop into the root)
  // delivers its last slice at
  //   E(h) = e_h + max( max over P(h) of E(p), S(h) + (K − 1) · d_h ),
  // S(h) the longest chain of first-slice arrivals before h (no waiting): the last slice either
  // follows its predecessor's last slice, or queued behind K − 1 sends of h itself, each keeping
  // the sender busy d_h (the step latency beyond it overlaps the next send). (Exact for equal
  // slices: the latest path through a predecessor's slice j and then h's own queue is linear in
  // j between them, so it is taken at j = 0 or K − 1.)
  //
  // A shorter last slice (CollectivePlan::last_wire_bytes): slices 0..K−2 are those of an
  // equal-sliced tree of K − 1 slices, whose E(h) is when slice K − 2 arrived over h; the last
  // one leaves h once h's sender is free of slice K − 2 (sent at E(h) − e_h, busy d_h) and it has
  // arrived from P(h), and takes h's time for its own bytes:
  //   E'(h) = e'_h + max( max over P(h) of E'(p), E(h) − e_h + d_h ).
  const int n = static_cast<int>(parent.size());
  std::vector<double> end(n, 0.0);
  if (n <= 1 || slices <= 0) return end;
  const bool shorter = last_wire_bytes >= 0 && last_wire_bytes != wire_bytes;
  if (shorter && slices == 1) return end_times(1, last_wire_bytes);
  const int equal = shorter ? slices - 1 : slices;  // the slices of the equal-sliced tree
  const double waits = equal - 1;
  // Breadth-first order from the root: parents before children.
  std::vector<int> order{root};
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : children[order[i]]) order.push_back(c);
  OVERLAPSIM_CHECK(static_cast<int>(order.size()) == n, "tree does not span the group");
  std::vector<double> up_first(n, 0.0), up_last(n, 0.0);  // into pos: first slice ready / last up
  std::vector<double> eu(n, 0.0);                          // E(up hop of pos)
  for (int i = n - 1; i >= 0; --i) {
    const int v = order[i];
    double first = 0, last = 0;  // longest first-slice chain into v; latest last slice into v
    for (int c : children[v]) {
      first = std::max(first, up_first[c]);
      last = std::max(last, eu[c]);
    }
    if (v == root) {
      up_first[v] = first;
      up_last[v] = last;
      continue;
    }
    const double t = hop_s(up[v], wire_bytes);
    eu[v] = t + std::max(last, first + waits * occupancy_s(up[v], wire_bytes));
    up_first[v] = first + t;
  }
  // Down hops: the root forwards slice k once every child's slice k has arrived.
  std::vector<double> dn_first(n, 0.0), ed(n, 0.0);  // into pos: first slice arrival; E(down hop)
  dn_first[root] = up_first[root];
  ed[root] = up_last[root];
  for (int i = 1; i < n; ++i) {
    const int v = order[i], p = parent[v];
    const double t = hop_s(down[v], wire_bytes);
    ed[v] = t + std::max(ed[p], dn_first[p] + waits * occupancy_s(down[v], wire_bytes));
    dn_first[v] = dn_first[p] + t;
  }
  if (shorter) {  // the last slice, E'
    std::vector<double> eu_last(n, 0.0), ed_last(n, 0.0);
    for (int i = n - 1; i >= 0; --i) {
      const int v = order[i];
      double in = 0;  // the last slice from every child
      for (int c : children[v]) in = std::max(in, eu_last[c]);
      if (v == root) {
        ed_last[v] = in;  // (as ed[root]: what the root's down hops forward)
        continue;
      }
      const double free = eu[v] - hop_s(up[v], wire_bytes) + occupancy_s(up[v], wire_bytes);
      eu_last[v] = hop_s(up[v], last_wire_bytes) + std::max(in, free);
    }
    for (int i = 1; i < n; ++i) {
      const int v = order[i], p = parent[v];
      const double free = ed[v] - hop_s(down[v], wire_bytes) + occupancy_s(down[v], wire_bytes);
      ed_last[v] = hop_s(down[v], last_wire_bytes) + std::max(ed_last[p], free);
    }
    eu.swap(eu_last);
    ed.swap(ed_last);
  }
  // A member is done when it has received its last slice and sent all of its own.
  for (int v = 0; v < n; ++v) {
    double e = v == root ? 0.0 : std::max(ed[v], eu[v]);
    for (int c : children[v]) e = std::max(e, ed[c]);
    end[v] = e;
  }
  return end;
}

double TreePlan::pipeline_s(int slices, double wire_bytes, double last_wire_bytes) const {
  const std::vector<double> e = end_times(slices, wire_bytes, last_wire_bytes);
  return e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
}

namespace plan_detail {

namespace {

using nccl::kBaseLatTree;
using nccl::kHwLatTree;
using nccl::kSliceBytes;
using nccl::kWireFraction;

// Tree chunk payload per protocol (src/enqueue.cc: one step of the protocol's buffer,
// src/init.cc DEFAULT_LL_BUFFSIZE 8 lines · 512 threads · 8 steps · 16 B and
// DEFAULT_LL128_BUFFSIZE 120 · 640 · 8 · 8 B, over NCCL_STEPS 8; LL halves it, LL128 keeps 15/16).
constexpr double kTreeChunkBytes[3] = {65536.0 / 2, 614400.0 / 16 * 15, kSliceBytes};

/// NCCL's tree chunk for an AllReduce of `bytes` over `channels` channels (its call's) and `ranks`
/// ranks on `nodes` nodes, payload bytes (v2.18.5 src/enqueue.cc computeColl; the same in later
/// versions): Simple starts from its step (512 KiB) and halves while nBytes / (channels · chunk)
/// < 8 · depth (down to 128 KiB), < 4 · depth (64 KiB), < depth (32 KiB), depth = ranks / nodes −
/// 1 + log2(nodes) (src/graph/connect.cc); LL128 from its step (614,400 B of lines) while
/// < 64 · s / ppn (down to 128 KiB) and < 16 · s / ppn (32 KiB), s = 1 + log2(nodes) + 0.1 · ppn,
/// carrying 15/16 of it; LL keeps half of its 64 KiB step.
double nccl_tree_chunk_bytes(Protocol proto, double bytes, int channels, int ranks, int nodes) {
  const int log2_nodes = nccl::log2i(nodes);
  const double ppn = static_cast<double>(ranks) / std::max(1, nodes);
  auto per = [&](double chunk) { return std::floor(bytes / (channels * chunk)); };  // NCCL's integer division
  if (proto == Protocol::Simple) {
    const double depth = ranks / std::max(1, nodes) - 1 + log2_nodes;
    double c = kSliceBytes;
    while (per(c) < depth * 8 && c > 131072) c /= 2;
    while (per(c) < depth * 4 && c > 65536) c /= 2;
    while (per(c) < depth && c > 32768) c /= 2;
    return c;
  }
  if (proto == Protocol::LL128) {
    const double steps = 1 + log2_nodes + 0.1 * ppn;
    double c = 614400;
    while (per(c) < steps * 64 / ppn && c > 131072) c /= 2;
    while (per(c) < steps * 16 / ppn && c > 32768) c /= 2;
    return c / 16 * 15;
  }
  return kTreeChunkBytes[0];
}

/// NCCL's limit on a tree AllReduce's busBw for `proto` over `nodes` nodes, with `nccl_channels`
/// channels in NCCL's call, bytes/s (src/graph/tuning.cc ncclTopoTuneModel: Simple ≤ nChannels ·
/// perChMaxTreeBw, LL ≤ llMaxBw, LL128 ≤ nChannels · perChMaxTreeLL128Bw; the per-channel
/// figures by compute capability and node count 1, 2, more; llMaxBw as the ring's).
double tree_protocol_busbw_Bps(const Topology& topo, Protocol proto, int nodes, int nccl_channels) {
  const int cc = compute_capability_index(topo);
  const int by_nodes = nccl::nodes_index(nodes);
  if (proto == Protocol::LL) return nccl::ll_max_busbw(cc, topo.cpu_vendor == "amd", nodes);
  if (proto == Protocol::LL128) return nccl_channels * nccl::kPerChTreeLL128[cc][by_nodes];
  return nccl_channels * nccl::kPerChTree[cc][by_nodes];
}

/// Tree hops' shares: a hop shares a link with the hops whose busy windows overlap its own, a
/// window being [first slice's start, + the K slices' times alone (latency and copy; K − 1
/// whole slices and the last of what is left)], the
/// start as end_times() would place it without sharing (all hops busy at once when K is large;
/// only hops at the same depth when K = 1). The window spans K latencies where the pipeline
/// overlaps all but one (end_times): counted over that longer span, the overlap keeps flow,
/// whose slices contend as they come, equal to the closed form on the tested shared links (a
/// window of one latency and K copies left them up to 5% apart). Exact for hops that share no link.
void set_tree_shares(const Topology& topo, const LinkEfficiency& eff, CollectivePlan& q) {
  struct Window {
    Hop2* hop;
    double from, to;
  };
  std::vector<Window> windows;
  const int n = q.members;
  for (auto& tp : q.trees) {
    for (int v = 0; v < n; ++v) {
      tp.up[v].share_Bps = tp.up[v].bandwidth_Bps;
      tp.down[v].share_Bps = tp.down[v].bandwidth_Bps;
    }
    // First-slice starts without sharing (end_times' S).
    std::vector<int> order{tp.root};
    for (size_t i = 0; i < order.size(); ++i)
      for (int c : tp.children[order[i]]) order.push_back(c);
    std::vector<double> up_start(n, 0.0), into(n, 0.0);  // into[v]: first slice fully reduced at v
    for (int i = n - 1; i >= 0; --i) {
      const int v = order[i];
      for (int c : tp.children[v]) into[v] = std::max(into[v], up_start[c] + TreePlan::hop_s(tp.up[c], q.wire_bytes));
      up_start[v] = into[v];
    }
    std::vector<double> dn_arrive(n, 0.0);
    dn_arrive[tp.root] = into[tp.root];
    for (int i = 1; i < n; ++i) {
      const int v = order[i];
      const double t = TreePlan::hop_s(tp.down[v], q.wire_bytes);
      const double start = dn_arrive[tp.parent[v]];
      dn_arrive[v] = start + t;
      // K slices: K - 1 whole ones and the last of what is left (CollectivePlan::last_wire_bytes).
      const double busy_dn = (q.steps - 1) * t + TreePlan::hop_s(tp.down[v], q.last_wire_bytes);
      const double busy_up =
          (q.steps - 1) * TreePlan::hop_s(tp.up[v], q.wire_bytes) + TreePlan::hop_s(tp.up[v], q.last_wire_bytes);
      for (int m = 0; m < tp.multiplicity; ++m) {
        windows.push_back({&tp.down[v], start, start + busy_dn});
        windows.push_back({&tp.up[v], up_start[v], up_start[v] + busy_up});
      }
    }
  }
  // Per directed link (Hop2::links' key, 2 · link id + direction), the windows crossing it,
  // sorted by start and by end. (A vector by key: a map here took half of a 1024-GPU AllReduce's
  // analytic run.)
  std::vector<std::pair<std::vector<double>, std::vector<double>>> on(2 * static_cast<size_t>(topo.num_links()));
  for (const Window& w : windows)
    for (int l : w.hop->links) {
      on[l].first.push_back(w.from);
      on[l].second.push_back(w.to);
    }
  for (auto& se : on) {
    std::sort(se.first.begin(), se.first.end());
    std::sort(se.second.begin(), se.second.end());
  }
  for (const Window& w : windows) {
    Hop2& h = *w.hop;
    h.share_Bps = std::numeric_limits<double>::infinity();
    for (int key : h.links) {
      const Link& l = topo.link(key / 2);
      const auto& [starts, ends] = on[key];
      // Windows that start before this one ends and end after it starts (itself included).
      const long users = (std::lower_bound(starts.begin(), starts.end(), w.to) - starts.begin()) -
                         (std::upper_bound(ends.begin(), ends.end(), w.from) - ends.begin());
      h.share_Bps = std::min(h.share_Bps, l.bandwidth_Bps * eff.of(l.kind) / std::max(1L, users));
    }
  }
}

}  // namespace

CollectivePlan plan_tree(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, double bytes,
                         int channels_forced, const CollectiveOptions& opt, const Protocol* forced_protocol) {
  const int n = static_cast<int>(ranks.size());
  const int nodes = node_count(topo, ranks);
  // Channels' trees (identical channels merged) and their hops, by channel count.
  std::map<int, std::vector<TreePlan>> by_count;
  auto trees_for = [&](int channels) -> const std::vector<TreePlan>& {
    auto found = by_count.find(channels);
    if (found != by_count.end()) return found->second;
    std::vector<TreePlan>& trees = by_count[channels];
    std::map<std::vector<int>, int> seen;  // parent array → index in trees
    for (int c = 0; c < channels; ++c) {
      TreePlan tp = build_tree(topo, ranks, c);
      auto [it, fresh] = seen.try_emplace(tp.parent, static_cast<int>(trees.size()));
      if (!fresh) {
        ++trees[it->second].multiplicity;
        continue;
      }
      tp.up.resize(n);
      tp.down.resize(n);
      for (int v = 0; v < n; ++v)
        if (v != tp.root) {
          tp.up[v] = measure_hop(topo, eff, ranks, v, tp.parent[v]);
          tp.down[v] = measure_hop(topo, eff, ranks, tp.parent[v], v);
        }
      trees.push_back(std::move(tp));
    }
    return trees;
  };
  auto model = [&](Protocol proto) {
    const int pi = static_cast<int>(proto);
    CollectivePlan q;
    q.kind = CollectiveKind::AllReduce;
    q.algorithm = CollectiveAlgorithm::Tree;
    q.members = n;
    q.protocol = proto;
    q.channels = channels_forced > 0 || opt.textbook
                     ? std::max(1, channels_forced > 0 ? channels_forced : opt.channels)
                     : nccl_launch(CollectiveAlgorithm::Tree, proto, bytes, n, std::max(1, opt.channels)).channels;
    const int comm = communicator_channels(topo, ranks, nodes, opt.channels);
    q.sm_blocks = channels_forced > 0 || opt.textbook ? q.channels
                                                      : nccl_launch(CollectiveAlgorithm::Tree, proto, bytes, n, comm).channels;
    const double per_channel = bytes / q.channels;
    // NCCL's chunk for the size over its call's channels (a textbook tree: the protocol's step).
    const double chunk = opt.textbook ? kTreeChunkBytes[pi] : nccl_tree_chunk_bytes(proto, bytes, q.sm_blocks, n, nodes);
    // Full chunks and a last one of what is left (CollectivePlan::last_step_bytes).
    q.steps = std::max(1, static_cast<int>(std::ceil(per_channel / chunk)));
    q.step_bytes = std::min(per_channel, chunk);
    q.last_step_bytes = per_channel - (q.steps - 1) * q.step_bytes;
    q.wire_bytes = q.step_bytes / kWireFraction[pi];
    q.last_wire_bytes = q.last_step_bytes / kWireFraction[pi];
    q.base_latency_s = opt.textbook ? 0.0 : kBaseLatTree[pi];
    q.trees = trees_for(q.channels);
    // Simple's per-slice cost on NVLink hops (header): NCCL's tree channel sends its chunks of
    // the size (over its call's channels) where this plan's sends q.steps.
    const double nccl_slices = std::max(1.0, std::ceil(bytes / (q.sm_blocks * chunk)));
    const double slice_s = proto == Protocol::Simple && !opt.textbook && opt.simple_slice_nvlink_s > 0
                               ? opt.simple_slice_nvlink_s * nccl_slices / q.steps
                               : 0.0;
    for (auto& tp : q.trees)
      for (int v = 0; v < n; ++v)
        for (Hop2* h : {&tp.up[v], &tp.down[v]}) {
          h->step_latency_s = opt.textbook ? h->route_latency_s
                                           : std::max(h->route_latency_s, kHwLatTree[static_cast<int>(h->kind)][pi]);
          h->serial_s = 0;
          if (h->kind == HopKind::NvLink) {
            h->step_latency_s += slice_s;
            h->serial_s = slice_s;  // the fence is the copying SMs' own work (header)
          }
        }
    set_tree_shares(topo, eff, q);
    if (!opt.textbook) {
      // NCCL's limits on the tree's busBw (collective_plan.hpp): a member's send rate over its
      // up and down hops of one channel, as a floor on each hop's occupancy per slice.
      const double bus = tree_protocol_busbw_Bps(topo, proto, nodes, q.sm_blocks);
      for (auto& tp : q.trees)
        for (int v = 0; v < n; ++v)
          for (Hop2* h : {&tp.up[v], &tp.down[v]}) {
            double cap = bus;
            if (proto == Protocol::LL128 && h->kind == HopKind::NvLink && opt.ll128_busbw_nvlink_Bps > 0)
              cap = std::min(cap, opt.ll128_busbw_nvlink_Bps);
            h->rate_cap_Bps = cap / (2.0 * q.channels) / kWireFraction[pi];
          }
    }
    return q;
  };
  // As for the ring (plan_ring): LL128 is no automatic choice where a hop joins GPUs over PCIe.
  bool ll128_auto = true;
  for (const TreePlan& tp : trees_for(std::max(1, opt.channels)))
    for (int v = 0; v < n; ++v)
      if (v != tp.root) ll128_auto &= tp.up[v].kind != HopKind::Pcie && tp.down[v].kind != HopKind::Pcie;
  CollectivePlan best = least_protocol(model, forced_protocol, opt, CollectiveKind::AllReduce, ll128_auto);
  // Too many slices' flows to replay one by one: each hop's slices as one flow (tree_in_bulk).
  const long long hop_flows = 2LL * (n - 1) * static_cast<long long>(best.trees.size());
  if (best.tree_flows() > opt.tree_slice_flows && hop_flows <= kMaxTreeFlows) {
    const double last = best.last_wire_bytes > 0 ? best.last_wire_bytes : best.wire_bytes;
    const double per_hop = best.wire_bytes * (best.steps - 1) + last;
    best.bulk.reserve(static_cast<size_t>(hop_flows));
    for (const TreePlan& tp : best.trees)
      for (int v = 0; v < n; ++v)
        if (v != tp.root) {
          best.bulk.push_back({v, tp.parent[v], per_hop * tp.multiplicity});
          best.bulk.push_back({tp.parent[v], v, per_hop * tp.multiplicity});
        }
  }
  return best;
}

}  // namespace plan_detail

}  // namespace overlapsim
