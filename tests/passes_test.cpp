// The pass API and the built-in partition dimensions (sim/pass.hpp, sim/passes/): invariants on
// real workloads (FLOPs, bytes each rank receives, acyclic graph, ids consistent across ranks,
// replayable), the structure each dimension produces, and collective matmul against its closed
// form on a uniform ring.
#include "calibrate/profile.hpp"
#include "models/transformer.hpp"
#include "sim/error.hpp"
#include "sim/pass.hpp"
#include "sim/passes/passes.hpp"
#include "sim/replay.hpp"
#include "sim/strategy.hpp"
#include "sim/topology.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

using namespace overlapsim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

CostModel a100_cost() {
  return CostModel(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
}

Parallelism layout(int tp, int pp, int dp, int gb, bool sp, int zero = 1) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = 1;
  p.global_batch = gb;
  p.recompute = Recompute::Selective;
  p.sp = sp;
  p.zero_stage = zero;
  return p;
}

ModelConfig small_model() {
  ModelConfig m = model_preset("megatron-18.4b");  // 48 heads, hidden 6144
  m.layers = 4;
  m.seq_len = 512;
  return m;
}

/// A workload, its topology and its context, kept alive together.
struct Case {
  std::string label;
  Topology topo;
  ModelConfig model;
  Parallelism par;
  Folding folding;
  Schedule workload;
};

std::vector<Case> cases(const CostModel& cost) {
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const Topology pod2 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const Topology a6000 = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  std::vector<Case> out;
  auto add = [&](const std::string& label, const Topology& t, const Parallelism& p, Folding f) {
    Case c{label, t, small_model(), p, f, {}};
    c.workload = build_iteration(c.model, c.par, cost, f);
    out.push_back(std::move(c));
  };
  add("dgx-a100 TP4 PP2 SP, folded", dgx, layout(4, 2, 1, 4, true), Folding::Representatives);
  add("dgx-a100 TP4 PP2 SP, unfolded", dgx, layout(4, 2, 1, 4, true), Folding::None);
  add("dgx-a100 TP4 PP2 DP1, no SP, folded", dgx, layout(4, 2, 1, 4, false), Folding::Representatives);
  add("2 nodes TP4 DP4, ZeRO 1, unfolded", pod2, layout(4, 1, 4, 4, true), Folding::None);
  add("2 nodes TP4 DP4, ZeRO 0, no SP, folded", pod2, layout(4, 1, 4, 4, false, 0), Folding::Representatives);
  add("a6000 NVLink pairs TP8 SP, unfolded", a6000, layout(8, 1, 1, 2, true), Folding::None);
  return out;
}

int count_ops(const Schedule& s, const std::function<bool(const Op&)>& f) {
  int n = 0;
  for (const auto& p : s.programs)
    for (const auto& op : p.ops) n += f(op) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("derived match ids are deterministic, apart from the workload's and distinct per piece") {
  const int64_t a = derive_collective_match(42, "x", 0, 3);
  CHECK(a == derive_collective_match(42, "x", 0, 3));
  CHECK(a >= (int64_t{1} << 62));
  std::set<int64_t> ids;
  for (int piece = 0; piece < 100; ++piece)
    for (int group = 0; group < 10; ++group) ids.insert(derive_collective_match(42, "x", piece, group));
  CHECK(ids.size() == 1000);
  CHECK(derive_collective_match(42, "x", 0, 3) != derive_collective_match(42, "y", 0, 3));
  const int64_t p = derive_p2p_match(42, "x", 1, 0, 1);
  CHECK(p == derive_p2p_match(42, "x", 1, 0, 1));
  CHECK(p <= -(int64_t{1} << 62));
  CHECK(p != derive_p2p_match(42, "x", 1, 1, 0));  // the other direction
  CHECK(p != derive_p2p_match(42, "x", 2, 0, 1));  // another step
}

TEST_CASE("ProgramRewriter replaces ops by pieces and resolves dependencies to their terminals") {
  RankProgram p{0, 1, {}};
  for (int i = 0; i < 3; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    if (i > 0) op.deps = {i - 1};
    p.ops.push_back(op);
  }
  ProgramRewriter rw(p);
  rw.keep(0);
  Op a, b;
  a.name = "op1/a";
  b.name = "op1/b";
  const int ia = rw.emit(a, 1, {}, {0});
  const int ib = rw.emit(b, 1, {}, {0});
  rw.set_terminals(1, {ia, ib});
  rw.keep(2);
  const RankProgram q = rw.finish();
  REQUIRE(q.ops.size() == 4);
  CHECK(q.ops[1].deps == OpDeps{0});
  CHECK(q.ops[2].deps == OpDeps{0});
  CHECK(q.ops[3].name == "op2");
  CHECK(q.ops[3].deps == OpDeps{1, 2});
}

TEST_CASE("every registered pass keeps FLOPs, received bytes, an acyclic graph and consistent ids") {
  const CostModel cost = a100_cost();
  const std::vector<std::string> specs = {
      "primitive-substitution:rs-ag",    "primitive-substitution:ring",   "primitive-substitution:ring/tp",
      "primitive-substitution:hierarchical", "group-partition",          "group-partition:nvlink",
      "group-partition:rail",
      "workload-partition",              "workload-partition:3",          "workload-partition:ring",
      "workload-partition:bidirectional", "optimizer-gather-overlap:3", "layer-schedule"};
  for (const Case& c : cases(cost)) {
    CAPTURE(c.label);
    const StrategyContext ctx{c.topo, cost, &c.model, &c.par};
    CHECK(check_pass_invariants(c.workload, c.workload) == "");
    for (const auto& spec : specs) {
      CAPTURE(spec);
      const Schedule s = make_pass(spec)->run(c.workload, ctx);
      CHECK(check_pass_invariants(c.workload, s) == "");
      validate(s);
    }
  }
}

TEST_CASE("passes compose, and composed schedules replay (no deadlock, folded close to unfolded)") {
  const CostModel cost = a100_cost();
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 2, 1, 2, true);
  ReplayOptions ro;
  ro.launch_overhead_s = cost.launch_overhead_s();
  ro.sm_count = 108;
  const StrategyContext ctx{dgx, cost, &m, &p};
  for (const std::string name :
       {"megatron+primitive-substitution:rs-ag+primitive-substitution:ring", "megatron+workload-partition:2",
        "megatron+workload-partition:bidirectional+optimizer-gather-overlap", "megatron+group-partition:nvlink",
        "serial+workload-partition:ring"}) {
    CAPTURE(name);
    double t[2];
    for (int unfold = 0; unfold < 2; ++unfold) {
      const Schedule w = build_iteration(m, p, cost, unfold ? Folding::None : Folding::Representatives);
      const Schedule s = make_strategy(name)->apply(w, ctx);
      CHECK(check_pass_invariants(w, s) == "");
      t[unfold] = replay(s, dgx, ro).makespan_s;
    }
    CHECK(t[0] > 0);
    // (serial+workload-partition:ring was 26.6 ms folded against 23.4 ms: a mirror's send into the
    // representative started when the receive was posted, not with the representative's own
    // send, Replayer::mirror_partners; the check compared with doctest's absolute 10 ms margin.)
    CHECK(t[0] == testing::approx(t[1]).epsilon(0.01));
  }
}

TEST_CASE("a composition names a pass twice only where the second rewrites something new") {
  // (regression: megatron+workload-partition:64+workload-partition:64 made chunks of chunks)
  auto refusal = [](const std::string& name) {
    try {
      (void)make_strategy(name);
    } catch (const InputError& e) {
      return e.message();
    }
    return std::string();
  };
  for (const char* name : {"megatron+workload-partition:64+workload-partition:64",
                           "megatron+workload-partition:4+layer-schedule+workload-partition:ring",
                           "megatron+optimizer-gather-overlap+optimizer-gather-overlap:8",
                           "megatron+layer-schedule+layer-schedule", "megatron+group-partition:nvlink+group-partition:nvlink",
                           "megatron+group-partition+group-partition:node",
                           "megatron+primitive-substitution:rs-ag+primitive-substitution:rs-ag/all"}) {
    CAPTURE(name);
    const std::string m = refusal(name);
    CHECK(m.find("composition '" + std::string(name) + "' names pass '") == 0);
    CHECK(m.find("twice") != std::string::npos);
  }
  CHECK(refusal("megatron+workload-partition:4+layer-schedule+workload-partition:ring") ==
        "composition 'megatron+workload-partition:4+layer-schedule+workload-partition:ring' names pass "
        "'workload-partition' twice (as 'workload-partition:4' and 'workload-partition:ring'): the second would cut "
        "the first's chunks (or ring steps) into chunks again; expected it once");
  // Another argument selects other ops, or cuts at another level.
  for (const char* name : {"megatron+primitive-substitution:rs-ag+primitive-substitution:ring",
                           "megatron+primitive-substitution:rs-ag/tp+primitive-substitution:rs-ag/dp",
                           "megatron+group-partition:node+group-partition:nvlink", "megatron+workload-partition:4"}) {
    CAPTURE(name);
    CHECK(refusal(name) == "");
  }
}

TEST_CASE("primitive substitution: RS+AG, ring permutes with adds, hierarchical AllReduce") {
  const CostModel cost = a100_cost();
  const Topology pod2 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 1, 4, 4, false, 0);  // no SP: TP AllReduces; ZeRO 0: DP AllReduces
  const Schedule w = build_iteration(m, p, cost);
  const StrategyContext ctx{pod2, cost, &m, &p};
  auto is_ar = [](const Op& op) { return op.type == OpType::Collective && op.collective == CollectiveKind::AllReduce; };
  const int ars = count_ops(w, is_ar);
  REQUIRE(ars > 0);

  SUBCASE("AllReduce => ReduceScatter + AllGather") {
    const Schedule s = make_pass("primitive-substitution:rs-ag")->run(w, ctx);
    CHECK(count_ops(s, is_ar) == 0);
    CHECK(count_ops(s, [](const Op& op) {
            return op.type == OpType::Collective && op.collective == CollectiveKind::ReduceScatter;
          }) == ars);
  }
  SUBCASE("ring permutes: 2(n-1) sends and receives of S/n per AllReduce, n-1 adds") {
    const Schedule s = make_pass("primitive-substitution:ring/tp")->run(w, ctx);
    const auto& prog = s.programs[0];
    const Op* ar = nullptr;
    for (const auto& op : w.programs[0].ops)
      if (is_ar(op) && op.purpose == CommPurpose::TensorParallel) {
        ar = &op;
        break;
      }
    REQUIRE(ar != nullptr);
    int sends = 0, recvs = 0, adds = 0;
    for (const auto& op : prog.ops) {
      if (op.name.rfind(ar->name + "/", 0) != 0 || op.layer != ar->layer || op.micro_batch != ar->micro_batch ||
          op.phase != ar->phase)
        continue;
      if (op.type == OpType::Send) {
        ++sends;
        CHECK(op.bytes == testing::approx(ar->bytes / 4));
        CHECK(op.peer == 1);  // rank 0's ring successor in its TP group
      }
      if (op.type == OpType::Recv) {
        ++recvs;
        CHECK(op.peer == 3);
      }
      if (op.type == OpType::Compute) {
        ++adds;
        CHECK(op.flops == 0);
        CHECK(op.compute == ComputeKind::MemoryBound);
      }
    }
    CHECK(sends == 6);
    CHECK(recvs == 6);
    CHECK(adds == 3);
  }
  SUBCASE("hierarchical: DP AllReduce over 2 nodes => RS inside, AR across, AG inside") {
    const Schedule s = make_pass("primitive-substitution:hierarchical/dp")->run(w, ctx);
    bool seen = false;
    for (const auto& op : s.programs[0].ops) {
      if (op.purpose != CommPurpose::DataParallel || op.type != OpType::Collective) continue;
      const auto& g = s.groups[op.group].ranks;
      if (op.name.find("/ar-inter") != std::string::npos) {
        CHECK(g == std::vector<int>{0, 8});  // DP ranks 0,4 | 8,12: islands of 2, rank 0 pairs with 8
        seen = true;
      } else {
        CHECK(g == std::vector<int>{0, 4});
      }
    }
    CHECK(seen);
  }
}

TEST_CASE("group partitioning splits collectives along nodes and NVLink islands") {
  const CostModel cost = a100_cost();
  const Topology a6000 = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  CHECK(split_by_level(a6000, {0, 1, 2, 3, 4, 5, 6, 7}, TopologyLevel::NvLinkIsland) ==
        std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(split_by_level(a6000, {0, 1, 2, 3}, TopologyLevel::Node).size() == 1);
  const ModelConfig m = small_model();
  const Parallelism p = layout(8, 1, 1, 2, true);
  const Schedule w = build_iteration(m, p, cost);
  const StrategyContext ctx{a6000, cost, &m, &p};
  const Schedule s = make_pass("group-partition:nvlink")->run(w, ctx);
  std::map<std::string, int> sizes;  // piece → group size
  for (const auto& op : s.programs[0].ops)
    if (op.type == OpType::Collective && op.name.rfind("ag.qkv/", 0) == 0) sizes[op.name] = s.groups[op.group].ranks.size();
  CHECK(sizes == std::map<std::string, int>{{"ag.qkv/ag-inter", 4}, {"ag.qkv/ag-intra", 2}});

  // Rails: the same local index on every node (inside one node every GPU is a rail of its own).
  const Topology pod2 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(split_by_level(pod2, {0, 1, 2, 3, 8, 9, 10, 11}, TopologyLevel::Rail) ==
        std::vector<std::vector<int>>{{0, 8}, {1, 9}, {2, 10}, {3, 11}});
  CHECK(split_by_level(a6000, {0, 1, 2, 3}, TopologyLevel::Rail).size() == 4);
  // TP 4 · DP 4 over two nodes: a DP group {r, r+4, r+8, r+12} spans two rails (local index r and
  // r+4) on two nodes. By rail: AllGather(S/2) inside each node first, then AllGather(S) across
  // nodes on one rail — the node split's mirror image.
  const Parallelism p2 = layout(4, 1, 4, 4, true);
  const Schedule w2 = build_iteration(m, p2, cost, Folding::None);
  const StrategyContext ctx2{pod2, cost, &m, &p2};
  const Schedule s2 = make_pass("group-partition:rail")->run(w2, ctx2);
  CHECK(check_pass_invariants(w2, s2) == "");
  std::map<std::string, std::vector<int>> groups;  // piece → its group
  for (const auto& op : s2.programs[0].ops)
    if (op.type == OpType::Collective && op.name.rfind("dp.param_gather/", 0) == 0) groups[op.name] = s2.groups[op.group].ranks;
  CHECK(groups == std::map<std::string, std::vector<int>>{{"dp.param_gather/ag-inter", {0, 4}},
                                                          {"dp.param_gather/ag-intra", {0, 8}}});
}

TEST_CASE("workload partitioning: chunks sum to the GEMM, each waits for its piece, consumers for all") {
  const CostModel cost = a100_cost();
  const Topology dgx = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const ModelConfig m = small_model();
  const Parallelism p = layout(4, 1, 2, 2, true);
  const Schedule w = build_iteration(m, p, cost);
  const StrategyContext ctx{dgx, cost, &m, &p};
  const Schedule s = make_pass("workload-partition:3")->run(w, ctx);
  const auto& ops = s.programs[0].ops;
  const Op* qkv = nullptr;
  for (const auto& op : w.programs[0].ops)
    if (op.name == "qkv") {
      qkv = &op;
      break;
    }
  REQUIRE(qkv != nullptr);
  std::vector<int> chunks, gathers;
  for (int i = 0; i < static_cast<int>(ops.size()) && chunks.size() < 3; ++i) {
    if (ops[i].name.rfind("qkv/", 0) == 0) chunks.push_back(i);
    if (ops[i].name.rfind("ag.qkv/", 0) == 0 && gathers.size() < 3) gathers.push_back(i);
  }
  REQUIRE(chunks.size() == 3);
  REQUIRE(gathers.size() == 3);
  double flops = 0;
  int64_t rows = 0;
  for (int j = 0; j < 3; ++j) {
    const Op& c = ops[chunks[j]];
    flops += c.flops;
    rows += c.gemm_m;
    CHECK(c.gemm_n == qkv->gemm_n);
    CHECK(c.gemm_k == qkv->gemm_k);
    CHECK(std::find(c.deps.begin(), c.deps.end(), gathers[j]) != c.deps.end());
    CHECK(ops[gathers[j]].stream == ops[gathers[0]].stream);
    CHECK(ops[gathers[j]].stream != c.stream);
    CHECK(c.duration_s == testing::approx(cost.gemm_time_s(c.gemm_m, c.gemm_n, c.gemm_k, DType::FP16)));
  }
  CHECK(flops == qkv->flops);
  CHECK(rows == qkv->gemm_m);
  // The attention kernel after qkv waits for every chunk.
  const int attn = chunks[2] + 1;
  REQUIRE(ops[attn].name == "attn");
  for (int c : chunks) CHECK(std::find(ops[attn].deps.begin(), ops[attn].deps.end(), c) != ops[attn].deps.end());
}

namespace {

/// One AllGather → GEMM (or GEMM → ReduceScatter) over a TP group of 8 on star8; `simulated`
/// ranks have programs (1: rank 0 with mirrors, 8: all).
Schedule one_site(const CostModel& cost, bool gather, double bytes, int64_t M, int64_t N, int64_t K, int simulated,
                  int n = 8) {
  Schedule s;
  s.world_size = n;
  s.stream_names = {"compute"};
  Group grp{{}, CommPurpose::TensorParallel};
  for (int r = 0; r < n; ++r) grp.ranks.push_back(r);
  s.groups.push_back(grp);
  for (int r = 0; r < simulated; ++r) {
    RankProgram p{r, 1, {}};
    Op c;
    c.type = OpType::Collective;
    c.collective = gather ? CollectiveKind::AllGather : CollectiveKind::ReduceScatter;
    c.group = 0;
    c.bytes = bytes;
    c.match = 7;
    c.name = gather ? "ag" : "rs";
    Op g;
    g.type = OpType::Compute;
    g.compute = ComputeKind::Gemm;
    g.gemm_m = M;
    g.gemm_n = N;
    g.gemm_k = K;
    g.gemm_batch = 1;
    g.flops = 2.0 * M * N * K;
    g.duration_s = cost.gemm_time_s(M, N, K, DType::FP16);
    g.name = "gemm";
    if (gather) {
      p.ops = {c, g};
      p.ops[1].deps = {0};
    } else {
      p.ops = {g, c};
      p.ops[1].deps = {0};
    }
    s.programs.push_back(p);
  }
  return s;
}

Schedule decompose(const Schedule& w, const Topology& topo, const CostModel& cost, PartitionMode mode,
                   int16_t num_sm = 0) {
  WorkloadPartitionOptions o;
  o.choose = [mode, num_sm](const Schedule&, const RankProgram&, const Site&) {
    PartitionChoice c;
    c.mode = mode;
    c.comm_num_sm = num_sm;
    return c;
  };
  return make_workload_partition(o)->run(w, StrategyContext{topo, cost});
}

/// The one site of `w` under `mode` (NCCL's SMs: num_sm −1): predict_site's time and the replay's
/// makespan of its decomposition, seconds.
struct SiteTimes {
  double predicted, replayed;
};
SiteTimes site_times(const Schedule& w, const Topology& topo, const CostModel& cost, const StrategyContext& ctx,
                     const ReplayOptions& ro, PartitionMode mode) {
  const auto sites = find_sites(w, w.programs[0], ctx);
  REQUIRE(sites.size() == 1);
  PartitionChoice c;
  c.mode = mode;
  return {predict_site(w, w.programs[0], sites[0], c, ctx).time_s,
          replay(decompose(w, topo, cost, mode, -1), topo, ro).makespan_s};
}

}  // namespace

TEST_CASE("a pass stops before it grows the schedule past --max-ops, projected from the programs it rewrote") {
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  const Schedule w = one_site(cost, true, 64e6, 4096, 1024, 1024, 8);  // 8 programs of 2 ops
  const Schedule whole = decompose(w, star, cost, PartitionMode::Ring);
  long long total = 0;
  for (const RankProgram& p : whole.programs) total += static_cast<long long>(p.ops.size());
  const long long per_program = static_cast<long long>(whole.programs[0].ops.size());
  REQUIRE(per_program > 2);
  REQUIRE(total == 8 * per_program);
  WorkloadPartitionOptions o;
  o.choose = [](const Schedule&, const RankProgram&, const Site&) {
    PartitionChoice c;
    c.mode = PartitionMode::Ring;
    return c;
  };
  const auto pass = make_workload_partition(o);
  StrategyContext ctx{star, cost};
  ctx.max_ops = total;  // exactly what it builds: it builds it, as without a limit
  const Schedule at_limit = pass->run(w, ctx);
  REQUIRE(at_limit.programs.size() == whole.programs.size());
  for (size_t r = 0; r < whole.programs.size(); ++r) CHECK(at_limit.programs[r].ops.size() == whole.programs[r].ops.size());
  ctx.max_ops = total - 1;  // one op short: refused after the first program, its growth projected
  try {
    (void)pass->run(w, ctx);
    FAIL("no OpBudgetExceeded");
  } catch (const OpBudgetExceeded& e) {
    const std::string m = e.what();
    CHECK(m.find(fmt::format("its pass 'workload-partition' would turn the iteration into about {} ops on 8 simulated rank(s) "
                             "(projected from the first 1, {:.2f}x their ops); the limit is {} (--max-ops)",
                             total, per_program / 2.0, total - 1)) == 0);
  }
}

TEST_CASE("collective matmul at k = n on a uniform ring matches its closed form") {
  // star8: B = 100 GB/s and alpha = 1 us per route; n = 8; no launch overhead, no SM interference.
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  const int n = 8;
  const double B = 100e9, alpha = 1e-6;
  struct Shape {
    const char* label;
    double bytes;
    int64_t M, N, K;
  };
  for (const Shape& sh : {Shape{"comm-bound", 64e6, 4096, 1024, 1024}, Shape{"compute-bound", 8e6, 8192, 8192, 8192}}) {
    CAPTURE(sh.label);
    const double tg = cost.gemm_time_s(sh.M / n, sh.N, sh.K, DType::FP16);
    for (int simulated : {1, 8}) {
      CAPTURE(simulated);
      const Schedule w = one_site(cost, true, sh.bytes, sh.M, sh.N, sh.K, simulated);
      {  // unidirectional: T = t_g + (n-1)·max(t_g, t_c), t_c = alpha + S/(n·B)
        const Schedule s = decompose(w, star, cost, PartitionMode::Ring);
        REQUIRE(check_pass_invariants(w, s) == "");
        const double tc = alpha + sh.bytes / n / B;
        const double expected = tg + (n - 1) * std::max(tg, tc);
        CHECK(replay(s, star, ReplayOptions{}).makespan_s == testing::approx(expected).epsilon(1e-6));
      }
      {  // bidirectional: n/2 steps; the two directions share each GPU's up- and downlink except
         // in the last clockwise step, which runs alone
        const Schedule s = decompose(w, star, cost, PartitionMode::BidirectionalRing);
        REQUIRE(check_pass_invariants(w, s) == "");
        const double tc2 = alpha + 2 * sh.bytes / n / B, tc1 = alpha + sh.bytes / n / B;
        std::vector<double> ready{0};
        for (int j = 1; j < n / 2; ++j) ready.insert(ready.end(), {j * tc2, j * tc2});
        ready.push_back((n / 2 - 1) * tc2 + tc1);
        double expected = 0;
        for (double r : ready) expected = std::max(expected, r) + tg;
        CHECK(replay(s, star, ReplayOptions{}).makespan_s == testing::approx(expected).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("predict_site agrees with the replay on a uniform ring (profile link efficiency)") {
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  ReplayOptions ro;
  ro.launch_overhead_s = cost.launch_overhead_s();  // a copy-engine send pays it (p2p_extra_latency_s)
  ro.link_efficiency.nvlink = cost.profile().nvlink_efficiency;  // star8's links are NVSwitch ports
  ro.collectives.read_profile(cost.profile());                   // as simulate.cpp
  const StrategyContext ctx{star, cost};
  for (PartitionMode mode : {PartitionMode::Ring, PartitionMode::BidirectionalRing}) {
    CAPTURE(to_string(mode));
    for (double bytes : {64e6, 4e6}) {
      const Schedule w = one_site(cost, true, bytes, 8192, 4096, 4096, 1);
      const auto sites = find_sites(w, w.programs[0], ctx);
      REQUIRE(sites.size() == 1);
      PartitionChoice c;
      c.mode = mode;
      c.comm_num_sm = 0;
      CHECK(predict_site(w, w.programs[0], sites[0], c, ctx).time_s ==
            testing::approx(replay(decompose(w, star, cost, mode), star, ro).makespan_s).epsilon(1e-6));
    }
  }
}

TEST_CASE("predict_site: a ring's GEMM chunks beside NCCL's send and receive kernels, as the replay slows them") {
  // SM interference on (108 SMs): each step's send and receive kernels hold their shard's p2p
  // channels' SMs (p2p_split on star8's 8 GPUs) while the GEMM chunk beside them runs.
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  ReplayOptions ro;
  ro.launch_overhead_s = cost.launch_overhead_s();
  ro.link_efficiency.nvlink = cost.profile().nvlink_efficiency;
  ro.collectives.read_profile(cost.profile());
  ro.sm_count = 108;
  StrategyContext ctx{star, cost};
  ctx.sm_count = 108;
  const StrategyContext off{star, cost};
  for (PartitionMode mode : {PartitionMode::Ring, PartitionMode::BidirectionalRing}) {
    for (double bytes : {64e6, 4e6}) {
      CAPTURE(to_string(mode));
      CAPTURE(bytes);
      const Schedule w = one_site(cost, true, bytes, 8192, 4096, 4096, 1);
      const auto [predicted, replayed] = site_times(w, star, cost, ctx, ro, mode);
      const auto sites = find_sites(w, w.programs[0], ctx);
      PartitionChoice c;
      c.mode = mode;
      const double without = predict_site(w, w.programs[0], sites[0], c, off).time_s;
      // 64 MB: the steps (at the shard's p2p channels' rate) outlast the slowed GEMM chunks, so the
      // SMs cost nothing; 4 MB: the GEMM chunks bind and run slower.
      CHECK(predicted >= without);
      if (bytes == 4e6) CHECK(predicted > without * (1 + 1e-3));
      // Both directions' steps slow the two GEMM chunks beside each of them together: exact.
      CHECK(predicted == testing::approx(replayed).epsilon(1e-6));
      CHECK(predicted >= replayed * (1 - 1e-9));
      c.comm_num_sm = 0;  // a copy engine's sends: no SMs
      CHECK(predict_site(w, w.programs[0], sites[0], c, ctx).time_s ==
            testing::approx(predict_site(w, w.programs[0], sites[0], c, off).time_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("GEMM -> ReduceScatter ring: within the pipeline's bounds") {
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  const int n = 8;
  const double B = 100e9, alpha = 1e-6, bytes = 64e6;
  const Schedule w = one_site(cost, false, bytes, 4096, 1024, 1024, 1);
  for (PartitionMode mode : {PartitionMode::Ring, PartitionMode::BidirectionalRing}) {
    const Schedule s = decompose(w, star, cost, mode);
    REQUIRE(check_pass_invariants(w, s) == "");
    const double tg = cost.gemm_time_s(4096 / n, 1024, 1024, DType::FP16);
    const double tc = alpha + bytes / n / B;
    const double ta = cost.memory_bound_time_s(4 * bytes / n);
    const double t = replay(s, star, ReplayOptions{}).makespan_s;
    CHECK(t >= tg + (n / 2) * tc);
    CHECK(t <= n * (tg + ta) + 2 * (n - 1) * tc);
  }
}

TEST_CASE("predicted substitutions and group splits agree with the replay of a lone collective") {
  const CostModel cost = a100_cost();
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  const StrategyContext ctx0{star, cost};
  ReplayOptions ro;
  ro.link_efficiency.nvlink = cost.profile().nvlink_efficiency;
  ro.collectives.read_profile(cost.profile());  // as simulate.cpp
  ro.launch_overhead_s = cost.launch_overhead_s();
  auto lone = [&](CollectiveKind kind, double bytes) {
    Schedule s;
    s.world_size = 8;
    s.stream_names = {"compute"};
    s.groups.push_back(Group{{0, 1, 2, 3, 4, 5, 6, 7}, CommPurpose::TensorParallel});
    RankProgram p{0, 1, {}};
    Op c;
    c.type = OpType::Collective;
    c.collective = kind;
    c.group = 0;
    c.bytes = bytes;
    c.match = 3;
    c.name = "c";
    p.ops = {c};
    s.programs.push_back(p);
    return s;
  };
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    for (Substitution sub : {Substitution::Keep, Substitution::ReduceScatterAllGather, Substitution::RingPermutes}) {
      CAPTURE(to_string(kind));
      CAPTURE(to_string(sub));
      const Schedule w = lone(kind, 32e6);
      PrimitiveSubstitutionOptions o;
      o.choose = [sub](const Schedule&, const Op&) { return sub; };
      Schedule s = make_primitive_substitution(o)->run(w, ctx0);
      assign_overlap_streams(s);
      REQUIRE(check_pass_invariants(w, s) == "");
      CHECK(predict_substitution_s(w, w.programs[0].ops[0], sub, ctx0) ==
            testing::approx(replay(s, star, ro).makespan_s).epsilon(1e-6));
    }
  }
  // A single island: nothing to split, the prediction is the collective's.
  const Schedule w = lone(CollectiveKind::AllReduce, 32e6);
  CHECK(predict_group_partition_s(w, w.programs[0].ops[0], TopologyLevel::Node, ctx0) ==
        predict_collective_s(w, w.programs[0].ops[0], ctx0));
  CHECK(predict_substitution_s(w, w.programs[0].ops[0], Substitution::Hierarchical, ctx0) ==
        predict_collective_s(w, w.programs[0].ops[0], ctx0));
}

TEST_CASE("predict_site with SM holds on DGX A100: one node as the replay, across nodes an upper bound") {
  // The ring's kernels hold their p2p channels' SMs until the last shard arrives; two GEMM chunks
  // share each bidirectional step (they were each charged the whole step: +6.5% at 64 MB).
  const CostModel cost = a100_cost();
  for (int nodes : {1, 2}) {
    CAPTURE(nodes);
    const Topology topo =
        load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", std::to_string(nodes)}});
    ReplayOptions ro;
    ro.launch_overhead_s = cost.launch_overhead_s();
    ro.link_efficiency = LinkEfficiency::of_profile(cost.profile());
    ro.collectives.read_profile(cost.profile());
    ro.sm_count = 108;
    StrategyContext ctx{topo, cost};
    ctx.sm_count = 108;
    const int n = 8 * nodes;
    for (PartitionMode mode : {PartitionMode::Ring, PartitionMode::BidirectionalRing})
      for (bool gather : {true, false})
        for (double bytes : {64e6, 4e6}) {
          CAPTURE(to_string(mode));
          CAPTURE(gather);
          CAPTURE(bytes);
          const auto [predicted, replayed] =
              site_times(one_site(cost, gather, bytes, 8192, 4096, 4096, n, n), topo, cost, ctx, ro, mode);
          CHECK(predicted >= replayed * (1 - 1e-9));
          if (nodes == 1 && gather) CHECK(predicted == testing::approx(replayed).epsilon(1e-6));
          // ReduceScatter: its adds' placement, as without SMs (+0.2..+1.3%).
          if (nodes == 1 && !gather) CHECK(predicted <= replayed * 1.015);
          // Across nodes, a rank whose neighbours share its node receives its first shards at
          // NVLink pace, the prediction has every shard arrive at the slowest hop's: bidirectional
          // 64 MB +13% (AllGather) and +17% (ReduceScatter) above the replay; the rest within 2%.
          if (nodes == 2) CHECK(predicted <= replayed * (mode == PartitionMode::Ring || bytes < 1e7 ? 1.02 : 1.2));
        }
  }
}
