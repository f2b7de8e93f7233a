// A simulated nccl-tests: one collective over N ranks of a machine (its first N GPUs, or the first
// K GPUs of each node as `mpirun -N K` / `srun --ntasks-per-node=K` place them), timed at a range
// of sizes, reported in nccl-tests' terms (NVIDIA/nccl-tests, doc/PERFORMANCE.md):
//   algbw = size / time;  busbw = algbw · factor, factor = 2(n−1)/n for AllReduce,
//   (n−1)/n for AllGather, ReduceScatter and AllToAll, 1 for Broadcast, Reduce and SendRecv.
// `size` is nccl-tests' size column: the bytes of the buffer (AllGather: the gathered output;
// ReduceScatter: the input), of opt.replay.collectives.datatype's elements (nccl-tests -d; count
// = size / datatype_bytes, float by default).
#pragma once

#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace overlapsim {

enum class BenchOp { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv };
/// "allreduce", "all_reduce", "all_reduce_perf" ... → BenchOp; throws std::invalid_argument.
BenchOp parse_bench_op(const std::string& text);
const char* to_string(BenchOp op);
/// The collective `op` runs. REQUIRES: op != SendRecv (point to point, no collective).
CollectiveKind bench_collective_kind(BenchOp op);
/// nccl-tests' bus-bandwidth factor for n ranks.
double busbw_factor(BenchOp op, int n);
/// Over how many of `ranks` nccl-tests spreads a size in its count column: `ranks` for
/// AllGather, ReduceScatter and AllToAll, whose count is a rank's share of the size, else 1
/// (nccl-tests src/*.cu GetCollByteCount): size = count · type size · this.
int nccl_tests_count_ranks(BenchOp op, int ranks);

/// Sizes from `from` to `to` bytes, each `factor` times the last (nccl-tests -b -e -f).
/// Throws std::invalid_argument unless 0 < from <= to and factor >= 2.
std::vector<double> size_range(double from, double to, double factor);

struct BenchRow {
  double size_bytes = 0;
  double time_s = 0;
  double algbw_Bps = 0;
  double busbw_Bps = 0;
  /// How the replay ran it, e.g. "ring/Simple/8" (algorithm, protocol, channels), "tree/LL/2",
  /// "chain/Simple/8", "p2p" for AllToAll and Send/Recv.
  std::string plan;
  /// The algorithm asked for (BenchOptions::algorithm, or NCCL_ALGO's list: ReplayOptions'
  /// collectives.allowed) cannot run here and the ring ran instead (CollectivePlan::fallback).
  bool fallback = false;
};

struct BenchOptions {
  ReplayOptions replay;
  bool unfold = false;  ///< simulate every rank (default: rank 0 alone, the others mirrors;
                        ///< every rank is simulated anyway for Broadcast, Reduce, SendRecv, an
                        ///< AllReduce run as a tree, and AllToAll on a non-uniform node)
  int channels = 0;     ///< 0: the replay's default
  /// Broadcast's and Reduce's root, a rank 0 .. ranks − 1 (nccl-tests -r): the group's ring
  /// order is kept and rotated so that the root is its first member, where the plan has its
  /// root (collective_plan.hpp). Ignored by the other collectives.
  int root = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// GPUs taken from each node (the job's ranks per node: nccl-tests under `mpirun -N K`); 0:
  /// every GPU of a node, i.e. GPUs 0..ranks−1 (bench_members).
  int ranks_per_node = 0;
  /// Where set, counts the sizes done: run_collective_bench adds 1 after each (another thread
  /// may read it, e.g. to say how far a long sweep has come).
  std::atomic<long long>* sizes_done = nullptr;
  /// Where set, called with each size's index and row as soon as it is done, in order (e.g. to
  /// print it).
  std::function<void(size_t, const BenchRow&)> on_row;
};

/// The GPUs (global ranks of `topo`) a bench of `ranks` ranks runs on, in rank order: GPUs
/// 0..ranks−1 when `ranks_per_node` is 0 or the node's GPU count, else the first
/// `ranks_per_node` GPUs of nodes 0, 1, ... (the last node may hold fewer).
/// Throws std::invalid_argument when ranks < 1, ranks_per_node < 0, ranks_per_node exceeds the
/// GPUs of a node, or the nodes are too few (the message names how many are needed).
std::vector<int> bench_members(const Topology& topo, int ranks, int ranks_per_node);

/// Times `op` over bench_members(topo, ranks, opt.ranks_per_node) at each size, each size alone
/// from time 0. REQUIRES: those members exist (bench_members does not throw).
std::vector<BenchRow> run_collective_bench(const Topology& topo, BenchOp op, int ranks,
                                           const std::vector<double>& sizes, const BenchOptions& opt);

}  // namespace overlapsim
