// The main job: scenario → topology, workload, cost model → each strategy's schedule → replay
// → RunResult (design §1).
#pragma once

#include "models/transformer.hpp"
#include "sim/result.hpp"
#include "sim/scenario.hpp"
#include "sim/topology.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

struct SimulateOptions {
  std::vector<std::string> strategies;  ///< empty: the scenario's list
  std::optional<Fidelity> fidelity;     ///< unset: the scenario's
  Folding folding = Folding::Representatives;
  /// Refuse (InputError) a schedule estimated above this many ops on the simulated ranks: the
  /// replay keeps every op in memory (about 0.5 KB each).
  long long max_ops = 20'000'000;
  /// Called with one line of progress before each strategy is simulated (may be empty).
  std::function<void(const std::string&)> progress;
  /// Called after each strategy's replay with its schedule, op times and the machine (e.g. to
  /// write a trace).
  std::function<void(const std::string& strategy, const Schedule&, const ReplayTimes&, const Topology&)> on_replayed;
  /// Replay every micro-batch instead of extending the steady state of a few
  /// (sim/micro_batch_extrapolation.hpp); a trace or recorded flows always replay them all.
  bool every_micro_batch = false;
  /// Have the replay record every flow (ReplayTimes::flows, for the trace's link tracks).
  bool record_flows = false;
  /// Summarize how each replay ran its communication (StrategyResult::communication).
  bool communication_report = false;
};

/// Runs the scenario. Throws InputError for inputs that do not fit together (a layout larger
/// than the machine, GPUs not divisible by tp·pp when dp is omitted, a profile for another GPU,
/// an NCCL_ALGO list that leaves a collective of the iteration no algorithm that can run:
/// sim/nccl_algorithm_check.hpp). Where one forced NCCL_ALGO name cannot run for some collectives
/// and the ring runs instead, RunResult::notes says which.
RunResult simulate(const Scenario& scenario, const SimulateOptions& options = {});

}  // namespace overlapsim
