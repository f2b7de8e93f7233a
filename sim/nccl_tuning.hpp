// What NCCL decides per collective call before it launches it, besides the plan's shape: how
// many channels (thread blocks) and threads per block it uses for a size, and — when a
// calibration profile measured it — which algorithm and protocol it picks.
//
// Channels and threads (NCCL 2.30.7, src/enqueue.cc topoGetAlgoInfo; the same loop since at
// least 2.12, src/enqueue.cc getAlgoInfo/getChannnelThreadInfo). For Ring and Tree, starting from
// the communicator's channel count nc and the algorithm/protocol's maximum threads nt:
//   while nBytes < nc · nt · threshold and nc >= 2:   nc −= 1
//   while nBytes < nc · nt · threshold and nt % 128 == 0:   nt /= 2
// (2.18 and older halve nt inside the first loop once nc is 1: the same result). nBytes is the
// larger of the send and receive buffers (src/enqueue.cc ncclGetAlgoInfo,
// ncclFuncMaxSendRecvCount): our CollectiveOp bytes (schedule.hpp). Constants:
//   maximum threads (src/graph/tuning.cc ncclTopoTuneModel, src/include/device.h):
//     Simple: ring NCCL_SIMPLE_MAX_NTHREADS 512 (256 when the ring's intra-node bandwidth times
//             its channels is at most PCI_BW, 12 GB/s, src/graph/topo.h), tree 512;
//     LL: NCCL_LL_MAX_NTHREADS 512; LL128: NCCL_LL128_MAX_NTHREADS 640;
//   thresholds (src/include/comm.h, tuning.cc "Set per-thread amount of work"):
//     NCCL_SIMPLE_THREAD_THRESHOLD 64, NCCL_LL_THREAD_THRESHOLD 8 (times nRanks for the ring),
//     NCCL_LL128_THREAD_THRESHOLD 8.
// NCCL then adds a warp (ring Simple) or four (tree Simple) and runs the tree with 640 threads
// always; those extra threads move no data and are not reported here.
//
// Tuning table (a calibration profile's optional `tuning` section, calibrate/profile.hpp): rules
// measured on hardware, e.g. from NCCL's own TUNING debug lines (calibrate/nccl_tests.hpp). A
// rule applies to a collective kind, a range of group sizes and of node counts, and sizes up to
// its max_bytes; of the rules that apply, the one with the least max_bytes wins. A collective
// that no rule covers (larger than every max_bytes, or another group) is chosen by the model.
#pragma once

#include "sim/schedule.hpp"

#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

enum class Protocol : uint8_t { LL, LL128, Simple };

/// `text` with ASCII letters in lower case (NCCL's names are matched case-insensitively, as
/// NCCL_ALGO and NCCL_PROTO are).
std::string ascii_lower(std::string text);
/// NCCL_PROTO's names in any case: "LL", "LL128", "Simple". Returns false (and leaves *out) for
/// any other text.
bool parse_protocol(const std::string& text, Protocol* out);
/// NCCL_ALGO's names in any case: "ring", "tree", "nvls", "nvlstree" (also as NCCL's debug
/// output spells it, "nvls_tree"), and "auto" (the tuner's choice).
/// Returns false (and leaves *out) for any other text.
bool parse_algorithm(const std::string& text, CollectiveAlgorithm* out);
/// nccl-tests' reduction names (`-o`) in any case: to_string(ReduceOp)'s, "sum" ... "mulsum".
/// Returns false (and leaves *out) for any other text.
bool parse_reduce_op(const std::string& text, ReduceOp* out);
/// nccl-tests' type names (`-d`, its type column) in any case: to_string(DataType)'s, "int8"
/// ... "f8e5m2"; and, for the floating types, the names frameworks and NCCL's enumerators give
/// them: "fp16"/"float16" (half), "fp32"/"float32" (float), "fp64"/"float64" (double), "bf16"
/// (bfloat16), "fp8e4m3"/"float8e4m3" and "fp8e5m2"/"float8e5m2"; "char" (int8) and "int"
/// (int32), the names nccl-tests printed before NCCL 2.
/// Returns false (and leaves *out) for any other text.
bool parse_datatype(const std::string& text, DataType* out);

/// NCCL's channel and thread count for one collective call.
struct NcclLaunch {
  int channels = 1;  ///< thread blocks, each one channel (ring or tree)
  int threads = 0;   ///< data-moving threads per block (before NCCL's extra sync warps)
};

/// The header's loop: channels and threads NCCL uses for a collective of `bytes` (NCCL's nBytes)
/// over `ranks` ranks with algorithm `alg` (Ring or Tree) and protocol `proto`, when the
/// communicator has `max_channels` channels. `ring_bw_Bps` is the ring's intra-node bandwidth
/// summed over its channels (bytes/s): at most 12e9 (PCI_BW) gives ring Simple 256 threads.
/// REQUIRES: alg != Auto; bytes >= 0; ranks >= 1; max_channels >= 1.
NcclLaunch nccl_launch(CollectiveAlgorithm alg, Protocol proto, double bytes, int ranks, int max_channels,
                       double ring_bw_Bps = 1e300);

/// NCCL's channels for one point-to-point message (a send and its receive) of `bytes`, as NCCL
/// 2.18.5 splits it (src/graph/paths.cc ncclTopoComputeP2pChannels, src/enqueue.cc
/// scheduleP2pTasksToPlan and calcP2pChunkSize; the same since 2.12):
///   P = nextPow2(min(comm_channels, 32))                  p2pnChannels (MAXCHANNELS 32)
///   Q = nextPow2(min(comm_channels, peer_channels))       p2pnChannelsPerPeer
///   one node: nMin = Q halved while nMin · comm_ranks > P, nMax = Q halved while
///             nMax · comm_ranks > 4 P (each at least 1); across nodes nMin = nMax = Q;
///   step = chunk_bytes (NCCL_P2P_NVL_CHUNKSIZE 512 KiB inside an all-NVLink node, else 128 KiB)
///   chunk = size rounded up to step / 8, size = max(step / 8, bytes / nMin), doubling the
///           channels (to at most nMax) while size > step · (one node ? 32 : 1)
///   channels = ceil(bytes / chunk), at least 1 (chunk i runs on channel i mod Q; there are at
///   most nMax <= Q chunks, so each channel copies one).
/// `peer_channels` is ncclTopoGetNchannels' least over the peers: 2 per NVLink of the path
/// (2 · max(1, path bw / NVLink bw)), else 2 (PCIe; NCCL_NCHANNELS_PER_NET_PEER across nodes).
/// REQUIRES: bytes >= 0; comm_ranks, comm_channels, peer_channels >= 1; chunk_bytes > 0.
struct NcclP2pSplit {
  int channels = 1;        ///< channels the message runs on
  double chunk_bytes = 0;  ///< bytes of its largest chunk (min(chunk, bytes)), the most one channel copies
  int p2p_channels = 1;    ///< P, the communicator's p2pnChannels
};
NcclP2pSplit nccl_p2p_split(double bytes, int comm_ranks, bool one_node, int comm_channels, int peer_channels,
                            double chunk_bytes);

/// Thread blocks (one per channel, one SM each) of one rank's NCCL kernel for an all-to-all: a
/// group of one send to and one receive from every member of the communicator, itself included,
/// each message on `parts` channels (nccl_p2p_split's `channels` for the per-peer bytes). NCCL
/// 2.18.5 puts part c of the message to a peer on channel (mirror(base mod P) + c) mod P, where
/// P = p2p_channels (a power of two, nccl_p2p_split), mirror(x) reverses x's log2(P) bits
/// (src/graph/paths.cc: p2pChannels[c] = mirrorBits(c, p2pnChannels); src/include/channel.h
/// ncclChannelComputeFromBase), and base = s on one node, d + s / 8 across nodes, with s the
/// peer's local index minus this rank's (mod local_ranks) and d the node distance (mod nodes)
/// (ncclChannelComputeBase, 8 = NCCL_MAX_WORK_ELEMENTS_P2P / 2); the kernel's grid is the
/// number of distinct channels (src/enqueue.cc: plan->channelCount, the set bits of
/// channelMask). A receive from the peer at −s uses the send's base, so receives add none.
/// One DGX A100 or H100 (8 ranks, P = 32): 8 blocks for 1-channel messages, 32 from 4 channels
/// per peer. REQUIRES: local_ranks, nodes >= 1; p2p_channels a power of two in [1, 32];
/// 1 <= parts <= p2p_channels.
int nccl_alltoall_kernel_channels(int local_ranks, int nodes, int p2p_channels, int parts);

/// What NCCL's tuning model knows of a communicator, for ring and tree AllReduce (NCCL 2.30.7
/// src/graph/tuning.cc ncclTopoTuneModel: its graphs' channel count and bandwidth, the hardware
/// of their intra-node hops, the GPU generation, the CPU vendor).
struct NcclTunerInputs {
  int ranks = 1;            ///< nRanks
  int nodes = 1;            ///< nNodes
  int cc_index = 1;         ///< compute capability: Volta 0, Ampere 1, Hopper 2, Blackwell 3
  bool amd_cpu = false;     ///< the nodes' CPUs are AMD (LL ceiling and network post overhead)
  bool intra_pcie = false;  ///< the graph joins a node's GPUs over PCIe (hwLat PCI), else NVLink
  int graph_channels = 1;   ///< graphs[ring/tree]->nChannels
  /// graphs[a]->nChannels · bw (bwIntra up to 2 nodes, bwInter beyond: what the graph search
  /// found per channel), bytes/s: the ring's busbw bound.
  double graph_busbw_Bps = 0;
  int comm_channels = 1;    ///< comm->nChannels (the ring Simple plateau test)
  /// LL128 is enabled by default (NCCL: intra-node paths up to PATH_NVB), so the tuner ranks it.
  bool ll128 = true;
  /// Only this protocol is allowed (NCCL_PROTO=…), or any (null).
  const Protocol* only_protocol = nullptr;
  /// The protocols (bit 1 << Protocol) and algorithms (sim/nccl_selection.hpp algorithm_bit)
  /// NCCL_PROTO's and NCCL_ALGO's lists enable: the ranking skips the others. Default: all.
  unsigned protocols = 0x7u;
  unsigned algorithms = 0xFEu;
  /// NVLS_TREE can run (collective_plan.hpp), and NCCL's NVLS graph: one channel per head, its
  /// intra-node bandwidth (graphs[NVLS]->bwIntra · nChannels) and inter-node bandwidth
  /// (bwInter · nChannels), bytes/s.
  bool nvls_tree = false;
  /// NVLS can run: inside the communicator's one node for an AllGather or ReduceScatter, with
  /// nvls_heads (the members) and nvls_intra_Bps as for NVLS_TREE; across nodes (nodes >= 2) with
  /// CollNet (an AllGather's or ReduceScatter's needs `collnet` set too, for its heads), with the
  /// NVLS graph's heads and bandwidths as for NVLS_TREE (collective_plan.hpp, NVLS across nodes).
  bool nvls = false;
  int nvls_heads = 0;
  double nvls_intra_Bps = 0;
  double nvls_inter_Bps = 0;
  /// CollNet (CollNetDirect, CollNetChain) can run (collective_plan.hpp, CollNet), and NCCL's
  /// CollNet graphs: the heads (NICs of a node, one per GPU at most) and their channels' summed
  /// intra-node bandwidth (nChannels · bwIntra), bytes/s.
  bool collnet = false;
  int collnet_heads = 0;
  double collnet_intra_Bps = 0;
  /// CollNetDirect's per-channel network bandwidth (bwInter: one NIC), bytes/s; read for an
  /// AllGather or ReduceScatter.
  double collnet_inter_Bps = 0;
  /// The collective's elements are fp8 and its ranks more than 8: NCCL multiplies the ring's
  /// modelled time by nccl::kFp8RingRelegation (schedule.hpp, DataType), so that the ranking takes
  /// any other algorithm that can run. Protocols within the ring rank as before.
  bool fp8_ring_relegated = false;
};

/// NCCL's modelled time of an AllReduce of `bytes` (nBytes) with `alg` (Ring or Tree) and
/// `proto`, seconds (ncclTopoTuneModel + ncclTopoGetAlgoTime, NCCL 2.30.7):
///   time = lat + nBytes / (busBw · ratio [· treeCorrection])
/// with B = graph_busbw_Bps, C = graph_channels, n = ranks, N = nodes, ppn = n / N and
///   ring   busBw: Simple B; LL min(llMaxBw, B/2); LL128 min(0.92 B, C · perChMaxRingLL128);
///          ratio n / (2(n − 1)); lat = baseLat + (2(n − 1) − 2(N − 1)) · max(hwLat_intra, net
///          overhead: 1 µs, AMD 2 µs, Simple ×3, across nodes) + 2(N − 1) · hwLat_net (the tree's
///          when ppn = 1), times 1.4 (Volta 1.9) for Simple across nodes once
///          nBytes / (comm_channels · n) >= 64 ("plateau effect of ring");
///   tree   T = min(0.92 B, C · perChMaxTreeBw); busBw: Simple T; LL min(T / 3.8, llMaxBw);
///          LL128 min(T · (N = 1 ? 7/9 : 120/128), C · perChMaxTreeLL128); ratio 1/2;
///          lat = baseLat + 2 ((ppn − 1) · hwLat_intra + log2(N) · hwLat_net); bandwidth times
///          treeCorrectionFactor[log2(nBytes / 64)] below 2^29 B;
///   NVLS_TREE (Simple only) busBw = h · min(intra · η · (h − 1)/h · 2, inter · (N <= 2 ? 2 : 1),
///          perChMaxNVLSTreeBw) with h = nvls_heads, intra and inter per head (nvls_intra_Bps /
///          h, nvls_inter_Bps / h), η nvlsEfficiency; ratio n / (2(n − 1)); lat = hwLat NVLink
///          25 µs + 2 log2(N) · 20.9 µs;
///   NVLS across nodes (Simple only, with CollNet: in.nvls and N >= 2) busBw = h · min(intra · η ·
///          (h − 1)/h · 2, inter), as NVLS_TREE's without its two-node doubling or its ceiling;
///          ratio n / (2(n − 1)); lat = hwLat NVLink 25 µs + network 18 µs (kNvlsCollNetLatency);
///   CollNetDirect, CollNetChain (Simple only, in.collnet): nccl::collnet_latency_s + nBytes /
///          (busBw / 2), busBw = collnet_intra_Bps (Direct: over the GPU/NIC factor, × 0.85 on
///          Hopper and later);
/// the constants are sim/nccl_constants.hpp's. Returns +inf where NCCL leaves the pair out
/// (LL128 not enabled; NVLS, NVLS_TREE or CollNet not possible, or not Simple). REQUIRES: alg is
/// Ring, Tree, Nvls, NvlsTree, CollnetDirect or CollnetChain; ranks >= 2; bytes >= 0;
/// graph_busbw_Bps > 0; graph_channels, comm_channels >= 1.
double nccl_model_allreduce_s(CollectiveAlgorithm alg, Protocol proto, double bytes, const NcclTunerInputs& in);

/// The algorithm (Ring, Tree or, where they can run, CollnetDirect, CollnetChain, Nvls across
/// nodes, NvlsTree) of NCCL's least modelled time over its enabled protocols (in.only_protocol's
/// alone where set) for an AllReduce of `bytes` (src/enqueue.cc getAlgoInfo, which tries them in
/// NCCL's order: the tree, the ring, CollNetDirect, CollNetChain, NVLS, NVLS_TREE; a tie goes to
/// the earlier), among those in.algorithms
/// and in.protocols enable (NCCL_ALGO, NCCL_PROTO lists).
CollectiveAlgorithm nccl_model_allreduce_algorithm(double bytes, const NcclTunerInputs& in);

/// NCCL's modelled time of an AllGather or a ReduceScatter (NCCL models them alike) of `bytes`
/// (nBytes: the gathered buffer, the larger of the two) with `alg` (Ring, Nvls or Pat) and `proto`,
/// seconds (ncclTopoTuneModel + ncclTopoGetAlgoTime, NCCL 2.30.7), time = lat + nBytes / bw:
///   ring  bw = busBw · n / (n − 1), busBw as the AllReduce ring's; lat = baseLat + (n − N) ·
///         max(hwLat_intra, net overhead) + (N − 1) · hwLat_net (the tree's when ppn = 1), with no
///         plateau factor (NCCL applies it to AllReduce only);
///   PAT   (Simple only, and only where every node holds one rank: NCCL's ncclPatEnable) bw =
///         0.75 · B, not converted from busBw (NCCL converts only the ring's for these two
///         collectives); lat = nccl::pat_latency_s(n) = 8 µs + log2i(n) · 14 µs / 3.5 + n · 2.8 µs;
///   NVLS  (Simple only, inside one node: in.nvls; NCCL ≥ 2.19) bw = h · intra · η · (h − 1)/h ·
///         (n − 1)/n with h = nvls_heads, intra = nvls_intra_Bps / h, η nvlsEfficiency, not
///         converted; lat = hwLat NVLink NVLS, 25 µs, no base latency. On a DGX H100 that is
///         0.65 of the port as algbw against the ring's 8/7 of its graph: NCCL's tuner never ranks
///         it first there, and NCCL runs it where NCCL_ALGO asks for it;
///         across nodes (in.nvls and in.collnet, N >= 2, with CollNet's heads for every one of a
///         node's ppn >= 2 GPUs) bw = h · min(intra · η · (h − 1)/h · (ppn − 1)/ppn, inter) with
///         inter = nvls_inter_Bps / h, not converted; lat = hwLat NVLink 25 µs + network 18 µs;
///   CollNetDirect (Simple only, across nodes, in.collnet with a head for each of a node's ppn
///         GPUs) bw = ppn · min(collnet_intra_Bps / heads, 0.9 · collnet_inter_Bps), not converted;
///         lat = nccl::collnet_latency_s(direct, ppn).
/// Returns +inf where NCCL leaves the pair out. REQUIRES: alg is Ring, Nvls, Pat or CollnetDirect;
/// the rest as nccl_model_allreduce_s.
double nccl_model_allgather_s(CollectiveAlgorithm alg, Protocol proto, double bytes, const NcclTunerInputs& in);

/// The algorithm (Ring, or CollnetDirect, Nvls or Pat where they can run) of NCCL's least modelled
/// time over its enabled protocols for an AllGather or ReduceScatter of `bytes` (src/enqueue.cc
/// tries them in its order: the ring, CollNetDirect, NVLS, PAT, so a tie goes to the earlier),
/// among those in.algorithms and in.protocols enable.
CollectiveAlgorithm nccl_model_allgather_algorithm(double bytes, const NcclTunerInputs& in);

/// The protocol of NCCL's least modelled time for `kind` (AllReduce: nccl_model_allreduce_s;
/// AllGather, ReduceScatter: nccl_model_allgather_s) run with `alg`, among the protocols
/// in.protocols enables (in.only_protocol's alone where set), tried in NCCL's order LL, LL128,
/// Simple (a tie goes to the earlier; src/enqueue.cc getAlgoInfo); nullopt where none has a
/// finite time. REQUIRES: kind AllReduce, AllGather or ReduceScatter; alg one its model takes.
std::optional<Protocol> nccl_model_protocol(CollectiveKind kind, CollectiveAlgorithm alg, double bytes,
                                            const NcclTunerInputs& in);

/// One rule of a profile's tuning table (calibrate/profile.hpp, key `tuning.rules`).
struct TuningRule {
  CollectiveKind kind = CollectiveKind::AllReduce;  ///< never AllToAll
  int min_ranks = 1, max_ranks = INT_MAX;           ///< group sizes it applies to (inclusive)
  int min_nodes = 1, max_nodes = INT_MAX;           ///< node counts it applies to (inclusive)
  double max_bytes = 0;  ///< largest size (NCCL's nBytes, bytes) it applies to
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;  ///< any but Auto (calibrate/profile.hpp)
  Protocol protocol = Protocol::Simple;
};

/// The rule of least max_bytes among those covering (kind, ranks, nodes, bytes), or nullptr.
const TuningRule* find_tuning_rule(const std::vector<TuningRule>& table, CollectiveKind kind, int ranks, int nodes,
                                   double bytes);

}  // namespace overlapsim
