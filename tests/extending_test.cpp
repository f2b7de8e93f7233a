// The worked example of docs/extending.md: the code on the page is the file that is built
// (sim/passes/optimizer_gather_overlap.cpp), and the pass keeps the invariants and pays off.
#include "calibrate/profile.hpp"
#include "models/transformer.hpp"
#include "sim/pass.hpp"
#include "sim/passes/passes.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

}  // namespace

TEST_CASE("docs/extending.md shows the example pass exactly as it is built") {
  const std::string doc = slurp(kSrc + "/docs/extending.md");
  const std::string file = "sim/passes/optimizer_gather_overlap.cpp";
  const std::string begin = "<!-- begin: " + file + " -->\n```cpp\n";
  const std::string end = "```\n<!-- end: " + file + " -->";
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == slurp(kSrc + "/" + file));
  // The registration lines the page shows are the registry's.
  CHECK(slurp(kSrc + "/sim/passes/registry.cpp")
            .find("    {\"optimizer-gather-overlap\", \"optimizer-gather-overlap[:K] (default 4)\",\n"
                  "     [](const std::string& spec, const std::string& arg) {\n"
                  "       return make_optimizer_gather_overlap(positive_int(spec, arg, 4));\n"
                  "     }},") != std::string::npos);
}

TEST_CASE("optimizer-gather-overlap keeps the invariants and hides part of ZeRO's parameter AllGather") {
  const CostModel cost(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  const Topology topo = load_topology(sc.topology_path, sc.topology_overrides);
  for (Folding f : {Folding::Representatives, Folding::None}) {
    const Schedule w = build_iteration(sc.model, sc.parallelism, cost, f);
    const StrategyContext ctx{topo, cost, &sc.model, &sc.parallelism};
    const Schedule s = make_pass("optimizer-gather-overlap:4")->run(w, ctx);
    CHECK(check_pass_invariants(w, s) == "");
    int chunks = 0;
    for (const auto& op : s.programs[0].ops) chunks += op.name.rfind("dp.param_gather/", 0) == 0 ? 1 : 0;
    CHECK(chunks == 4);
  }
  SimulateOptions o;
  o.strategies = {"megatron", "megatron+optimizer-gather-overlap:4"};
  const RunResult r = simulate(sc, o);
  REQUIRE(r.strategies.size() == 2);
  CHECK(r.strategies[1].iteration_s < r.strategies[0].iteration_s);
  CHECK(r.strategies[1].exposed_comm_s < r.strategies[0].exposed_comm_s);
}
