// A tree AllReduce of more per-slice flows than CollectiveOptions::tree_slice_flows runs in bulk
// in flow fidelity (sim/collective_plan.hpp, kMaxTreeSliceFlows): one flow per hop and tree of
// all its slices' bytes, the members ending at the latest of those flows and their
// contention-free ends. Here: the bytes it moves, flow == analytic alone, contention beside a
// pipeline send in the same direction as slice by slice, and the user's choice of the threshold
// (a scenario's flow.tree_slice_flows, `collective --tree-slice-flows`).
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/comm_report.hpp"
#include "sim/error.hpp"
#include "sim/replay.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
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
  // The send on its own stream; its purpose and names as a pipeline's.
  auto [pp_send, pp_recv] = send_recv_ops(0, 8, 1e9, -7);
  for (Op* m : {&pp_send, &pp_recv}) {
    m->purpose = CommPurpose::Pipeline;
    m->stream = 1;
  }
  pp_send.name = "pp.send";
  pp_recv.name = "pp.recv";
  for (int r : {0, 8, 16, 24}) {
    RankProgram p{r, 2, {}};
    Op ar = collective_op(dp, 1, bytes, "dp.grad_sync");
    ar.purpose = CommPurpose::DataParallel;
    p.ops.push_back(ar);
    if (send && r == 0) p.ops.push_back(pp_send);
    if (send && r == 8) p.ops.push_back(pp_recv);
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

namespace {

/// A scenario file: a small GPT as TP 8, PP 2, DP 2 on four DGX A100 nodes with NCCL_ALGO=Tree,
/// so that each DP gradient AllReduce (a tree over two nodes, GPU i of each) shares its NICs with
/// the pipeline's sends; `extra` is appended (e.g. a `flow:` section).
std::string pp_dp_tree_scenario(const std::string& extra) {
  const std::string path = temp_path(".yaml");
  std::ofstream out(path);
  out << "name: pp-dp-tree\n"
         "model: {name: tiny-gpt, layers: 8, hidden: 4096, heads: 32, ffn_hidden: 16384, seq_len: 2048, vocab: 32768, "
         "dtype: fp16}\n"
         "topology: " << kSuperpod << "\n"
         "topology_overrides: {node.count: 4}\n"
         "parallelism: {tp: 8, pp: 2, dp: 2, sp: false, micro_batch: 1, global_batch: 8, recompute: none, "
         "zero_stage: 0}\n"
         "strategies: [megatron]\n"
         "nccl: {algo: tree}\n"
         "fidelity: flow\n"
      << extra;
  return path;
}

std::string scenario_error(const std::string& extra) {
  try {
    load_scenario(pp_dp_tree_scenario(extra));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// The replayed DP gradient AllReduces of `sc` (flow fidelity, megatron).
std::vector<CommOpSummary> dp_reductions(const Scenario& sc, RunResult* out = nullptr) {
  SimulateOptions opt;
  opt.communication_report = true;
  RunResult r = simulate(sc, opt);
  std::vector<CommOpSummary> dp;
  for (const CommOpSummary& c : r.strategies.at(0).communication)
    if (c.op == "dp.grad_sync") dp.push_back(c);
  if (out != nullptr) *out = std::move(r);
  return dp;
}

}  // namespace

TEST_CASE("flow.tree_slice_flows: a scenario's flow section and --set choose bulk or slice by slice, checked") {
  const Scenario plain = load_scenario(pp_dp_tree_scenario(""));
  CHECK(plain.flow.tree_slice_flows == kMaxTreeSliceFlows);
  CHECK(plain.flow.describe().empty());
  Scenario bulk = load_scenario(pp_dp_tree_scenario("flow: {tree_slice_flows: 0}\n"));
  CHECK(bulk.flow.tree_slice_flows == 0);
  CHECK(bulk.flow.describe() == "flow.tree_slice_flows 0");
  Scenario sliced = plain;
  apply_setting(sliced, "flow.tree_slice_flows", std::to_string(kMaxTreeFlows));
  CHECK(sliced.flow.tree_slice_flows == kMaxTreeFlows);
  // Errors name the file, the line and column, the key and what was expected.
  CHECK(scenario_error("flow: {tree_slice_flows: -1}\n")
            .find(":9:26: flow.tree_slice_flows: expected an integer from 0 to 2^30, found -1") != std::string::npos);
  CHECK(scenario_error("flow: {tree_slice_flows: 2.5}\n").find("flow.tree_slice_flows") != std::string::npos);
  CHECK(scenario_error("flow: {tree_slices: 0}\n").find(":9:8: flow.tree_slices: unknown key") != std::string::npos);
  CHECK(scenario_error("flow: 0\n").find(":9:7: flow: expected a map such as {tree_slice_flows: 0}") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(apply_setting(sliced, "flow.tree_slice_flows", "many"),
                       doctest::Contains("flow.tree_slice_flows: expected an integer from 0 to 2^30, found 'many'"),
                       InputError);

  // The replay takes it: in bulk the DP trees keep their contention-free time here (their flows
  // end before the closed form even beside the pipeline's sends), slice by slice the sends delay
  // some of their slices. When written: 96 MiB alone 5161.8 us; in bulk 5161.8, slice by slice
  // up to 5262.8 us.
  RunResult rb, rs;
  const std::vector<CommOpSummary> in_bulk = dp_reductions(bulk, &rb), by_slice = dp_reductions(sliced, &rs);
  REQUIRE(in_bulk.size() == by_slice.size());
  REQUIRE_FALSE(in_bulk.empty());
  bool slowed = false;
  for (size_t i = 0; i < in_bulk.size(); ++i) {
    CHECK(in_bulk[i].plan.rfind("tree/", 0) == 0);
    CHECK(in_bulk[i].alone_s == testing::approx(by_slice[i].alone_s).epsilon(1e-12));
    CHECK(in_bulk[i].max_s >= in_bulk[i].alone_s * (1 - 1e-9));
    CHECK(by_slice[i].max_s >= by_slice[i].alone_s * (1 - 1e-5));
    MESSAGE((in_bulk[i].bytes / 1048576) << " MiB: alone " << in_bulk[i].alone_s * 1e6 << " us, in bulk up to "
                                       << in_bulk[i].max_s * 1e6 << " us, slice by slice up to "
                                       << by_slice[i].max_s * 1e6 << " us");
    slowed |= by_slice[i].max_s > in_bulk[i].max_s * 1.002;
  }
  CHECK(slowed);
  CHECK(rb.flow_settings == "flow.tree_slice_flows 0");
  CHECK(rs.flow_settings == fmt::format("flow.tree_slice_flows {}", kMaxTreeFlows));
  // An analytic run ignores the flow section and does not show it.
  bulk.fidelity = Fidelity::Analytic;
  CHECK(simulate(bulk, SimulateOptions{}).flow_settings.empty());
}

TEST_CASE("collective --tree-slice-flows: bulk and slice by slice alike alone, and bad values refused") {
  const std::string common = "collective --op allreduce --algo tree -t " + kSuperpod +
                             " --override node.count=4 --ranks-per-node 1 --ranks 4 --sizes 256MiB:256MiB";
  const Run bulk = run_cli(common + " --tree-slice-flows 0");
  const Run sliced = run_cli(common + " --tree-slice-flows 16384");
  REQUIRE(bulk.status == 0);
  REQUIRE(sliced.status == 0);
  // The one row: size, count, type, redop, root, time, algbw, busbw, plan; the same time alone
  // (as printed, to 0.01 us: the two agree within 1e-5).
  const auto time_of = [](const std::string& out) {
    const size_t row = out.find("268435456");
    REQUIRE(row != std::string::npos);
    std::istringstream in(out.substr(row, out.find('\n', row) - row));
    std::string size, count, type, redop, root;
    double us = 0;
    in >> size >> count >> type >> redop >> root >> us;
    return us;
  };
  CHECK(time_of(bulk.output) == testing::approx(time_of(sliced.output)).epsilon(1e-5));
  // The header says what was set, and where it changes nothing.
  CHECK(bulk.output.find("# note: --tree-slice-flows 0: a tree of more per-slice flows runs in bulk (default 1024)") !=
        std::string::npos);
  const Run gather = run_cli("collective --op allgather -t " + kSuperpod +
                             " --override node.count=4 --ranks-per-node 1 --ranks 4 --sizes 1MiB:1MiB --tree-slice-flows 0");
  CHECK(gather.status == 0);
  CHECK(gather.output.find("--tree-slice-flows leaves AllGather alone: only an AllReduce runs as a tree") !=
        std::string::npos);
  const Run bad = run_cli(common + " --tree-slice-flows -1");
  CHECK(bad.status != 0);
  CHECK(bad.output.find("--tree-slice-flows") != std::string::npos);
  CHECK(bad.output.find("expected a whole number from 0 to 1073741824, found '-1'") != std::string::npos);
  const Run analytic = run_cli(common + " --fidelity analytic --tree-slice-flows 0");
  CHECK(analytic.status == 0);
  CHECK(analytic.output.find("--tree-slice-flows leaves analytic fidelity alone") != std::string::npos);
}
