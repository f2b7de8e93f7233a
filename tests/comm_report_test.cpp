// `run --explain`'s communication table (sim/comm_report.hpp): every communication op counted,
// NCCL's plan and SMs as the replay ran them, and in analytic fidelity (no contention) each ring
// collective's and each send's replayed time equal to its closed form.
#include "sim/comm_report.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace overlapsim;
using overlapsim::testing::Run;
using overlapsim::testing::run_cli;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
}

TEST_CASE("the communication report counts every collective and send, and analytic replays the closed form") {
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  SimulateOptions opt;
  opt.strategies = {"megatron"};
  opt.fidelity = Fidelity::Analytic;
  opt.every_micro_batch = true;
  opt.communication_report = true;
  long long comm_ops = 0;
  opt.on_replayed = [&](const std::string&, const Schedule& s, const ReplayTimes&, const Topology&) {
    for (const RankProgram& p : s.programs)
      for (const Op& op : p.ops) comm_ops += op.type == OpType::Collective || op.type == OpType::Send;
  };
  const RunResult r = simulate(sc, opt);
  REQUIRE(r.strategies.size() == 1);
  const StrategyResult& s = r.strategies[0];
  CHECK(s.communication_micro_batches == r.micro_batches);
  REQUIRE(!s.communication.empty());
  long long instances = 0;
  int rings = 0, sends = 0;
  for (const CommOpSummary& c : s.communication) {
    CAPTURE(c.op);
    instances += c.instances;
    CHECK(c.sms >= 1);
    CHECK(c.max_s >= c.mean_s);
    CHECK(c.mean_s > 0);
    if (c.plan.rfind("ring/", 0) == 0 || c.kind == "Send") {
      rings += c.kind != "Send";
      sends += c.kind == "Send";
      if (c.kind == "Send") CHECK(c.purpose == "pair");  // the pair's own communicator
      // One DGX A100: NCCL's communicator of 24 channels, one SM each for a large ring.
      if (c.kind != "Send" && c.bytes >= 32.0 * 1024 * 1024) CHECK(c.sms == 24);
      CHECK(c.mean_s == doctest::Approx(c.alone_s).epsilon(1e-9));
      CHECK(c.max_s == doctest::Approx(c.alone_s).epsilon(1e-9));
    }
    // Elements and reduction as nccl-tests names them: the model's fp16 tensors, the cross
    // entropy's max and sums of floats.
    if (c.kind == "Send") CHECK(c.type.empty());
    else if (c.op == "ar.ce.max") CHECK(c.type == "float max");
    else if (c.op.rfind("ar.ce.", 0) == 0) CHECK(c.type == "float sum");
    else if (c.kind == "AllGather") CHECK(c.type == "half");
    else CHECK(c.type == "half sum");
  }
  CHECK(rings >= 10);
  CHECK(sends == 2);  // the activations forward, the gradients back
  CHECK(instances == comm_ops);
  // Off by default: nothing is summarized.
  opt.communication_report = false;
  opt.on_replayed = nullptr;
  CHECK(simulate(sc, opt).strategies[0].communication.empty());
}

TEST_CASE("the communication report shows a DP group beside TP 8 on NCCL's 2 channels of one NIC") {
  // The small model as TP 8 x DP 2 on two DGX H100 nodes: each DP group holds one GPU of each node.
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  apply_setting(sc, "parallelism.tp", "8");
  apply_setting(sc, "parallelism.pp", "1");
  apply_setting(sc, "parallelism.dp", "2");
  sc.topology_path = kSrc + "/topologies/dgx-h100-superpod.yaml";
  sc.topology_overrides["node.count"] = "2";
  SimulateOptions opt;
  opt.strategies = {"megatron"};
  opt.fidelity = Fidelity::Analytic;
  opt.communication_report = true;
  const RunResult r = simulate(sc, opt);
  bool dp = false, tp = false;
  for (const CommOpSummary& c : r.strategies.at(0).communication) {
    CAPTURE(c.op);
    if (c.purpose == "dp") {
      dp = true;
      CHECK(c.group_size == 2);
      CHECK(c.nodes == 2);
      CHECK(c.local_ranks == 1);
      CHECK(c.sms <= 2);
    }
    if (c.purpose == "tp" && c.bytes >= 1024.0 * 1024) {
      tp = true;
      CHECK(c.nodes == 1);
      CHECK(c.local_ranks == 8);
    }
  }
  CHECK(dp);
  CHECK(tp);
}

TEST_CASE("run --explain prints the communication table, --json carries it") {
  const std::string json = overlapsim::testing::temp_path(".json");
  const Run r = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml -s megatron --fidelity analytic --explain --json " + json);
  CHECK(r.status == 0);
  CHECK(r.output.find("megatron: communication as replayed (4 of the 4 micro-batches; per op on the 2 simulated rank(s)") !=
        std::string::npos);
  CHECK(r.output.find("dp.grad_sync") != std::string::npos);
  const std::string j = overlapsim::testing::slurp(json);
  CHECK(j.find("\"communication\"") != std::string::npos);
  CHECK(j.find("\"micro_batches_replayed\": 4") != std::string::npos);
  // Without --explain the JSON has no such table.
  const Run plain = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml -s megatron --fidelity analytic --json " + json);
  CHECK(plain.status == 0);
  CHECK(overlapsim::testing::slurp(json).find("\"communication\"") == std::string::npos);
}

TEST_CASE("the communication table's time columns widen to their longest entry") {
  StrategyResult s;
  s.strategy = "megatron";
  s.communication_micro_batches = 1;
  CommOpSummary a;
  a.op = "dp.param_gather";
  a.kind = "AllGather";
  a.purpose = "dp";
  a.group_size = 64;
  a.nodes = 64;
  a.local_ranks = 1;
  a.bytes = 80.0 * 1024 * 1024 * 1024;
  a.instances = 1;
  a.plan = "ring/Simple/2";
  a.sms = 2;
  a.alone_s = 1234.5;  // 1234500000.0 us: 12 characters
  a.mean_s = 1234.5;
  a.max_s = 1234.5;
  CommOpSummary b = a;
  b.op = "send.act";
  b.kind = "Send";
  b.purpose = "pair";
  b.group_size = 2;
  b.alone_s = b.mean_s = b.max_s = 1e-4;
  s.communication = {a, b};
  RunResult r;
  r.micro_batches = 1;
  r.simulated_ranks = 1;
  std::ostringstream out;
  print_communication(out, s, r);
  std::istringstream in(out.str());
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  REQUIRE(lines.size() == 4);  // title, header, two rows
  CHECK(lines[2].find("1234500000.0 1234500000.0 1234500000.0") != std::string::npos);
  CHECK(lines[3].find("pair 2") != std::string::npos);
  // Header and rows end in the same column: every time right-aligned under its heading.
  CHECK(lines[1].size() == lines[2].size());
  CHECK(lines[1].size() == lines[3].size());
}
