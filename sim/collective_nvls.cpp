// NVLink SHARP plans: NVLS inside one node, NVLS_TREE across nodes, NVLS across nodes with CollNet
// (collective_plan.hpp).
#include "sim/collective_plan_detail.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"
#include "sim/nccl_constants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlapsim::plan_detail {

namespace {

// NVLS (src/graph/tuning.cc): hwLat NVLink 25 µs, no base latency; nvlsEfficiency Hopper 0.85,
// Blackwell 0.74; channels (src/transport/nvls.cc NVLS_NCHANNELS_SM90 16, _SM100_NVL 24).
constexpr double kNvlsLatency = nccl::kHwLatNvlsNvlink;
// NCCL_MAX_NVLS_ARITY (src/include/device.h): most local ranks of an NVLS AllGather/ReduceScatter.
constexpr size_t kNvlsMaxArity = 32;
// NVLS AllReduce's chunk (v2.18.5 src/enqueue.cc): at most 131072 B, halved to 65536 B below 64
// loops of it, 32768 B below 8 and 16384 B below 2, a loop being channels · heads chunks.
double nvls_chunk_bytes(double bytes, double concurrent_ops) {
  double c = 131072;
  if (bytes < 64 * concurrent_ops * c) c = 65536;
  if (bytes < 8 * concurrent_ops * c) c = 32768;
  if (bytes < 2 * concurrent_ops * c) c = 16384;
  return c;
}

/// The global ranks of one node's members (`members`: positions in `ranks`, members_by_node).
std::vector<int> node_ranks_of(const std::vector<int>& ranks, const std::vector<int>& members) {
  std::vector<int> out;
  out.reserve(members.size());
  for (int pos : members) out.push_back(ranks[pos]);
  return out;
}

/// The slowest node's NVLS port time with its pipeline's fill and loop costs, latency aside, for
/// S = `bytes` (as NVLS alone of collective `kind`: the header's T less its latency), seconds;
/// NVLS_TREE's and NVLS across nodes' intra-node part.
double nodes_nvls_port_s(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                         const std::vector<std::vector<int>>& nodes, double bytes, double nvls_loop_s,
                         CollectiveKind kind = CollectiveKind::AllReduce, int channels = 0) {
  double port_s = 0;
  for (const auto& members : nodes) {
    const CollectivePlan in_node =
        plan_nvls(topo, eff, node_ranks_of(ranks, members), bytes, nvls_loop_s, kind, channels);
    for (const Hop2& h : in_node.rings[0].hops)
      port_s = std::max(port_s, h.step_latency_s - std::max(h.route_latency_s, kNvlsLatency) +
                                    in_node.wire_bytes / h.share_Bps);
  }
  return port_s;
}

/// Each node's NVLS one-step ring of `wire_bytes` per member (header), appended to `bulk`.
void add_node_nvls_rings(const std::vector<std::vector<int>>& nodes, double wire_bytes,
                         std::vector<CollectivePlan::BulkFlow>* bulk) {
  for (const auto& members : nodes) {
    const int m = static_cast<int>(members.size());
    for (int i = 0; i < m; ++i) bulk->push_back({members[i], members[(i + 1) % m], wire_bytes});
  }
}

}  // namespace

std::string nvls_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                             int channels_forced, CollectiveKind kind) {
  // NCCL leaves NVLS out for 2 GPUs or fewer (src/transport/nvls.cc ncclNvlsInit), below 2
  // channels (src/graph/tuning.cc) and for any protocol but Simple; AllGather and ReduceScatter
  // also for more than NCCL_MAX_NVLS_ARITY (32) local ranks (src/enqueue.cc). NVLink SHARP needs
  // third-generation NVSwitch: Hopper's.
  if (opt.textbook) return "the textbook model has no NVLS";
  if (!opt.nvls_enable) return "NCCL_NVLS_ENABLE=0 leaves it out";
  if (kind != CollectiveKind::AllReduce && kind != CollectiveKind::AllGather && kind != CollectiveKind::ReduceScatter)
    return "NCCL runs NVLS for AllReduce, AllGather and ReduceScatter only";
  const int nodes = node_count(topo, ranks);
  if (nodes != 1) {
    // Across nodes NCCL runs NVLS where CollNet can run (the network's SHARP reduces, or gathers,
    // between the nodes: src/graph/tuning.cc, src/enqueue.cc "NVLS && collNetSupport != 1 &&
    // nNodes > 1: skip"; an AllGather or ReduceScatter on CollNet's own, collnet_unsupported) and
    // every node runs NVLS.
    // What the nodes cannot do first (an A100 node runs no NVLS, with CollNet or without).
    for (const auto& members : members_by_node(topo, ranks)) {
      const std::string in_node = nvls_unsupported(topo, node_ranks_of(ranks, members), opt, channels_forced, kind);
      if (!in_node.empty()) return "NVLS across nodes runs NVLS inside each node, and there " + in_node;
    }
    const std::string why = collnet_unsupported(topo, ranks, opt, CollectiveAlgorithm::Nvls, kind);
    if (!why.empty()) return "NVLS runs across nodes only with CollNet (NVLSTree runs without): " + why;
    return "";
  }
  if (ranks.size() <= 2) return fmt::format("NVLS needs 3 or more GPUs, found {}", ranks.size());
  if (channels_forced == 1) return "NVLS needs 2 or more channels, and 1 is forced";
  if (kind != CollectiveKind::AllReduce && ranks.size() > kNvlsMaxArity)
    return fmt::format("NVLS runs an AllGather or ReduceScatter over at most {} GPUs, found {}", kNvlsMaxArity,
                       ranks.size());
  // NCCL's NVLS kernels reduce some types by some operators only (nvls_reduces, after
  // src/include/device.h ncclNvlsSupported: a sum of 32/64-bit integers, half, bfloat16, float
  // or double; a max or min of those but float and double; never an average, a product, 8-bit
  // integers or fp8). An AllGather reduces nothing.
  if (kind != CollectiveKind::AllGather && !nvls_reduces(opt.reduce_op, opt.datatype))
    return fmt::format("NVLS has no {} of {} (it reduces a sum of 32/64-bit integers, half, bfloat16, float or double, "
                       "a max or min of those but float and double)",
                       to_string(opt.reduce_op), to_string(opt.datatype));
  if (!opt.protocol_auto && opt.protocol != Protocol::Simple)
    return std::string("NVLS runs Simple only, and ") + to_string(opt.protocol) + " is forced";
  if (opt.protocol_auto && !opt.allowed.of(kind).has(Protocol::Simple))
    return "NVLS runs Simple only, which NCCL_PROTO's list leaves out";
  const int cc = device_spec(topo.gpu_model()).compute_capability;
  if (cc < 90)
    return fmt::format("NVLS needs Hopper-or-later GPUs on NVSwitch, and {} is compute capability {}.{}",
                       topo.gpu_model(), cc / 10, cc % 10);
  for (size_t i = 1; i < ranks.size(); ++i)
    for (const Hop& hop : topo.route(ranks[0], ranks[i]))
      if (topo.link(hop.link_id).kind != LinkKind::NvSwitch) return "NVLS needs the GPUs to meet at an NVSwitch";
  return "";
}

CollectivePlan plan_nvls(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, double bytes,
                         double loop_s, CollectiveKind kind, int channels) {
  const int cc = device_spec(topo.gpu_model()).compute_capability;
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::Nvls;
  p.protocol = Protocol::Simple;
  p.members = static_cast<int>(ranks.size());
  // NCCL's nvlsChannels (src/transport/nvls.cc ncclNvlsTuning): NCCL_MIN/MAX_NCHANNELS, what a
  // forced channel count stands for, do not set them (NCCL_MIN/MAX_CTAS would).
  p.channels = channels > 0 ? channels : cc >= 100 ? 24 : 16;
  p.sm_blocks = p.channels;
  p.steps = 1;
  p.step_bytes = bytes;
  const double efficiency = (cc >= 100 ? 0.74 : 0.85) * (p.channels - 1) / p.channels;
  p.wire_bytes = bytes / efficiency;
  p.base_latency_s = 0;
  ChannelPlan ch;
  const int n = p.members;
  for (int i = 0; i < n; ++i) ch.order.push_back(i);
  for (int i = 0; i < n; ++i) ch.hops.push_back(measure_hop(topo, eff, ranks, i, (i + 1) % n));
  std::vector<Hop2*> hops;
  for (Hop2& h : ch.hops) hops.push_back(&h);
  set_shares(topo, eff, ranks, hops);
  // The pipeline's fill (header): each channel's stages (three for AllReduce, two for AllGather
  // and ReduceScatter) pass its units of u = n · c bytes (a loop L = C · u); the busiest channel,
  // channel 0, has ceil(S / L) − 1 whole units and a last of min(u, rest), and its pipeline takes
  // its units plus one of its largest per stage after the first at the channel's rate, a C-th of
  // the port's: E = C · (units + (stages − 1) · largest) bytes pass where S is carried.
  const double fill_units = kind == CollectiveKind::AllReduce ? 2 : 1;
  const double unit = n * nvls_chunk_bytes(bytes, static_cast<double>(p.channels) * n);
  const double loop = p.channels * unit;
  const double loops = std::max(1.0, std::ceil(bytes / loop));
  const double last = std::min(unit, bytes - (loops - 1) * loop);
  const double largest = loops > 1 ? unit : last;
  const double fill_bytes =
      bytes > 0 ? std::max(0.0, p.channels * ((loops - 1) * unit + last + fill_units * largest) - bytes) : 0;
  // Each loop after the first costs loop_s beyond its bytes, as measured (header).
  for (Hop2& h : ch.hops)
    h.step_latency_s =
        std::max(h.route_latency_s, kNvlsLatency) + fill_bytes / efficiency / h.share_Bps + (loops - 1) * loop_s;
  p.rings.push_back(std::move(ch));
  return p;
}


std::string nvls_tree_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                                  int channels_forced) {
  // NCCL enables NVLS_TREE across nodes where every node runs NVLS (more than 2 local GPUs on a
  // Hopper-or-later NVSwitch) and reaches the others through its NICs (src/graph/tuning.cc).
  if (opt.textbook) return "the textbook model has no NVLSTree";
  if (!opt.nvls_enable) return "NCCL_NVLS_ENABLE=0 leaves it out";
  if (channels_forced == 1) return "NVLSTree needs 2 or more channels, and 1 is forced";
  if (topo.nics_per_node <= 0) return "NVLSTree needs NICs between the nodes";
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  if (nodes.size() < 2) return "NVLSTree runs across 2 or more nodes (NVLS runs inside one)";
  for (const auto& members : nodes) {
    if (members.size() != nodes[0].size()) return "NVLSTree needs the same number of GPUs on every node";
    const std::string why = nvls_unsupported(topo, node_ranks_of(ranks, members), opt, channels_forced);
    if (!why.empty()) return "NVLSTree runs NVLS inside each node, and there " + why;
  }
  return "";
}

CollectivePlan plan_nvls_tree(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                              double bytes, double nvls_loop_s) {
  const int cc_index = compute_capability_index(topo);
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  const int N = static_cast<int>(nodes.size());
  const int m = static_cast<int>(nodes[0].size());
  const int n = static_cast<int>(ranks.size());
  CollectivePlan p;
  p.kind = CollectiveKind::AllReduce;
  p.algorithm = CollectiveAlgorithm::NvlsTree;
  p.protocol = Protocol::Simple;
  p.members = n;
  p.channels = cc_index >= 3 ? 24 : 16;  // nvlsChannels, as plan_nvls
  p.sm_blocks = p.channels;
  p.steps = 1;
  p.step_bytes = bytes;
  const double efficiency = nccl::kNvlsEfficiency[cc_index] * (p.channels - 1) / p.channels;
  p.wire_bytes = bytes / efficiency;
  // Inside each node: its NVLS port time with the pipeline's fill, as NVLS alone (header).
  const double intra_s = nodes_nvls_port_s(topo, eff, ranks, nodes, bytes, nvls_loop_s);
  // Between the nodes: each of the h heads (one per NIC rail) carries S / h over NCCL's double
  // binary tree of the nodes, half of the channels on each tree, reduce up and broadcast down at
  // once; every hop at its share of the links while all of them send (the pipeline's steady state).
  const int heads = std::min(m, topo.nics_per_node);
  const double rail_bytes = bytes / heads;
  std::vector<Hop2> hops;
  int depth = 0;
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < N; ++k) {
      int d = 0;
      for (int up = k; dtree_parent(N, t, up) >= 0; up = dtree_parent(N, t, up)) ++d;
      depth = std::max(depth, d);
      const int parent = dtree_parent(N, t, k);
      if (parent < 0) continue;
      for (int r = 0; r < heads; ++r) {
        hops.push_back(measure_hop(topo, eff, ranks, nodes[k][r], nodes[parent][r]));
        hops.push_back(measure_hop(topo, eff, ranks, nodes[parent][r], nodes[k][r]));
      }
    }
  std::vector<Hop2*> all;
  for (Hop2& h : hops) all.push_back(&h);
  set_shares(topo, eff, ranks, all);
  double inter_s = 0, slowest_Bps = std::numeric_limits<double>::infinity();
  for (const Hop2& h : hops) {
    inter_s = std::max(inter_s, rail_bytes / 2 / h.share_Bps);
    slowest_Bps = std::min(slowest_Bps, h.bandwidth_Bps);
  }
  // Its fill: a rail's first loop (one chunk of every channel, or the rail's whole share if less)
  // up and down the deepest tree at the rail's bandwidth, NCCL's NVLS_TREE chunk (src/enqueue.cc:
  // at most 128 KiB, 64 KiB from 4 nodes on (src/transport/nvls.cc treeMaxChunkSize), 64 KiB below
  // 4 loops of it, 32 KiB below one).
  const double ops = static_cast<double>(p.channels) * heads;
  double chunk = N >= 4 ? 65536 : 131072;
  if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < ops * chunk && chunk > 32768) chunk = 32768;
  inter_s += 2.0 * depth * std::min(p.channels * chunk, rail_bytes) / slowest_Bps;
  // NCCL's per-channel ceiling of the NVLS_TREE kernel (perChMaxNVLSTreeBws), over its graph's
  // channels (one per head), as busBw: at most that busbw.
  const double cap_busbw = heads * nccl::kPerChNvlsTree[cc_index][nccl::nodes_index(N)];
  const double cap_s = bytes / (cap_busbw * n / (2.0 * (n - 1)));
  p.base_latency_s = nccl::nvls_tree_latency_s(N);
  p.bulk_s = bytes > 0 ? std::max({intra_s, inter_s, cap_s}) : 0.0;
  // Its flows in flow fidelity (header): each node's NVLS ring, every rail's tree hops.
  if (bytes > 0) {
    add_node_nvls_rings(nodes, bytes / efficiency, &p.bulk);
    for (const Hop2& h : hops) p.bulk.push_back({h.src_pos, h.dst_pos, rail_bytes / 2});
  }
  return p;
}

CollectivePlan plan_nvls_collnet(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                                 CollectiveKind kind, double bytes, double nvls_loop_s, const NcclTunerInputs& tuner,
                                 int channels_forced) {
  const int cc_index = compute_capability_index(topo);
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  const int N = static_cast<int>(nodes.size());
  const int m = static_cast<int>(nodes[0].size());
  const int n = static_cast<int>(ranks.size());
  const int heads = std::min(m, topo.nics_per_node);
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::Nvls;
  p.protocol = Protocol::Simple;
  p.members = n;
  // NCCL's channels across nodes: min(nvlsChannels, comm->nChannels) (src/enqueue.cc
  // getChannnelThreadInfo), the communicator's being what an op forces (NCCL_MIN/MAX_NCHANNELS
  // bound comm->nChannels: src/graph/connect.cc); inside each node the kernel's same channels.
  p.channels = std::min(cc_index >= 3 ? 24 : 16, channels_forced > 0 ? channels_forced : std::max(1, tuner.comm_channels));
  p.sm_blocks = p.channels;
  p.steps = 1;
  p.step_bytes = bytes;
  const double efficiency = nccl::kNvlsEfficiency[cc_index] * (p.channels - 1) / p.channels;
  p.wire_bytes = bytes / efficiency;
  p.base_latency_s = nccl::kNvlsCollNetLatency;
  if (bytes <= 0) return p;
  // Inside each node: its NVLS port time with the pipeline's fill, as NVLS alone of the same
  // collective (header), and its NVLS ring's flows.
  const double intra_s = nodes_nvls_port_s(topo, eff, ranks, nodes, bytes, nvls_loop_s, kind, p.channels);
  add_node_nvls_rings(nodes, bytes / efficiency, &p.bulk);
  // Between the nodes: head r of each node (the GPU of NIC rail r) hands its shard S / h to the
  // network's switches and takes the reduced shard back (an AllGather's head sends its part and
  // takes back the rail's gathered S / h, every GPU a head; a ReduceScatter's the reverse); a
  // flow to the next node's head on the rail stands for the switch's work (as CollNet's),
  // loading each NIC with S / h each way.
  std::vector<CollectivePlan::BulkFlow> inter;
  const double shard = bytes / heads;
  for (int k = 0; k < N; ++k)
    for (int r = 0; r < heads; ++r) inter.push_back({nodes[k][r], nodes[(k + 1) % N][r], shard});
  // Its fill: a shard's first loop (one chunk of every channel, or the shard if less) to the
  // switch and back, NCCL's NVLS chunk (src/enqueue.cc: 128 KiB, 32 KiB where the tuner's NVLS
  // AllReduce algbw is under 150 GB/s, whatever the collective; halved below 64, 8 and 2 loops of
  // channels · heads chunks).
  NcclTunerInputs in = tuner;
  nvls_tree_tuner_inputs(topo, eff, ranks, &in);
  in.nvls = true;
  const double model_algbw = bytes / (nccl_model_allreduce_s(CollectiveAlgorithm::Nvls, Protocol::Simple, bytes, in) -
                                      nccl::kNvlsCollNetLatency);
  const double chunk = std::min(model_algbw < 150e9 ? 32768.0 : 131072.0,
                                nvls_chunk_bytes(bytes, static_cast<double>(p.channels) * heads));
  const double inter_links_s = bulk_links_s(topo, eff, ranks, inter);
  const double inter_s = inter_links_s * (1.0 + 2.0 * std::min(p.channels * chunk, shard) / shard);
  p.bulk_s = std::max(intra_s, inter_s);
  p.bulk.insert(p.bulk.end(), inter.begin(), inter.end());
  return p;
}

void nvls_tree_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                            NcclTunerInputs* in) {
  // NCCL's NVLS graph: one channel per head (NIC rail), its intra-node bandwidth the NVSwitch
  // port's and its inter-node bandwidth the rails' (src/graph/search.cc, NVLS pattern).
  const std::vector<std::vector<int>> nodes = members_by_node(topo, ranks);
  const int heads = std::min(static_cast<int>(nodes[0].size()), topo.nics_per_node);
  in->nvls_tree = true;
  in->nvls_heads = heads;
  const Hop2 port = measure_hop(topo, eff, ranks, nodes[0][0], nodes[0][1]);
  in->nvls_intra_Bps = port.bandwidth_Bps;
  const Hop2 rail = measure_hop(topo, eff, ranks, nodes[0][0], nodes[1][0]);
  in->nvls_inter_Bps = heads * rail.bandwidth_Bps;
}

void nvls_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                       NcclTunerInputs* in) {
  // NCCL's NVLS graph inside one node: one channel per GPU pulling from the switch (src/graph/
  // search.cc: maxChannels = minChannels = min(NCCL_MAX_NVLS_ARITY, GPUs) without a network), its
  // summed bandwidth the NVSwitch port's, as for NVLS_TREE (nvls_tree_tuner_inputs).
  in->nvls = true;
  in->nvls_heads = static_cast<int>(ranks.size());
  in->nvls_intra_Bps = measure_hop(topo, eff, ranks, 0, 1).bandwidth_Bps;
}

}  // namespace overlapsim::plan_detail
