// LL128 on NVLink hops as measured (sim/collective_plan.hpp, profile network.ll128_step_nvlink_s
// and network.ll128_busbw_nvlink_Bps): the closed form's exact change on a uniform ring; flow =
// analytic with it; network hops, other protocols, chains and the textbook ring untouched; the
// shipped profiles' values.
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kStep = 0.5e-6;   ///< the shipped A100 profile's values
constexpr double kBusBw = 131e9;

CollectiveOptions forced(Protocol p, double step_s, double busbw_Bps) {
  CollectiveOptions o;
  o.protocol_auto = false;
  o.protocol = p;
  o.ll128_step_nvlink_s = step_s;
  o.ll128_busbw_nvlink_Bps = busbw_Bps;
  return o;
}

}  // namespace

TEST_CASE("LL128 on NVLink as measured: the uniform ring's closed form, run by hand") {
  // 8 A100s on NVSwitch, 8 rings: every hop alike. T = baseLat + 14 · (hwLat + step) + 14 · wire
  // / share, and with the ceiling binding the rings' payload rate is busbw / 8 each: a ring's
  // bytes S cross in 2 · 7/8 · S / busbw.
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const double bytes = 16 * kMiB;
  const CollectivePlan p = plan_collective(one, shipped_link_efficiency("a100-sxm4-80gb"), first(8), CollectiveKind::AllReduce, bytes, 0,
                                           forced(Protocol::LL128, kStep, kBusBw));
  REQUIRE(p.protocol == Protocol::LL128);
  const double expected = 14.0e-6 + 14 * (1.9e-6 + kStep) + 2.0 * 7 / 8 * bytes / kBusBw;
  CHECK(p.closed_form_s() == testing::approx(expected).epsilon(1e-9));
}

TEST_CASE("flow = analytic with LL128 as measured, AllReduce and AllGather") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const std::vector<double> sizes = {1 * kMiB, 8 * kMiB, 64 * kMiB};
  for (BenchOp op : {BenchOp::AllReduce, BenchOp::AllGather}) {
    CAPTURE(to_string(op));
    BenchOptions b;
    b.replay.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
    b.replay.collectives = forced(Protocol::LL128, kStep, kBusBw);
    b.unfold = true;
    b.replay.fidelity = Fidelity::Flow;
    const std::vector<BenchRow> flow = run_collective_bench(topo, op, 8, sizes, b);
    b.replay.fidelity = Fidelity::Analytic;
    const std::vector<BenchRow> analytic = run_collective_bench(topo, op, 8, sizes, b);
    b.replay.collectives.ll128_step_nvlink_s = 0;
    b.replay.collectives.ll128_busbw_nvlink_Bps = 0;
    const std::vector<BenchRow> nccl = run_collective_bench(topo, op, 8, sizes, b);
    for (size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(sizes[i]);
      CHECK(flow[i].time_s == testing::approx(analytic[i].time_s).epsilon(0.01));
      CHECK(analytic[i].time_s > nccl[i].time_s);  // slower than NCCL's own LL128 limits, in both
    }
  }
}

TEST_CASE("LL128 as measured is LL128's on NVLink only: network hops, LL/Simple, chains and the textbook ring keep their time") {
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  auto unchanged = [&](const Topology& topo, const std::vector<int>& ranks, CollectiveKind kind, double bytes,
                       const CollectiveOptions& o) {
    CollectiveOptions z = o;
    z.ll128_step_nvlink_s = 0;
    z.ll128_busbw_nvlink_Bps = 0;
    return plan_collective(topo, eff, ranks, kind, bytes, 0, o).closed_form_s() ==
           plan_collective(topo, eff, ranks, kind, bytes, 0, z).closed_form_s();
  };
  // One GPU per node: every hop is a network hop.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(unchanged(pod, {0, 8}, CollectiveKind::AllReduce, 64 * kMiB, forced(Protocol::LL128, kStep, kBusBw)));
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  for (Protocol p : {Protocol::LL, Protocol::Simple})
    CHECK(unchanged(one, first(8), CollectiveKind::AllReduce, 8 * kMiB, forced(p, kStep, kBusBw)));
  CHECK(unchanged(one, first(8), CollectiveKind::Broadcast, 8 * kMiB, forced(Protocol::LL128, kStep, kBusBw)));
  CollectiveOptions textbook = forced(Protocol::LL128, kStep, kBusBw);
  textbook.textbook = true;
  CHECK(unchanged(one, first(8), CollectiveKind::AllReduce, 8 * kMiB, textbook));
  CHECK_FALSE(unchanged(one, first(8), CollectiveKind::AllReduce, 8 * kMiB, forced(Protocol::LL128, kStep, kBusBw)));
}

TEST_CASE("shipped profiles: A100 has the fitted LL128 step and ceiling, H100 none, they survive a write and a read") {
  const Profile a100 = load_profile(default_profile_path("a100-sxm4-80gb"));
  CHECK(a100.ll128_step_nvlink_s == kStep);
  CHECK(a100.ll128_busbw_nvlink_Bps == kBusBw);
  const Profile h100 = load_profile(default_profile_path("h100-sxm5-80gb"));
  CHECK(h100.ll128_step_nvlink_s == 0);
  CHECK(h100.ll128_busbw_nvlink_Bps == 0);
  const std::string path = temp_path(".json");
  write_profile(a100, path);
  const Profile back = load_profile(path);
  CHECK(back.ll128_step_nvlink_s == kStep);
  CHECK(back.ll128_busbw_nvlink_Bps == kBusBw);
}
