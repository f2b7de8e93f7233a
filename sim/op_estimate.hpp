// The `--max-ops` guard (a replay keeps every op in memory, about 0.5 KB each, and its time grows
// with them): how many ops a strategy's schedule will hold, estimated before any schedule of
// the run is built, and the refusal of a strategy whose schedule would exceed the limit.
//
// Every micro-batch of an iteration runs the same ops (sim/micro_batch_extrapolation.hpp), so the
// ops of a strategy's schedule are affine in the micro-batches m: ops(m) = fixed + per_mb · m.
// The estimate measures the line on a probe: the workload of one representative rank per
// pipeline stage at a = min(m, PP) and a + 1 micro-batches (cheap: PP ranks, a few micro-
// batches), transformed by the strategy and counted; an unfolded run holds TP · DP ranks per
// stage, each with its stage's representative's ops, so the probe is multiplied by TP · DP there.
//
// Measured against the schedules built (`estimated_ops` against `ops` of `overlapsim run --json
// --fidelity analytic` under serial, megatron, te-overlap, wang-decomp and centauri): equal to the
// op on scenarios/*.yaml, scenarios/validation/*.yaml and tests/data/scenarios/*.yaml folded, and
// unfolded (every micro-batch replayed, two per pipeline) on default, default-sp, gpt3-175b-h100-
// tp8, comm-bound, composed-strategies, default-sp-25g, small and uneven-nodes (e.g. the H100
// scenario unfolded, 2 micro-batches: 2633472 ops under wang-decomp, 960256 under centauri, both
// estimated exactly). The rule of thumb it replaces (50 or 70 ops per layer and micro-batch,
// documented "within 1.5x") counted the workload only: 1.31x the 852 ops of small.yaml, and a
// quarter of wang-decomp's 84 M ops on the H100 scenario unfolded (it said 19.7 M). The estimate
// is exact wherever the ranks of a stage hold alike programs; where they may not (groups that sit
// unevenly on the nodes, so every rank is simulated and a topology-aware pass could split one
// rank's groups unlike another's) it is the representatives' count scaled up, and the built
// schedule is counted again before its replay (sim/simulate.cpp).
#pragma once

#include "models/transformer.hpp"
#include "sim/schedule.hpp"

#include <algorithm>
#include <functional>
#include <string>

namespace overlapsim {

/// Ops over the simulated ranks as an affine function of the micro-batches per pipeline.
struct OpLine {
  long long fixed = 0;   ///< ops that do not grow with the micro-batches (optimizer, gradient reduction, ...)
  long long per_mb = 0;  ///< ops each micro-batch adds
  /// Ops at `m` micro-batches (m ≥ 1); held at 10^18 (a projected line of a huge model,
  /// projected_workload, would pass 64-bit integers).
  long long at(int m) const {
    const double v = static_cast<double>(fixed) + static_cast<double>(per_mb) * m;
    return v >= 1e18 ? 1'000'000'000'000'000'000LL : fixed + per_mb * static_cast<long long>(m);
  }
};

/// What a run will hold for one strategy: the workload it is built from and the schedule the
/// strategy makes of it (both are held while the strategy runs).
struct OpEstimate {
  OpLine workload;  ///< the workload (transformer.hpp build_iteration) on the simulated ranks
  OpLine schedule;  ///< the strategy's schedule on the simulated ranks
  /// The larger of the two at `m` micro-batches: what the guard compares with --max-ops.
  long long at(int m) const { return std::max(workload.at(m), schedule.at(m)); }
};

/// Transforms a workload built for `layout` (the run's layout with fewer micro-batches) by a
/// strategy, with the run's context (topology, cost model, --max-ops for the strategy's passes),
/// and returns how many ops the strategy's schedule holds (the callback may keep the schedule:
/// a folded run's replay of as many micro-batches takes it, sim/simulate.cpp). May throw what
/// the strategy throws (OpBudgetExceeded when a pass's growth passes the limit).
using ApplyStrategy = std::function<long long(Schedule workload, const Parallelism& layout)>;

/// Ops over every program of `s`.
long long count_ops(const Schedule& s);

/// The probe's workloads: one representative rank per pipeline stage (Folding::Representatives)
/// at a = min(M, PP) and b = min(M, a + 1) micro-batches (M: the layout's micro-batches, a ≥ 1;
/// one probe when a = b, `at_b` then empty). Built once per run and shared by every strategy's
/// estimate; a folded run's steady state samples a and b micro-batches too and may take them
/// (sim/simulate.cpp), so that the probe costs no build of its own there.
struct OpProbe {
  int a = 0, b = 0;
  Schedule at_a, at_b;
};

/// Builds the probe of `model` under layout `par`. Throws what build_iteration throws.
OpProbe build_op_probe(const ModelConfig& model, const Parallelism& par, const CostModel& cost);

/// The ops of the workloads build_iteration(model, par at m micro-batches, cost,
/// Folding::Representatives) would hold, as a line in m, without building any of them: the
/// probe of 10^6 layers in 32 stages is itself billions of ops (it took 24 GB before the guard
/// could refuse it). Each layer adds the same ops to its stage in every micro-batch, and each
/// micro-batch the same ops, so the count is bilinear in (layers per stage, micro-batches): the
/// four workloads of 1 and 2 layers per stage at 1 and 2 micro-batches (PP ranks, a few hundred
/// ops each) fix it (exact: tests/max_ops_test.cpp against the workloads built). Figures past
/// 10^18 ops are held there. Throws what build_iteration throws.
OpLine projected_workload(const ModelConfig& model, const Parallelism& par, const CostModel& cost);

/// Estimates the ops of `apply`'s schedule under `probe`'s layout `par` at any number of micro-
/// batches: applies the strategy to each of the probe's workloads (a copy of it, or, with
/// `take_workloads`, the workload itself, leaving `probe.at_a` and `at_b` empty), counts, and
/// multiplies by TP · DP when `folding` is Folding::None (the line is flat through a when a =
/// b). Its cost is the strategy's passes over a + b micro-batches, no build, no replay. Throws
/// what `apply` throws.
OpEstimate estimate_ops(OpProbe& probe, const Parallelism& par, Folding folding, const ApplyStrategy& apply,
                        bool take_workloads = false);

/// "9.2 M" for 9'200'000, "830 k" for 830'000, "412" below a thousand: op counts for people,
/// rounded to the nearest unit shown (999'999 is "1.0 M").
std::string format_ops(long long ops);

/// What a refusal suggests besides raising --max-ops, from how the run was asked for.
struct OpRefusalContext {
  int micro_batches = 0;             ///< the iteration's, per pipeline
  long long ranks_per_stage = 1;     ///< simulated ranks per pipeline stage: TP · DP unfolded, else 1
  bool unfolded_on_request = false;  ///< --unfold was given (and folding was possible)
  bool every_micro_batch = false;    ///< --every-micro-batch replays all of an iteration the steady state could extend
  bool needs_every_op = false;       ///< a trace replays all of an iteration the steady state could extend
};

/// Why `strategy` is refused, in one line: `what` (the schedule, e.g. "its steady state's largest
/// sample (6 of the 64 micro-batches)") would hold about `ops` ops on `ranks` simulated rank(s),
/// the limit being `max_ops`; then how to get past it: raise --max-ops to at least `ops`; where
/// `all` (the schedule replays every micro-batch) lower global_batch or raise micro_batch, and
/// drop --every-micro-batch or the trace where they forced it; drop --unfold where it was given
/// (with the estimate folded).
std::string op_refusal(const std::string& strategy, const std::string& what, long long ops, int ranks,
                       long long max_ops, const OpRefusalContext& c, bool all);

}  // namespace overlapsim
