// A simulated nccl-tests: one collective over the first N ranks of a machine, timed at a range
// of sizes, reported in nccl-tests' terms (NVIDIA/nccl-tests, doc/PERFORMANCE.md):
//   algbw = size / time;  busbw = algbw · factor, factor = 2(n−1)/n for AllReduce,
//   (n−1)/n for AllGather, ReduceScatter and AllToAll, 1 for Broadcast, Reduce and SendRecv.
// `size` is nccl-tests' size column: the bytes of the buffer (AllGather: the gathered output;
// ReduceScatter: the input), float32 elements (count = size / 4).
#pragma once

#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim {

enum class BenchOp { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv };
/// "allreduce", "all_reduce", "all_reduce_perf" ... → BenchOp; throws std::invalid_argument.
BenchOp parse_bench_op(const std::string& text);
const char* to_string(BenchOp op);
/// nccl-tests' bus-bandwidth factor for n ranks.
double busbw_factor(BenchOp op, int n);

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
};

struct BenchOptions {
  ReplayOptions replay;
  bool unfold = false;  ///< simulate every rank (default: rank 0 alone, the others mirrors;
                        ///< every rank is simulated anyway for Broadcast, Reduce, SendRecv, an
                        ///< AllReduce run as a tree, and AllToAll on a non-uniform node)
  int channels = 0;     ///< 0: the replay's default
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
};

/// Times `op` over ranks 0..ranks−1 of `topo` at each size, all in one replay (the collectives
/// run one after the other on one stream). REQUIRES: 1 <= ranks <= topo.num_gpus().
std::vector<BenchRow> run_collective_bench(const Topology& topo, BenchOp op, int ranks,
                                           const std::vector<double>& sizes, const BenchOptions& opt);

}  // namespace overlapsim
