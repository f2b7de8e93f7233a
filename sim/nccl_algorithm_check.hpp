// What a job's NCCL_ALGO does to the collectives of its iteration (sim/scenario.hpp
// NcclEnvironment): where one forced algorithm cannot run for a collective and the ring runs
// instead, `overlapsim run` notes which collectives and what ran; where a list leaves a collective
// nothing that can run, NCCL 2.24 and later fail the call ("No algorithm/protocol available for
// function ...", src/enqueue.cc topoGetAlgoInfo), and the scenario is refused.
#pragma once

#include "sim/replay.hpp"
#include "sim/scenario.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace overlapsim {

class NcclAlgorithmCheck {
 public:
  /// For a scenario's environment `env` (read from the file at `scenario_path`).
  NcclAlgorithmCheck(const NcclEnvironment& env, std::string scenario_path);

  /// Whether NCCL_ALGO can change anything to check: one algorithm name, or a list.
  bool active() const { return active_; }

  /// Plans (plan_collective, with `options`' collective options) every distinct collective of
  /// `schedule` whose op leaves its algorithm to the job (Op::algorithm Auto; not AllToAll) and
  /// notes those whose plan fell back to the ring (CollectivePlan::fallback). Throws InputError at
  /// the nccl.algo value (file, line, column; key nccl.algo) naming the collective, its group and
  /// size where NCCL_ALGO is a list that leaves it no algorithm that can run. Each distinct
  /// collective is planned once over every schedule checked. Does nothing unless active().
  void check(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

  /// The note for the run's result: the collectives (kind, group, ops) for which the forced
  /// algorithm did not run, what ran instead, and why (for each, the condition that failed:
  /// algorithm_unavailable_reason, as `overlapsim collective` says it); "" where none fell back.
  std::string note() const;

 private:
  const NcclEnvironment env_;
  const std::string path_;
  const bool active_;
  /// Distinct collectives planned: group ranks, kind, bytes, channels, take_op_key.
  std::set<std::tuple<std::vector<int>, int, double, int, int>> planned_;
  /// Collectives that fell back, by (kind, purpose, ranks, nodes): their op names
  /// and the condition that failed for the first of them (algorithm_unavailable_reason).
  std::map<std::tuple<int, int, int, int>, std::pair<std::set<std::string>, std::string>> fell_back_;
};

}  // namespace overlapsim
