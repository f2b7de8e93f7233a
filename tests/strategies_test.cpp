// The named strategies built from passes: te-overlap (TransformerEngine's methods per GEMM) and
// wang-decomp (collective matmul with XLA's decline rule), their fallbacks without sequence
// parallelism, "no gain where computation is much shorter than communication", and both end to
// end on a small scenario.
#include "calibrate/profile.hpp"
#include "models/transformer.hpp"
#include "sim/pass.hpp"
#include "sim/passes/passes.hpp"
#include "sim/replay.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/strategy.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

using namespace overlapsim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

CostModel a100_cost() {
  return CostModel(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
}

Parallelism layout(int tp, int pp, int dp, int gb, bool sp) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = 1;
  p.global_batch = gb;
  p.recompute = Recompute::Full;
  p.sp = sp;
  p.zero_stage = 1;
  return p;
}

ModelConfig small_model() {
  ModelConfig m = model_preset("megatron-18.4b");
  m.layers = 4;
  m.seq_len = 512;
  return m;
}

/// Ops of rank 0 whose name starts with `prefix`, in forward layer `layer` of micro-batch 0.
std::vector<const Op*> pieces(const Schedule& s, const std::string& prefix, int layer, Phase phase) {
  std::vector<const Op*> out;
  for (const auto& op : s.programs[0].ops)
    if (op.name.rfind(prefix, 0) == 0 && op.layer == layer && op.micro_batch == 0 && op.phase == phase)
      out.push_back(&op);
  return out;
}

std::string stream_of(const Schedule& s, const Op& op) { return s.stream_names.at(op.stream); }

}  // namespace

TEST_CASE("te-overlap applies TransformerEngine's method to each GEMM of the layer") {
  const CostModel cost = a100_cost();
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 2, 1, 4, true);
  const Schedule w = build_iteration(m, p, cost);
  std::vector<std::string> notes;
  const StrategyContext ctx{dgx, cost, &m, &p, &notes};
  const Schedule s = make_strategy("te-overlap")->apply(w, ctx);
  CHECK(check_pass_invariants(w, s) == "");
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("ring-exchange") != std::string::npos);

  // ring_exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): n−1 = 3 steps on the copy
  // engine, the GEMM in n = 4 chunks of T/4 rows.
  for (auto [comm, gemm, phase] : {std::tuple{"ag.qkv/", "qkv/", Phase::Forward}, {"ag.fc1/", "fc1/", Phase::Forward},
                                   {"ag.proj.bwd/", "proj.dgrad/", Phase::Backward},
                                   {"ag.fc2.bwd/", "fc2.dgrad/", Phase::Backward},
                                   {"ag.qkv/", "qkv/", Phase::Recompute}}) {
    CAPTURE(comm);
    CAPTURE(to_string(phase));
    const auto c = pieces(s, comm, 0, phase);
    REQUIRE(c.size() == 6);
    for (const Op* op : c) {
      CHECK((op->type == OpType::Send || op->type == OpType::Recv));
      CHECK(op->num_sm == 0);
      CHECK(stream_of(s, *op).find("copy engine") != std::string::npos);
    }
    const auto g = pieces(s, gemm, 0, phase);
    REQUIRE(g.size() == 4);
    CHECK(g[0]->gemm_m == 512 / 4);
  }
  // pipeline (proj_fprop, fc2_fprop): 4 GEMM chunks, each followed by its ReduceScatter on 16 SMs.
  for (auto [comm, gemm] : {std::pair{"rs.proj/", "proj/"}, {"rs.fc2/", "fc2/"}}) {
    CAPTURE(comm);
    const auto c = pieces(s, comm, 0, Phase::Forward);
    REQUIRE(c.size() == 4);
    for (const Op* op : c) {
      CHECK(op->collective == CollectiveKind::ReduceScatter);
      CHECK(op->num_sm == 16);
      CHECK(stream_of(s, *op).rfind("te-comm", 0) == 0);
    }
    CHECK(pieces(s, gemm, 0, Phase::Forward).size() == 4);
  }
  // bulk (qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad): whole collectives on TE's stream, 16 SMs.
  for (const char* bulk : {"ag.qkv.wgrad", "rs.qkv.dgrad", "ag.fc1.wgrad", "rs.fc1.dgrad"}) {
    CAPTURE(bulk);
    const auto c = pieces(s, bulk, 0, Phase::Backward);
    REQUIRE(c.size() == 1);
    CHECK(c[0]->num_sm == 16);
    CHECK(stream_of(s, *c[0]).rfind("te-comm", 0) == 0);
  }
  // Outside TE's layer: megatron's (the embedding's ReduceScatter blocks the compute stream).
  const auto emb = pieces(s, "rs.embedding", -1, Phase::Forward);
  REQUIRE(emb.size() == 1);
  CHECK(emb[0]->stream == 0);
}

TEST_CASE("te-overlap and wang-decomp after workload-partition find their sites cut, and say so") {
  // A composition's passes run first: workload-partition chunks SP's AllGather→GEMM and
  // GEMM→ReduceScatter, so the base finds none left whole (regression: wang-decomp said tensor
  // parallelism needed sequence parallelism, which is on; te-overlap printed 0 overlaps, no reason).
  const CostModel cost = a100_cost();
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 2, 1, 4, true);
  const Schedule w = build_iteration(m, p, cost);
  for (const char* name : {"te-overlap+workload-partition:4", "wang-decomp+workload-partition:4"}) {
    CAPTURE(name);
    std::vector<std::string> notes;
    const Schedule s = make_strategy(name)->apply(w, StrategyContext{dgx, cost, &m, &p, &notes});
    CHECK(check_pass_invariants(w, s) == "");
    std::string all;
    for (const auto& n : notes) all += n + "\n";
    INFO(all);
    CHECK(all.find("a pass before it in the composition partitioned them") != std::string::npos);
    CHECK(all.find("needs sequence parallelism") == std::string::npos);
  }
}

TEST_CASE("without sequence parallelism te-overlap and wang-decomp are megatron, and say so") {
  const CostModel cost = a100_cost();
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 2, 1, 4, false);
  const Schedule w = build_iteration(m, p, cost);
  const Schedule meg = make_strategy("megatron")->apply(w, StrategyContext{dgx, cost, &m, &p});
  for (const char* name : {"te-overlap", "wang-decomp"}) {
    CAPTURE(name);
    std::vector<std::string> notes;
    const Schedule s = make_strategy(name)->apply(w, StrategyContext{dgx, cost, &m, &p, &notes});
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("sequence parallelism") != std::string::npos);
    CHECK(notes[0].find("megatron") != std::string::npos);
    REQUIRE(s.programs.size() == meg.programs.size());
    for (size_t r = 0; r < s.programs.size(); ++r) {
      REQUIRE(s.programs[r].ops.size() == meg.programs[r].ops.size());
      for (size_t i = 0; i < s.programs[r].ops.size(); ++i) {
        CHECK(s.programs[r].ops[i].stream == meg.programs[r].ops[i].stream);
        CHECK(s.programs[r].ops[i].name == meg.programs[r].ops[i].name);
      }
    }
  }
}

namespace {
/// AllGather (S bytes over 8 ranks of star8, or of a 6-rank group) → GEMM, rank 0 only.
Schedule gather_gemm(const CostModel& cost, double bytes, int64_t M, int64_t N, int64_t K, int n) {
  Schedule s;
  s.world_size = 8;
  s.stream_names = {"compute"};
  std::vector<int> g;
  for (int r = 0; r < n; ++r) g.push_back(r);
  s.groups.push_back(Group{g, CommPurpose::TensorParallel});
  RankProgram p{0, 1, {}};
  Op c;
  c.type = OpType::Collective;
  c.collective = CollectiveKind::AllGather;
  c.group = 0;
  c.bytes = bytes;
  c.match = 1;
  c.name = "ag.qkv";
  Op x;
  x.type = OpType::Compute;
  x.compute = ComputeKind::Gemm;
  x.gemm_m = M;
  x.gemm_n = N;
  x.gemm_k = K;
  x.gemm_batch = 1;
  x.flops = 2.0 * M * N * K;
  x.duration_s = cost.gemm_time_s(M, N, K, DType::FP16);
  x.name = "qkv";
  x.deps = {0};
  p.ops = {c, x};
  s.programs.push_back(p);
  return s;
}
}  // namespace

TEST_CASE("wang-decomp: XLA's rule declines the loop where it would not pay") {
  const CostModel shipped = a100_cost();
  // The same without the p2p channel rate (network.p2p_channel_nvlink_Bps): permutes at the links'.
  Profile unbound_profile = load_profile(default_profile_path("a100-sxm4-80gb"));
  unbound_profile.p2p_channel_nvlink_Bps = 0;
  const CostModel unbound(device_spec("a100-sxm4-80gb"), unbound_profile);
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  auto decide = [&](const Schedule& w, int n, const CostModel& cost) {
    std::vector<std::string> notes;
    const StrategyContext ctx{star, cost, nullptr, nullptr, &notes};
    const Schedule s = make_strategy("wang-decomp")->apply(w, ctx);
    CHECK(check_pass_invariants(w, s) == "");
    // Recompute the rule from the same predictions.
    const Op& c = w.programs[0].ops[0];
    const Op& g = w.programs[0].ops[1];
    const double t_comm = predict_collective_s(w, c, ctx);
    const double t_comp = std::max(g.duration_s, cost.launch_overhead_s());
    std::vector<std::pair<int, int>> cw, both;
    for (int i = 0; i < n; ++i) {
      cw.emplace_back(i, (i + 1) % n);
      both.emplace_back(i, (i + 1) % n);
      both.emplace_back((i + 1) % n, i);
    }
    // The permutes on the group's communicator (XLA's collective-permute).
    const P2pCommunicator comm{n, 1, 0};
    const double step1 = predict_p2p_step_s(star, ctx, cw, c.bytes / n, false, comm);
    const double loop = n % 4 == 0 ? (n / 2 - 1) * predict_p2p_step_s(star, ctx, both, c.bytes / n, false, comm) + step1
                                   : (n - 1) * step1;
    const double m = loop / t_comm;
    const bool declined = std::max(t_comp, m * t_comm) + 2 * m * t_comm / n >= t_comp + t_comm;
    const bool decomposed = s.programs[0].ops.size() > 2;
    CHECK(decomposed == !declined);
    REQUIRE(notes.size() == 1);
    return std::make_pair(decomposed, s);
  };
  SUBCASE("tiny GEMM, large AllGather: declined") {
    CHECK_FALSE(decide(gather_gemm(shipped, 64e6, 1024, 128, 128, 8), 8, shipped).first);
  }
  SUBCASE("large GEMM: decomposed, bidirectionally since 8 is divisible by 4, on the group's communicator") {
    const Schedule w = gather_gemm(shipped, 16e6, 8192, 8192, 8192, 8);
    const auto [done, s] = decide(w, 8, shipped);
    CHECK(done);
    int ccw = 0, p2p = 0;
    for (const auto& op : s.programs[0].ops) {
      ccw += op.name.find("/ccw-") != std::string::npos ? 1 : 0;
      if (op.type == OpType::Send || op.type == OpType::Recv) {
        ++p2p;
        CHECK(op.group == w.programs[0].ops[0].group);  // XLA's collective-permute: the TP group's
      }
    }
    CHECK(ccw == 2 * 3);  // n/2 − 1 sends and receives counter-clockwise
    CHECK(p2p == 2 * 7);
    // A receive on another communicator than its send is refused.
    Schedule pair;
    pair.world_size = 8;
    const int g = pair.intern_group({0, 1}, CommPurpose::TensorParallel);
    auto [send, recv] = testing::send_recv_ops(0, 1, 1e6, -7);
    send.group = recv.group = g;
    pair.programs = {RankProgram{0, 1, {send}}, RankProgram{1, 1, {recv}}};
    CHECK(check_pass_invariants(pair, pair) == "");
    pair.programs[1].ops[0].group = -1;
    CHECK(check_pass_invariants(pair, pair).find("different communicators") != std::string::npos);
  }
  SUBCASE("a group of 6: unidirectional where the permutes run at the links' rate") {
    const auto [done, s] = decide(gather_gemm(unbound, 12e6, 6144, 8192, 8192, 6), 6, unbound);
    CHECK(done);
    int sends = 0;
    for (const auto& op : s.programs[0].ops) sends += op.type == OpType::Send ? 1 : 0;
    CHECK(sends == 5);
  }
  SUBCASE("a group of 6 at NCCL's p2p channel rate: declined") {
    // Over a 6-rank communicator NCCL gives a 2 MB shard one channel (nccl_p2p_split: nMin 8
    // halved to 1 against 6 ranks over 8 p2p channels), 12.85 GB/s: m ~ 5, 2 m / n > 1.
    CHECK_FALSE(decide(gather_gemm(shipped, 12e6, 6144, 8192, 8192, 6), 6, shipped).first);
  }
}

TEST_CASE("where computation is much shorter than communication, overlap gains about nothing") {
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/comm-bound.yaml");
  const RunResult r = simulate(sc);
  std::map<std::string, const StrategyResult*> by;
  for (const auto& s : r.strategies) by[s.strategy] = &s;
  REQUIRE(by.size() == 3);
  const double meg = by["megatron"]->iteration_s;
  CHECK(by["megatron"]->exposed_comm_s > 10 * by["megatron"]->compute_s);
  // XLA's rule declines every site: the very same schedule.
  CHECK(by["wang-decomp"]->iteration_s == meg);
  REQUIRE(by["wang-decomp"]->notes.size() == 1);
  CHECK(by["wang-decomp"]->notes[0].find("0 sites decomposed") != std::string::npos);
  // TransformerEngine has no such rule: it can only hide the little computation there is.
  CHECK(by["te-overlap"]->iteration_s == testing::approx(meg).epsilon(0.03));
  CHECK(meg - by["te-overlap"]->iteration_s < by["megatron"]->compute_s);
}

TEST_CASE("te-overlap and wang-decomp end to end on the small scenario, folded and unfolded") {
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  // TP 4 with GEMMs large enough for XLA's rule to accept the loop once the sends pay NCCL's
  // latency (at TP 2 the rule never accepts a permute as slow as the collective: m ≥ 1).
  sc.model.hidden = 4096;
  sc.model.ffn_hidden = 16384;
  sc.model.heads = 32;
  sc.model.seq_len = 2048;
  sc.parallelism.tp = 4;
  sc.parallelism.dp = 1;
  SimulateOptions o;
  o.strategies = {"megatron", "te-overlap", "wang-decomp"};
  const RunResult folded = simulate(sc, o);
  o.folding = Folding::None;
  const RunResult unfolded = simulate(sc, o);
  REQUIRE(folded.strategies.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const auto& a = folded.strategies[i];
    CAPTURE(a.strategy);
    CHECK(a.iteration_s > 0);
    CHECK(a.compute_s > 0);
    CHECK(a.iteration_s == testing::approx(unfolded.strategies[i].iteration_s).epsilon(0.01));
    if (a.strategy != "megatron") {
      REQUIRE(a.notes.size() == 1);
      CHECK(a.ops > folded.strategies[0].ops);  // pieces
      // Overlap hides communication: less of it is exposed than under megatron.
      CHECK(a.exposed_comm_s < folded.strategies[0].exposed_comm_s);
    }
  }
}
