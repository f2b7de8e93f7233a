// A scenario's NCCL environment (`nccl:`, `--set nccl.*`: NCCL_ALGO, NCCL_PROTO,
// NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE): parsed with clear errors, and applied to every collective
// the replay and the strategies' predictions plan.
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace overlapsim;
using overlapsim::testing::shipped_link_efficiency;
using overlapsim::testing::small_h100_scenario;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

std::string input_error(const std::string& nccl) {
  try {
    load_scenario(small_h100_scenario(nccl));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<CommOpSummary> communication(const Scenario& sc) {
  SimulateOptions opt;
  opt.communication_report = true;
  return simulate(sc, opt).strategies.at(0).communication;
}

}  // namespace

TEST_CASE("a scenario's nccl section: NCCL_ALGO, NCCL_PROTO, NVLS and PAT switches, and its errors") {
  const Scenario none = load_scenario(small_h100_scenario(""));
  CHECK(none.nccl.algorithm == CollectiveAlgorithm::Auto);
  CHECK(none.nccl.protocol_auto);
  CHECK(none.nccl.nvls_enable);
  CHECK(none.nccl.pat_enable);
  const Scenario s =
      load_scenario(small_h100_scenario("nccl: {algo: Ring, proto: LL128, nvls_enable: false, pat_enable: false}\n"));
  CHECK(s.nccl.algorithm == CollectiveAlgorithm::Ring);
  CHECK_FALSE(s.nccl.protocol_auto);
  CHECK(s.nccl.protocol == Protocol::LL128);
  CHECK_FALSE(s.nccl.nvls_enable);
  CHECK_FALSE(s.nccl.pat_enable);
  CHECK_FALSE(s.nccl.collnet_enable);  // NCCL's default
  CHECK(input_error("nccl: {collnet_enable: maybe}\n").find("nccl.collnet_enable: expected true, false, 1 or 0") !=
        std::string::npos);
  // An empty value: what the key expects, not only "a string".
  CHECK(input_error("nccl: {collnet_enable: }\n").find("nccl.collnet_enable: expected true, false, 1 or 0 (as NCCL's "
                                                     "variable), found an empty value") != std::string::npos);
  CHECK(input_error("nccl: {algo: rings}\n").find(":8:14: nccl.algo: expected auto, ring, tree, nvls, nvlstree, pat, "
                                                 "collnetdirect or collnetchain (NCCL_ALGO), found 'rings'") != std::string::npos);
  CHECK(input_error("nccl: {proto: ll256}\n").find("nccl.proto: expected auto, ll, ll128 or simple (NCCL_PROTO), found "
                                                  "'ll256'") != std::string::npos);
  CHECK(input_error("nccl: {nvls: false}\n").find("nccl.nvls: unknown key") != std::string::npos);
  CHECK(input_error("nccl: {nvls_enable: 2}\n").find(":8:21: nccl.nvls_enable: expected true, false, 1 or 0 (as "
                                                   "NCCL's variable), found '2'") != std::string::npos);
  CHECK(input_error("nccl: {pat_enable: yes}\n").find("nccl.pat_enable: expected true, false, 1 or 0") !=
        std::string::npos);
  // As NCCL_NVLS_ENABLE=0 and NCCL_PAT_ENABLE=1 are written in a job's environment.
  const Scenario as_env = load_scenario(small_h100_scenario("nccl: {nvls_enable: 0, pat_enable: 1}\n"));
  CHECK_FALSE(as_env.nccl.nvls_enable);
  CHECK(as_env.nccl.pat_enable);
  CHECK(input_error("nccl: ring\n").find("nccl: expected a map") != std::string::npos);
  // --set takes the same keys.
  Scenario t = none;
  apply_setting(t, "nccl.algo", "tree");
  apply_setting(t, "nccl.proto", "simple");
  apply_setting(t, "nccl.nvls_enable", "false");
  CHECK(t.nccl.algorithm == CollectiveAlgorithm::Tree);
  CHECK(t.nccl.protocol == Protocol::Simple);
  CHECK_FALSE(t.nccl.nvls_enable);
  apply_setting(t, "nccl.proto", "auto");
  CHECK(t.nccl.protocol_auto);
  apply_setting(t, "nccl.pat_enable", "0");
  CHECK_FALSE(t.nccl.pat_enable);
  apply_setting(t, "nccl.pat_enable", "1");
  CHECK(t.nccl.pat_enable);
  CHECK_THROWS_WITH_AS(apply_setting(t, "nccl.pat_enable", "no"), doctest::Contains("expected true, false, 1 or 0"),
                       InputError);
  CHECK_THROWS_WITH_AS(apply_setting(t, "nccl.algo", "x"), doctest::Contains("nccl.algo: expected auto, ring"),
                       InputError);
  // What the result's header prints: the variables set, NCCL's names.
  CHECK(describe(none.nccl).empty());
  CHECK(describe(s.nccl) == "NCCL_ALGO=Ring NCCL_PROTO=LL128 NCCL_NVLS_ENABLE=0 NCCL_PAT_ENABLE=0");
}

TEST_CASE("NCCL_NVLS_ENABLE=0 and NCCL_PAT_ENABLE=0 leave NVLS, NVLS_TREE and PAT out of the choice") {
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const Topology node = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}});
  const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  CollectiveOptions on, off;
  off.nvls_enable = false;
  off.pat_enable = false;
  const double mib = 1024.0 * 1024;
  CHECK(plan_collective(node, eff, eight, CollectiveKind::AllReduce, 256 * mib, 0, on).algorithm ==
        CollectiveAlgorithm::Nvls);
  CHECK(plan_collective(node, eff, eight, CollectiveKind::AllReduce, 256 * mib, 0, off).algorithm ==
        CollectiveAlgorithm::Ring);
  // Forced, NVLS runs the ring when it is disabled, as a forced algorithm that cannot run does.
  off.algorithm = CollectiveAlgorithm::Nvls;
  CHECK(plan_collective(node, eff, eight, CollectiveKind::AllReduce, 256 * mib, 0, off).algorithm ==
        CollectiveAlgorithm::Ring);
  off.algorithm = CollectiveAlgorithm::Auto;
  // Across 4 nodes of 8: NVLS_TREE for a large AllReduce, not when disabled.
  const Topology four = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "4"}});
  std::vector<int> all;
  for (int r = 0; r < 32; ++r) all.push_back(r);
  CHECK(plan_collective(four, eff, all, CollectiveKind::AllReduce, 256 * mib, 0, on).algorithm ==
        CollectiveAlgorithm::NvlsTree);
  CHECK(plan_collective(four, eff, all, CollectiveKind::AllReduce, 256 * mib, 0, off).algorithm !=
        CollectiveAlgorithm::NvlsTree);
  // One GPU of each of 16 nodes: PAT for a small AllGather, the ring when disabled.
  const Topology sixteen =
      load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "16"}, {"node.gpus.count", "1"}});
  std::vector<int> sixteen_ranks;
  for (int r = 0; r < 16; ++r) sixteen_ranks.push_back(r);
  CHECK(plan_collective(sixteen, eff, sixteen_ranks, CollectiveKind::AllGather, 64 * 1024.0, 0, on).algorithm ==
        CollectiveAlgorithm::Pat);
  CHECK(plan_collective(sixteen, eff, sixteen_ranks, CollectiveKind::AllGather, 64 * 1024.0, 0, off).algorithm ==
        CollectiveAlgorithm::Ring);
}

TEST_CASE("a forced NVLS or PAT that a switch of the same job disables: the note names the switch") {
  // A DGX A100's NVSwitch node with H100s in it: the TP AllReduce could run NVLS but for the switch.
  const std::string run = "run -q " + kSrc +
                          "/tests/data/scenarios/small.yaml --fidelity analytic -s megatron --set "
                          "topology_overrides.node.gpus.model=h100-sxm5-80gb ";
  auto r = overlapsim::testing::run_cli(run + "--set nccl.algo=nvls --set nccl.nvls_enable=false");
  REQUIRE(r.status == 0);
  CHECK(r.output.find("the ring ran instead; NCCL_NVLS_ENABLE=0 leaves NVLS and NVLSTree out everywhere (") !=
        std::string::npos);
  r = overlapsim::testing::run_cli(run + "--set nccl.algo=pat --set nccl.pat_enable=false");
  REQUIRE(r.status == 0);
  CHECK(r.output.find("the ring ran instead; NCCL_PAT_ENABLE=0 leaves PAT out everywhere (") != std::string::npos);
  r = overlapsim::testing::run_cli(run + "--set nccl.algo=pat");  // enabled: no such words
  REQUIRE(r.status == 0);
  CHECK(r.output.find("NCCL_PAT_ENABLE=0") == std::string::npos);
  CHECK(r.output.find("NCCL_ALGO=PAT did not run for") != std::string::npos);
}

TEST_CASE("a scenario's NCCL environment reaches every collective of the replay") {
  // Default: the TP AllReduces of 16 MiB run NVLS inside each node.
  const auto has = [](const std::vector<CommOpSummary>& rows, const std::string& prefix) {
    for (const CommOpSummary& c : rows)
      if (c.plan.rfind(prefix, 0) == 0) return true;
    return false;
  };
  const Scenario base = load_scenario(small_h100_scenario(""));
  CHECK(has(communication(base), "nvls/"));
  Scenario no_nvls = base;
  apply_setting(no_nvls, "nccl.nvls_enable", "false");
  const std::vector<CommOpSummary> off = communication(no_nvls);
  CHECK_FALSE(has(off, "nvls"));
  CHECK(has(off, "ring/"));
  Scenario simple = base;
  apply_setting(simple, "nccl.algo", "ring");
  apply_setting(simple, "nccl.proto", "simple");
  for (const CommOpSummary& c : communication(simple)) {
    CAPTURE(c.op);
    if (c.kind == "Send" || c.kind == "AllToAll") continue;
    CHECK(c.plan.rfind("ring/Simple/", 0) == 0);
  }
}
