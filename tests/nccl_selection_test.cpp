// NCCL_ALGO and NCCL_PROTO as NCCL reads them (sim/nccl_selection.hpp): lists, '^' exclusions
// and per-collective entries in a scenario's nccl section, `--set nccl.*` and `overlapsim
// collective --algo/--protocol`; the automatic choice among what they allow; the refusal where a
// list leaves a collective nothing that can run; the note where one forced name falls back.
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace overlapsim;
using overlapsim::testing::first;
using overlapsim::testing::Run;
using overlapsim::testing::run_cli;
using overlapsim::testing::shipped_link_efficiency;
using overlapsim::testing::small_h100_scenario;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kKiB = 1024.0, kMiB = 1024.0 * 1024;

std::string load_error(const std::string& nccl) {
  try {
    load_scenario(small_h100_scenario(nccl));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

NcclSelection algos(const std::string& text) {
  NcclSelection s;
  parse_nccl_algo_list(text, s);
  return s;
}

unsigned bits(std::initializer_list<CollectiveAlgorithm> as) {
  unsigned b = 0;
  for (CollectiveAlgorithm a : as) b |= algorithm_bit(a);
  return b;
}

constexpr unsigned proto_bit(Protocol p) { return 1u << static_cast<unsigned>(p); }

}  // namespace

TEST_CASE("NCCL_ALGO and NCCL_PROTO lists parse as NCCL's parseList reads them") {
  using A = CollectiveAlgorithm;
  SUBCASE("a list: those algorithms for every collective, NCCL's spelling") {
    const NcclSelection s = algos("RING,tree");
    for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::Broadcast})
      CHECK(s.of(k).algorithms == bits({A::Ring, A::Tree}));
    CHECK(s.algo_text == "Ring,Tree");
    CHECK_FALSE(s.is_default());
  }
  SUBCASE("'^': every algorithm but those") {
    const NcclSelection s = algos("^nvls");
    CHECK(s.of(CollectiveKind::AllReduce).algorithms == (kEveryAlgorithm & ~algorithm_bit(A::Nvls)));
    CHECK(s.algo_text == "^NVLS");
  }
  SUBCASE("per collective: the first entry for every function, each later one its function's whole row") {
    const NcclSelection s = algos("allreduce:tree,ring;AllGather:ring");
    CHECK(s.of(CollectiveKind::AllReduce).algorithms == bits({A::Ring, A::Tree}));
    CHECK(s.of(CollectiveKind::AllGather).algorithms == bits({A::Ring}));
    CHECK(s.of(CollectiveKind::ReduceScatter).algorithms == kEveryAlgorithm);  // not named: NCCL's default
    CHECK(s.algo_text == "AllReduce:Tree,Ring;AllGather:Ring");
    const NcclSelection t = algos("ring,nvlstree;allreduce:^tree");
    CHECK(t.of(CollectiveKind::Broadcast).algorithms == bits({A::Ring, A::NvlsTree}));
    CHECK(t.of(CollectiveKind::AllReduce).algorithms == (kEveryAlgorithm & ~algorithm_bit(A::Tree)));
    CHECK(t.algo_text == "Ring,NVLSTree;AllReduce:^Tree");
  }
  SUBCASE("NCCL's CollNet names: in a list, and alone a forced algorithm") {
    const NcclSelection s = algos("collnetdirect,Ring,CollNetChain");
    CHECK(s.of(CollectiveKind::AllReduce).algorithms == (bits({A::Ring}) | algorithm_bit(A::CollnetDirect) | algorithm_bit(A::CollnetChain)));
    CHECK(s.algo_text == "CollNetDirect,Ring,CollNetChain");
    NcclEnvironment env;
    parse_nccl_algo("CollNetDirect", env);
    CHECK(env.algorithm == CollectiveAlgorithm::CollnetDirect);
    CHECK(env.lists.is_default());
    parse_nccl_algo("collnet_chain", env);
    CHECK(env.algorithm == CollectiveAlgorithm::CollnetChain);
    CHECK(std::string(nccl_algo_name(CollectiveAlgorithm::CollnetChain)) == "CollNetChain");
    CHECK(std::string(to_string(CollectiveAlgorithm::CollnetDirect)) == "collnetdirect");
  }
  SUBCASE("what a list names for a collective: its listed algorithms NCCL has there, none for a '^' entry") {
    CHECK(nccl_algo_list_named("CollNetDirect,Ring", CollectiveKind::AllGather) == bits({A::CollnetDirect, A::Ring}));
    // CollNetChain is no AllGather algorithm; an AllReduce has both.
    CHECK(nccl_algo_list_named("collnetchain,ring", CollectiveKind::AllGather) == bits({A::Ring}));
    CHECK(nccl_algo_list_named("collnetchain,nvls", CollectiveKind::AllReduce) == bits({A::CollnetChain, A::Nvls}));
    // '^ring' enables CollNet without naming it; a row no entry sets is NCCL's default, named by none.
    CHECK(nccl_algo_list_named("^ring", CollectiveKind::AllReduce) == 0);
    CHECK(nccl_algo_list_named("allgather:ring;allreduce:^collnetdirect", CollectiveKind::AllReduce) == 0);
    CHECK(nccl_algo_list_named("allgather:ring", CollectiveKind::ReduceScatter) == 0);
    CHECK(nccl_algo_list_named("^ring;allreduce:collnetchain", CollectiveKind::AllReduce) == bits({A::CollnetChain}));
    CHECK_THROWS_AS(nccl_algo_list_named("ring,,tree", CollectiveKind::AllReduce), NcclListError);
  }
  SUBCASE("NCCL_PROTO: a list sets its rows, LL128 then enabled everywhere; NCCL's own example") {
    NcclSelection s;
    parse_nccl_proto_list("^LL128;allreduce:LL128", s);
    CHECK(s.of(CollectiveKind::AllGather).protocols == (proto_bit(Protocol::LL) | proto_bit(Protocol::Simple)));
    CHECK(s.of(CollectiveKind::AllReduce).protocols == proto_bit(Protocol::LL128));
    CHECK(s.of(CollectiveKind::AllReduce).protocols_set);
    CHECK(s.proto_text == "^LL128;AllReduce:LL128");
    NcclSelection only;
    parse_nccl_proto_list("allreduce:simple", only);
    CHECK(only.of(CollectiveKind::AllReduce).protocols == proto_bit(Protocol::Simple));
    CHECK_FALSE(only.of(CollectiveKind::AllGather).protocols_set);  // NCCL's default row (LL128 where trusted)
  }
  SUBCASE("in a scenario and with --set, printed as NCCL reads them; one name keeps its meaning") {
    const Scenario sc = load_scenario(small_h100_scenario("nccl:\n  algo: ring,tree\n  proto: ^ll128\n"));
    CHECK(sc.nccl.algorithm == A::Auto);
    CHECK(sc.nccl.protocol_auto);
    CHECK(describe(sc.nccl) == "NCCL_ALGO=Ring,Tree NCCL_PROTO=^LL128");
    Scenario t = sc;
    apply_setting(t, "nccl.algo", "^nvls");
    CHECK(describe(t.nccl) == "NCCL_ALGO=^NVLS NCCL_PROTO=^LL128");
    apply_setting(t, "nccl.algo", "tree");  // one name: forced, the list gone
    apply_setting(t, "nccl.proto", "simple");
    CHECK(t.nccl.algorithm == A::Tree);
    CHECK(t.nccl.lists.is_default());
    CHECK(describe(t.nccl) == "NCCL_ALGO=Tree NCCL_PROTO=Simple");
    apply_setting(t, "nccl.algo", "auto");
    apply_setting(t, "nccl.proto", "auto");
    CHECK(describe(t.nccl).empty());
  }
}

TEST_CASE("NCCL_ALGO and NCCL_PROTO lists: each refused input names file:line:column, the key, expected and found") {
  // Line 9, values from column 9 ("  algo: "), unless quoted in a flow map on line 8.
  SUBCASE("an unknown name") {
    CHECK(load_error("nccl:\n  algo: ring,rings\n").find(":9:14: nccl.algo: expected algorithm names (Tree, Ring, "
                                                         "CollNetDirect, CollNetChain, NVLS, NVLSTree or PAT, any "
                                                         "case), found 'rings' (in 'ring,rings')") != std::string::npos);
  }
  SUBCASE("an empty name") {
    CHECK(load_error("nccl:\n  algo: ring,,tree\n").find(":9:14: nccl.algo: expected algorithm name between ','s, "
                                                         "found an empty name") != std::string::npos);
  }
  SUBCASE("'^' alone") {
    CHECK(load_error("nccl: {algo: \"^\"}\n").find(":8:16: nccl.algo: expected algorithm names after '^', found none") !=
          std::string::npos);
  }
  SUBCASE("names that exclude everything") {
    CHECK(load_error("nccl:\n  algo: ^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain\n")
              .find(":9:9: nccl.algo: expected an entry that leaves an algorithm, found '^ring,tree,nvls,nvlstree,pat,"
                    "collnetdirect,collnetchain', which leaves none") != std::string::npos);
    CHECK(load_error("nccl:\n  algo: allreduce:pat\n")
              .find(":9:19: nccl.algo: expected an entry that leaves an algorithm NCCL has for AllReduce, found 'pat', "
                    "which leaves none") != std::string::npos);
    CHECK(load_error("nccl:\n  proto: ^LL,LL128,simple\n")
              .find(":9:10: nccl.proto: expected an entry that leaves a protocol, found '^LL,LL128,simple'") !=
          std::string::npos);
  }
  SUBCASE("an unknown collective, an entry without one after the first, an empty entry") {
    CHECK(load_error("nccl:\n  algo: allgatherv:ring\n")
              .find(":9:9: nccl.algo: expected a collective (Broadcast, Reduce, AllGather, ReduceScatter or "
                    "AllReduce) before ':', found 'allgatherv'") != std::string::npos);
    CHECK(load_error("nccl:\n  algo: allreduce:ring;tree\n")
              .find(":9:24: nccl.algo: expected COLLECTIVE:LIST after the first entry") != std::string::npos);
    CHECK(load_error("nccl:\n  algo: ring;\n").find(":9:14: nccl.algo: expected an entry after ';', found none") !=
          std::string::npos);
  }
  SUBCASE("an unknown protocol") {
    CHECK(load_error("nccl:\n  proto: LL,LL256\n").find(":9:13: nccl.proto: expected protocol names (LL, LL128 or "
                                                        "Simple, any case), found 'LL256'") != std::string::npos);
  }
  SUBCASE("--set: the key, the value and the character") {
    Scenario s = load_scenario(small_h100_scenario(""));
    CHECK_THROWS_WITH_AS(apply_setting(s, "nccl.algo", "ring,,tree"),
                         doctest::Contains("nccl.algo: expected algorithm name between ','s, found an empty name (in "
                                           "'ring,,tree', at character 6)"),
                         InputError);
    CHECK_THROWS_WITH_AS(apply_setting(s, "nccl.proto", "^"), doctest::Contains("nccl.proto: expected protocol names "
                                                                                "after '^', found none"),
                         InputError);
  }
}

TEST_CASE("a list leaves NCCL's choice what it enables: ring,tree over 2 DGX A100 nodes takes the tuner's best") {
  const Topology two = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  const std::vector<int> ranks = first(16);
  const auto plan = [&](const std::string& list, double bytes) {
    CollectiveOptions o;
    parse_nccl_algo_list(list, o.allowed);
    return plan_collective(two, eff, ranks, CollectiveKind::AllReduce, bytes, 0, o);
  };
  // At 64 KiB NCCL's tuner ranks the tree first; at 1 GiB the ring.
  const CollectivePlan small = plan("ring,tree", 64 * kKiB);
  CHECK(small.algorithm == CollectiveAlgorithm::Tree);
  CHECK_FALSE(small.fallback);
  CHECK(plan("ring,tree", 1024 * kMiB).algorithm == CollectiveAlgorithm::Ring);
  // Without the tree the ring runs there, slower than the tree it would have taken.
  const CollectivePlan no_tree = plan("^tree", 64 * kKiB);
  CHECK(no_tree.algorithm == CollectiveAlgorithm::Ring);
  CHECK_FALSE(no_tree.fallback);
  CHECK(no_tree.closed_form_s() > small.closed_form_s());
  CHECK(no_tree.closed_form_s() == plan("ring", 64 * kKiB).closed_form_s());  // one name: the forced ring
  // Per collective: the AllReduce row alone changes.
  CHECK(plan("allreduce:ring", 64 * kKiB).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan("allgather:ring", 64 * kKiB).algorithm == CollectiveAlgorithm::Tree);
  // A list that leaves the AllReduce nothing that can run here (NVLS needs Hopper): the ring, marked.
  const CollectivePlan none = plan("nvls,nvlstree", 64 * kKiB);
  CHECK(none.fallback);
  CHECK(none.algorithm == CollectiveAlgorithm::Ring);
}

TEST_CASE("lists inside a DGX H100: NVLS where allowed, and NCCL_PROTO without Simple leaves NVLS out") {
  const Topology node = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}});
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const auto plan = [&](const std::string& algo, const std::string& proto) {
    CollectiveOptions o;
    if (!algo.empty()) parse_nccl_algo_list(algo, o.allowed);
    if (!proto.empty()) parse_nccl_proto_list(proto, o.allowed);
    return plan_collective(node, eff, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o);
  };
  CHECK(plan("", "").algorithm == CollectiveAlgorithm::Nvls);
  CHECK(plan("nvls,ring", "").algorithm == CollectiveAlgorithm::Nvls);
  const CollectivePlan ring = plan("^nvls", "");
  CHECK(ring.algorithm == CollectiveAlgorithm::Ring);
  CHECK_FALSE(ring.fallback);
  const CollectivePlan ll = plan("", "LL,LL128");
  CHECK(ll.algorithm == CollectiveAlgorithm::Ring);
  CHECK(ll.protocol != Protocol::Simple);
  // The tree alone inside one node: NCCL's chain (the automatic choice never takes it here).
  CHECK(plan("tree,nvlstree", "").algorithm == CollectiveAlgorithm::Tree);
  CHECK(plan("nvls", "^simple").fallback);
}

TEST_CASE("overlapsim run: a list that leaves a collective nothing is refused, one forced name that falls back is noted") {
  SUBCASE("refused at the nccl.algo value, naming the collective and its group") {
    const Scenario sc = load_scenario(small_h100_scenario("nccl: {algo: \"nvls,nvlstree\"}\n"));
    std::string what;
    try {
      simulate(sc);
    } catch (const InputError& e) {
      what = e.what();
    }
    CHECK(what.find(":8:14: nccl.algo: expected a list that leaves every collective of the iteration an algorithm "
                    "that can run here, found NCCL_ALGO=NVLS,NVLSTree, which leaves none for ") != std::string::npos);
    CAPTURE(what);
    // The first collective NVLS cannot run: the cross entropy's max of floats.
    CHECK(what.find("which leaves none for AllReduce over 8 ranks on 1 node(s) (tp group, op ar.ce.max, 8 KiB, max "
                    "of float) (") != std::string::npos);
    CHECK(what.find("No algorithm/protocol available for function") != std::string::npos);
  }
  SUBCASE("one name: the ring where it cannot run, said in the notes (table and JSON)") {
    Scenario sc = load_scenario(small_h100_scenario(""));
    const RunResult plain = simulate(sc);
    CHECK(plain.notes.find("NCCL_ALGO") == std::string::npos);
    apply_setting(sc, "nccl.algo", "nvls");
    const RunResult r = simulate(sc);
    CAPTURE(r.notes);
    CHECK(r.nccl == "NCCL_ALGO=NVLS");
    CHECK(r.notes.find("NCCL_ALGO=NVLS did not run for ") == 0);
    CHECK(r.notes.find("AllGather of dp groups (4 ranks on 4 node(s): ") != std::string::npos);
    CHECK(r.notes.find("ReduceScatter of dp groups (4 ranks on 4 node(s): ") != std::string::npos);
    CHECK(r.notes.find("ReduceScatter of dp groups (4 ranks on 4 node(s): dp.grad_sync; NVLS across nodes runs NVLS "
                       "inside each node, and there NVLS needs 3 or more GPUs, found 1): the ring ran instead (NCCL "
                       "2.24 and later") != std::string::npos);
    // NVLS runs the TP AllReduces of bfloat16 sums, not the cross entropy's float max.
    CHECK(r.notes.find("AllReduce of tp groups (8 ranks on 1 node(s): ar.ce.max; NVLS has no max of float") !=
          std::string::npos);
    CHECK(r.notes.find("a max or min of those but float and double") != std::string::npos);
    CHECK(to_json(r)["notes"].get<std::string>() == r.notes);
    // The forced name and a list of it plus a name that never runs here give the same iteration.
    Scenario ring = load_scenario(small_h100_scenario(""));
    apply_setting(ring, "nccl.algo", "ring");
    Scenario listed = ring;
    apply_setting(listed, "nccl.algo", "ring,collnetdirect");
    const RunResult a = simulate(ring), b = simulate(listed);
    CHECK(a.strategies.at(0).iteration_s == b.strategies.at(0).iteration_s);
    CHECK(a.strategies.at(0).iteration_s != plain.strategies.at(0).iteration_s);
    CHECK(a.notes.find("did not run") == std::string::npos);
  }
}

TEST_CASE("overlapsim collective --algo and --protocol take NCCL's lists") {
  const std::string a100 = " --fidelity analytic -t " + kSrc + "/topologies/dgx-a100-superpod.yaml --override node.count=2";
  const Run tree = run_cli("collective --op allreduce --sizes 64KiB:64KiB --algo ring,tree" + a100);
  REQUIRE(tree.status == 0);
  CHECK(tree.output.find(" tree/") != std::string::npos);
  const Run ring = run_cli("collective --op allreduce --sizes 64KiB:64KiB --algo ^tree" + a100);
  REQUIRE(ring.status == 0);
  CHECK(ring.output.find(" ring/") != std::string::npos);
  CHECK(ring.output.find("# note:") == std::string::npos);
  const Run none = run_cli("collective --op allgather --sizes 64KiB:1MiB --algo nvls,tree" + a100);
  CHECK(none.status == 2);
  CHECK(none.output.find("--algo: expected a list that leaves AllGather over 16 ranks an algorithm that can run here, "
                         "found 'nvls,tree' (NCCL_ALGO=NVLS,Tree), which leaves none at 5 of 5 size(s), from 65536 B") !=
        std::string::npos);
  const Run empty = run_cli("collective --op allreduce --algo ring,,tree" + a100);
  CHECK(empty.status == 2);
  CHECK(empty.output.find("--algo: expected algorithm name between ','s, found an empty name (in 'ring,,tree', at "
                          "character 6)") != std::string::npos);
  const Run proto = run_cli("collective --op allreduce --sizes 64KiB:64KiB --protocol ^LL,LL128" + a100);
  REQUIRE(proto.status == 0);
  CHECK(proto.output.find("/Simple/") != std::string::npos);
  const Run bad = run_cli("collective --op allreduce --protocol LL,LL256" + a100);
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--protocol: expected protocol names (LL, LL128 or Simple, any case), found 'LL256'") !=
        std::string::npos);
}

TEST_CASE("overlapsim collective --compare runs a log's NCCL_ALGO and NCCL_PROTO lists as the log ran them") {
  // The shipped 8x H100 AllGather log with its NCCL_ALGO line made a list and an NCCL_PROTO line added.
  std::string log = overlapsim::testing::slurp(kSrc + "/tests/data/nccl-tests/all_gather_perf_8xh100.log");
  const std::string line = "NCCL INFO NCCL_ALGO set by environment to Ring\n";
  const size_t at = log.find(line);
  REQUIRE(at != std::string::npos);
  log.replace(at, line.size(),
              "NCCL INFO NCCL_ALGO set by environment to ^NVLS,Tree\n"
              "dgx-h100-01:70110:70145 [0] NCCL INFO NCCL_PROTO set by environment to ^LL128\n");
  const std::string path = overlapsim::testing::temp_path("all_gather_perf.log");
  std::ofstream(path) << log;
  const Run r = run_cli("collective --fidelity analytic -t " + kSrc +
                        "/topologies/dgx-h100-superpod.yaml --override node.count=1 --compare " + path);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("# note: NCCL_ALGO=^NVLS,Tree as the log ran it") != std::string::npos);
  CHECK(r.output.find("# note: NCCL_PROTO=^LL128 as the log ran it") != std::string::npos);
  CHECK(r.output.find("chosen automatically") == std::string::npos);
  CHECK(r.output.find("/LL128/") == std::string::npos);
}
