#include "sim/op_estimate.hpp"

#include "models/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace overlapsim {

long long count_ops(const Schedule& s) {
  long long n = 0;
  for (const RankProgram& p : s.programs) n += static_cast<long long>(p.ops.size());
  return n;
}

OpProbe build_op_probe(const ModelConfig& model, const Parallelism& par, const CostModel& cost) {
  const int m = par.num_micro_batches();
  OpProbe probe;
  probe.a = std::max(1, std::min(m, par.pp));
  probe.b = std::min(m, probe.a + 1);
  const auto build = [&](int k) {
    Parallelism p = par;
    p.global_batch = k * par.dp * par.micro_batch;
    return build_iteration(model, p, cost, Folding::Representatives);
  };
  probe.at_a = build(probe.a);
  if (probe.b > probe.a) probe.at_b = build(probe.b);
  return probe;
}

OpLine projected_workload(const ModelConfig& model, const Parallelism& par, const CostModel& cost) {
  const auto built = [&](int layers_per_stage, int micro_batches) {
    ModelConfig mc = model;
    mc.layers = layers_per_stage * par.pp;
    Parallelism p = par;
    p.global_batch = micro_batches * par.dp * par.micro_batch;
    return static_cast<double>(count_ops(build_iteration(mc, p, cost, Folding::Representatives)));
  };
  // ops(L, m) = o11 + a·(L − 1) + b·(m − 1) + d·(L − 1)(m − 1) through the four corners, L the
  // layers per stage: a line in m of slope b + d·(L − 1). (In doubles: 2^30 layers of hundreds of
  // ops pass 64-bit integers once multiplied by the micro-batches.)
  const double o11 = built(1, 1), o21 = built(2, 1), o12 = built(1, 2), o22 = built(2, 2);
  const double a = o21 - o11, b = o12 - o11, d = o22 - o21 - o12 + o11;
  const double l1 = model.layers / par.pp - 1;
  const double per_mb = b + d * l1, at_one = o11 + a * l1;
  constexpr double kHeld = 1e18;
  OpLine line;
  line.per_mb = static_cast<long long>(std::min(per_mb, kHeld));
  line.fixed = static_cast<long long>(std::clamp(at_one - per_mb, -kHeld, kHeld));
  return line;
}

OpEstimate estimate_ops(OpProbe& probe, const Parallelism& par, Folding folding, const ApplyStrategy& apply,
                        bool take_workloads) {
  const int a = probe.a, b = probe.b;
  const long long per_stage = folding == Folding::None ? static_cast<long long>(par.tp) * par.dp : 1;
  long long work[2] = {0, 0}, sched[2] = {0, 0};
  for (int k = 0; k < (b > a ? 2 : 1); ++k) {
    Parallelism p = par;
    p.global_batch = (k == 0 ? a : b) * par.dp * par.micro_batch;
    Schedule& w = k == 0 ? probe.at_a : probe.at_b;
    work[k] = count_ops(w);
    if (take_workloads) {
      Schedule taken = std::move(w);
      w = Schedule{};
      sched[k] = apply(std::move(taken), p);
    } else {
      sched[k] = apply(Schedule(w), p);
    }
  }
  OpEstimate e;
  if (b > a) {
    e.workload.per_mb = (work[1] - work[0]) * per_stage;
    e.schedule.per_mb = (sched[1] - sched[0]) * per_stage;
  }
  e.workload.fixed = work[0] * per_stage - e.workload.per_mb * a;
  e.schedule.fixed = sched[0] * per_stage - e.schedule.per_mb * a;
  return e;
}

std::string format_ops(long long ops) {
  // Rounded to the nearest unit shown; a count that rounds to 1000 of a unit takes the next one
  // (999,999 is "1.0 M", not "1000 k").
  if (ops >= 999'950'000) return fmt::format("{:.1f} G", ops / 1e9);
  if (ops >= 999'500) return fmt::format("{:.1f} M", ops / 1e6);
  if (ops >= 1'000) return fmt::format("{} k", (ops + 500) / 1000);
  return std::to_string(ops);
}

std::string op_refusal(const std::string& strategy, const std::string& what, long long ops, int ranks,
                       long long max_ops, const OpRefusalContext& c, bool all) {
  // (--max-ops takes at most 2^40: past it, raising the limit is no way.)
  std::vector<std::string> ways;
  if (ops <= (1LL << 40)) ways.push_back(fmt::format("raise --max-ops to at least {}", ops));
  if (all || ways.empty()) {
    ways.push_back(fmt::format("lower global_batch or raise micro_batch ({} micro-batches now)", c.micro_batches));
    if (c.every_micro_batch) ways.push_back("drop --every-micro-batch (the steady state replays only a few)");
    if (c.needs_every_op) ways.push_back("drop --trace (a trace replays every micro-batch)");
  }
  if (c.unfolded_on_request && c.ranks_per_stage > 1)
    ways.push_back(fmt::format("drop --unfold (about {} ops with one rank per stage)",
                               format_ops((ops + c.ranks_per_stage - 1) / c.ranks_per_stage)));
  if (ops > (1LL << 40)) ways.push_back("use fewer layers or pipeline stages (past 2^40 ops, more than --max-ops takes)");
  std::string how;
  for (size_t i = 0; i < ways.size(); ++i)
    how += (i == 0 ? "" : i + 1 == ways.size() ? ", or " : ", ") + ways[i];
  return fmt::format("'{}': {} would hold about {} ops ({}) on {} simulated rank(s), estimated before building it; "
                     "the limit is {} (--max-ops): {}",
                     strategy, what, ops, format_ops(ops), ranks, max_ops, how);
}

}  // namespace overlapsim
