// NCCL's channel count per size and the profile's tuning table (issue: collective communication
// as NCCL does it): nccl_launch against hand-run NCCL loops, plans on the reduced channels,
// closed form == flow with them, measured rules changing the plan in the replay and in the
// passes' predictions, strict loading of the table, and its import from NCCL's TUNING lines.
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "models/cost_model.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/pass.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
const std::string kStar8 = kSrc + "/tests/data/replay/star8.yaml";
const std::string kSuperpod = kSrc + "/topologies/dgx-a100-superpod.yaml";
constexpr double kMiB = 1024.0 * 1024.0;

double bench_time(const Topology& t, int n, double size, const ReplayOptions& ro) {
  BenchOptions b;
  b.replay = ro;
  b.unfold = true;
  return run_collective_bench(t, BenchOp::AllReduce, n, {size}, b).at(0).time_s;
}

std::string write_temp(const std::string& text, const char* suffix) {
  const std::string path = temp_path(suffix);
  std::ofstream(path) << text;
  return path;
}

/// The shipped A100 profile (version 1) with `tuning` added, written to a temporary file.
std::string profile_with_tuning(const nlohmann::json& tuning) {
  std::ifstream in(default_profile_path("a100-sxm4-80gb"));
  nlohmann::json j = nlohmann::json::parse(in);
  j["tuning"] = tuning;
  return write_temp(j.dump(2), ".json");
}

}  // namespace

TEST_CASE("nccl_launch: NCCL's channel and thread loop, run by hand") {
  // Ring Simple, 8 ranks, 8 channels: 512 threads, threshold 64, so nc · 32,768 bytes.
  auto ring = [](Protocol p, double bytes, int ranks = 8, double bw = 1e300) {
    return nccl_launch(CollectiveAlgorithm::Ring, p, bytes, ranks, 8, bw);
  };
  CHECK(ring(Protocol::Simple, kMiB).channels == 8);       // 1 MiB >= 8 · 32,768
  CHECK(ring(Protocol::Simple, kMiB).threads == 512);
  CHECK(ring(Protocol::Simple, 100000).channels == 3);     // 4 · 32,768 > 100,000 >= 3 · 32,768
  CHECK(ring(Protocol::Simple, 100000).threads == 512);
  CHECK(ring(Protocol::Simple, 20000).channels == 1);      // then threads: 32,768 > 20,000 >= 16,384
  CHECK(ring(Protocol::Simple, 20000).threads == 256);
  // PCIe-class ring (intra bandwidth · channels <= 12 GB/s): 256 threads, nc · 16,384 bytes.
  CHECK(ring(Protocol::Simple, 100000, 8, 10e9).channels == 6);
  // Ring LL: threshold 8 · nRanks; 8 ranks → nc · 32,768 bytes, 128 ranks → nc · 524,288 bytes.
  CHECK(ring(Protocol::LL, 200000).channels == 6);
  CHECK(ring(Protocol::LL, kMiB, 128).channels == 2);
  // Tree LL: threshold 8, not scaled by the ranks: 8 · 512 · 8 = 32 KiB <= 1 MiB.
  CHECK(nccl_launch(CollectiveAlgorithm::Tree, Protocol::LL, kMiB, 128, 8).channels == 8);
  // LL128: 640 threads, threshold 8: nc · 5,120 bytes; 3,000 B → 1 channel, 640 → 320 threads.
  CHECK(ring(Protocol::LL128, 30000).channels == 5);
  CHECK(ring(Protocol::LL128, 3000).channels == 1);
  CHECK(ring(Protocol::LL128, 3000).threads == 320);
  // An odd thread count is not halved (NCCL halves only multiples of 128).
  CHECK(ring(Protocol::Simple, 0).channels == 1);
  CHECK(ring(Protocol::Simple, 0).threads == 64);
}

TEST_CASE("plans run on NCCL's channels for the size unless the op sets them") {
  const Topology topo = load_topology(kStar8);
  CollectiveOptions o;
  o.protocol_auto = false;
  o.protocol = Protocol::Simple;
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, 100000, 0, o).channels == 3);
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, 100000, 8, o).channels == 8);
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, 64 * kMiB, 0, o).channels == 8);
  // The textbook ring keeps the options' count.
  o.textbook = true;
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, 100000, 0, o).channels == 8);
}

TEST_CASE("closed form == flow on NCCL's reduced channels") {
  // One switch, no contention: 100,000 B of ring Simple runs on 3 channels; flow and analytic
  // replays both end at the 3-channel plan's closed form.
  const Topology topo = load_topology(kStar8);
  ReplayOptions flow, analytic;
  flow.collectives.protocol_auto = analytic.collectives.protocol_auto = false;
  analytic.fidelity = Fidelity::Analytic;
  const double size = 100000;
  const CollectivePlan p = plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, size, 0, flow.collectives);
  REQUIRE(p.channels == 3);
  CHECK(bench_time(topo, 8, size, flow) == testing::approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(bench_time(topo, 8, size, analytic) == testing::approx(p.closed_form_s()).epsilon(1e-9));
}

TEST_CASE("across nodes, NCCL's reduced channels use fewer NICs, in the plan and in the replay") {
  // Two DGX A100 nodes, ring LL over 16 ranks: threshold 8 · 16 B · 512 threads, so 120,000 B
  // runs on 1 channel of 8: its ring leaves each node through one NIC instead of eight.
  const Topology topo = load_topology(kSuperpod, {{"node.count", "2"}});
  ReplayOptions analytic;
  analytic.fidelity = Fidelity::Analytic;
  analytic.collectives.protocol_auto = false;
  analytic.collectives.protocol = Protocol::LL;
  analytic.collectives.algorithm = CollectiveAlgorithm::Ring;
  const double size = 120000;
  const CollectivePlan p = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, size, 0, analytic.collectives);
  const CollectivePlan all8 = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, size, 8, analytic.collectives);
  REQUIRE(p.channels == 1);
  // NICs the plan's hops pass through.
  auto nics = [&](const CollectivePlan& q) {
    std::set<VertexId> used;
    for (const ChannelPlan& ch : q.rings)
      for (const Hop2& h : ch.hops)
        for (int l : h.links) {
          const auto [a, b] = topo.endpoints(l / 2);
          for (VertexId v : {a, b})
            if (topo.graph[v].kind == DeviceKind::Nic) used.insert(v);
        }
    return used.size();
  };
  CHECK(nics(p) <= 4);     // the ring enters and leaves each node once
  CHECK(nics(all8) == 16);  // every NIC of both nodes
  CHECK(bench_time(topo, 16, size, analytic) == testing::approx(p.closed_form_s()).epsilon(1e-9));
  // With Simple (no busBw cap, unlike LL's llMaxBw, 22.5 GB/s over two nodes of AMD CPUs, that
  // one NIC can carry), one NIC per node is also slower than eight at a bandwidth-bound size:
  // 60,000 B still runs on 1 channel (threshold 512 threads · 64 B).
  analytic.collectives.protocol = Protocol::Simple;
  const CollectivePlan s1 = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 60000, 0, analytic.collectives);
  const CollectivePlan s8 = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 60000, 8, analytic.collectives);
  REQUIRE(s1.channels == 1);
  CHECK(s1.closed_form_s() > s8.closed_form_s());
}

TEST_CASE("tuning rules: find_tuning_rule takes the covering rule of least max_bytes") {
  std::vector<TuningRule> t(3);
  t[0].max_bytes = 1e6;
  t[0].protocol = Protocol::LL;
  t[1].max_bytes = 1e9;
  t[1].protocol = Protocol::Simple;
  t[2].max_bytes = 1e7;
  t[2].protocol = Protocol::LL128;
  t[2].min_nodes = t[2].max_nodes = 2;
  CHECK(find_tuning_rule(t, CollectiveKind::AllReduce, 8, 1, 5e5)->protocol == Protocol::LL);
  CHECK(find_tuning_rule(t, CollectiveKind::AllReduce, 8, 1, 5e6)->protocol == Protocol::Simple);
  CHECK(find_tuning_rule(t, CollectiveKind::AllReduce, 16, 2, 5e6)->protocol == Protocol::LL128);
  CHECK(find_tuning_rule(t, CollectiveKind::AllReduce, 8, 1, 2e9) == nullptr);
  CHECK(find_tuning_rule(t, CollectiveKind::AllGather, 8, 1, 5e5) == nullptr);
}

TEST_CASE("a profile's tuning rule changes the plan, in the replay and in predict_collective_s alike") {
  const Topology topo = load_topology(kSuperpod, {{"node.count", "2"}});
  const double size = 1024 * kMiB;
  const std::string path = profile_with_tuning(
      {{"source", "test"},
       {"rules",
        {{{"collective", "all_reduce"}, {"nodes", {2, 4}}, {"max_bytes", 2048 * kMiB}, {"algorithm", "tree"},
          {"protocol", "LL128"}}}}});
  const Profile prof = load_profile(path);
  REQUIRE(prof.tuning.size() == 1);
  const LinkEfficiency eff = LinkEfficiency::of_profile(prof);
  // Both read their profile's measured costs as simulate() does (the tree LL128 plan's NVLink
  // hops are held to the profile's LL128 ceiling, which predict_collective_s reads too).
  CollectiveOptions model, tuned;
  model.read_profile(load_profile(default_profile_path("a100-sxm4-80gb")));
  tuned.read_profile(prof);
  const CollectivePlan m = plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, size, 0, model);
  const CollectivePlan t = plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, size, 0, tuned);
  // The model (NCCL's tuner's ranking) runs a 1 GiB AllReduce over 2 nodes as a Simple ring; the
  // measured rule says tree LL128.
  REQUIRE(m.algorithm == CollectiveAlgorithm::Ring);
  REQUIRE(m.protocol == Protocol::Simple);
  CHECK(t.algorithm == CollectiveAlgorithm::Tree);
  CHECK(t.protocol == Protocol::LL128);
  CHECK(t.closed_form_s() != testing::approx(m.closed_form_s()).epsilon(1e-6));
  // The replay (as simulate() builds its options from the profile) times the tuned plan.
  ReplayOptions ro;
  ro.fidelity = Fidelity::Analytic;
  ro.link_efficiency = eff;
  ro.collectives.read_profile(prof);
  CHECK(bench_time(topo, 16, size, ro) == testing::approx(t.closed_form_s()).epsilon(1e-9));
  ro.collectives.tuning.clear();
  CHECK(bench_time(topo, 16, size, ro) == testing::approx(m.closed_form_s()).epsilon(1e-9));
  // The passes' prediction reads the rule from the cost model's profile.
  const CostModel cost(device_spec("a100-sxm4-80gb"), prof);
  const PassContext ctx{topo, cost};
  CHECK(predict_collective_s(first(16), CollectiveKind::AllReduce, size, ctx) ==
        testing::approx(t.closed_form_s()).epsilon(1e-12));
  const CostModel plain(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
  const PassContext ctx0{topo, plain};
  CHECK(predict_collective_s(first(16), CollectiveKind::AllReduce, size, ctx0) ==
        testing::approx(m.closed_form_s()).epsilon(1e-12));
  // An op that forces the ring keeps it, and the tree rule's protocol does not apply to it.
  CHECK(predict_collective_s(first(16), CollectiveKind::AllReduce, size, ctx, 0, CollectiveAlgorithm::Ring) ==
        testing::approx(m.closed_form_s()).epsilon(1e-12));
  // Beyond the rule's max_bytes the model chooses again.
  CHECK(plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, 4096 * kMiB, 0, tuned).algorithm ==
        CollectiveAlgorithm::Ring);
}

TEST_CASE("a tuning rule forces LL inside one node where the model takes Simple") {
  const Topology topo = load_topology(kStar8);
  CollectiveOptions o;
  TuningRule r;
  r.kind = CollectiveKind::AllGather;
  r.max_bytes = 1e12;
  r.protocol = Protocol::LL;
  o.tuning = {r};
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllGather, 256 * kMiB, 0, {}).protocol == Protocol::Simple);
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllGather, 256 * kMiB, 0, o).protocol == Protocol::LL);
  // Another collective is not covered.
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::ReduceScatter, 256 * kMiB, 0, o).protocol ==
        Protocol::Simple);
  // A forced protocol wins over the rule.
  o.protocol_auto = false;
  o.protocol = Protocol::LL128;
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllGather, 256 * kMiB, 0, o).protocol == Protocol::LL128);
}

TEST_CASE("malformed tuning rules are errors naming the file and the key") {
  using nlohmann::json;
  const json good = {{"collective", "all_reduce"}, {"max_bytes", 1048576}, {"algorithm", "ring"}, {"protocol", "LL"}};
  struct Case {
    std::string key;
    json value;  // null: remove the key
    std::string where;
  };
  const std::vector<Case> cases = {
      {"collective", "alltoall", "tuning.rules[0].collective"},
      {"protocol", "LL256", "tuning.rules[0].protocol"},
      {"protocol", nullptr, "tuning.rules[0].protocol"},
      {"algorithm", "collnet", "tuning.rules[0].algorithm"},
      {"algorithm", "collnet_direct", "tuning.rules[0].protocol"},  // CollNet runs Simple only
      {"max_bytes", -1, "tuning.rules[0].max_bytes"},
      {"ranks", json::array({8, 4}), "tuning.rules[0].ranks"},
      {"nodes", 0, "tuning.rules[0].nodes"},
      {"size", 5, "size"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.where);
    json rule = good;
    if (c.value.is_null()) rule.erase(c.key);
    else rule[c.key] = c.value;
    const std::string path = profile_with_tuning({{"source", "test"}, {"rules", {rule}}});
    try {
      load_profile(path);
      FAIL("no error");
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.find(path) != std::string::npos);
      CHECK(what.find(c.where) != std::string::npos);
    }
  }
  // Tree and NVLS_TREE are for AllReduce only (NVLS also for AllGather and ReduceScatter).
  json rule = good;
  rule["collective"] = "all_gather";
  for (const char* a : {"tree", "nvlstree"}) {
    rule["algorithm"] = a;
    CHECK_THROWS_WITH_AS(load_profile(profile_with_tuning({{"source", "t"}, {"rules", {rule}}})),
                         doctest::Contains("tuning.rules[0].algorithm"), InputError);
  }
  // NVLS runs with Simple only.
  rule = good;
  rule["algorithm"] = "nvls";
  rule["protocol"] = "LL";
  CHECK_THROWS_WITH_AS(load_profile(profile_with_tuning({{"source", "t"}, {"rules", {rule}}})),
                       doctest::Contains("tuning.rules[0].protocol"), InputError);
  // PAT is for AllGather and ReduceScatter, with Simple only.
  rule = good;
  rule["algorithm"] = "pat";
  CHECK_THROWS_WITH_AS(load_profile(profile_with_tuning({{"source", "t"}, {"rules", {rule}}})),
                       doctest::Contains("pat is for all_gather and reduce_scatter"), InputError);
  rule["collective"] = "reduce_scatter";
  CHECK_THROWS_WITH_AS(load_profile(profile_with_tuning({{"source", "t"}, {"rules", {rule}}})),
                       doctest::Contains("tuning.rules[0].protocol"), InputError);
  rule["protocol"] = "Simple";
  const Profile pat = load_profile(profile_with_tuning({{"source", "t"}, {"rules", {rule}}}));
  REQUIRE(pat.tuning.size() == 1);
  CHECK(pat.tuning[0].algorithm == CollectiveAlgorithm::Pat);
  CHECK(pat.tuning[0].kind == CollectiveKind::ReduceScatter);
  // A good rule loads with its defaults (any ranks, any nodes) and survives a write and a load.
  const Profile p = load_profile(profile_with_tuning({{"source", "t"}, {"rules", {good}}}));
  REQUIRE(p.tuning.size() == 1);
  CHECK(p.tuning[0].protocol == Protocol::LL);
  CHECK(p.tuning[0].min_ranks == 1);
  CHECK(find_tuning_rule(p.tuning, CollectiveKind::AllReduce, 4096, 512, 1048576) != nullptr);
}

TEST_CASE("import-nccl-tests fills the tuning table from NCCL's TUNING lines") {
  std::string log =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n";
  for (int r = 0; r < 8; ++r)
    log += "#  Rank  " + std::to_string(r) + " Group  0 Pid  1 on node-a device  " + std::to_string(r) +
           " [0x18] NVIDIA A100-SXM4-80GB\n";
  log +=
      "node-a:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
      "node-a:1:1 [0] NCCL INFO Broadcast: 4096 Bytes -> Algo 1 proto 0 time 1.000000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 0 time 20.500000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 0 time 20.500000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 20.500000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo 1 proto 1 time 30.000000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo 1 proto 1 time 40.000000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo 4 proto 2 time 50.000000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 16777216 Bytes -> Algo 5 proto 2 time 90.000000\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1   200.00    5.24    9.18      0   200.00    5.24    9.18      0\n"
      "     2097152        524288     float     sum      -1   300.00    6.99   12.23      0   300.00    6.99   12.23      0\n"
      "     4194304       1048576     float     sum      -1   400.00   10.49   18.35      0   400.00   10.49   18.35      0\n"
      "     8388608       2097152     float     sum      -1   600.00   13.98   24.47      0   600.00   13.98   24.47      0\n";
  const std::string path = write_temp(log, "_all_reduce_perf.log");
  const ImportResult r = import_nccl_tests({path}, {});
  REQUIRE(r.logs.at(0).tuning.size() == 7);  // the Broadcast line is not this log's collective
  REQUIRE(r.profile.tuning.size() == 3);
  const TuningRule& a = r.profile.tuning[0];
  CHECK(a.kind == CollectiveKind::AllReduce);
  CHECK(a.max_bytes == 1048576);
  CHECK(a.algorithm == CollectiveAlgorithm::Ring);
  CHECK(a.protocol == Protocol::LL);  // two LL calls against one Simple
  CHECK((a.min_ranks == 8 && a.max_ranks == 8 && a.min_nodes == 1 && a.max_nodes == 1));
  const TuningRule& b = r.profile.tuning[1];
  CHECK(b.max_bytes == 4194304);  // 2 and 4 MiB: one run of ring LL128
  CHECK(b.protocol == Protocol::LL128);
  // 8 MiB ran NVLS in one node: a rule; 16 MiB NVLS_TREE in a one-node log (modelled only across
  // nodes, where NCCL runs it): no rule, a warning.
  CHECK(r.profile.tuning[2].algorithm == CollectiveAlgorithm::Nvls);
  CHECK(r.profile.tuning[2].max_bytes == 8388608);
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("nvls_tree") != std::string::npos;
  CHECK(warned);
  CHECK(r.profile.tuning_source.find("TUNING") != std::string::npos);
  // Written and read back, the table is the same.
  const std::string out = temp_path(".json");
  write_profile(r.profile, out);
  const Profile back = load_profile(out);
  REQUIRE(back.tuning.size() == 3);
  CHECK(back.tuning[2].algorithm == CollectiveAlgorithm::Nvls);
  CHECK(back.tuning[1].max_bytes == 4194304);
  CHECK(back.tuning[1].protocol == Protocol::LL128);
  CHECK(back.tuning[0].max_ranks == 8);

  // NCCL >= 2.27 prints names and, for AllGather, the per-rank size.
  std::istringstream ag(
      "# Collective test starting: all_gather_perf\n"
      "#  Rank  0 Group  0 Pid  1 on node-a device  0 [0x18] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid  1 on node-a device  1 [0x2a] NVIDIA A100-SXM4-80GB\n"
      "node-a:1:1 [0] NCCL INFO AllGather: 524288 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..7}\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "     1048576        131072     float    none      -1   200.00    5.24    2.62      0   200.00    5.24    2.62      0\n");
  const NcclTestsLog l = parse_nccl_tests_log("ag.log", ag);
  REQUIRE(l.tuning.size() == 1);
  CHECK(l.tuning[0].bytes == 1048576);
  CHECK(l.tuning[0].algorithm == "ring");
  CHECK(l.tuning[0].protocol == "Simple");
}

TEST_CASE("NCCL_ALGO and NCCL_PROTO names parse in any case, and nothing else does") {
  Protocol p = Protocol::LL;
  CHECK(parse_protocol("Simple", &p));
  CHECK(p == Protocol::Simple);
  CHECK(parse_protocol("ll128", &p));
  CHECK(p == Protocol::LL128);
  CHECK(parse_protocol("LL", &p));
  CHECK(p == Protocol::LL);
  CHECK_FALSE(parse_protocol("ll129", &p));
  CHECK_FALSE(parse_protocol("", &p));
  CHECK(p == Protocol::LL);  // left as it was
  CollectiveAlgorithm a = CollectiveAlgorithm::Ring;
  CHECK(parse_algorithm("NVLS", &a));
  CHECK(a == CollectiveAlgorithm::Nvls);
  CHECK(parse_algorithm("Tree", &a));
  CHECK(a == CollectiveAlgorithm::Tree);
  CHECK(parse_algorithm("auto", &a));
  CHECK(a == CollectiveAlgorithm::Auto);
  CHECK_FALSE(parse_algorithm("collnet", &a));
  CHECK(a == CollectiveAlgorithm::Auto);
  CHECK(parse_algorithm("PAT", &a));
  CHECK(a == CollectiveAlgorithm::Pat);
  CHECK(ascii_lower("AllReduce_PERF") == "allreduce_perf");
}

namespace {

/// Ring closed form on a uniform ring, every hop alike (collective_plan.hpp):
/// baseLat + steps · (step latency + wire / share), seconds.
double uniform_ring_s(double base_s, int steps, double step_latency_s, double wire_bytes, double share_Bps) {
  return base_s + steps * (step_latency_s + wire_bytes / share_Bps);
}

}  // namespace

TEST_CASE("NCCL's protocol bandwidth limits: LL's busBw cap and LL128's per-channel cap, in plan, flow and analytic") {
  // NCCL src/graph/tuning.cc: ring LL busBw <= llMaxBw (one node: Ampere 87.7 GB/s, Hopper
  // 141 GB/s); ring LL128 busBw <= channels · perChMaxRingLL128Bw (Ampere 20, Hopper 36.7 GB/s).
  // Per channel that caps a hop's wire rate at llMaxBw / C / (8/16) and perCh / (120/128) times
  // NCCL's channels over the plan's (its busBw cap counts NCCL's channels: a DGX A100's 24, so
  // 60 GB/s a plan channel, above the NVSwitch port's 300 / 8: the port binds; a DGX H100's 32,
  // 157 GB/s against 450 / 8: the port again).
  const double size = 256 * kMiB;
  struct Case {
    const char* topology;
    TopologyOverrides overrides;
    Protocol protocol;
    double cap_wire_Bps;    // per channel, 8 channels
    double step_latency_s;  // NCCL's hwLat on NVLink (the route's latency where larger)
    double base_s;
    double wire_fraction;
  };
  const std::vector<Case> cases{
      {"/topologies/dgx-a100.yaml", {}, Protocol::LL, 87.7e9 / 8 / 0.5, 0.7e-6, 6.6e-6, 0.5},
      {"/topologies/dgx-a100.yaml", {}, Protocol::LL128, std::min(24.0 / 8 * 20.0e9 / (120.0 / 128.0), 300e9 / 8), 1.9e-6,
       14.0e-6, 120.0 / 128.0},
      {"/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}}, Protocol::LL, 141.0e9 / 8 / 0.5, 0.7e-6, 6.6e-6, 0.5},
      {"/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}}, Protocol::LL128,
       std::min(32.0 / 8 * 36.7e9 / (120.0 / 128.0), 450e9 / 8), 1.9e-6,
       14.0e-6, 120.0 / 128.0},
  };
  for (const Case& c : cases) {
    const Topology topo = load_topology(kSrc + c.topology, c.overrides);
    ReplayOptions flow;
    flow.collectives.protocol_auto = false;
    flow.collectives.protocol = c.protocol;
    flow.collectives.algorithm = CollectiveAlgorithm::Ring;
    ReplayOptions analytic = flow;
    analytic.fidelity = Fidelity::Analytic;
    const CollectivePlan p = plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, size, 0, flow.collectives);
    REQUIRE(p.channels == 8);
    REQUIRE(p.protocol == c.protocol);
    // Every hop at the cap, below its share of the GPU's NVSwitch port (300 or 450 GB/s over 8).
    const double wire = size / 8 / 8 / c.wire_fraction;
    double route_s = 0;  // GPU -> NVSwitch -> GPU
    for (const Hop& h : topo.route(0, 1)) route_s += topo.link(h.link_id).latency_s;
    const double expected = uniform_ring_s(c.base_s, 14, std::max(c.step_latency_s, route_s), wire, c.cap_wire_Bps);
    INFO(c.topology << " " << to_string(c.protocol) << ": expected " << expected * 1e6 << " µs");
    CHECK(p.closed_form_s() == testing::approx(expected).epsilon(1e-9));
    CHECK(bench_time(topo, 8, size, flow) == testing::approx(expected).epsilon(1e-6));
    CHECK(bench_time(topo, 8, size, analytic) == testing::approx(expected).epsilon(1e-9));
  }
  // Simple has no cap: its hops keep their share of the port.
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CollectiveOptions simple;
  simple.protocol_auto = false;
  simple.algorithm = CollectiveAlgorithm::Ring;
  const CollectivePlan s = plan_collective(a100, {}, first(8), CollectiveKind::AllReduce, size, 0, simple);
  CHECK(s.rings[0].hops[0].share_Bps == testing::approx(300e9).epsilon(1e-12));  // 8 channels merged: 8 · 300/8
}

TEST_CASE("NCCL leaves LL128 out of its automatic choice where GPUs talk over PCIe, forced, it runs") {
  // tuning.cc: LL128 is enabled by default only where the ring's intra-node path is NVLink
  // (typeIntra <= PATH_NVB). The A6000 box joins pairs by NVLink and the rest over PCIe.
  const Topology box = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  CollectiveOptions automatic;
  automatic.algorithm = CollectiveAlgorithm::Ring;
  for (double size = 4096; size <= 1024 * kMiB; size *= 4) {
    INFO("size " << size);
    CHECK(plan_collective(box, {}, first(8), CollectiveKind::AllReduce, size, 0, automatic).protocol != Protocol::LL128);
  }
  // The tree too (regression: forced to the tree it took LL128 at every size).
  CollectiveOptions tree = automatic;
  tree.algorithm = CollectiveAlgorithm::Tree;
  for (double size = 4096; size <= 1024 * kMiB; size *= 4) {
    INFO("tree, size " << size);
    const CollectivePlan q = plan_collective(box, {}, first(8), CollectiveKind::AllReduce, size, 0, tree);
    CHECK(q.algorithm == CollectiveAlgorithm::Tree);
    CHECK(q.protocol != Protocol::LL128);
  }
  CollectiveOptions forced = automatic;
  forced.protocol_auto = false;
  forced.protocol = Protocol::LL128;
  CHECK(plan_collective(box, {}, first(8), CollectiveKind::AllReduce, 4 * kMiB, 0, forced).protocol == Protocol::LL128);
  // On NVSwitch it stays a candidate: one DGX A100 with the shipped profile (its NVLink
  // efficiency, LL128 step cost and busbw ceiling) runs LL to 2 MiB, LL128 at 4-16 MiB and Simple
  // from 32 MiB, as NCCL's tuner ranks them and as NCCL 2.18.5's tuner has it on the Azure log the
  // LL128 constants are fitted to (tests/nccl_validation_test.cpp).
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const Profile profile = load_profile(default_profile_path("a100-sxm4-80gb"));
  const LinkEfficiency eff = LinkEfficiency::of_profile(profile);
  CollectiveOptions shipped = automatic;
  shipped.read_profile(profile);
  const auto protocol = [&](double size) {
    return plan_collective(a100, eff, first(8), CollectiveKind::AllReduce, size, 0, shipped).protocol;
  };
  CHECK(protocol(2 * kMiB) == Protocol::LL);
  CHECK(protocol(4 * kMiB) == Protocol::LL128);
  CHECK(protocol(8 * kMiB) == Protocol::LL128);
  CHECK(protocol(16 * kMiB) == Protocol::LL128);
  CHECK(protocol(32 * kMiB) == Protocol::Simple);
}

TEST_CASE("LL across nodes is capped by NCCL's llMaxBw for the nodes' CPU vendor") {
  // tuning.cc llMaxBws across nodes: AMD 22.5 GB/s over 2 nodes (DGX A100: dual AMD Rome),
  // Intel 39.0 (DGX H100: dual Xeon); over more nodes 19.0 and 20.4. At 256 MiB the ring's
  // latency is 0.1% of its time: busbw within 1% below the cap.
  struct Case {
    std::string topology;
    std::string nodes;
    double cap_Bps;
  };
  for (const Case& c : {Case{"/topologies/dgx-a100-superpod.yaml", "2", 22.5e9}, Case{"/topologies/dgx-h100-superpod.yaml", "2", 39.0e9},
                        Case{"/topologies/dgx-a100-superpod.yaml", "4", 19.0e9}, Case{"/topologies/dgx-h100-superpod.yaml", "4", 20.4e9}}) {
    const Topology topo = load_topology(kSrc + c.topology, {{"node.count", c.nodes}});
    BenchOptions b;
    b.replay.collectives.protocol_auto = false;
    b.replay.collectives.protocol = Protocol::LL;
    b.algorithm = CollectiveAlgorithm::Ring;
    const BenchRow r = run_collective_bench(topo, BenchOp::AllReduce, topo.num_gpus(), {256 * kMiB}, b).at(0);
    INFO(c.topology << " over " << c.nodes << " nodes: busbw " << r.busbw_Bps / 1e9 << " GB/s, " << r.plan);
    CHECK(r.busbw_Bps <= c.cap_Bps);
    CHECK(r.busbw_Bps > 0.99 * c.cap_Bps);
  }
}

TEST_CASE("NCCL's tuner model: ring and tree AllReduce times by hand, and the algorithm it ranks first") {
  // Two DGX A100 nodes as NCCL's graph search sees them: 8 channels (one per HDR NIC) of 24 GB/s,
  // 16 communicator channels, Intel CPUs, NVLink inside the nodes (src/graph/tuning.cc, 2.30.7).
  NcclTunerInputs in;
  in.ranks = 16;
  in.nodes = 2;
  in.cc_index = 1;
  in.graph_channels = 8;
  in.graph_busbw_Bps = 192e9;
  in.comm_channels = 16;
  const double GiB = 1024.0 * kMiB;
  // Ring Simple: lat = 8.4 + (30 - 2) max(3.4, 3 x 1.0) + 2 x 14 = 131.6 us, x 1.4 (plateau:
  // 1 GiB / (16 x 16) >= 64 B); busBw 192 GB/s x 16/30.
  CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::Ring, Protocol::Simple, GiB, in) ==
        testing::approx(131.6e-6 * 1.4 + GiB / (192e9 * 16 / 30)).epsilon(1e-12));
  // Tree Simple: busBw min(0.92 x 192, 8 x 23.6) = 176.64 GB/s x 1/2 (no correction at 2^24
  // chunks of 64 B); lat = 8.4 + 2 (7 x 4.0 + log2(2) x 14) = 92.4 us.
  CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::Tree, Protocol::Simple, GiB, in) ==
        testing::approx(92.4e-6 + GiB / (176.64e9 / 2)).epsilon(1e-12));
  // 64 KiB: tree LL at min(176.64 / 3.8, llMaxBw 39) = 39 GB/s, corrected x 0.6 (log2(1024) = 10),
  // x 1/2, lat = 6.8 + 2 (7 x 0.6 + 5.0) = 25.2 us; ring LL: min(39, 192 / 2) x 16/30, lat =
  // 6.6 + 28 x max(0.6, 1.0) + 2 x 2.7 = 40 us.
  const double K64 = 65536;
  CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::Tree, Protocol::LL, K64, in) ==
        testing::approx(25.2e-6 + K64 / (39e9 * 0.6 / 2)).epsilon(1e-12));
  CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::Ring, Protocol::LL, K64, in) ==
        testing::approx(40e-6 + K64 / (39e9 * 16 / 30)).epsilon(1e-12));
  CHECK(nccl_model_allreduce_algorithm(K64, in) == CollectiveAlgorithm::Tree);
  CHECK(nccl_model_allreduce_algorithm(GiB, in) == CollectiveAlgorithm::Ring);
  // LL128 not enabled: never ranked.
  in.ll128 = false;
  CHECK(std::isinf(nccl_model_allreduce_s(CollectiveAlgorithm::Tree, Protocol::LL128, K64, in)));
}

TEST_CASE("across nodes the automatic AllReduce runs the algorithm NCCL's tuner ranks first, not the model's fastest") {
  // Regression: over 2 DGX A100 nodes the model's tree (half the ring's NIC traffic) beat its
  // ring at 1-4 GiB and ran, 19-22% above the published 2-node curve, which sits on the ring's
  // NIC bound as NCCL's tuner picks the ring there (tests/nccl_validation_test.cpp).
  const Topology topo = load_topology(kSuperpod, {{"node.count", "2"}});
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  CollectiveOptions o;
  const CollectivePlan big = plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, 1024 * kMiB, 0, o);
  CHECK(big.algorithm == CollectiveAlgorithm::Ring);
  o.algorithm = CollectiveAlgorithm::Tree;
  const CollectivePlan tree = plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, 1024 * kMiB, 0, o);
  CHECK(tree.closed_form_s() < big.closed_form_s());  // the model's own tree is faster, yet not chosen
  o.algorithm = CollectiveAlgorithm::Auto;
  CHECK(plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, 64 * 1024, 0, o).algorithm ==
        CollectiveAlgorithm::Tree);
}

TEST_CASE("NCCL's tuner model: NVLS_TREE by hand, ranked only where it can run") {
  // Two DGX H100 nodes: 8 heads, each GPU's NVSwitch port 450 GB/s, 8 NDR NICs of 50 GB/s.
  NcclTunerInputs in;
  in.ranks = 16;
  in.nodes = 2;
  in.cc_index = 2;
  in.graph_channels = 8;
  in.graph_busbw_Bps = 8 * 45e9;
  in.comm_channels = 16;
  const double S = 1024.0 * kMiB;
  CHECK(std::isinf(nccl_model_allreduce_s(CollectiveAlgorithm::NvlsTree, Protocol::Simple, S, in)));
  CHECK(nccl_model_allreduce_algorithm(S, in) != CollectiveAlgorithm::NvlsTree);
  in.nvls_tree = true;
  in.nvls_heads = 8;
  in.nvls_intra_Bps = 450e9;
  in.nvls_inter_Bps = 8 * 50e9;
  // Per head: min(450/8 x 0.85 x 7/8 x 2 = 83.7, 50 x 2 (2 nodes) = 100, perChMaxNVLSTreeBw 57.7)
  // = 57.7 GB/s; busBw 8 x 57.7; ratio 16/30; latency 25 + 2 x 20.9 us.
  CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::NvlsTree, Protocol::Simple, S, in) ==
        testing::approx(66.8e-6 + S / (8 * 57.7e9 * 16 / 30)).epsilon(1e-12));
  CHECK(std::isinf(nccl_model_allreduce_s(CollectiveAlgorithm::NvlsTree, Protocol::LL, S, in)));
  CHECK(nccl_model_allreduce_algorithm(S, in) == CollectiveAlgorithm::NvlsTree);
  CHECK(nccl_model_allreduce_algorithm(8, in) == CollectiveAlgorithm::Tree);
}

TEST_CASE("import-nccl-tests: an NVLS or NVLS_TREE line with a protocol other than Simple makes no rule") {
  // Regression: it wrote an nvls/LL rule that the profile loader then refused.
  std::string log =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n";
  for (int r = 0; r < 8; ++r)
    log += "#  Rank  " + std::to_string(r) + " Group  0 Pid  1 on node-a device  " + std::to_string(r) +
           " [0x18] NVIDIA H100 80GB HBM3\n";
  log +=
      "node-a:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 4 proto 0 time 20.500000\n"
      "node-a:1:1 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo 4 proto 1 time 30.500000\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1   200.00    5.24    9.18      0   200.00    5.24    9.18      0\n"
      "     2097152        524288     float     sum      -1   300.00    6.99   12.23      0   300.00    6.99   12.23      0\n";
  const ImportResult r = import_nccl_tests({write_temp(log, "_all_reduce_perf.log")}, {});
  CHECK(r.profile.tuning.empty());
  bool warned = false;
  bool warned128 = false;
  for (const auto& w : r.warnings) {
    warned |= w.find("nvls and protocol LL,") != std::string::npos;
    warned128 |= w.find("nvls and protocol LL128,") != std::string::npos;
  }
  CHECK(warned);
  CHECK(warned128);
}

TEST_CASE("import-nccl-tests: PAT over one rank per node makes a pat rule, PAT inside a node none") {
  const auto log = [](int nodes) {
    std::string text =
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#\n# Using devices\n";
    for (int r = 0; r < 4; ++r)
      text += "#  Rank  " + std::to_string(r) + " Group  0 Pid  1 on node-" + std::to_string(r % nodes) +
              " device  " + std::to_string(r / nodes) + " [0x18] NVIDIA H100 80GB HBM3\n";
    text +=
        "node-0:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
        "node-0:1:1 [0] NCCL INFO ReduceScatter: 1048576 Bytes -> Algo 6 proto 2 time 60.500000\n"
        "node-0:1:1 [0] NCCL INFO ReduceScatter: 2097152 Bytes -> Algo 1 proto 2 time 90.500000\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "     1048576         65536     float     sum      -1    60.00   17.48   13.11      0    60.00   17.48   13.11      0\n"
        "     2097152        131072     float     sum      -1    90.00   23.30   17.48      0    90.00   23.30   17.48      0\n";
    return import_nccl_tests({write_temp(text, "_reduce_scatter_perf.log")}, {});
  };
  const ImportResult spread = log(4);
  REQUIRE(spread.profile.tuning.size() == 2);
  CHECK(spread.profile.tuning[0].kind == CollectiveKind::ReduceScatter);
  CHECK(spread.profile.tuning[0].algorithm == CollectiveAlgorithm::Pat);
  CHECK(spread.profile.tuning[0].max_bytes == 1048576);
  CHECK(spread.profile.tuning[1].algorithm == CollectiveAlgorithm::Ring);
  // Two ranks a node: NCCL would not run PAT there; the line makes no rule and a warning.
  const ImportResult packed = log(2);
  REQUIRE(packed.profile.tuning.size() == 1);
  CHECK(packed.profile.tuning[0].algorithm == CollectiveAlgorithm::Ring);
  bool warned = false;
  for (const auto& w : packed.warnings) warned |= w.find("algorithm pat") != std::string::npos;
  CHECK(warned);
}
