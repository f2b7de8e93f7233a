// NCCL's Simple protocol pays a fence and a flag per slice on NVLink hops (sim/collective_plan.hpp,
// profile network.simple_slice_nvlink_s): the slices NCCL's loops give per ring step and per
// ring step, run by hand; a chain's cost once per hop; the closed form's exact increase on a uniform ring; flow = analytic with it;
// network hops, other protocols and the textbook ring untouched; the communicator's channel
// count from the topology; the shipped profiles' values.
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
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
constexpr double kSlice = 6.5e-6;  ///< the shipped A100 profile's value

CollectiveOptions simple(double slice_s) {
  CollectiveOptions o;
  o.protocol_auto = false;
  o.protocol = Protocol::Simple;
  o.simple_slice_nvlink_s = slice_s;
  return o;
}

/// At each size, forced Simple with the slice cost: flow within 1% of analytic, and analytic
/// slower than without the cost; the plan is `plan_prefix` where one is given.
void check_flow_analytic_slower(const Topology& topo, BenchOp op, int n, const std::vector<double>& sizes,
                                CollectiveAlgorithm algorithm, const std::string& plan_prefix = "") {
  BenchOptions b;
  b.replay.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
  b.replay.collectives = simple(kSlice);
  b.algorithm = algorithm;
  b.unfold = true;
  b.replay.fidelity = Fidelity::Flow;
  const std::vector<BenchRow> flow = run_collective_bench(topo, op, n, sizes, b);
  b.replay.fidelity = Fidelity::Analytic;
  const std::vector<BenchRow> analytic = run_collective_bench(topo, op, n, sizes, b);
  b.replay.collectives.simple_slice_nvlink_s = 0;
  const std::vector<BenchRow> free = run_collective_bench(topo, op, n, sizes, b);
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(sizes[i]);
    if (!plan_prefix.empty()) REQUIRE(analytic[i].plan.rfind(plan_prefix, 0) == 0);
    CHECK(flow[i].time_s == testing::approx(analytic[i].time_s).epsilon(0.01));
    CHECK(analytic[i].time_s > free[i].time_s);  // the cost is there, in both
  }
}

}  // namespace

TEST_CASE("Simple slices per ring step: NCCL's loops of channels x ranks x 2 MiB, run by hand") {
  // 8 ranks, 24 channels: a loop is 24 · 8 · 2 MiB = 384 MiB; each step of a loop sends its
  // chunk in 2 slices, 1 where the chunk is at most 32 KiB.
  CHECK(simple_slices_per_step(1 * kMiB, 8, 24) == 1);     // chunk 1 MiB / 192 = 5.3 KiB
  CHECK(simple_slices_per_step(6 * kMiB, 8, 24) == 1);     // chunk exactly 32 KiB
  CHECK(simple_slices_per_step(6 * kMiB + 192, 8, 24) == 2);
  CHECK(simple_slices_per_step(32 * kMiB, 8, 24) == 2);
  CHECK(simple_slices_per_step(384 * kMiB, 8, 24) == 2);   // one full loop
  CHECK(simple_slices_per_step(385 * kMiB, 8, 24) == 3);   // a full loop and a 5.3 KiB chunk
  CHECK(simple_slices_per_step(1024 * kMiB, 8, 24) == 6);  // 3 loops, the last one 1.33 MiB per chunk
  CHECK(simple_slices_per_step(0, 8, 24) == 1);
  // 8 channels: loops of 128 MiB.
  CHECK(simple_slices_per_step(256 * kMiB, 8, 8) == 4);
}

TEST_CASE("the communicator's channels: the topology's for one node, two per NIC across nodes") {
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CHECK(one.nccl_channels(1) == 24);
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "4"}});
  CHECK(pod.nccl_channels(1) == 24);
  CHECK(pod.nccl_channels(4) == 16);  // 8 NICs per node
  const Topology h100 = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  CHECK(h100.nccl_channels(1) == 32);  // NCCL's ring search over 18 NVLinks (the topology's note)
  CHECK(h100.nccl_channels(2) == 16);
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");  // explicit form
  CHECK(star.nccl_channels(1) == 0);
  // A group holding some GPUs of each node: two per NIC local to them (one NIC per H100).
  CHECK(h100.nccl_channels(2, 8) == 16);
  CHECK(h100.nccl_channels(2, 4) == 8);
  CHECK(h100.nccl_channels(2, 1) == 2);
  CHECK(h100.nccl_channels(1, 1) == 32);  // inside a node the topology's count
  CHECK(local_ranks(h100, {0, 8}) == 1);
  CHECK(local_ranks(h100, {0, 1, 2, 8, 9}) == 2);  // the fewest on one node
  CHECK(local_ranks(h100, {}) == 0);
}

TEST_CASE("a data-parallel group beside TP 8 plans as the same group on one-GPU nodes") {
  // 64 DGX H100 nodes, one GPU of each (a DP group of TP 8 x DP 64): NCCL's communicator has the
  // one NIC of that GPU, 2 channels, as on 64 nodes of one GPU and one NIC. The ZeRO-1 gradient
  // ReduceScatter of GPT-3 175B's stage (66,807,808 B) and an AllGather and AllReduce of it.
  const Topology eight = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "64"}});
  const Topology one =
      load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "64"}, {"node.gpus.count", "1"}});
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  std::vector<int> dp, all;
  for (int i = 0; i < 64; ++i) {
    dp.push_back(8 * i);
    all.push_back(i);
  }
  CollectiveOptions opt;
  for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllGather, CollectiveKind::AllReduce})
    for (double bytes : {64.0 * 1024, 66807808.0, 1024.0 * kMiB}) {
      CAPTURE(static_cast<int>(kind));
      CAPTURE(bytes);
      const CollectivePlan a = plan_collective(eight, eff, dp, kind, bytes, 0, opt);
      const CollectivePlan b = plan_collective(one, eff, all, kind, bytes, 0, opt);
      CHECK(a.algorithm == b.algorithm);
      CHECK(a.protocol == b.protocol);
      CHECK(a.sm_blocks == b.sm_blocks);
      CHECK(a.sm_blocks <= 2);
      CHECK(a.closed_form_s() == doctest::Approx(b.closed_form_s()).epsilon(1e-9));
    }
}

TEST_CASE("a uniform NVSwitch ring pays steps x slices x the slice cost on top, exactly") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  for (double bytes : {1 * kMiB, 64 * kMiB, 1024 * kMiB}) {
    for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
      CAPTURE(bytes);
      CAPTURE(to_string(kind));
      const CollectivePlan with = plan_collective(topo, eff, first(8), kind, bytes, 0, simple(kSlice));
      const CollectivePlan without = plan_collective(topo, eff, first(8), kind, bytes, 0, simple(0));
      REQUIRE(with.protocol == Protocol::Simple);
      const int steps = kind == CollectiveKind::AllReduce ? 14 : 7;
      CHECK(with.steps == steps);
      // The slices of NCCL's 24 channels (the topology's), whatever channels the plan runs on.
      const double slices = simple_slices_per_step(bytes, 8, 24);
      CHECK(with.closed_form_s() - without.closed_form_s() ==
            testing::approx(steps * slices * kSlice).epsilon(1e-9));
    }
  }
}

TEST_CASE("a Simple chain pays the slice cost once per hop, at every size, its plateau is the links'") {
  // The fence overlaps the sender's next slice (collective_plan.hpp): over 8 GPUs on NVSwitch a
  // Broadcast's closed form grows by exactly 7 slice costs, whatever its slices.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  for (double bytes : {1 * kMiB, 64 * kMiB, 8192 * kMiB}) {
    CAPTURE(bytes);
    const CollectivePlan with = plan_collective(topo, eff, first(8), CollectiveKind::Broadcast, bytes, 0, simple(kSlice));
    const CollectivePlan without = plan_collective(topo, eff, first(8), CollectiveKind::Broadcast, bytes, 0, simple(0));
    REQUIRE(with.chain);
    CHECK(with.closed_form_s() - without.closed_form_s() == testing::approx(7 * kSlice).epsilon(1e-6));
  }
  // 8 GiB: busbw within 1% of a GPU's NVLink port at the profile's efficiency (12 links of
  // 25 GB/s at 0.80: 240 GB/s), and NCCL's tuner's choice there, Simple, is the model's too.
  CollectiveOptions a;
  a.simple_slice_nvlink_s = kSlice;
  const double bytes = 8192 * kMiB;
  const CollectivePlan autop = plan_collective(topo, eff, first(8), CollectiveKind::Broadcast, bytes, 0, a);
  CHECK(autop.protocol == Protocol::Simple);
  CHECK(bytes / autop.closed_form_s() >= 0.99 * 240e9);
  CHECK(bytes / autop.closed_form_s() <= 240e9);
}

TEST_CASE("flow = analytic with the slice cost, ring and chain") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  for (BenchOp op : {BenchOp::AllReduce, BenchOp::AllGather, BenchOp::Broadcast}) {
    CAPTURE(to_string(op));
    check_flow_analytic_slower(topo, op, 8, {4 * kMiB, 256 * kMiB}, CollectiveAlgorithm::Auto);
  }
}

TEST_CASE("the slice cost is Simple's on NVLink only: network hops, LL/LL128 and the textbook ring keep their time") {
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  // The closed form with options `o` equals the one without the slice cost.
  auto unchanged = [&](const Topology& topo, const std::vector<int>& ranks, double bytes, const CollectiveOptions& o) {
    CollectiveOptions z = o;
    z.simple_slice_nvlink_s = 0;
    return plan_collective(topo, eff, ranks, CollectiveKind::AllReduce, bytes, 0, o).closed_form_s() ==
           plan_collective(topo, eff, ranks, CollectiveKind::AllReduce, bytes, 0, z).closed_form_s();
  };
  // One GPU per node: every hop is a network hop.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(unchanged(pod, {0, 8}, 64 * kMiB, simple(kSlice)));
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  for (Protocol p : {Protocol::LL, Protocol::LL128}) {
    CollectiveOptions o = simple(kSlice);
    o.protocol = p;
    CHECK(unchanged(one, first(8), 8 * kMiB, o));
  }
  CollectiveOptions textbook = simple(kSlice);
  textbook.textbook = true;
  CHECK(unchanged(one, first(8), 64 * kMiB, textbook));
  CHECK_FALSE(unchanged(one, first(8), 64 * kMiB, simple(kSlice)));  // the check can fail
}

TEST_CASE("shipped profiles: A100 and H100 have their fitted slice costs, it survives a write and a read") {
  const Profile a100 = load_profile(default_profile_path("a100-sxm4-80gb"));
  CHECK(a100.simple_slice_nvlink_s == 6.5e-6);
  CHECK(a100.nvlink_efficiency == 0.80);
  CHECK(load_profile(default_profile_path("h100-sxm5-80gb")).simple_slice_nvlink_s == 6.25e-7);
  CHECK(load_profile(default_profile_path("h200-sxm-141gb")).simple_slice_nvlink_s == 6.25e-7);  // H100's NVLink 4
  const std::string path = temp_path(".json");
  write_profile(a100, path);
  CHECK(load_profile(path).simple_slice_nvlink_s == 6.5e-6);
}

TEST_CASE("NCCL's kernel holds the communicator's channels' SMs, not the plan's rings") {
  const LinkEfficiency eff = shipped_link_efficiency("a100-sxm4-80gb");
  CollectiveOptions o;  // 8 rings by default
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const CollectivePlan big = plan_collective(one, eff, first(8), CollectiveKind::AllReduce, 1024 * kMiB, 0, o);
  CHECK(big.channels == 8);
  CHECK(big.sm_blocks == 24);  // NCCL's 24 channels in a DGX A100 (topology), all used at 1 GiB
  // NCCL's launch loop lowers the count for small sizes: ring LL, 8 ranks, 512 threads, threshold
  // 8 · 8: while bytes < nc · 512 · 64, nc −= 1 — 64 KiB gives nc = 2.
  const CollectivePlan small = plan_collective(one, eff, first(8), CollectiveKind::AllReduce, 64 * 1024, 0, o);
  CHECK(small.protocol == Protocol::LL);
  CHECK(small.sm_blocks == nccl_launch(CollectiveAlgorithm::Ring, Protocol::LL, 64 * 1024, 8, 24).channels);
  CHECK(small.sm_blocks == 2);
  // An op's forced channels are its blocks.
  CHECK(plan_collective(one, eff, first(8), CollectiveKind::AllReduce, 1024 * kMiB, 4, o).sm_blocks == 4);
  // Across nodes: two per NIC (16 on DGX A100), ring and tree.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "4"}});
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree}) {
    CollectiveOptions t = o;
    t.algorithm = a;
    CHECK(plan_collective(pod, eff, first(32), CollectiveKind::AllReduce, 1024 * kMiB, 0, t).sm_blocks == 16);
  }
  // A topology that does not state them: the plan's own channels.
  const Topology star = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  CHECK(plan_collective(star, eff, first(8), CollectiveKind::AllReduce, 1024 * kMiB, 0, o).sm_blocks == 8);
}

TEST_CASE("SM interference in the replay: a kernel beside a DGX A100 AllReduce runs on 84 of 108 SMs") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  ReplayOptions ro;
  ro.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
  ro.sm_count = 108;
  Schedule s;
  s.world_size = 8;
  const int g = s.intern_group(first(8), CommPurpose::TensorParallel);
  for (int r = 0; r < 8; ++r) {
    RankProgram p{r, 2, {}};
    const Op c = collective_op(g, 1, 1024 * kMiB, "ar", CollectiveAlgorithm::Auto, 1);
    Op k;
    k.type = OpType::Compute;
    k.duration_s = 0.001;  // ends well inside the collective (~8 ms)
    k.name = "gemm";
    p.ops = {k, c};
    s.programs.push_back(p);
  }
  for (Fidelity f : {Fidelity::Flow, Fidelity::Analytic}) {
    ro.fidelity = f;
    const ReplayTimes t = replay(s, topo, ro);
    REQUIRE(t.end_s[0][1] > 0.002);
    CHECK(t.end_s[0][0] == testing::approx(0.001 * 108.0 / 84.0).epsilon(1e-9));
  }
}

TEST_CASE("a tree's NVLink hops pay the slice cost too: slower, and flow = analytic") {
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  check_flow_analytic_slower(pod, BenchOp::AllReduce, 16, {8 * kMiB, 128 * kMiB}, CollectiveAlgorithm::Tree,
                             "tree/Simple");
}
