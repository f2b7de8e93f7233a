// Point-to-point messages (Send/Recv and an AllToAll's pieces) as NCCL runs them: the latency a
// message pays beyond its route, and the rate NCCL's channels for it can copy over NVLink
// (collective_plan.hpp).
#include "sim/collective_plan_detail.hpp"

#include "sim/nccl_constants.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/error.hpp"
#include "sim/link_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace overlapsim {

using nccl::kBaseLatRing;
using nccl::kHwLatRing;

namespace {

/// Line rate of one NVLink 2/3/4 link per direction, bytes/s (NVIDIA's V100, A100 and H100
/// architecture whitepapers: 25 GB/s per link per direction); a GPU's NVSwitch port of B bytes/s
/// has B / 25 GB/s links, which NCCL counts as path bw / per-link bw (src/graph/paths.cc).
constexpr double kNvLinkLineRateBps = 25e9;
/// NCCL_P2P_NVL_CHUNKSIZE's default (src/init.cc): 512 KiB; NCCL_P2P_PCI_CHUNKSIZE's and
/// NCCL_P2P_NET_CHUNKSIZE's: 128 KiB.
constexpr double kP2pNvlChunkBytes = 512 * 1024.0;
constexpr double kP2pOtherChunkBytes = 128 * 1024.0;
/// NCCL_NCHANNELS_PER_NET_PEER's default (src/graph/paths.cc): 2.
constexpr int kChannelsPerNetPeer = 2;

/// NVLinks of a hop's path: its bandwidth over the per-link line rate, at least 1.
int nvlinks(const Hop2& h) { return std::max(1, static_cast<int>(std::lround(h.bandwidth_Bps / kNvLinkLineRateBps))); }

}  // namespace

double p2p_extra_latency_s(const Topology& topo, int src, int dst, double bytes, bool copy_engine,
                           double copy_engine_s, bool textbook) {
  if (textbook || src == dst) return 0;
  if (copy_engine) return copy_engine_s;
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  return p2p_extra_latency_s(h.kind, h.route_latency_s, bytes, false, copy_engine_s, false);
}

double p2p_extra_latency_s(HopKind kind, double route_latency_s, double bytes, bool copy_engine, double copy_engine_s,
                           bool textbook) {
  if (textbook) return 0;
  if (copy_engine) return copy_engine_s;
  const int p = bytes <= kP2PLLThresholdBytes ? static_cast<int>(Protocol::LL) : static_cast<int>(Protocol::Simple);
  return kBaseLatRing[p] + std::max(0.0, kHwLatRing[static_cast<int>(kind)][p] - route_latency_s);
}

NcclP2pSplit p2p_split(const Topology& topo, int src, int dst, double bytes, const P2pCommunicator& comm) {
  OVERLAPSIM_CHECK(comm.ranks >= 2, "p2p_split: a communicator of at least 2 ranks");
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  const int links = nvlinks(h);
  const int nodes = comm.nodes > 0 ? comm.nodes : (topo.node_of(src) == topo.node_of(dst) ? 1 : 2);
  const bool one_node = nodes <= 1;
  // The communicator's channels (header): forced, stated, else NCCL's ring search over the
  // port: one search channel per NVLink at the per-link bandwidth, at most MAXCHANNELS / 2 = 16,
  // doubled into execution channels by ncclTopoPostset (A100's 12 links: the 24 its logs show;
  // H800's 8: 16, NVIDIA/nccl#892 "16 coll channels ... 16 p2p channels per peer"; H100's 18:
  // 32, which the 4, 8 and 16 channels of a published H100 sendrecv_perf curve need).
  const int stated = topo.nccl_channels(nodes, comm.local_ranks > 0 ? comm.local_ranks : one_node ? 2 : 1);
  const int channels = comm.channels > 0 ? comm.channels : stated > 0 ? stated : 2 * std::min(16, links);
  // NCCL_P2P_NVL_CHUNKSIZE where every GPU pair of the node is NVLink (ncclTopoPathAllNVLink),
  // else NCCL_P2P_PCI_CHUNKSIZE; across nodes NCCL_P2P_NET_CHUNKSIZE for every peer (src/init.cc).
  // Channels per peer: the least over the peers (ncclTopoGetNchannels), 2 per NVLink of an
  // NVLink path, else 2.
  bool all_nvlink = one_node;
  int per_peer = one_node ? 2 * links : kChannelsPerNetPeer;
  if (one_node) {
    const int node = topo.node_of(src);
    for (int g = 0; g < topo.num_gpus(); ++g) {
      if (g == src || topo.node_of(g) != node) continue;
      const Hop2 p = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, g}, 0, 1);
      const bool nvlink = p.kind == HopKind::NvLink;
      all_nvlink &= nvlink;
      per_peer = std::min(per_peer, nvlink ? 2 * nvlinks(p) : 2);
    }
  }
  const double chunk = all_nvlink ? kP2pNvlChunkBytes : kP2pOtherChunkBytes;
  return nccl_p2p_split(bytes, comm.ranks, one_node, channels, per_peer, chunk);
}

P2pCommunicator group_communicator(const Topology& topo, const std::vector<int>& ranks, int channels) {
  return {std::max(2, static_cast<int>(ranks.size())), node_count(topo, ranks), channels, local_ranks(topo, ranks)};
}

int nccl_p2p_base(const Topology& topo, const std::vector<int>& ranks, int self, int peer, bool send) {
  std::vector<int> nodes;                  // in order of first appearance
  std::unordered_map<int, int> per_node;   // node → ranks so far
  int self_idx = -1, peer_idx = -1, self_node = -1, peer_node = -1, local = 1;
  for (int r : ranks) {
    const int node = topo.node_of(r);
    auto it = std::find(nodes.begin(), nodes.end(), node);
    const int ni = static_cast<int>(it - nodes.begin());
    if (it == nodes.end()) nodes.push_back(node);
    const int li = per_node[node]++;
    local = std::max(local, per_node[node]);
    if (r == self) self_idx = li, self_node = ni;
    if (r == peer) peer_idx = li, peer_node = ni;
  }
  OVERLAPSIM_CHECK(self_idx >= 0 && peer_idx >= 0, "nccl_p2p_base: self and peer in the communicator");
  const int n_nodes = static_cast<int>(nodes.size());
  const int step = send ? (local + peer_idx - self_idx) % local : (local + self_idx - peer_idx) % local;
  const int delta = send ? (n_nodes + peer_node - self_node) % n_nodes : (n_nodes + self_node - peer_node) % n_nodes;
  return n_nodes > 1 ? delta + step / nccl::kP2pGroupSize : step;
}

int alltoall_kernel_channels(const Topology& topo, const std::vector<int>& ranks, double bytes,
                             const P2pCommunicator& comm) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return 1;
  std::unordered_map<int, int> per_node;
  int local = 1;
  for (int r : ranks) local = std::max(local, ++per_node[topo.node_of(r)]);
  const NcclP2pSplit split = p2p_split(topo, ranks[0], ranks[1], bytes / n, comm);
  const int nodes = comm.nodes > 0 ? comm.nodes : node_count(topo, ranks);
  return nccl_alltoall_kernel_channels(local, nodes, split.p2p_channels, split.channels);
}

double p2p_rate_cap_Bps(const Topology& topo, int src, int dst, double bytes, bool copy_engine,
                        const P2pCommunicator& comm, const CollectiveOptions& opt) {
  const double none = std::numeric_limits<double>::infinity();
  if (opt.textbook || copy_engine || src == dst || !(bytes > 0) || !(opt.p2p_channel_nvlink_Bps > 0)) return none;
  if (topo.node_of(src) != topo.node_of(dst)) return none;
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  if (h.kind != HopKind::NvLink) return none;
  const NcclP2pSplit split = p2p_split(topo, src, dst, bytes, comm);
  return opt.p2p_channel_nvlink_Bps * bytes / split.chunk_bytes;
}

}  // namespace overlapsim
