// Result of simulating one scenario under one or more strategies, and how its figures are
// derived from replay times.
//
// Per strategy (seconds unless said otherwise):
//   iteration_s      — the makespan of the iteration (latest op end over all simulated ranks);
//   tflops_per_gpu   — Narayanan et al.'s FLOPs (with recomputation, models/flops.hpp) / (iteration · GPUs) / 1e12;
//   model_tflops_per_gpu, mfu — model FLOPs (no recomputation) / (iteration · GPUs), and over the dense peak;
//   compute_s        — time some compute kernel runs (union of kernel intervals), averaged over simulated ranks;
//   exposed_comm_s   — time some communication runs while no kernel does, averaged likewise;
//   bubble_s         — iteration_s − compute_s − exposed_comm_s: the rank is idle (pipeline bubble, waits);
//   peak_memory_bytes— highest per-GPU estimate over the pipeline stages (models/memory_model.hpp);
//   speedup          — megatron's iteration_s / this iteration_s (0 when megatron is not in the run).
#pragma once

#include "sim/comm_report.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/strategy.hpp"

#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

struct StrategyResult {
  /// Why --max-ops refused to build a strategy's schedule (sim/op_estimate.hpp); such a strategy
  /// has no figures but its peak memory.
  struct Refusal {
    std::string why;        ///< one line: the schedule, its ops, the limit, how to get past it
    long long ops = 0;      ///< the ops estimated (or counted) over the limit (0: a pass stopped before a count)
    long long max_ops = 0;  ///< the limit (--max-ops)
    int replays = 0;        ///< replays of the strategy made before it (0: refused before any)
  };
  std::string strategy;
  bool out_of_memory = false;
  std::optional<Refusal> refusal;  ///< set when --max-ops refused it
  double iteration_s = 0;
  double tflops_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double peak_memory_bytes = 0;
  double speedup_vs_megatron = 0;
  long long ops = 0;          ///< ops in the replayed schedule (simulated ranks)
  /// --max-ops's estimate of `ops`, made before any schedule was built (sim/op_estimate.hpp;
  /// the workload's ops where it holds more); 0 out of memory or where a pass stopped the probe.
  long long estimated_ops = 0;
  long long activities = 0;   ///< activities the replay created: kernels (a run of kernels on one stream is one,
                              ///< ReplayOptions::every_kernel), flows and timers (SimGrid's in flow fidelity)
  int replays = 0;            ///< replays of its schedules made (the steady state's samples, or one)
  /// Host wall-clock seconds spent in replay() over those replays (flow: the forked child's
  /// start included), measured with std::chrono::steady_clock; not a simulated figure, and not
  /// written to the JSON (`run --timings` prints it).
  double replay_wall_s = 0;
  std::vector<std::string> notes;  ///< what the strategy did not do and why (e.g. a fallback), one line each
  std::vector<OpPlan> plan;        ///< a searching strategy's choice per communication op (`--explain`)
  /// How the replay ran each communication op (SimulateOptions::communication_report, `--explain`),
  /// from a replay of `communication_micro_batches` micro-batches (an extended run: its largest sample).
  std::vector<CommOpSummary> communication;
  int communication_micro_batches = 0;
};

struct RunResult {
  std::string scenario;
  std::string model;
  std::string topology;
  std::string profile;         ///< path of the calibration profile used
  std::string profile_source;  ///< its provenance line
  std::string layout;          ///< e.g. "TP 8 · PP 8 · DP 24, SP on, micro-batch 1, 1f1b, recompute full"
  std::string nccl;            ///< the scenario's NCCL environment where it sets one, e.g. "NCCL_NVLS_ENABLE=0"; "" none
  int gpus = 0;
  int micro_batches = 0;       ///< per pipeline in the iteration
  int simulated_ranks = 0;
  std::string fidelity;
  /// The flow fidelity's settings the scenario changes (FlowSettings::describe, e.g.
  /// "flow.tree_slice_flows 0"); "" none, or an analytic run (which ignores them).
  std::string flow_settings;
  double device_memory_bytes = 0;
  double peak_flops = 0;       ///< dense peak of the GPU for the model's dtype, FLOP/s
  std::optional<double> published_tflops_per_gpu;
  std::string published_source;
  std::string notes;
  std::vector<StrategyResult> strategies;
};

/// Time breakdown of a replay: compute, exposed communication and idle, averaged over ranks.
struct Breakdown {
  double compute_s = 0, exposed_comm_s = 0, idle_s = 0;
};
Breakdown breakdown(const Schedule& s, const ReplayTimes& t);

}  // namespace overlapsim
