// The workload builder and the strategies: FLOPs against the closed forms, invariants.
#include "calibrate/profile.hpp"
#include "models/flops.hpp"
#include "models/transformer.hpp"
#include "sim/error.hpp"
#include "sim/pass.hpp"
#include "sim/replay.hpp"
#include "sim/strategy.hpp"
#include "sim/topology.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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
  CHECK(all.total_flops() == testing::approx(folded.total_flops() * p.tp * p.dp).epsilon(1e-12));
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

TEST_CASE("average_in_collective: the DP gradient reductions average in NCCL, nothing else does") {
  const CostModel cost = a100_cost();
  ModelConfig m = model_preset("megatron-18.4b");
  m.layers = 4;
  m.seq_len = 512;
  for (int zero : {0, 1, 3})
    for (bool avg : {false, true}) {
      CAPTURE(zero);
      CAPTURE(avg);
      Parallelism p = layout(2, 2, 4, 1, 8, Recompute::None, true);
      p.zero_stage = zero;
      p.average_in_collective = avg;
      const Schedule w = build_iteration(m, p, cost);
      int grad = 0;
      for (const RankProgram& prog : w.programs)
        for (const Op& op : prog.ops) {
          if (op.type != OpType::Collective) continue;
          const bool dp_grad = op.name == "dp.grad_sync" || op.name == "zero3.grad_reduce";
          grad += dp_grad;
          const ReduceOp expected = dp_grad && avg           ? ReduceOp::Avg
                                    : op.name == "ar.ce.max" ? ReduceOp::Max  // the cross entropy's logit max
                                                             : ReduceOp::Sum;
          CHECK(op.reduce_op == expected);
        }
      CHECK(grad > 0);
    }
}

TEST_CASE("datatype: collectives move the model's element type, FP8 models keep parameters and gradients in BF16") {
  ModelConfig m = model_preset("megatron-18.4b");
  m.layers = 4;
  m.seq_len = 512;
  const CostModel cost(device_spec("h100-sxm5-80gb"), load_profile(default_profile_path("h100-sxm5-80gb")));
  for (DType dt : {DType::FP16, DType::BF16, DType::FP32, DType::FP8})
    for (int zero : {1, 3}) {
      CAPTURE(to_string(dt));
      CAPTURE(zero);
      m.dtype = dt;
      Parallelism p = layout(2, 2, 4, 1, 8, Recompute::None, true);
      p.zero_stage = zero;
      const Schedule w = build_iteration(m, p, cost);
      const DataType tensor = dt == DType::FP16   ? DataType::Float16
                              : dt == DType::BF16 ? DataType::Bfloat16
                              : dt == DType::FP8  ? DataType::Float8e4m3
                                                  : DataType::Float32;
      const DataType param = dt == DType::FP8 ? DataType::Bfloat16 : tensor;
      int params = 0, tensors = 0, ce = 0;
      for (const RankProgram& prog : w.programs)
        for (const Op& op : prog.ops) {
          if (op.type != OpType::Collective) continue;
          CAPTURE(op.name.str());
          if (op.purpose == CommPurpose::DataParallel || op.purpose == CommPurpose::Embedding) {
            ++params;
            CHECK(op.datatype == param);
          } else if (op.name.str().rfind("ar.ce.", 0) == 0) {
            ++ce;
            CHECK(op.datatype == DataType::Float32);
          } else {
            ++tensors;
            CHECK(op.datatype == tensor);
          }
        }
      CHECK(params > 0);
      CHECK(tensors > 0);
      CHECK(ce > 0);
    }
  // The FP8 model's gradient bytes are BF16's: twice its one-byte activations' element size.
  m.dtype = DType::FP8;
  const Schedule fp8 = build_iteration(m, layout(2, 2, 4, 1, 8, Recompute::None, true), cost);
  m.dtype = DType::BF16;
  const Schedule bf16 = build_iteration(m, layout(2, 2, 4, 1, 8, Recompute::None, true), cost);
  double fp8_grad = 0, bf16_grad = 0, fp8_act = 0, bf16_act = 0;
  for (const Op& op : fp8.programs[0].ops)
    if (op.type == OpType::Collective)
      (op.purpose == CommPurpose::DataParallel ? fp8_grad : fp8_act) += op.bytes;
  for (const Op& op : bf16.programs[0].ops)
    if (op.type == OpType::Collective)
      (op.purpose == CommPurpose::DataParallel ? bf16_grad : bf16_act) += op.bytes;
  CHECK(fp8_grad > 0);
  CHECK(fp8_grad == bf16_grad);
  CHECK(fp8_act < bf16_act);
}

TEST_CASE("ZeRO-3: each layer's parameters gathered before every pass, prefetched one layer ahead") {
  const CostModel cost = a100_cost();
  ModelConfig m = model_preset("megatron-18.4b");  // hidden 6144, ffn 24576
  m.layers = 4;
  m.seq_len = 512;
  Parallelism p = layout(2, 1, 4, 1, 8, Recompute::None, true);
  p.zero_stage = 3;
  const Schedule w = build_iteration(m, p, cost);
  const RankProgram& prog = w.programs.at(0);
  const int M = p.num_micro_batches();  // 2
  const double h = m.hidden, f = m.ffn_hidden, t = p.tp;
  const double layer_bytes = 2.0 * ((4 * h * h + 2 * h * f) / t + (9 * h + f) / t + 4 * h);
  int gathers = 0, reduces = 0, param_gather_at_end = 0;
  for (int i = 0; i < static_cast<int>(prog.ops.size()); ++i) {
    const Op& op = prog.ops[i];
    if (op.name == "dp.param_gather") ++param_gather_at_end;
    if (op.name == "zero3.grad_reduce") {
      ++reduces;
      CHECK(op.collective == CollectiveKind::ReduceScatter);
      CHECK(op.bytes == testing::approx(layer_bytes));
      REQUIRE(op.deps.size() == 1);
      CHECK(prog.ops[op.deps[0]].name == "qkv.wgrad");
    }
    if (op.name != "zero3.param_gather") continue;
    ++gathers;
    CHECK(op.collective == CollectiveKind::AllGather);
    CHECK(w.groups[op.group].ranks.size() == 4);
    CHECK(op.bytes == testing::approx(layer_bytes));
    CHECK(op.overlap_stream != 0);  // off the compute stream: prefetched
    // The layer's first op waits for it; it waits for the previous layer's pass to begin.
    int first = -1;
    for (int j = i + 1; j < static_cast<int>(prog.ops.size()) && first < 0; ++j)
      if (std::find(prog.ops[j].deps.begin(), prog.ops[j].deps.end(), i) != prog.ops[j].deps.end()) first = j;
    REQUIRE(first > i);
    CHECK(prog.ops[first].layer == op.layer);
    if (!op.deps.empty()) {
      const Op& prev = prog.ops[op.deps[0]];
      CHECK(prev.layer != op.layer);
      CHECK(prev.micro_batch == op.micro_batch);
    }
  }
  CHECK(gathers == 2 * m.layers * M);  // forward and backward, every micro-batch
  CHECK(reduces == m.layers * M);
  CHECK(param_gather_at_end == 0);
  // Prefetching pays: the same schedule with the gathers blocking the compute stream is slower.
  const Topology dgx = load_topology(std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-a100.yaml");
  Schedule blocking = w;
  for (auto& q : blocking.programs)
    for (auto& op : q.ops)
      if (op.name == "zero3.param_gather") op.overlap_stream = 0;
  const StrategyContext ctx{dgx, cost, &m, &p};
  ReplayOptions ro;
  ro.launch_overhead_s = cost.launch_overhead_s();
  const double prefetched = replay(make_strategy("megatron")->apply(w, ctx), dgx, ro).makespan_s;
  const double waited = replay(make_strategy("megatron")->apply(blocking, ctx), dgx, ro).makespan_s;
  CHECK(prefetched < 0.97 * waited);
}

TEST_CASE("pipeline sends carry one TP rank's share of the activation, with SP and without") {
  // Megatron-Core's get_tensor_shapes sends [s/t, b, h] with SP; without, the scatter-gather
  // optimisation's 1/t chunk (Narayanan et al. SC'21 §4.1): b·s·h·bytes/t either way.
  const CostModel cost = a100_cost();
  const ModelConfig& m = model_preset("gpt3-175b");
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const Parallelism p = layout(8, 4, 2, 2, 64, Recompute::Full, sp);
    const Schedule s = build_iteration(m, p, cost);
    const double expected = 2.0 * m.seq_len * m.hidden * dtype_bytes(m.dtype) / 8;  // 25,165,824 B
    int sends = 0;
    for (const RankProgram& prog : s.programs)
      for (const Op& op : prog.ops)
        if (op.purpose == CommPurpose::Pipeline && (op.type == OpType::Send || op.type == OpType::Recv)) {
          ++sends;
          CHECK(op.bytes == expected);
        }
    CHECK(sends > 0);
  }
}
