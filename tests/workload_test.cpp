// The workload builder and the strategies: FLOPs against the closed forms, invariants.
#include "calibrate/profile.hpp"
#include "models/flops.hpp"
#include "models/transformer.hpp"
#include "sim/error.hpp"
#include "sim/pass.hpp"
#include "sim/strategy.hpp"
#include "sim/topology.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>

using namespace overlapsim;

namespace {

CostModel a100_cost() {
  return CostModel(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
}

Parallelism layout(int tp, int pp, int dp, int mb, int gb, Recompute rc, bool sp) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = mb;
  p.global_batch = gb;
  p.recompute = rc;
  p.sp = sp;
  return p;
}

/// FLOPs of the whole iteration, from a folded schedule: each representative stands for tp · dp ranks.
double iteration_flops(const Schedule& s, const Parallelism& p) { return s.total_flops() * p.tp * p.dp; }

}  // namespace

TEST_CASE("per-iteration FLOPs equal Narayanan et al.'s closed form") {
  const CostModel cost = a100_cost();
  SUBCASE("18.4B, TP 8, full recompute, no SP") {
    const ModelConfig& m = model_preset("megatron-18.4b");
    const Parallelism p = layout(8, 1, 32, 1, 1024, Recompute::Full, false);
    const double f = iteration_flops(build_iteration(m, p, cost), p);
    CHECK(std::abs(f - narayanan_flops(m, 1024)) / f < 1e-12);
  }
  SUBCASE("145.6B, TP 8 PP 8, full recompute, SP") {
    const ModelConfig& m = model_preset("megatron-145.6b");
    const Parallelism p = layout(8, 8, 24, 1, 2304, Recompute::Full, true);
    const double f = iteration_flops(build_iteration(m, p, cost), p);
    CHECK(std::abs(f - narayanan_flops(m, 2304)) / f < 1e-12);
  }
  SUBCASE("no recomputation: the model FLOPs") {
    const ModelConfig& m = model_preset("megatron-1.7b");
    const Parallelism p = layout(1, 1, 32, 4, 512, Recompute::None, false);
    const double f = iteration_flops(build_iteration(m, p, cost), p);
    CHECK(std::abs(f - model_flops(m, 512)) / f < 1e-12);
  }
}

TEST_CASE("folded and unfolded workloads carry the same FLOPs per rank") {
  const CostModel cost = a100_cost();
  ModelConfig m = model_preset("megatron-1.7b");
  m.layers = 4;
  const Parallelism p = layout(2, 2, 2, 1, 8, Recompute::Full, true);
  const Schedule folded = build_iteration(m, p, cost, Folding::Representatives);
  const Schedule all = build_iteration(m, p, cost, Folding::None);
  CHECK(folded.programs.size() == 2);
  CHECK(all.programs.size() == 8);
  CHECK(all.total_flops() == doctest::Approx(folded.total_flops() * p.tp * p.dp).epsilon(1e-12));
  validate(all);
}

TEST_CASE("strategies keep FLOPs and the bytes each rank receives") {
  const CostModel cost = a100_cost();
  const Topology topo = load_topology(std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-a100.yaml");
  ModelConfig m = model_preset("megatron-18.4b");
  m.layers = 4;
  const Parallelism p = layout(4, 2, 1, 1, 4, Recompute::Selective, true);
  const Schedule w = build_iteration(m, p, cost);
  for (const auto& name : strategy_names()) {
    CAPTURE(name);
    const Schedule s = make_strategy(name)->apply(w, StrategyContext{topo, cost, &m, &p});
    validate(s);
    CHECK(s.total_flops() == w.total_flops());
    // Per rank and purpose: what NCCL's ring moves into a member, or a receive's bytes (sim/pass.hpp).
    CHECK(check_pass_invariants(w, s) == "");
  }
}

TEST_CASE("a layout that does not fit the model is an input error naming the key") {
  const CostModel cost = a100_cost();
  const ModelConfig& m = model_preset("megatron-18.4b");  // 48 heads, 40 layers
  auto message = [&](const Parallelism& p) {
    try {
      build_iteration(m, p, cost);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(layout(5, 1, 1, 1, 8, Recompute::None, false)).find("parallelism.tp") != std::string::npos);
  CHECK(message(layout(8, 3, 1, 1, 8, Recompute::None, false)).find("parallelism.pp") != std::string::npos);
  CHECK(message(layout(8, 1, 3, 1, 8, Recompute::None, false)).find("parallelism.global_batch") != std::string::npos);
}

TEST_CASE("the unknown strategy error lists the known ones") {
  try {
    make_strategy("magatron");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("megatron") != std::string::npos);
  }
}
