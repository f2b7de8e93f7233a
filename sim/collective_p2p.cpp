// Point-to-point messages (Send/Recv and an AllToAll's pieces) as NCCL runs them: the latency a
// message pays beyond its route, and the rate NCCL's channels for it can copy over NVLink
// (collective_plan.hpp).
#include "sim/collective_plan_detail.hpp"

#include "sim/nccl_constants.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/platform.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlapsim {

using nccl::kBaseLatRing;
using nccl::kHwLatRing;

namespace {

/// Line rate of one NVLink 2/3/4 link per direction, bytes/s (NVIDIA's V100, A100 and H100
/// architecture whitepapers: 25 GB/s per link per direction); a GPU's NVSwitch port of B bytes/s
/// has B / 25 GB/s links, which NCCL counts as path bw / per-link bw (src/graph/paths.cc).
constexpr double kNvLinkLineRateBps = 25e9;
/// NCCL_P2P_NVL_CHUNKSIZE's default (src/init.cc): 512 KiB.
constexpr double kP2pNvlChunkBytes = 512 * 1024.0;

}  // namespace

double p2p_extra_latency_s(const Topology& topo, int src, int dst, double bytes, bool copy_engine,
                           double copy_engine_s, bool textbook) {
  if (textbook || src == dst) return 0;
  if (copy_engine) return copy_engine_s;
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  const int p = bytes <= kP2PLLThresholdBytes ? static_cast<int>(Protocol::LL) : static_cast<int>(Protocol::Simple);
  return kBaseLatRing[p] + std::max(0.0, kHwLatRing[static_cast<int>(h.kind)][p] - h.route_latency_s);
}

int p2p_nvlink_channels(const Topology& topo, int src, int dst, double bytes, int comm_ranks) {
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  const int links = std::max(1, static_cast<int>(std::lround(h.bandwidth_Bps / kNvLinkLineRateBps)));
  // The communicator's channels: the topology's, else NCCL's ring search over the port (one
  // search channel per NVLink at the per-link bandwidth, at most MAXCHANNELS / 2 = 16, doubled
  // into execution channels by ncclTopoPostset): 24 on A100's 12 links (the 24 its logs show),
  // 16 on H800's 8 (NVIDIA/nccl#892: "16 coll channels ... 16 p2p channels per peer"), 32 on
  // H100's 18 (the 4, 8 and 16 channels a published H100 sendrecv_perf curve steps through need
  // NCCL's 32 p2p channels: tests/nccl_validation_test.cpp).
  const int stated = topo.nccl_channels(1);
  const int comm = stated > 0 ? stated : 2 * std::min(16, links);
  return nccl_p2p_channels(bytes, std::max(2, comm_ranks), true, comm, 2 * links, kP2pNvlChunkBytes);
}

double p2p_rate_cap_Bps(const Topology& topo, int src, int dst, double bytes, bool copy_engine, int comm_ranks,
                        const CollectiveOptions& opt) {
  const double none = std::numeric_limits<double>::infinity();
  if (opt.textbook || copy_engine || src == dst || !(opt.p2p_channel_nvlink_Bps > 0)) return none;
  if (topo.node_of(src) != topo.node_of(dst)) return none;
  const Hop2 h = plan_detail::measure_hop(topo, LinkEfficiency{}, {src, dst}, 0, 1);
  if (h.kind != HopKind::NvLink) return none;
  return p2p_nvlink_channels(topo, src, dst, bytes, comm_ranks) * opt.p2p_channel_nvlink_Bps;
}

}  // namespace overlapsim
