// A tree AllReduce of more per-slice flows than CollectiveOptions::tree_slice_flows runs in bulk
// in flow fidelity (sim/collective_plan.hpp, kMaxTreeSliceFlows): one flow per hop and tree of
// all its slices' bytes, the members ending at the latest of those flows and their
// contention-free ends. Here: the bytes it moves, flow == analytic alone, and contention beside a
// pipeline send in the same direction as slice by slice.
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSuperpod = std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-a100-superpod.yaml";
constexpr double kGiB = 1024.0 * 1024 * 1024;

/// Ranks 0, 8, 16, 24 (GPU 0 of four DGX A100 nodes, rail 0) reduce `bytes` of gradients as a
/// tree; with `send`, rank 0 also sends 1 GB to rank 8 on another stream, through the same NICs.
Schedule dp_beside_send(double bytes, bool send) {
  Schedule s;
  s.world_size = 32;
  const int dp = s.intern_group({0, 8, 16, 24}, CommPurpose::DataParallel);
  for (int r : {0, 8, 16, 24}) {
    RankProgram p{r, 2, {}};
    Op ar;
    ar.type = OpType::Collective;
    ar.group = dp;
    ar.match = 1;
    ar.bytes = bytes;
    ar.purpose = CommPurpose::DataParallel;
    ar.name = "dp.grad_sync";
    p.ops.push_back(ar);
    if (send && (r == 0 || r == 8)) {
      Op msg;
      msg.type = r == 0 ? OpType::Send : OpType::Recv;
      msg.peer = r == 0 ? 8 : 0;
      msg.bytes = 1e9;
      msg.match = -7;
      msg.purpose = CommPurpose::Pipeline;
      msg.stream = 1;
      msg.name = r == 0 ? "pp.send" : "pp.recv";
      p.ops.push_back(msg);
    }
    s.programs.push_back(p);
  }
  return s;
}

}  // namespace

TEST_CASE("a tree in bulk: one flow per hop and tree, carrying what each member receives slice by slice") {
  const Topology topo = load_topology(kSuperpod, {{"node.count", "4"}});
  const LinkEfficiency eff;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Tree;
  o.protocol_auto = false;
  o.protocol = Protocol::Simple;  // wire bytes = payload bytes
  const int n = 32;
  const double S = 8.0 * 1024 * 1024 + 12;
  const CollectivePlan p = plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, S, 0, o);
  REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
  REQUIRE(p.tree_flows() > kMaxTreeSliceFlows);
  REQUIRE(p.tree_in_bulk());
  CHECK(static_cast<long long>(p.bulk.size()) == 2LL * (n - 1) * static_cast<long long>(p.trees.size()));
  std::vector<double> got(n, 0.0);
  for (const CollectivePlan::BulkFlow& f : p.bulk) got[f.dst_pos] += f.bytes;
  for (int v = 0; v < n; ++v) CHECK(got[v] == testing::approx(tree_received_bytes(p, v)).epsilon(1e-12));
  // Slice by slice where asked, and for a tree of few slices.
  CollectiveOptions sliced = o;
  sliced.tree_slice_flows = kMaxTreeFlows;
  REQUIRE(p.tree_flows() <= kMaxTreeFlows);
  CHECK_FALSE(plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, S, 0, sliced).tree_in_bulk());
  const CollectivePlan small = plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, 64.0 * 1024, 0, o);
  REQUIRE(small.tree_flows() <= kMaxTreeSliceFlows);
  CHECK_FALSE(small.tree_in_bulk());
  // Analytic and flow plan alike: the plan is the same whichever fidelity replays it.
  CHECK(p.closed_form_s() == plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, S, 0, sliced).closed_form_s());
}

TEST_CASE("a tree in bulk alone takes its closed form in flow, as slice by slice does within its rounding") {
  struct Case {
    int nodes;
    int ranks;
    double size;
  };
  // One node (a chain over NVSwitch), 4 nodes of 8 GPUs, 128 one-GPU nodes (the 1024-GPU
  // benchmark's tree shape at a smaller size): sizes whose slices exceed kMaxTreeSliceFlows.
  for (Case k : {Case{1, 8, 256.0 * 1024 * 1024}, Case{4, 32, kGiB}, Case{16, 128, kGiB}}) {
    CAPTURE(k.ranks);
    const Topology topo = load_topology(kSuperpod, {{"node.count", std::to_string(k.nodes)}});
    BenchOptions b;
    b.algorithm = CollectiveAlgorithm::Tree;
    const CollectivePlan p =
        plan_collective(topo, b.replay.link_efficiency, first(k.ranks), CollectiveKind::AllReduce, k.size, 0, [&] {
          CollectiveOptions o;
          o.algorithm = CollectiveAlgorithm::Tree;
          return o;
        }());
    REQUIRE(p.tree_in_bulk());
    const FlowAnalytic bulk = flow_and_analytic(topo, BenchOp::AllReduce, k.ranks, k.size, b);
    INFO("flow " << bulk.flow * 1e6 << " µs, analytic " << bulk.analytic * 1e6 << " µs");
    CHECK(bulk.flow == testing::approx(bulk.analytic).epsilon(1e-9));
    if (p.tree_flows() <= kMaxTreeFlows) {
      b.replay.collectives.tree_slice_flows = kMaxTreeFlows;
      const FlowAnalytic sliced = flow_and_analytic(topo, BenchOp::AllReduce, k.ranks, k.size, b);
      CHECK(sliced.flow == testing::approx(bulk.flow).epsilon(1e-5));
    }
  }
}

TEST_CASE("a tree in bulk beside a pipeline send on its NICs is slowed in flow, as slice by slice, not in analytic") {
  const Topology pod = load_topology(kSuperpod, {{"node.count", "4"}});
  ReplayOptions analytic, bulk, sliced;
  for (ReplayOptions* o : {&analytic, &bulk, &sliced}) o->collectives.algorithm = CollectiveAlgorithm::Tree;
  analytic.fidelity = Fidelity::Analytic;
  sliced.collectives.tree_slice_flows = kMaxTreeFlows;
  const double S = kGiB;
  {
    CollectiveOptions o = bulk.collectives;
    const CollectivePlan p = plan_collective(pod, bulk.link_efficiency, {0, 8, 16, 24}, CollectiveKind::AllReduce, S, 0, o);
    REQUIRE(p.tree_in_bulk());
    REQUIRE(p.tree_flows() <= kMaxTreeFlows);
  }
  const Schedule alone = dp_beside_send(S, false), beside = dp_beside_send(S, true);
  const double ar_alone = replay(alone, pod, analytic).end_s[0][0];
  CHECK(replay(alone, pod, bulk).end_s[0][0] == testing::approx(ar_alone).epsilon(1e-9));
  CHECK(replay(alone, pod, sliced).end_s[0][0] == testing::approx(ar_alone).epsilon(1e-5));
  const ReplayTimes a = replay(beside, pod, analytic), fb = replay(beside, pod, bulk), fs = replay(beside, pod, sliced);
  CHECK(a.end_s[0][0] == testing::approx(ar_alone).epsilon(1e-9));  // analytic: no contention
  MESSAGE("AllReduce alone " << ar_alone * 1e3 << " ms; beside the send: bulk " << fb.end_s[0][0] * 1e3
                             << " ms, slice by slice " << fs.end_s[0][0] * 1e3 << " ms; send: analytic "
                             << a.end_s[0][1] * 1e3 << " ms, bulk " << fb.end_s[0][1] * 1e3
                             << " ms, slice by slice " << fs.end_s[0][1] * 1e3 << " ms");
  // Both flow modes: the AllReduce and the send slower than without each other. When written:
  // the AllReduce 86.97 ms alone, 107.37 ms in bulk, 94.82 ms slice by slice; the send 40.02 ms
  // alone, 125.90 and 125.91 ms. In bulk all the tree's flows through rank 0's NIC (up and down,
  // every tree) share it with the send at once, as NCCL's channels do in the pipeline's steady
  // state; slice by slice its hops' flows take turns, and each turn gets more of the NIC.
  CHECK(fb.end_s[0][0] > 1.05 * ar_alone);
  CHECK(fs.end_s[0][0] > 1.05 * ar_alone);
  CHECK(fb.end_s[0][1] > 2 * a.end_s[0][1]);
  CHECK(fs.end_s[0][1] > 2 * a.end_s[0][1]);
  CHECK(fb.end_s[0][0] == testing::approx(fs.end_s[0][0]).epsilon(0.15));
  CHECK(fb.end_s[0][1] == testing::approx(fs.end_s[0][1]).epsilon(0.01));
}
