// NCCL's CollNetDirect AllGather and ReduceScatter across nodes (collective_plan.hpp, CollNet
// AllGather and ReduceScatter): where they run, NCCL's tuner model of them, the closed form, the
// bytes their flows move, flow against analytic, contention and where Auto takes them.
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;
using A = CollectiveAlgorithm;
using K = CollectiveKind;

}  // namespace

TEST_CASE("CollNetDirect AllGather and ReduceScatter run across nodes on SHARP 3, with NCCL_COLLNET_ENABLE") {
  const Topology two = h100_nodes(2);
  const auto why = [&](const Topology& t, K k, const CollectiveOptions& o, A a) {
    return algorithm_unavailable_reason(t, first(16), k, 0, o, a);
  };
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    CHECK(why(two, k, collnet_on(), A::CollnetDirect) == "");
    CHECK(why(two, k, CollectiveOptions{}, A::CollnetDirect).find("NCCL_COLLNET_ENABLE=1") != std::string::npos);
    CHECK(why(two, k, collnet_on(), A::CollnetChain) == "NCCL runs CollNetChain for AllReduce only");
    // One node: no network to reduce in.
    CHECK(algorithm_unavailable_reason(two, first(8), k, 0, collnet_on(), A::CollnetDirect) ==
          "CollNet runs across 2 or more nodes");
  }
  // SHARP 2 (Quantum HDR, the A100 SuperPOD): the plugin's AllGather and ReduceScatter need SHARP 3.
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  REQUIRE(a100.sharp_version == 2);
  CHECK(why(a100, K::AllGather, collnet_on(), A::CollnetDirect) ==
        "CollNet runs an AllGather or ReduceScatter on SHARP 3 switches, and the topology's fabric.sharp is 2");
  // A ReduceScatter reduces in the switch: SHARP's types only; an AllGather moves any type.
  CollectiveOptions fp8 = collnet_on();
  fp8.datatype = DataType::Float8e4m3;
  CHECK(why(two, K::ReduceScatter, fp8, A::CollnetDirect).find("does not reduce f8e4m3") != std::string::npos);
  CHECK(why(two, K::AllGather, fp8, A::CollnetDirect) == "");
  // Forced where it cannot run: the ring, marked.
  const CollectivePlan p =
      plan_collective(a100, LinkEfficiency{}, first(16), K::AllGather, 64 * kMiB, 0, collnet_on(A::CollnetDirect));
  CHECK(p.algorithm == A::Ring);
  CHECK(p.fallback);
}

TEST_CASE("NCCL's tuner model of CollNetDirect AllGather: ppn · min(I / heads, 0.9 E), not converted, direct latency") {
  NcclTunerInputs in = dgx_h100_8_nodes_tuner_inputs();
  in.collnet = true;
  in.collnet_heads = 8;
  in.collnet_intra_Bps = 450e9;
  in.collnet_inter_Bps = 50e9;
  const double S = 1024 * kMiB;
  const double lat = 2 * (3.7e-6 + 7 * 0.4e-6) + 31e-6;
  // The NIC binds: 0.9 · 50 GB/s < 450 / 8 GB/s.
  CHECK(nccl_model_allgather_s(A::CollnetDirect, Protocol::Simple, S, in) ==
        approx(lat + S / (8 * 0.9 * 50e9)).epsilon(1e-12));
  in.collnet_inter_Bps = 100e9;
  CHECK(nccl_model_allgather_s(A::CollnetDirect, Protocol::Simple, S, in) ==
        approx(lat + S / (8 * 450e9 / 8)).epsilon(1e-12));
  CHECK(std::isinf(nccl_model_allgather_s(A::CollnetDirect, Protocol::LL128, S, in)));
  // More GPUs a node than heads: none.
  in.collnet_heads = 4;
  CHECK(std::isinf(nccl_model_allgather_s(A::CollnetDirect, Protocol::Simple, S, in)));
  in.collnet_heads = 8;
  in.collnet = false;
  CHECK(std::isinf(nccl_model_allgather_s(A::CollnetDirect, Protocol::Simple, S, in)));
}

TEST_CASE("CollNetDirect AllGather closed form over 2 DGX H100 nodes: latency + S / 8 through each NIC + fill") {
  // Each GPU's NVSwitch port carries the other 7 rails' results, 7/8 S each way (at 450 GB/s);
  // each NIC its rail's whole buffer, S / 8 (at 50 GB/s): the NIC binds. The fill: a chunk of each
  // of the 8 channels through 3 stages, NCCL's direct chunk for 1 GiB over 8 channels of 8 heads
  // (S / 64 a part: 128 KiB).
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const CollectivePlan p = plan_collective(two, LinkEfficiency{}, first(16), k, S, 0, collnet_on(A::CollnetDirect));
    REQUIRE(p.algorithm == A::CollnetDirect);
    REQUIRE_FALSE(p.fallback);
    CHECK(p.protocol == Protocol::Simple);
    CHECK(p.channels == 8);
    CHECK(p.base_latency_s == approx(2 * (3.7e-6 + 7 * 0.4e-6) + 31e-6).epsilon(1e-12));
    CHECK(p.closed_form_s() ==
          approx(p.base_latency_s + S / 8 / 50e9 * (1 + 3 * 131072 / (S / 64))).epsilon(1e-9));
    // Every member receives the other members' parts, (n − 1)/n · S, and its own back from the
    // switch (its rail's whole buffer): S.
    CHECK(received_bytes_per_rank(p) == approx(S).epsilon(1e-12));
  }
}

TEST_CASE("CollNetDirect AllGather and ReduceScatter move what they require: 7/8 S over each port, S/8 through each NIC") {
  const Topology two = h100_nodes(2);
  const double S = 256 * kMiB;
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const RankFlowBytes b = flow_bytes_per_rank(two, k, A::CollnetDirect, S);
    for (int r = 0; r < 16; ++r) {
      CAPTURE(r);
      CHECK(b.intra_in[r] == approx(7.0 / 8 * S).epsilon(1e-12));
      CHECK(b.intra_out[r] == approx(7.0 / 8 * S).epsilon(1e-12));
      CHECK(b.inter_in[r] == approx(S / 8).epsilon(1e-12));
    }
  }
}

TEST_CASE("CollNetDirect AllGather and ReduceScatter: flow == analytic, folded and unfolded") {
  const Topology topo = h100_nodes(4);
  for (BenchOp op : {BenchOp::AllGather, BenchOp::ReduceScatter})
    for (bool unfold : {true, false})
      for (double size : {32.0 * 8, 1 * kMiB, 256 * kMiB}) {
        CAPTURE(static_cast<int>(op));
        CAPTURE(unfold);
        CAPTURE(size);
        BenchOptions b;
        b.unfold = unfold;
        b.algorithm = A::CollnetDirect;
        b.replay.collectives.collnet_enable = true;
        const FlowAnalytic t = flow_and_analytic(topo, op, 32, size, b);
        CHECK(t.flow == approx(t.analytic).epsilon(1e-9));
        CHECK(t.flow >= 44e-6);
      }
}

TEST_CASE("CollNetDirect AllGather beside a pipeline send into a NIC: slower in flow, not in analytic") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  const auto run = [&](Fidelity f, bool with_send) {
    return makespan_beside_rail_send(two, K::AllGather, A::CollnetDirect, S, f, with_send);
  };
  CHECK(run(Fidelity::Flow, false) == approx(run(Fidelity::Analytic, false)).epsilon(1e-9));
  CHECK(run(Fidelity::Flow, true) > run(Fidelity::Analytic, true));
}

TEST_CASE("CollNetDirect AllGather and ReduceScatter in Auto: where NCCL's tuner ranks them first, only with CollNet") {
  const Topology eight = h100_nodes(8);
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const std::vector<int> all = first(64);
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    // Its latency (44 us against the ring's 63 steps) wins up to 512 MiB, the ring's bandwidth
    // from 1 GiB in NCCL's model (0.9 of a NIC per GPU against the ring's graph).
    for (double size : {1 * kMiB, 256 * kMiB, 512 * kMiB})
      CHECK(plan_collective(eight, eff, all, k, size, 0, collnet_on()).algorithm == A::CollnetDirect);
    for (double size : {1024 * kMiB, 4096 * kMiB})
      CHECK(plan_collective(eight, eff, all, k, size, 0, collnet_on()).algorithm == A::Ring);
    CHECK(plan_collective(eight, eff, all, k, 1 * kMiB, 0, CollectiveOptions{}).algorithm != A::CollnetDirect);
    CollectiveOptions o = collnet_on();
    parse_nccl_algo_list("^collnetdirect", o.allowed);
    CHECK(plan_collective(eight, eff, all, k, 1 * kMiB, 0, o).algorithm != A::CollnetDirect);
  }
}

TEST_CASE("collective --compare: a 2-node ReduceScatter log that ran NCCL_ALGO=CollNetDirect runs it, with CollNet") {
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string path = temp_path("reduce_scatter_perf.log");
  std::ofstream(path) << "dgx-h100-01:70110:70145 [0] NCCL INFO NCCL_ALGO set by environment to CollNetDirect\n"
                      << base;
  const Run r = run_cli("collective --fidelity analytic -t " + kSrc +
                        "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare " + path);
  REQUIRE(r.status == 0);
  CAPTURE(r.output);
  CHECK(r.output.find("# note: NCCL_ALGO=CollNetDirect as the log ran it") != std::string::npos);
  CHECK(r.output.find("# note: NCCL_COLLNET_ENABLE=1, which NCCL_ALGO=CollNetDirect needs") != std::string::npos);
  CHECK(r.output.find("collnetdirect/Simple/8") != std::string::npos);
  CHECK(r.output.find("ring/") == std::string::npos);
}

TEST_CASE("collective --compare: a ReduceScatter log of NCCL before 2.20 ran no CollNetDirect, whatever CollNet said") {
  // NCCL 2.20 brought CollNet's AllGather and ReduceScatter (the net plugin's API v8).
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string info = "dgx-h100-01:70110:70145 [0] NCCL INFO ";
  const std::string path = temp_path("reduce_scatter_perf.log");
  const auto compare = [&](const std::string& version, const std::string& algo) {
    std::ofstream(path) << (version.empty() ? "" : info + "NCCL version " + version + "+cuda12.2\n") << info
                        << "NCCL_COLLNET_ENABLE set by environment to 1.\n"
                        << (algo.empty() ? "" : info + "NCCL_ALGO set by environment to " + algo + "\n") << base;
    return run_cli("collective --fidelity analytic -t " + kSrc +
                   "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare " + path);
  };
  // 2.20 and later, or a version the log does not say: CollNetDirect where NCCL's tuner ranks it first.
  for (const char* v : {"2.20.3", ""}) {
    CAPTURE(v);
    const Run r = compare(v, "");
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("collnetdirect/Simple/8") != std::string::npos);
    CHECK(r.output.find("came in NCCL 2.20") == std::string::npos);
  }
  const Run old = compare("2.18.5", "");
  REQUIRE(old.status == 0);
  CAPTURE(old.output);
  CHECK(old.output.find("# note: NCCL 2.18.5 (the log's) cannot run CollNetDirect for reduce_scatter (it came in NCCL "
                        "2.20): left out here") != std::string::npos);
  // NVLS across nodes runs on CollNet's ReduceScatter too: left out as well, said.
  CHECK(old.output.find("# note: NCCL 2.18.5 (the log's) cannot run NVLS across nodes for reduce_scatter (it came in "
                        "NCCL 2.20): left out here") != std::string::npos);
  CHECK(old.output.find("collnetdirect/") == std::string::npos);
  // Its NCCL_ALGO=CollNetDirect: the ring, said; NCCL_COLLNET_ENABLE is not inferred from it.
  const Run forced = compare("2.19.3", "CollNetDirect");
  REQUIRE(forced.status == 0);
  CAPTURE(forced.output);
  CHECK(forced.output.find("# note: the log ran NCCL_ALGO=CollNetDirect, which NCCL 2.19.3 (the log's) cannot run "
                           "CollNetDirect for reduce_scatter") != std::string::npos);
  CHECK(forced.output.find("collnetdirect/") == std::string::npos);
  CHECK(forced.output.find("ring/") != std::string::npos);
  CHECK(forced.output.find("as the log ran it") != std::string::npos);  // NCCL_COLLNET_ENABLE=1's
  CHECK(forced.output.find("NCCL_ALGO=CollNetDirect as the log ran it") == std::string::npos);
}

TEST_CASE("import-nccl-tests: NCCL's TUNING lines choosing CollNetDirect for a ReduceScatter make a rule the profile keeps") {
  // NCCL's algorithm 2 is CollNetDirect, protocol 2 Simple (src/include/device.h).
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string path = temp_path("reduce_scatter_perf.log");
  std::ofstream(path) << "dgx-h100-01:70110:70145 [0] NCCL INFO ReduceScatter: 1048576 Bytes -> Algo 2 proto 2 time "
                         "20.000000\n"
                      << base;
  const ImportResult r = import_nccl_tests({path}, ImportOptions{});
  REQUIRE(r.profile.tuning.size() == 1);
  CHECK(r.profile.tuning[0].kind == K::ReduceScatter);
  CHECK(r.profile.tuning[0].algorithm == A::CollnetDirect);
  CHECK(r.profile.tuning[0].protocol == Protocol::Simple);
  // NCCL ran CollNet: the log's fit is of a job with NCCL_COLLNET_ENABLE=1.
  REQUIRE(r.profile.collectives.size() == 1);
  CHECK(r.profile.collectives[0].collnet_enable);
  const std::string out = temp_path(".json");
  write_profile(r.profile, out);
  CHECK(load_profile(out).tuning.at(0).algorithm == A::CollnetDirect);
}

TEST_CASE("CollNetDirect AllGather on forced channels: one channel puts every rail through one NIC") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const CollectivePlan one = plan_collective(two, LinkEfficiency{}, first(16), k, S, 1, collnet_on(A::CollnetDirect));
    REQUIRE(one.algorithm == A::CollnetDirect);
    CHECK(one.channels == 1);
    // The node's whole S through GPU 0's 50 GB/s NIC, each way of the rail.
    CHECK(one.bulk_s >= S / 50e9);
    const CollectivePlan all8 = plan_collective(two, LinkEfficiency{}, first(16), k, S, 0, collnet_on(A::CollnetDirect));
    CHECK(one.closed_form_s() > 7 * all8.closed_form_s());
  }
}

TEST_CASE("CollNetDirect: a one-node group is told it needs 2 nodes, whatever the fabric's SHARP") {
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(algorithm_unavailable_reason(a100, first(8), K::AllGather, 0, collnet_on(), A::CollnetDirect) ==
        "CollNet runs across 2 or more nodes");
}
