// How a replay ran its communication: per distinct communication op (its name, kind, group and
// size), how many instances the simulated ranks ran, what NCCL runs it as (algorithm, protocol
// and channels, the SMs its kernel holds), its contention-free closed form and the time it took
// in the replay: from when its last member joined (the latest start among the simulated ranks'
// instances of it, a mirror starting with its representative; a send: its own start, its data
// leaving when it is posted) to its end on the rank, contention on shared links and NICs included. What `overlapsim run
// --explain` prints under a strategy's table.
#pragma once

#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim {

struct CommOpSummary {
  std::string op;         ///< the op's name, e.g. "ar.proj", "dp.rs"
  std::string kind;       ///< "AllReduce", ..., "AllToAll", "Send"
  /// A collective's elements in nccl-tests' names, with the reduction where it reduces:
  /// "bfloat16 sum", "float max", "bfloat16" (an AllGather); "" for a send.
  std::string type;
  std::string purpose;    ///< "tp", "dp", "pp", "embedding"; "pair" for a send on the pair's own communicator
  int group_size = 0;     ///< ranks of the op's communicator (2 for a pair's send)
  int nodes = 0;          ///< nodes it spans
  int local_ranks = 0;    ///< its fewest ranks on one node (NCCL's localRanks)
  double bytes = 0;       ///< NCCL buffer size per rank (a send: the message), bytes
  long long instances = 0;  ///< ops over the simulated ranks (each stands for its mirrors)
  std::string plan;       ///< "ring/Simple/8" (algorithm/protocol/rings), "chain/...", "p2p/4" (NCCL's p2p
                          ///< channels), "copy engine" (a send of num_sm 0), "measured" (a profile's
                          ///< fit times it, analytic fidelity)
  int sms = 0;            ///< SMs the kernel holds (NCCL's channels, or the op's num_sm; 0: copy engine)
  double alone_s = -1;    ///< contention-free time, seconds: the plan's closed form (a send: its route's and
                          ///< NCCL's latency plus the message at the lesser of the route's bottleneck and
                          ///< the p2p channels' copy rate)
  double mean_s = 0;      ///< mean replayed time from the last member's start to the end, seconds
  double max_s = 0;       ///< the longest, seconds
};

/// The summary of `times` (a replay of `schedule` on `topo` with `options`), one row per distinct
/// (name, kind, group, size, channels, algorithm, reduction, element type) in order of first appearance; rows
/// for collectives and sends (a send's receive is its other end, not counted again).
/// REQUIRES: times from replay(schedule, topo, options).
std::vector<CommOpSummary> summarize_communication(const Schedule& schedule, const ReplayTimes& times,
                                                   const Topology& topo, const ReplayOptions& options);

}  // namespace overlapsim
