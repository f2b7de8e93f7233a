// How a collective runs on the machine: NCCL's ring (or, for Broadcast and Reduce, its
// pipelined chain) over several channels, with a protocol, lowered to per-step flows.
//
// Ring (AllReduce 2(n−1) steps, AllGather and ReduceScatter n−1 steps): every channel is a ring
// over the group's members carrying 1/C of the buffer; in each step every member sends
// S/(n·C) bytes to its successor. Channel c visits the members of each node in a rotated order
// chosen so that the hop leaving a node and the hop entering the next one use the same NIC
// (rail-aligned) and so that the C channels leave each node through different NICs — NCCL's
// rings on DGX-class machines. Chain (Broadcast from, Reduce to group member 0): the buffer
// is cut into slices of NCCL's step size (512 KiB: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8) and
// pipelined along the ring order without its closing hop.
//
// Protocols (NCCL src/graph/tuning.cc and src/include/device.h): LL moves 8 bytes of data per
// 16 on the wire, LL128 120 per 128, Simple all of them; each has a base latency per collective
// and a latency per step that depends on the hop's hardware (NVLink, PCIe, network):
//   baseLat ring   LL 6.6 µs, LL128 14.0 µs, Simple 8.4 µs
//   hwLat NVLink   LL 0.6 µs, LL128 1.9 µs,  Simple 3.4 µs
//   hwLat PCIe     LL 1.0 µs, LL128 2.5 µs,  Simple 5.7 µs
//   hwLat network  LL 2.7 µs, LL128 4.0 µs,  Simple 14.0 µs
// A step over a hop takes max(route latency, hwLat) plus its wire bytes over the hop's
// bandwidth. Auto protocol: the one with the least modelled time, as NCCL's tuner picks.
//
// Contention-free closed form (what `analytic` fidelity uses and `flow` must match):
//   ring:  T = baseLat + steps · (mean over hops of lat_i + max over hops of wire/bw_i)
//          (a slice crosses every hop in turn, so latencies add up as the mean; the bandwidth
//          term is set by the slowest hop — NCCL's model counts intra- and inter-node step
//          latencies the same way)
//   chain: T = baseLat + (n − 1 + K − 1) · max over hops (lat_i + wire/bw_i), K slices,
// where bw_i is the hop's share of its links when all channels' hops of a step send at once
// (a GPU's NVLink port carries all C channels of a ring inside a node).
#pragma once

#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim {

enum class Protocol : uint8_t { LL, LL128, Simple };
const char* to_string(Protocol p);
enum class HopKind : uint8_t { NvLink, Pcie, Network };

struct LinkEfficiency;

struct Hop2 {
  int src_pos = -1, dst_pos = -1;  ///< group positions
  double bandwidth_Bps = 0;        ///< bottleneck of the route, after link efficiency
  double share_Bps = 0;            ///< what the hop gets while every channel's hop sends at once
                                   ///< (links shared by c hops give each 1/c); the closed form's
  std::vector<int> links;          ///< directed links of the route (2·id + backward)
  double route_latency_s = 0;      ///< sum of the route's link latencies
  HopKind kind = HopKind::NvLink;
  double step_latency_s = 0;       ///< max(route latency, protocol hwLat of this hop kind)
};

struct ChannelPlan {
  std::vector<int> order;  ///< group positions in ring (or chain) order
  std::vector<Hop2> hops;  ///< hops[i]: order[i] → order[i+1] (ring: the last one closes the ring)
  int bottleneck = 0;      ///< index of the hop with the least bandwidth (ties: most latency)
  bool even = true;        ///< every hop has the bottleneck's bandwidth
  double max_step_latency_s = 0;
  double mean_step_latency_s = 0;  ///< over the hops: what a slice pays per step on its way round
};

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  Protocol protocol = Protocol::Simple;
  bool chain = false;           ///< Broadcast/Reduce: pipelined chain, no closing hop
  int channels = 1;
  int steps = 0;                ///< ring steps, or slices of a chain
  int members = 0;
  double step_bytes = 0;        ///< payload per step per channel
  double wire_bytes = 0;        ///< step_bytes after protocol overhead
  double base_latency_s = 0;
  std::vector<ChannelPlan> rings;

  /// Contention-free time of the collective, seconds (the formulas in the header).
  double closed_form_s() const;
};

struct CollectiveOptions {
  int channels = 8;  ///< default channel count when the op does not set one (NCCL on DGX A100/H100
                     ///< opens 8 or more rings for large collectives: one per NIC)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  bool protocol_auto = true;
  Protocol protocol = Protocol::Simple;  ///< used when !protocol_auto
  /// The textbook ring: no base latency, no protocol step latency, Simple's wire bytes — each
  /// step costs exactly its route's latency plus its bytes over the bandwidth.
  bool textbook = false;
};

/// Plans a collective of `bytes` (NCCL buffer size per rank, schedule.hpp) over `ranks`.
/// AllToAll is not planned here (it is point-to-point; see replay.hpp).
/// REQUIRES: kind != AllToAll; ranks.size() >= 1.
CollectivePlan plan_collective(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                               CollectiveKind kind, double bytes, int channels_wanted,
                               const CollectiveOptions& opt);

/// Bytes a member receives in the collective, summed over channels (for conservation tests).
double received_bytes_per_rank(const CollectivePlan& p);

}  // namespace overlapsim
