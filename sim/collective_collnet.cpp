// NCCL's CollNet plans: the reduction across nodes done in the network's switches (InfiniBand
// SHARP), CollNetChain and CollNetDirect for an AllReduce, CollNetDirect for an AllGather or a
// ReduceScatter (collective_plan.hpp, CollNet).
#include "sim/collective_plan_detail.hpp"

#include "sim/nccl_constants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace overlapsim::plan_detail {

namespace {

// NCCL_MAX_DIRECT_ARITY + 1 (src/include/device.h, 7 + 1): most local ranks CollNet runs with
// (src/enqueue.cc updateCollCostTable skips both CollNet algorithms above it).
constexpr int kCollNetMaxLocalRanks = 8;

/// NCCL's CollNet chunk (2.30.7 src/enqueue.cc calcCollChunking), bytes: the chain's starts at
/// min(256 KiB, Simple's step of 512 KiB), the direct's at the step; each is halved while a
/// channel's bytes (the direct's over its heads too) are less than 64 · depth chunks down to 128
/// KiB, 8 · depth down to 64 KiB, and depth (chain) or 8 · depth (direct) down to 32 KiB.
double collnet_chunk_bytes(bool chain, double bytes, int channels, int heads, int depth) {
  double c = chain ? 262144 : nccl::kSliceBytes;
  const double per = bytes / (static_cast<double>(channels) * (chain ? 1 : heads));
  while (per / c < 64.0 * depth && c > 131072) c /= 2;
  while (per / c < 8.0 * depth && c > 65536) c /= 2;
  while (per / c < (chain ? 1.0 : 8.0) * depth && c > 32768) c /= 2;
  return c;
}

}  // namespace

bool sharp_reduces(ReduceOp op, DataType t, int sharp_version) {
  // NCCL hands an average (PreMulSum, SumPostDiv) to the network as a sum (src/enqueue.cc
  // ncclGetCollNetSupport); the SHARP plugin reduces sum, max and min (nccl-rdma-sharp-plugins
  // src/sharp_plugin.c opConvert) of half, 32/64-bit integers, float and double, and with SHARP
  // v3 bfloat16, int8 and uint8 too (typeConvert, SHARP_DTYPE_BFLOAT16/INT8/UINT8); never fp8.
  if (op == ReduceOp::Prod) return false;
  switch (t) {
    case DataType::Float16:
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64: return sharp_version >= 2;
    case DataType::Bfloat16:
    case DataType::Int8:
    case DataType::Uint8: return sharp_version >= 3;
    case DataType::Float8e4m3:
    case DataType::Float8e5m2: return false;
  }
  return false;
}

std::string collnet_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                                CollectiveAlgorithm alg, CollectiveKind kind) {
  const bool gather = kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
  if (kind != CollectiveKind::AllReduce && !gather) return "NCCL runs CollNet for AllReduce, AllGather and ReduceScatter only";
  if (gather && alg == CollectiveAlgorithm::CollnetChain) return "NCCL runs CollNetChain for AllReduce only";
  // NCCL runs CollNet where NCCL_COLLNET_ENABLE=1 and the network plugin reduces (SHARP), over 2
  // or more nodes (NCCL_COLLNET_NODE_THRESHOLD), up to 8 local ranks, Simple only, for the
  // reductions SHARP has (src/init.cc, src/enqueue.cc, src/graph/tuning.cc); CollNetDirect only
  // on an NVSwitch system (tuning.cc: "Disable CollNet+Direct if not on an NVSwitch system").
  if (opt.textbook) return "the textbook model has no CollNet";
  if (!opt.collnet_enable) return "CollNet needs NCCL_COLLNET_ENABLE=1 (collective --collnet, nccl.collnet_enable)";
  if (topo.sharp_version < 2)
    return "CollNet needs a fabric whose switches reduce (SHARP), and the topology has none (fabric.sharp)";
  if (topo.nics_per_node <= 0) return "CollNet needs NICs between the nodes";
  if (!opt.protocol_auto && opt.protocol != Protocol::Simple)
    return std::string("CollNet runs Simple only, and ") + to_string(opt.protocol) + " is forced";
  if (opt.protocol_auto && !opt.allowed.of(kind).has(Protocol::Simple))
    return "CollNet runs Simple only, which NCCL_PROTO's list leaves out";
  if (kind != CollectiveKind::AllGather && !sharp_reduces(opt.reduce_op, opt.datatype, topo.sharp_version)) {
    if (opt.reduce_op == ReduceOp::Prod) return "SHARP reduces sum, avg, max and min, not prod";
    const bool v3 = sharp_reduces(opt.reduce_op, opt.datatype, 3);
    return fmt::format("SHARP {} (the topology's fabric.sharp) does not reduce {}{}", topo.sharp_version,
                       to_string(opt.datatype), v3 ? " (SHARP 3 does)" : "");
  }
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  if (nodes.size() < 2) return "CollNet runs across 2 or more nodes";
  // The SHARP plugin's AllGather and ReduceScatter (ncclCollNet v8 iallgather, ireducescatter:
  // sharp_coll_do_allgather, sharp_coll_do_reduce_scatter) run on SHARP 3 switches (Quantum-2).
  if (gather && topo.sharp_version < 3)
    return fmt::format("CollNet runs an AllGather or ReduceScatter on SHARP 3 switches, and the topology's "
                       "fabric.sharp is {}",
                       topo.sharp_version);
  for (const auto& members : nodes) {
    if (members.size() != nodes[0].size()) return "CollNet needs the same number of GPUs on every node";
    if (alg != CollectiveAlgorithm::Nvls && static_cast<int>(members.size()) > kCollNetMaxLocalRanks)
      return fmt::format("CollNet runs with at most {} GPUs a node, found {}", kCollNetMaxLocalRanks, members.size());
  }
  // AllGather and ReduceScatter need one NIC per GPU of a node, NVLS's across nodes too
  // (src/graph/tuning.cc: "disable collnet for allgather/reducescatter if #localranks > #heads",
  // for NVLS and CollNetDirect).
  if (gather && static_cast<int>(nodes[0].size()) > topo.nics_per_node)
    return fmt::format("CollNet runs an AllGather or ReduceScatter with a NIC for each GPU of a node, and {} GPUs "
                       "share {} NICs",
                       nodes[0].size(), topo.nics_per_node);
  if (alg == CollectiveAlgorithm::Nvls) return "";  // the communicator's CollNet, for NVLS across nodes
  if (alg == CollectiveAlgorithm::CollnetDirect)
    for (const auto& members : nodes)
      for (size_t i = 1; i < members.size(); ++i)
        for (const Hop& hop : topo.route(ranks[members[0]], ranks[members[i]]))
          if (topo.link(hop.link_id).kind != LinkKind::NvSwitch)
            return "CollNetDirect needs each node's GPUs to meet at an NVSwitch";
  return "";
}

CollectivePlan plan_collnet(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                            double bytes, CollectiveAlgorithm alg, int channels_forced, const NcclTunerInputs& tuner) {
  const bool chain = alg == CollectiveAlgorithm::CollnetChain;
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  const int N = static_cast<int>(nodes.size());
  const int m = static_cast<int>(nodes[0].size());
  const int n = static_cast<int>(ranks.size());
  const int heads = std::min(m, topo.nics_per_node);
  CollectivePlan p;
  p.kind = CollectiveKind::AllReduce;
  p.algorithm = alg;
  p.protocol = Protocol::Simple;
  p.members = n;
  // The chain runs on NCCL's collNetChain graph, as many channels as the ring's graph (src/init.cc);
  // the direct algorithm on one channel per head. The kernel's blocks: NCCL's launch loop over
  // the communicator's channels, 640 threads and a threshold of 512 bytes each (src/enqueue.cc,
  // tuning.cc threadThresholds), times the heads for the direct algorithm.
  // Forced channels (NCCL_MIN/MAX_NCHANNELS) are the channels it runs on, heads taken in turn.
  p.channels = channels_forced > 0 ? channels_forced : chain ? std::max(1, tuner.graph_channels) : heads;
  int blocks = std::max(1, tuner.comm_channels);
  while (blocks > 1 && bytes < static_cast<double>(blocks) * 640 * 512 * (chain ? 1 : heads)) --blocks;
  p.sm_blocks = blocks;
  p.steps = 1;
  p.step_bytes = bytes;
  p.wire_bytes = bytes;
  p.base_latency_s = nccl::collnet_latency_s(!chain, m);
  if (bytes <= 0) return p;
  // The flows (header): merged by (from, to), channels that take the same path adding up.
  std::map<std::pair<int, int>, double> flows;
  const auto add = [&](int from, int to, double b) { flows[{from, to}] += b; };
  if (chain) {
    // Channel c's chain in each node starts at its head, the GPU of NIC rail c mod heads, and runs
    // through the node's other GPUs in order: the reduction up the chain, the result down it, and
    // between the heads the switch's reduction, which loads each head's NIC with the channel's
    // part each way (a flow to the next node's head on the rail stands for it).
    const double part = bytes / p.channels;
    for (int c = 0; c < p.channels; ++c) {
      const int head = c % heads;
      for (int k = 0; k < N; ++k) {
        std::vector<int> order;
        for (int j = 0; j < m; ++j) order.push_back(nodes[k][(head + j) % m]);
        for (int j = 0; j + 1 < m; ++j) {
          add(order[j + 1], order[j], part);
          add(order[j], order[j + 1], part);
        }
        add(order[0], nodes[(k + 1) % N][head], part);
      }
    }
  } else {
    // Every GPU sends head h its shard of S / heads (the scatter), head h's NIC carries the
    // shard to the switch and back, and head h sends the result to every other GPU of its node.
    // With forced channels, channel c runs head c mod heads: the heads it reaches share S.
    const int used = std::min(heads, p.channels);
    const double shard = bytes / used;
    for (int k = 0; k < N; ++k)
      for (int h = 0; h < used; ++h) {
        const int head = nodes[k][h];
        for (int j = 0; j < m; ++j) {
          if (nodes[k][j] == head) continue;
          add(nodes[k][j], head, shard);
          add(head, nodes[k][j], shard);
        }
        add(head, nodes[(k + 1) % N][h], shard);
      }
  }
  for (const auto& [key, b] : flows) p.bulk.push_back({key.first, key.second, b});
  // The links' time: every flow at once, the busiest directed link's bytes over its bandwidth.
  const double links_s = bulk_links_s(topo, eff, ranks, p.bulk);
  // Its fill: a chunk of every channel through the pipeline's hops (the chain: up m − 1 GPUs, to
  // the switch and back, down m − 1 GPUs; the direct: scatter, switch, broadcast) at the busiest
  // link's pace, NCCL's chunk for the size (collnet_chunk_bytes; depth the chain's GPUs, the
  // direct's 2 stages inside a node).
  const int depth = chain ? m : 2;
  const int hops = chain ? 2 * m : 4;
  const double chunk = collnet_chunk_bytes(chain, bytes, p.channels, std::min(heads, p.channels), depth);
  const double per_channel = bytes / p.channels / (chain ? 1 : std::min(heads, p.channels));
  p.bulk_s = links_s * (1.0 + hops * std::min(chunk, per_channel) / per_channel);
  return p;
}

CollectivePlan plan_collnet_gather(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                                   CollectiveKind kind, double bytes, int channels_forced) {
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  const int N = static_cast<int>(nodes.size());
  const int m = static_cast<int>(nodes[0].size());
  const int n = static_cast<int>(ranks.size());
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::CollnetDirect;
  p.protocol = Protocol::Simple;
  p.members = n;
  // One channel per head, every GPU a head (one NIC each); forced channels are the channels.
  p.channels = channels_forced > 0 ? channels_forced : m;
  p.sm_blocks = p.channels;
  p.steps = 1;
  p.step_bytes = bytes;
  p.wire_bytes = bytes;
  p.base_latency_s = nccl::collnet_latency_s(true, m);
  if (bytes <= 0) return p;
  // A rail's data: the N nodes' parts of its GPU, S / m (header). The switches return a rail's
  // whole buffer, the node's own part too (src/device/all_gather.h: phase 2 receives nNodes ·
  // countPerRank from the network), so the NIC of an AllGather takes S / m in (a ReduceScatter's
  // sends S / m out); a flow to the next node's GPU on the rail carries it. With forced channels
  // fewer than the node's GPUs, channel c runs rail c's NIC: rail j goes through GPU j mod C's.
  const double rail = bytes / m;
  const int used = std::min(m, p.channels);
  std::map<std::pair<int, int>, double> flows;
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < m; ++j) {
      const int carrier = j % used;
      flows[{nodes[k][carrier], nodes[(k + 1) % N][carrier]}] += rail;
      // Inside the node: an AllGather's carrier hands the rail's result to each other GPU; a
      // ReduceScatter's GPUs hand the carrier their input for the rail.
      for (int i = 0; i < m; ++i)
        if (i != carrier) {
          if (kind == CollectiveKind::AllGather) flows[{nodes[k][carrier], nodes[k][i]}] += rail;
          else flows[{nodes[k][i], nodes[k][carrier]}] += rail;
        }
    }
  for (const auto& [key, b] : flows) p.bulk.push_back({key.first, key.second, b});
  // Every flow at once, the busiest link's bytes, plus a chunk of every channel through the
  // three stages (the GPUs' hand-over, the switch, the NIC) at the busiest link's pace, NCCL's
  // direct chunk as for an AllReduce (collnet_chunk_bytes).
  const double links_s = bulk_links_s(topo, eff, ranks, p.bulk);
  const double chunk = collnet_chunk_bytes(false, bytes, p.channels, m, 2);
  const double per_channel = bytes / p.channels / m;
  p.bulk_s = links_s * (1.0 + 3 * std::min(chunk, per_channel) / per_channel);
  return p;
}

void collnet_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                          NcclTunerInputs* in) {
  // NCCL's CollNet graphs: their channels' summed intra-node bandwidth, a GPU's NVLink port (the
  // tuner reads bwIntra for CollNet at any node count), and the heads (one per NIC rail).
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  in->collnet = true;
  in->collnet_heads = std::min(static_cast<int>(nodes[0].size()), topo.nics_per_node);
  in->collnet_intra_Bps = nodes[0].size() > 1 ? measure_hop(topo, eff, ranks, nodes[0][0], nodes[0][1]).bandwidth_Bps
                                              : measure_hop(topo, eff, ranks, nodes[0][0], nodes[1][0]).bandwidth_Bps;
  // Its channels' network bandwidth, one NIC each (bwInter, read for an AllGather or
  // ReduceScatter): a rail's.
  in->collnet_inter_Bps = measure_hop(topo, eff, ranks, nodes[0][0], nodes[1][0]).bandwidth_Bps;
}

}  // namespace overlapsim::plan_detail
