// NCCL's tuning-model constants for its ring and tree (src/graph/tuning.cc, the tuner constants
// ncclTunerConstantsDefaults of NCCL 2.30.7), shared by the collective plans (collective_plan.cpp),
// which time steps with them, and NCCL's own tuner model (nccl_tuning.hpp), which ranks
// algorithms with them. Internal to sim/. Indices: protocol [LL, LL128, Simple] (Protocol's
// order); hardware [NVLink, PCIe, network] (HopKind's order); compute capability [Volta < 8.0 ≤
// Ampere < 9.0 ≤ Hopper < 10.0 ≤ Blackwell].
#pragma once

#include <algorithm>
#include <cmath>

namespace overlapsim::nccl {

/// NCCL's log2i: floor(log2(x)) for x >= 1, 0 below (src/include/utils.h).
inline int log2i(double x) { return x >= 2 ? static_cast<int>(std::floor(std::log2(x))) : 0; }

/// Point-to-point messages to peers up to this many local steps apart share a channel base
/// across nodes: NCCL_MAX_WORK_ELEMENTS_P2P / 2 (2.18.5 src/include/devcomm.h 16;
/// src/include/channel.h ncclChannelComputeBase).
inline constexpr int kP2pGroupSize = 8;

/// Payload fraction on the wire (src/include/device.h: LL lines are 8 B data + 8 B flags,
/// LL128 lines 120 B data + 8 B flags, Simple all data).
inline constexpr double kWireFraction[3] = {0.5, 120.0 / 128.0, 1.0};
/// NCCL's Simple step: NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8), bytes.
inline constexpr double kSliceBytes = 4.0 * 1024 * 1024 / 8;
/// Base latency per collective, seconds (baseLat).
inline constexpr double kBaseLatRing[3] = {6.6e-6, 14.0e-6, 8.4e-6};
inline constexpr double kBaseLatTree[3] = {6.8e-6, 14.0e-6, 8.4e-6};
/// Latency per step by hardware, seconds (hwLat).
inline constexpr double kHwLatRing[3][3] = {
    {0.6e-6, 1.9e-6, 3.4e-6},   // NVLink: LL, LL128, Simple
    {1.0e-6, 2.5e-6, 5.7e-6},   // PCIe
    {2.7e-6, 4.0e-6, 14.0e-6},  // network
};
inline constexpr double kHwLatTree[3][3] = {
    {0.6e-6, 1.25e-6, 4.0e-6},  // NVLink: LL, LL128, Simple
    {1.0e-6, 1.9e-6, 4.0e-6},   // PCIe
    {5.0e-6, 8.5e-6, 14.0e-6},  // network
};
/// LL busBw ceiling (llMaxBws), bytes/s: one node by compute capability; across nodes by the
/// nodes' CPU vendor [other, AMD] and node count [2, more].
inline constexpr double kLlMaxBusBw[4] = {39.0e9, 87.7e9, 141.0e9, 282.0e9};
inline constexpr double kLlMaxBusBwNodes[2][2] = {{39.0e9, 20.4e9}, {22.5e9, 19.0e9}};
/// NCCL's index of a node count into its per-channel ceilings [1, 2, more] (tuning.cc index2).
inline int nodes_index(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }
/// llMaxBw for `nodes` nodes, bytes/s: one node by compute capability index, across nodes by the
/// CPU vendor (AMD or other) and node count (2, more).
inline double ll_max_busbw(int cc_index, bool amd_cpu, int nodes) {
  return nodes == 1 ? kLlMaxBusBw[cc_index] : kLlMaxBusBwNodes[amd_cpu ? 1 : 0][nodes == 2 ? 0 : 1];
}
/// Per-channel busBw ceilings, bytes/s, by compute capability and node count [1, 2, more]
/// (perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws).
inline constexpr double kPerChRingLL128[4][3] = {
    {20.0e9, 20.0e9, 20.0e9}, {20.0e9, 20.0e9, 20.0e9}, {36.7e9, 36.7e9, 36.7e9}, {40.0e9, 40.0e9, 40.0e9}};
inline constexpr double kPerChTree[4][3] = {
    {26.5e9, 18.5e9, 10.0e9}, {24.0e9, 23.6e9, 17.8e9}, {38.7e9, 41.4e9, 36.0e9}, {70.0e9, 42.8e9, 24.0e9}};
inline constexpr double kPerChTreeLL128[4][3] = {
    {20.0e9, 20.0e9, 20.0e9}, {20.0e9, 20.0e9, 20.0e9}, {36.7e9, 36.7e9, 29.0e9}, {55.6e9, 31.67e9, 20.0e9}};
/// The tree's bandwidth correction by log2(bytes / 64) for 0 ... 22 (treeCorrectionFactor:
/// "Trees are not perfectly sticking to the model for medium sizes").
inline constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/// NVLS (NVLink SHARP): hwLat on NVLink (NVLS and NVLS_TREE) and NVLS_TREE's on the network,
/// seconds; no base latency; nvlsEfficiency by compute capability (0: no NVLS); NVLS_TREE's
/// per-channel busBw ceiling (perChMaxNVLSTreeBws), bytes/s, by compute capability and node
/// count [1, 2, more].
inline constexpr double kHwLatNvlsNvlink = 25e-6;
inline constexpr double kHwLatNvlsTreeNet = 20.9e-6;
/// NVLS across nodes (NVLink SHARP in each node, the network's SHARP between them: NCCL's NVLS
/// algorithm with CollNet): its network hwLat, seconds (tuning.cc hwLat NET NVLS Simple).
inline constexpr double kHwLatNvlsNet = 18e-6;
inline constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
inline constexpr double kPerChNvlsTree[4][3] = {
    {26.5e9, 18.5e9, 10.0e9}, {24.0e9, 23.6e9, 17.8e9}, {0.0, 57.7e9, 45.5e9}, {0.0, 96.0e9, 80.0e9}};
/// NCCL's modelled latency of an NVLS_TREE AllReduce over `nodes` nodes, seconds: hwLat on
/// NVLink plus 2 log2(nodes) network hwLats, no base latency (src/graph/tuning.cc).
inline double nvls_tree_latency_s(int nodes) { return kHwLatNvlsNvlink + 2.0 * log2i(nodes) * kHwLatNvlsTreeNet; }
/// NCCL's modelled latency of an NVLS AllReduce across nodes (with CollNet), seconds: hwLat on
/// NVLink, 25 µs, plus the network's NVLS hwLat, 18 µs; it replaces the (zero) base latency
/// (src/graph/tuning.cc: "latencies = intraLat; if (nNodes > 1) += interLat").
inline constexpr double kNvlsCollNetLatency = kHwLatNvlsNvlink + kHwLatNvlsNet;

/// CollNet (the network's in-switch reduction, SHARP), Simple only, no base latency (src/graph/
/// tuning.cc): hwLat inside a node (NVLink and PCIe alike) and on the network, seconds, for
/// CollNetDirect and CollNetChain; CollNetDirect's "0.4 us arity serialization latency" per local
/// rank after the first; its busBw factor on Hopper and later.
inline constexpr double kHwLatCollNetDirectIntra = 3.7e-6;
inline constexpr double kHwLatCollNetChainIntra = 2.8e-6;
inline constexpr double kHwLatCollNetDirectNet = 31e-6;
inline constexpr double kHwLatCollNetChainNet = 30e-6;
inline constexpr double kCollNetDirectArityLat = 0.4e-6;
inline constexpr double kCollNetDirectHopperFactor = 0.85;
/// NCCL's modelled latency of a CollNet AllReduce with `ppn` ranks a node, seconds (tuning.cc):
/// CollNetDirect 2 (min(1, ppn − 1) · 3.7 µs + (ppn − 1) · 0.4 µs) + 31 µs, CollNetChain
/// 2 (ppn − 1) · 2.8 µs + 30 µs; one rank a node the tree's Simple network hwLat, 14 µs, instead
/// of the network's ("latencies are fully exposed").
inline double collnet_latency_s(bool direct, double ppn) {
  const double inter = ppn == 1 ? kHwLatTree[2][2] : direct ? kHwLatCollNetDirectNet : kHwLatCollNetChainNet;
  return direct ? 2 * (std::min(1.0, ppn - 1) * kHwLatCollNetDirectIntra + (ppn - 1) * kCollNetDirectArityLat) + inter
                : 2 * (ppn - 1) * kHwLatCollNetChainIntra + inter;
}

/// PAT (AllGather and ReduceScatter over one GPU per node, Simple only): base latency, seconds;
/// its latency per rank (the linear part: "still a linear part; hopefully we'll manage to remove
/// it at some point"), seconds; the divisor of its per-level network latency; its busBw factor
/// (src/graph/tuning.cc: baseLat 8.0 µs, lat += log2i(nNodes) · interLat / 3.5 + nRanks · 2.8 µs,
/// busBw *= .75).
inline constexpr double kBaseLatPat = 8.0e-6;
inline constexpr double kPatPerRankLat = 2.8e-6;
inline constexpr double kPatLevelLatDivisor = 3.5;
inline constexpr double kPatBusBwFactor = 0.75;
/// What NCCL's tuner multiplies the ring's modelled time by for an fp8 collective over more than
/// kFp8RingMaxRanks ranks, "any factor large enough to act as a partition between lossy and
/// non-lossy algos" (src/enqueue.cc, the cost table's fill, NCCL 2.24 and later).
inline constexpr double kFp8RingRelegation = 1024.0;
inline constexpr int kFp8RingMaxRanks = 8;
/// NCCL's modelled latency of a PAT AllGather or ReduceScatter over `ranks` ranks, one per node,
/// seconds: baseLat + log2i(ranks) · interLat / 3.5 + ranks · 2.8 µs, interLat the tree's Simple
/// network hwLat (NCCL: "with ppn=1 latencies are fully exposed, use the Tree network latency").
inline double pat_latency_s(int ranks) {
  return kBaseLatPat + log2i(ranks) * kHwLatTree[2][2] / kPatLevelLatDivisor + ranks * kPatPerRankLat;
}

}  // namespace overlapsim::nccl
