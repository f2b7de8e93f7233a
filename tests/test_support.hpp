// Helpers the tests share: temporary paths, reading a file whole, running the overlapsim binary.
#pragma once

#include "sim/collective_bench.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace overlapsim::testing {

/// doctest::Approx(v) with a relative bound only. doctest passes |a − b| < ε·(scale + max(|a|, |b|))
/// with scale 1 by default, an absolute margin of ε in the values' unit: on times in seconds a 10%
/// error at 250 µs passed `.epsilon(0.01)` (10 ms), and the default ε (1.2e-5) let 12 µs through.
/// Every test compares with this instead; chain `.epsilon(e)` as with doctest's.
inline doctest::Approx approx(double v) { return doctest::Approx(v).scale(1e-300); }  // (> 0: 0 == approx(0))

/// A fresh, unused path in /tmp ending in `suffix` (nothing exists there).
std::string temp_path(const char* suffix);

/// Ranks 0 … n−1 (a collective group of the first n GPUs).
std::vector<int> first(int n);

/// A collective op (AllReduce unless `kind` says otherwise) of `bytes` over schedule group
/// `group`, instance `match`, on `stream`, with NCCL algorithm `algorithm`.
Op collective_op(int group, int64_t match, double bytes, const char* name,
                 CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto, int stream = 0,
                 CollectiveKind kind = CollectiveKind::AllReduce);

/// A message of `bytes` from global rank `src` to `dst`, pair id `match`: its Send (on src) and
/// Recv (on dst), named "send" and "recv", on stream 0, NCCL's SMs (num_sm −1), on the pair's
/// communicator (group −1).
std::pair<Op, Op> send_recv_ops(int src, int dst, double bytes, int64_t match);

/// The makespan, seconds, of one collective `kind` of `bytes` with `algorithm` over the first 16
/// GPUs of `topo` (two 8-GPU nodes) on stream 0, in fidelity `f` with NCCL_COLLNET_ENABLE=1;
/// `with_send`: beside a 4 · `bytes` pipeline send from GPU 0 to GPU 8 (the same NIC rail) on
/// stream 1. Flow slows the collective there where its flows share that rail; analytic does not.
double makespan_beside_rail_send(const Topology& topo, CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes,
                                 Fidelity f, bool with_send);

/// The bytes a collective's flows carry, by global rank: into (`_in`) and out of (`_out`) each
/// rank, between GPUs of one node (`intra`) and between nodes (`inter`).
struct RankFlowBytes {
  std::vector<double> intra_in, intra_out, inter_in, inter_out;
};
/// The bytes of every flow of one collective `kind` of `bytes` with `algorithm` over the first 16
/// GPUs of `topo` (two 8-GPU nodes), replayed in flow fidelity with NCCL_COLLNET_ENABLE set to
/// `collnet_enable`, per rank (RankFlowBytes, 16 entries each).
RankFlowBytes flow_bytes_per_rank(const Topology& topo, CollectiveKind kind, CollectiveAlgorithm algorithm,
                                  double bytes, bool collnet_enable = true);

/// NCCL's tuner inputs (nccl_tuning.hpp) of 64 ranks on 8 DGX H100 nodes: compute capability 9.0
/// (cc_index 2), the ring graph's 8 channels at 48 GB/s each, a communicator of 16 channels; no
/// NVLS and no CollNet (the tests set theirs).
NcclTunerInputs dgx_h100_8_nodes_tuner_inputs();

/// topologies/dgx-h100-superpod.yaml with `nodes` nodes (node.count) and the overrides `more`.
Topology h100_nodes(int nodes, const TopologyOverrides& more = {});

/// Collective options with NCCL_COLLNET_ENABLE=1 and algorithm `alg`, the rest their defaults.
CollectiveOptions collnet_on(CollectiveAlgorithm alg = CollectiveAlgorithm::Auto);

/// An all_reduce_perf log of 16 H100s on 2 hosts (8 ranks each, one process per GPU), rows of
/// 1 MiB and 64 MiB, with `info` (NCCL INFO lines, "" for none) between its rank lines and rows.
std::string h100_2x8_allreduce_log(const std::string& info);

/// The link efficiencies of the shipped profile for `gpu_model` (e.g. "a100-sxm4-80gb").
LinkEfficiency shipped_link_efficiency(const std::string& gpu_model);

/// One collective bench row's time in flow fidelity and in analytic fidelity, seconds, with the
/// options `b` otherwise (its fidelity is ignored).
struct FlowAnalytic {
  double flow = 0, analytic = 0;
};
FlowAnalytic flow_and_analytic(const Topology& topo, BenchOp op, int ranks, double size, BenchOptions b);

/// A collective on a shipped topology with a forced protocol: the topology file (from the
/// source root), its overrides, the ranks, the protocol and the size in bytes.
struct ProtocolCase {
  std::string topology;
  std::map<std::string, std::string> overrides;
  int ranks;
  Protocol protocol;
  double size;
};
/// Bench options that force `c`'s protocol (everything else at its default).
BenchOptions forced_protocol(const ProtocolCase& c);

/// A scenario file whose `nccl:` section is `nccl` (appended after the last line; "" for none):
/// a small model as TP 8 x DP 4 on four DGX H100 nodes, no SP (TP AllReduces inside a node),
/// ZeRO 1 (DP ReduceScatter and AllGather over one GPU of each node), analytic, megatron.
std::string small_h100_scenario(const std::string& nccl);

/// The whole content of a file ("" when it cannot be read).
std::string slurp(const std::string& path);

struct Run {
  int status;          ///< exit status, -1 if the process did not exit normally
  std::string output;  ///< stdout and stderr together
};

/// Runs the overlapsim binary built with the tests, with `args` (shell syntax).
Run run_cli(const std::string& args);

}  // namespace overlapsim::testing
