// Measured collective times in the analytic fidelity (sim/measured_collectives.hpp; issue:
// collective communication as NCCL does it, "analytic: α and bus bandwidth per (collective,
// group shape, size) from the profile"): interpolation rule, matching, the replay and `run`.
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "sim/collective_bench.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/simulate.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

CollectiveFit fit_8() {
  CollectiveFit f;
  f.collective = "all_reduce";
  f.ranks = 8;
  f.nodes = 1;
  f.alpha_s = 20e-6;
  f.busbw_Bps = 200e9;
  // Two rows per size (out-of-place, in-place), unsorted.
  f.points = {{1048576, 60e-6, 0}, {1048576, 62e-6, 0}, {65536, 25e-6, 0}, {16777216, 200e-6, 0}};
  return f;
}

// An NVLS + SHARP curve over 2 DGX H100 nodes (NCCL_ALGO=NVLS with CollNet): fit_8's points,
// taken as 16 ranks on 2 nodes.
CollectiveFit nvls_sharp_fit() {
  CollectiveFit f = fit_8();
  f.ranks = 16;
  f.nodes = 2;
  f.algorithm = "NVLS";
  f.collnet_enable = true;
  return f;
}

}  // namespace

TEST_CASE("measured collective time: mean at a measured size, linear between, the fit outside") {
  const CollectiveFit f = fit_8();
  CHECK(measured_time_s(f, 1048576) == testing::approx(61e-6).epsilon(1e-12));
  CHECK(measured_time_s(f, 65536) == testing::approx(25e-6).epsilon(1e-12));
  // Halfway between 1 MiB and 16 MiB in size.
  CHECK(measured_time_s(f, (1048576 + 16777216) / 2.0) == testing::approx((61e-6 + 200e-6) / 2).epsilon(1e-12));
  // Outside: α + S · 2(n−1)/n / busbw.
  CHECK(measured_time_s(f, 8) == testing::approx(20e-6 + 8 * 1.75 / 200e9).epsilon(1e-12));
  CHECK(measured_time_s(f, 1e9) == testing::approx(20e-6 + 1e9 * 1.75 / 200e9).epsilon(1e-12));
}

TEST_CASE("measured collective: the fit of the same collective, group shape, algorithm and protocol") {
  std::vector<CollectiveFit> fits{fit_8()};
  const auto A = CollectiveAlgorithm::Auto;
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 8, 1, A, "") == &fits[0]);
  CHECK(find_measured(fits, CollectiveKind::AllGather, 8, 1, A, "") == nullptr);
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 4, 1, A, "") == nullptr);
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 8, 2, A, "") == nullptr);
  // A forced algorithm or protocol needs a fit measured with it.
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 8, 1, CollectiveAlgorithm::Ring, "") == nullptr);
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 8, 1, A, "LL") == nullptr);
  fits[0].algorithm = "RING";
  fits[0].protocol = "Simple";
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 8, 1, CollectiveAlgorithm::Ring, "simple") == &fits[0]);
}

TEST_CASE("analytic replay times a measured collective by its measurement, flow keeps NCCL's algorithms") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  BenchOptions b;
  b.replay.fidelity = Fidelity::Analytic;
  b.replay.measured = {fit_8()};
  for (bool unfold : {false, true}) {
    b.unfold = unfold;
    const auto rows = run_collective_bench(topo, BenchOp::AllReduce, 8, {65536, 1048576, 4194304}, b);
    CHECK(rows[0].time_s == testing::approx(25e-6).epsilon(1e-9));
    CHECK(rows[1].time_s == testing::approx(61e-6).epsilon(1e-9));
    CHECK(rows[2].time_s == testing::approx(measured_time_s(fit_8(), 4194304)).epsilon(1e-9));
    CHECK(rows[1].plan == "measured");
  }
  // Another group shape: the model.
  const auto four = run_collective_bench(topo, BenchOp::AllReduce, 4, {1048576}, b).at(0);
  CHECK(four.plan != "measured");
  // Forced channels: the model too (the fit is of NCCL's own channels; --channels 1 read it).
  b.channels = 1;
  b.unfold = false;
  const auto one = run_collective_bench(topo, BenchOp::AllReduce, 8, {1048576}, b).at(0);
  CHECK(one.plan == "ring/LL/1");
  CHECK(std::abs(one.time_s - 61e-6) > 1e-6);
  b.channels = 0;
  // Flow ignores the measurement.
  b.replay.fidelity = Fidelity::Flow;
  b.unfold = false;
  const auto flow = run_collective_bench(topo, BenchOp::AllReduce, 8, {1048576}, b).at(0);
  CHECK(flow.plan != "measured");
  CHECK(std::abs(flow.time_s - 61e-6) > 1e-6);
}

TEST_CASE("analytic replay times a measured AllToAll (it has no plan) by its measurement") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CollectiveFit f = fit_8();
  f.collective = "alltoall";
  BenchOptions b;
  b.replay.fidelity = Fidelity::Analytic;
  b.replay.measured = {f};
  for (bool unfold : {false, true}) {
    b.unfold = unfold;
    const auto rows = run_collective_bench(topo, BenchOp::AllToAll, 8, {1048576}, b);
    CHECK(rows.at(0).time_s == testing::approx(61e-6).epsilon(1e-9));
  }
}

TEST_CASE("run --fidelity analytic with an imported nccl-tests profile times TP AllReduces by the log") {
  // The 8-GPU all_reduce log imported into a profile; the default scenario's TP groups are 8
  // GPUs of a node, so their AllReduces take the log's times in analytic. Slower measured
  // collectives must show as more exposed communication than the datasheet model gives.
  const std::string profile = temp_path(".json");
  {
    ImportOptions io;
    ImportResult r = import_nccl_tests({kSrc + "/tests/data/nccl-tests/all_reduce_perf_8xa100.log"}, io);
    REQUIRE(r.profile.collectives.size() == 1);
    // Every measured time doubled: a machine twice as slow as the log's.
    for (auto& f : r.profile.collectives) {
      f.alpha_s *= 2;
      f.busbw_Bps /= 2;
      for (auto& p : f.points) p.time_s *= 2;
    }
    write_profile(r.profile, profile);
  }
  std::string yaml = slurp(kSrc + "/scenarios/default.yaml");
  yaml.replace(yaml.find("topology: ../topologies"), std::string("topology: ../topologies").size(),
               "topology: " + kSrc + "/topologies");
  yaml += "calibration: " + profile + "\n";
  const std::string scen = temp_path(".yaml");
  std::ofstream(scen) << yaml;
  SimulateOptions ro;
  ro.fidelity = Fidelity::Analytic;
  ro.strategies = {"megatron"};
  const RunResult measured = simulate(load_scenario(scen), ro);
  const RunResult model = simulate(load_scenario(kSrc + "/scenarios/default.yaml"), ro);
  REQUIRE(measured.strategies.size() == 1);
  CHECK(measured.strategies[0].exposed_comm_s > 1.2 * model.strategies[0].exposed_comm_s);
  CHECK(measured.strategies[0].compute_s == testing::approx(model.strategies[0].compute_s).epsilon(0.02));
}

TEST_CASE("measured collective: a fit times only collectives of its NCCL_COLLNET_ENABLE, and a forced algorithm that runs") {
  const std::vector<CollectiveFit> fits{nvls_sharp_fit()};
  const auto nvls = CollectiveAlgorithm::Nvls;
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 16, 2, nvls, "", true) == &fits[0]);
  CHECK(find_measured(fits, CollectiveKind::AllReduce, 16, 2, nvls, "", false) == nullptr);
  const Topology two =
      load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  BenchOptions b;
  b.replay.fidelity = Fidelity::Analytic;
  b.replay.measured = fits;
  b.algorithm = nvls;
  b.replay.collectives.collnet_enable = true;
  CHECK(run_collective_bench(two, BenchOp::AllReduce, 16, {1048576}, b).at(0).plan == "measured");
  // Without CollNet NVLS cannot run across nodes: the ring, and its model's time.
  b.replay.collectives.collnet_enable = false;
  const BenchRow off = run_collective_bench(two, BenchOp::AllReduce, 16, {1048576}, b).at(0);
  CHECK(off.plan.rfind("ring/", 0) == 0);
  // With CollNet on a fabric without SHARP the same.
  const Topology plain = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml",
                                       {{"node.count", "2"}, {"fabric.sharp", "none"}});
  b.replay.collectives.collnet_enable = true;
  CHECK(run_collective_bench(plain, BenchOp::AllReduce, 16, {1048576}, b).at(0).plan.rfind("ring/", 0) == 0);
}

TEST_CASE("measured collective: given the op's plan, the fit of a forced algorithm times it where the plan runs it") {
  // The NVLS + SHARP curve over 2 DGX H100 nodes: the callers pass the plan they made, which
  // runs NVLS with CollNet and the ring without, as algorithm_unavailable_reason says.
  const std::vector<CollectiveFit> fits{nvls_sharp_fit()};
  const Topology two = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  const Op op = collective_op(0, 1, 1048576, "ar", CollectiveAlgorithm::Nvls);
  CollectiveOptions on;
  on.collnet_enable = true;
  // Without a plan: algorithm_unavailable_reason, which has none for NVLS with CollNet.
  CHECK(find_measured(fits, op, two, first(16), on) == &fits[0]);
  // With one, the plan decides: one made without CollNet runs the ring, and gets no fit.
  for (bool collnet : {true, false}) {
    CAPTURE(collnet);
    CollectiveOptions planned;
    planned.collnet_enable = collnet;
    planned.take_op(op);
    const CollectivePlan plan =
        plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, op.bytes, 0, planned);
    REQUIRE((plan.algorithm == CollectiveAlgorithm::Nvls) == collnet);
    CHECK(find_measured(fits, op, two, first(16), on, &plan) == (collnet ? &fits[0] : nullptr));
  }
}

TEST_CASE("import-nccl-tests records NCCL_COLLNET_ENABLE: said by the log, else implied by a CollNet NCCL_ALGO") {
  // The shipped 2-node ReduceScatter log, its NCCL INFO lines as NCCL prints them ("to 1.").
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string info = "dgx-h100-01:70110:70145 [0] NCCL INFO ";
  const auto import_with = [&](const std::string& lines) {
    const std::string path = temp_path("reduce_scatter_perf.log");
    std::ofstream(path) << lines << base;
    ImportResult r = import_nccl_tests({path}, ImportOptions{});
    std::remove(path.c_str());
    REQUIRE(r.profile.collectives.size() == 1);
    return r.profile;
  };
  CHECK_FALSE(import_with("").collectives[0].collnet_enable);
  CHECK(import_with(info + "NCCL_COLLNET_ENABLE set by environment to 1.\n").collectives[0].collnet_enable);
  CHECK_FALSE(import_with(info + "NCCL_COLLNET_ENABLE set by environment to 0.\n").collectives[0].collnet_enable);
  // NCCL runs CollNet only with it, and NVLS across nodes (this ReduceScatter's 2 nodes) on CollNet's.
  CHECK(import_with(info + "NCCL_ALGO set by environment to CollNetDirect\n").collectives[0].collnet_enable);
  CHECK(import_with(info + "NCCL_ALGO set by environment to NVLS\n").collectives[0].collnet_enable);
  CHECK_FALSE(import_with(info + "NCCL_COLLNET_ENABLE set by environment to 0.\n" + info +
                          "NCCL_ALGO set by environment to CollNetDirect\n")
                  .collectives[0]
                  .collnet_enable);
  // The profile keeps it through its JSON, absent where false.
  const Profile p = import_with(info + "NCCL_COLLNET_ENABLE set by environment to 1.\n");
  const std::string out = temp_path(".json");
  write_profile(p, out);
  CHECK(slurp(out).find("\"collnet_enable\": true") != std::string::npos);
  CHECK(load_profile(out).collectives.at(0).collnet_enable);
  std::remove(out.c_str());
}
