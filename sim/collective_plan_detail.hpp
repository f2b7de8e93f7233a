// What the collective plans' files share (internal to sim/): measuring a hop, the shares of
// links among hops sending at once, the protocol choice, the tree plan (sim/collective_tree.cpp)
// the NVLS plans (sim/collective_nvls.cpp) and the PAT plan (sim/collective_pat.cpp). The semantics are collective_plan.hpp's.
#pragma once

#include "sim/collective_plan.hpp"
#include "sim/nccl_constants.hpp"

#include <optional>
#include <string>
#include <vector>

namespace overlapsim::plan_detail {

/// The time `flows` (group positions, bytes) take when they all move at once, bound by the
/// busiest directed link: its bytes over its bandwidth after link efficiency, seconds (PAT's and
/// CollNet's closed forms; 0 for no flows).
double bulk_links_s(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                    const std::vector<CollectivePlan::BulkFlow>& flows);
/// The group's positions by node, nodes in order of first appearance.
std::vector<std::vector<int>> members_by_node(const Topology& topo, const std::vector<int>& ranks);
/// NCCL's compute capability index of the topology's GPU: Volta 0, Ampere 1, Hopper 2, Blackwell 3.
int compute_capability_index(const Topology& topo);
/// The channels of NCCL's communicator of `ranks` over `nodes` nodes (Topology::nccl_channels
/// with the group's local_ranks), or `fallback` (the plan's own) where the topology does not
/// state them.
int communicator_channels(const Topology& topo, const std::vector<int>& ranks, int nodes, int fallback);
/// The key of the directed link a route's hop crosses: 2·id, + 1 against the link's stored
/// direction (a half-duplex link is one resource for both directions: always 2·id).
inline int directed_link(const Hop& hop, const Link& l) {
  return 2 * hop.link_id + ((hop.forward || !l.full_duplex) ? 0 : 1);
}
/// A route's kind: Network if it crosses a network link, else Pcie if a PCIe or UPI one, else NvLink.
HopKind route_kind(const Topology& topo, const std::vector<Hop>& route);
/// The hop from group position a to b: its route's links, bottleneck bandwidth (after link
/// efficiency), latency and kind; share and step latency unset.
Hop2 measure_hop(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, int a, int b);
/// Each hop's share of its links while every hop in `hops` sends at once.
void set_shares(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                const std::vector<Hop2*>& hops);

/// The plan `model(protocol)` of least closed form over NCCL's protocols — those NCCL_PROTO's
/// list enables for `kind` (CollectiveOptions::allowed), in the order Simple, LL, LL128 (a tie goes
/// to the earlier) — or of the forced protocol (the rule's, else the options'); a textbook model
/// takes Simple. `ll128_auto`: whether NCCL enables LL128 by default here (it is then a candidate
/// of the automatic choice; forced, or enabled by an NCCL_PROTO list, it runs anyway, as NCCL's
/// protoEnable 1 does: src/graph/tuning.cc ncclTopoTuneModel).
template <class Model>
CollectivePlan least_protocol(const Model& model, const Protocol* forced_protocol, const CollectiveOptions& opt,
                              CollectiveKind kind, bool ll128_auto = true) {
  const bool choose = !forced_protocol && opt.protocol_auto && !opt.textbook;
  if (!choose) return model(forced_protocol ? *forced_protocol : opt.textbook ? Protocol::Simple : opt.protocol);
  const NcclAllowed& allowed = opt.allowed.of(kind);
  std::optional<CollectivePlan> best;
  for (Protocol proto : {Protocol::Simple, Protocol::LL, Protocol::LL128}) {
    if (!allowed.has(proto)) continue;
    if (proto == Protocol::LL128 && !ll128_auto && !allowed.protocols_set) continue;
    CollectivePlan q = model(proto);
    if (!best || q.closed_form_s() < best->closed_form_s()) best = std::move(q);
  }
  // A list always leaves a protocol (sim/nccl_selection.cpp refuses one that does not).
  return best ? std::move(*best) : model(Protocol::Simple);
}

/// NCCL's ring (a chain for Broadcast and Reduce) plan (collective_plan.hpp, Ring and Chain): its
/// protocol forced (`forced_protocol`: a rule's, or across nodes the one NCCL's tuner ranks first;
/// else the options'), else the least closed form (least_protocol).
CollectivePlan plan_ring(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                         CollectiveKind kind, double bytes, int channels_forced, const CollectiveOptions& opt,
                         const Protocol* forced_protocol);

/// NCCL's double binary tree AllReduce plan (collective_plan.hpp, Tree; sim/collective_tree.cpp):
/// its protocol forced, else the least closed form. REQUIRES: ranks.size() >= 2.
CollectivePlan plan_tree(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, double bytes,
                         int channels_forced, const CollectiveOptions& opt, const Protocol* forced_protocol);

/// Why NCCL cannot run NVLS for `kind` over these ranks (collective_plan.hpp, NVLS: AllReduce,
/// AllGather or ReduceScatter inside one node; an AllReduce across nodes with CollNet, "NVLS
/// across nodes"), in words: the first condition that fails; ""
/// where it can. Each *_unsupported below likewise (algorithm_unavailable_reason), and each
/// *_supported is whether it returns "".
std::string nvls_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                             int channels_forced, CollectiveKind kind = CollectiveKind::AllReduce);
inline bool nvls_supported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                           int channels_forced, CollectiveKind kind = CollectiveKind::AllReduce) {
  return nvls_unsupported(topo, ranks, opt, channels_forced, kind).empty();
}
/// The NVLS plan of an AllReduce, AllGather or ReduceScatter (collective_plan.hpp, NVLS), `loop_s`
/// seconds per loop after the first (CollectiveOptions::nvls_loop_s), on NCCL's NVLS channels
/// (`channels` 0) whatever channels an op forces (NCCL_MIN/MAX_NCHANNELS do not set them), or on
/// `channels` > 0 (NVLS across nodes runs the node's part on the communicator's, when fewer).
/// REQUIRES: nvls_supported for `kind`.
CollectivePlan plan_nvls(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, double bytes,
                         double loop_s = 0, CollectiveKind kind = CollectiveKind::AllReduce, int channels = 0);
/// Whether SHARP reduces `op` of `t` on switches of generation `sharp_version` (Topology::
/// sharp_version; collective_plan.hpp, CollNet).
bool sharp_reduces(ReduceOp op, DataType t, int sharp_version);
/// Why NCCL cannot run CollNet algorithm `alg` (CollnetDirect or CollnetChain) for `kind` over
/// these ranks ("" where it can; collective_plan.hpp, CollNet): an AllReduce, or with CollnetDirect
/// an AllGather or ReduceScatter on SHARP 3 with a NIC for each GPU; `alg` Nvls: whether the
/// communicator has CollNet for NVLS across nodes (no limit of 8 GPUs a node, no NVSwitch
/// condition; an AllGather or ReduceScatter on SHARP 3 with a NIC for each GPU, as CollnetDirect's).
std::string collnet_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                                CollectiveAlgorithm alg, CollectiveKind kind = CollectiveKind::AllReduce);
inline bool collnet_supported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                              CollectiveAlgorithm alg, CollectiveKind kind = CollectiveKind::AllReduce) {
  return collnet_unsupported(topo, ranks, opt, alg, kind).empty();
}
/// The CollNet plan of an AllReduce (collective_plan.hpp, CollNet) on `channels_forced` channels
/// (0: NCCL's, from `tuner`, tuner_inputs). REQUIRES: collnet_supported for `alg`.
CollectivePlan plan_collnet(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                            double bytes, CollectiveAlgorithm alg, int channels_forced, const NcclTunerInputs& tuner);
/// CollNetDirect's AllGather or ReduceScatter across nodes (collective_plan.hpp, CollNet AllGather
/// and ReduceScatter) on `channels_forced` channels (0: one per head). REQUIRES: collnet_supported
/// for CollnetDirect and `kind`.
CollectivePlan plan_collnet_gather(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                                   CollectiveKind kind, double bytes, int channels_forced);
/// What NCCL's tuner knows of CollNet (NcclTunerInputs::collnet...). REQUIRES: ranks on 2 or more nodes.
void collnet_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                          NcclTunerInputs* in);
/// What NCCL's tuner knows of NVLS inside one node for an AllGather or ReduceScatter
/// (nccl_tuning.hpp): its graph's heads (the members) and its intra-node bandwidth (the GPU's
/// NVSwitch port). REQUIRES: nvls_supported.
void nvls_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                       NcclTunerInputs* in);
/// Whether NCCL can run NVLS_TREE over these ranks (collective_plan.hpp, NVLS_TREE).
std::string nvls_tree_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                                  int channels_forced);
inline bool nvls_tree_supported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt,
                                int channels_forced) {
  return nvls_tree_unsupported(topo, ranks, opt, channels_forced).empty();
}
/// The NVLS_TREE AllReduce plan (collective_plan.hpp, NVLS_TREE). REQUIRES: nvls_tree_supported.
CollectivePlan plan_nvls_tree(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                              double bytes, double nvls_loop_s = 0);
/// The NVLS plan across nodes of an AllReduce, AllGather or ReduceScatter, with CollNet
/// (collective_plan.hpp, NVLS across nodes): bulk flows, on min(NCCL's NVLS channels, the
/// communicator's channels: `channels_forced` where > 0, else tuner.comm_channels) channels.
/// REQUIRES: nvls_supported for `kind` over these ranks, on 2 or more nodes.
CollectivePlan plan_nvls_collnet(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                                 CollectiveKind kind, double bytes, double nvls_loop_s, const NcclTunerInputs& tuner,
                                 int channels_forced = 0);
/// What NCCL's tuner knows of an NVLS_TREE over these ranks (nccl_tuning.hpp): heads, the NVLS
/// graph's intra- and inter-node bandwidth. REQUIRES: nvls_tree_supported.
void nvls_tree_tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                            NcclTunerInputs* in);

/// Whether NCCL's tuner relegates the ring of a `kind` of `ranks` members with these options: an
/// fp8 reduction (AllReduce, ReduceScatter, Reduce) over more than 8 ranks
/// (nccl::kFp8RingRelegation; never for the textbook ring). An AllGather or Broadcast reaches the
/// tuner as bytes (src/enqueue.cc collTaskAppend makes its elements int8), so never.
inline bool fp8_ring_relegated(const CollectiveOptions& opt, CollectiveKind kind, int ranks) {
  return !opt.textbook && reduces(kind) && is_fp8(opt.datatype) && ranks > nccl::kFp8RingMaxRanks;
}

/// What NCCL's tuner knows of this group (nccl_tuning.hpp): its graph is the communicator's
/// rings at the options' channel count (one per NIC rail on DGX-class nodes, as NCCL's search
/// finds them: Topology::nccl_channels), each at its bottleneck's share of the links, Simple;
/// for a `kind` (the fp8 ring rule reads it: fp8_ring_relegated).
NcclTunerInputs tuner_inputs(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks, int nodes,
                             CollectiveKind kind, const CollectiveOptions& opt);

/// Whether NCCL can run PAT over these ranks (collective_plan.hpp, PAT): two or more, each on a
/// node of its own, a GPU of compute capability 6.0 or later, Simple allowed; never textbook.
std::string pat_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt);
inline bool pat_supported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt) {
  return pat_unsupported(topo, ranks, opt).empty();
}
/// The PAT AllGather or ReduceScatter plan (collective_plan.hpp, PAT): its flows and its closed
/// form, with `tuner` (tuner_inputs of the group) for NCCL's kernel ceiling and channels.
/// REQUIRES: kind AllGather or ReduceScatter; pat_supported.
CollectivePlan plan_pat(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                        CollectiveKind kind, double bytes, int channels_forced, const NcclTunerInputs& tuner);

}  // namespace overlapsim::plan_detail
