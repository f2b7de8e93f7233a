// NCCL's CollNet AllReduce (collective_plan.hpp, CollNet): where it can run, NCCL's tuner model of
// it, its closed form, the bytes its flows move, flow against analytic, and how a topology and a
// scenario switch it on.
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"
#include "sim/error.hpp"
#include "sim/replay.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;
using plan_detail::collnet_supported;
using plan_detail::sharp_reduces;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
using A = CollectiveAlgorithm;

}  // namespace

TEST_CASE("SHARP reduces sum, avg, max and min of half, float, double and 32 and 64-bit integers, v3 also bf16 and 8-bit") {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::PreMulSum, ReduceOp::Max, ReduceOp::Min}) {
    CAPTURE(static_cast<int>(op));
    for (DataType t : {DataType::Float16, DataType::Float32, DataType::Float64, DataType::Int32, DataType::Uint32,
                       DataType::Int64, DataType::Uint64}) {
      CHECK(sharp_reduces(op, t, 2));
      CHECK(sharp_reduces(op, t, 3));
    }
    for (DataType t : {DataType::Bfloat16, DataType::Int8, DataType::Uint8}) {
      CHECK_FALSE(sharp_reduces(op, t, 2));
      CHECK(sharp_reduces(op, t, 3));
    }
    CHECK_FALSE(sharp_reduces(op, DataType::Float8e4m3, 3));
    CHECK_FALSE(sharp_reduces(op, DataType::Float8e5m2, 3));
    CHECK_FALSE(sharp_reduces(op, DataType::Float32, 0));
  }
  CHECK_FALSE(sharp_reduces(ReduceOp::Prod, DataType::Float32, 3));
}

TEST_CASE("CollNet runs only with NCCL_COLLNET_ENABLE, a fabric with SHARP, 2 or more nodes of at most 8 GPUs") {
  const Topology two = h100_nodes(2);
  REQUIRE(two.sharp_version == 3);
  const std::vector<int> all = first(16);
  CHECK(collnet_supported(two, all, collnet_on(), A::CollnetChain));
  CHECK(collnet_supported(two, all, collnet_on(), A::CollnetDirect));
  CHECK_FALSE(collnet_supported(two, all, CollectiveOptions{}, A::CollnetChain));  // NCCL's default: off
  CHECK_FALSE(collnet_supported(two, first(8), collnet_on(), A::CollnetChain));     // one node
  CollectiveOptions o = collnet_on();
  o.textbook = true;
  CHECK_FALSE(collnet_supported(two, all, o, A::CollnetChain));
  o = collnet_on();
  o.protocol_auto = false;
  o.protocol = Protocol::LL128;
  CHECK_FALSE(collnet_supported(two, all, o, A::CollnetChain));  // Simple only
  o = collnet_on();
  o.reduce_op = ReduceOp::Prod;
  CHECK_FALSE(collnet_supported(two, all, o, A::CollnetChain));
  // Unequal nodes (9 ranks: 8 and 1), and a fabric without SHARP.
  CHECK_FALSE(collnet_supported(two, first(9), collnet_on(), A::CollnetChain));
  const Topology plain = h100_nodes(2, {{"fabric.sharp", "none"}});
  CHECK(plain.sharp_version == 0);
  CHECK_FALSE(collnet_supported(plain, all, collnet_on(), A::CollnetChain));
  // SHARP v2 (Quantum HDR, the A100 SuperPOD) has no bfloat16.
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  REQUIRE(a100.sharp_version == 2);
  o = collnet_on();
  o.datatype = DataType::Bfloat16;
  CHECK_FALSE(collnet_supported(a100, all, o, A::CollnetChain));
  o.datatype = DataType::Float16;
  CHECK(collnet_supported(a100, all, o, A::CollnetChain));
  // Forced where it cannot run: the ring, marked.
  const CollectivePlan p = plan_collective(two, LinkEfficiency{}, all, CollectiveKind::AllReduce, 64 * kMiB, 0,
                                           [] { CollectiveOptions c; c.algorithm = A::CollnetChain; return c; }());
  CHECK(p.algorithm == A::Ring);
  CHECK(p.fallback);
  // An AllGather has no CollNet here: forced, the ring.
  const CollectivePlan g = plan_collective(two, LinkEfficiency{}, all, CollectiveKind::AllGather, 64 * kMiB, 0,
                                           collnet_on(A::CollnetChain));
  CHECK(g.algorithm == A::Ring);
  CHECK(g.fallback);
}

TEST_CASE("NCCL's tuner model of CollNet: chain busBw = I at ratio 1/2, direct I / f x 0.85 on Hopper, no base latency") {
  NcclTunerInputs in = dgx_h100_8_nodes_tuner_inputs();
  in.collnet = true;
  in.collnet_heads = 8;
  in.collnet_intra_Bps = 400e9;
  const double S = 1024 * kMiB;
  CHECK(nccl_model_allreduce_s(A::CollnetChain, Protocol::Simple, S, in) ==
        approx(2 * 7 * 2.8e-6 + 30e-6 + S / (400e9 * 0.5)).epsilon(1e-12));
  // Direct: f = ppn / heads = 1 (one NIC a GPU), Hopper's 0.85.
  CHECK(nccl_model_allreduce_s(A::CollnetDirect, Protocol::Simple, S, in) ==
        approx(2 * (3.7e-6 + 7 * 0.4e-6) + 31e-6 + S / (400e9 * 0.85 * 0.5)).epsilon(1e-12));
  // Two GPUs a NIC: f = 2 − 1/2 = 1.5.
  in.collnet_heads = 4;
  CHECK(nccl_model_allreduce_s(A::CollnetDirect, Protocol::Simple, S, in) ==
        approx(2 * (3.7e-6 + 7 * 0.4e-6) + 31e-6 + S / (400e9 / 1.5 * 0.85 * 0.5)).epsilon(1e-12));
  CHECK(nccl_model_allreduce_s(A::CollnetChain, Protocol::LL128, S, in) == kInf);
  in.collnet = false;
  CHECK(nccl_model_allreduce_s(A::CollnetChain, Protocol::Simple, S, in) == kInf);
  // One GPU a node: the tree's network latency, 14 us.
  in.collnet = true;
  in.ranks = 8;
  CHECK(nccl_model_allreduce_s(A::CollnetChain, Protocol::Simple, S, in) ==
        approx(14e-6 + S / (400e9 * 0.5)).epsilon(1e-12));
}

TEST_CASE("CollNetChain closed form: NCCL's latency + the busiest link's bytes (7/4 S through each GPU's port) + its fill") {
  // Two DGX H100 nodes, no link efficiency: each channel's chain carries S / C up and down; over
  // the 8 channels a GPU is the head of one (it sends only down), the tail of one (only up) and
  // in the middle of six, so its 450 GB/s NVSwitch port moves 2 (m − 1)/m · S = 7/4 S each way.
  // NCCL's chain chunk (256 KiB here: 128 MiB a channel is not under 64 x 8 chunks) through the
  // chain's 16 hops adds 16 chunks' worth.
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  const CollectivePlan p =
      plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 0, collnet_on(A::CollnetChain));
  REQUIRE(p.algorithm == A::CollnetChain);
  REQUIRE_FALSE(p.fallback);
  CHECK(p.protocol == Protocol::Simple);
  const double C = p.channels;
  REQUIRE(S / C / (256 * 1024) >= 64 * 8);
  REQUIRE(C == 8);
  const double links = 1.75 * S / 450e9;
  CHECK(p.base_latency_s == approx(2 * 7 * 2.8e-6 + 30e-6).epsilon(1e-12));
  CHECK(p.closed_form_s() == approx(p.base_latency_s + links * (1 + 16 * 256 * 1024 / (S / C))).epsilon(1e-12));
  // Every member receives (2m − 1)/m · S on average: m − 1 chain hops up and down per channel and
  // the switch's result at each head.
  CHECK(received_bytes_per_rank(p) == approx(15.0 / 8 * S).epsilon(1e-12));
  // The direct algorithm moves the same: scatter and broadcast of (m − 1)/m · S each, S/m at a head.
  const CollectivePlan d =
      plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 0, collnet_on(A::CollnetDirect));
  REQUIRE(d.algorithm == A::CollnetDirect);
  CHECK(received_bytes_per_rank(d) == approx(15.0 / 8 * S).epsilon(1e-12));
  // Its port carries 7/8 S each way for the scatter and 7/8 S for the broadcast: 7/4 S; its fill
  // 4 hops of NCCL's direct chunk (512 KiB halved to 128 KiB: S / 64 a channel and head is 128
  // of them, not under 64 x 2).
  CHECK(d.channels == 8);
  CHECK(d.base_latency_s == approx(2 * (3.7e-6 + 7 * 0.4e-6) + 31e-6).epsilon(1e-12));
  CHECK(d.bulk_s == approx(1.75 * S / 450e9 * (1 + 4 * 131072 / (S / 64))).epsilon(1e-12));
}

TEST_CASE("CollNet's flows: each head's NIC carries the channel's part to the switch and back, S / heads in all") {
  const Topology two = h100_nodes(2);
  const double S = 256 * kMiB;
  for (A alg : {A::CollnetChain, A::CollnetDirect}) {
    CAPTURE(static_cast<int>(alg));
    const RankFlowBytes b = flow_bytes_per_rank(two, CollectiveKind::AllReduce, alg, S);
    for (int r = 0; r < 16; ++r) {
      CAPTURE(r);
      CHECK(b.inter_in[r] == approx(S / 8).epsilon(1e-12));
    }
  }
}

TEST_CASE("CollNet: flow == analytic, folded and unfolded") {
  const Topology topo = h100_nodes(4);
  for (A alg : {A::CollnetChain, A::CollnetDirect})
    for (bool unfold : {true, false})
      for (double size : {8.0, 1 * kMiB, 256 * kMiB}) {
        CAPTURE(static_cast<int>(alg));
        CAPTURE(unfold);
        CAPTURE(size);
        BenchOptions b;
        b.unfold = unfold;
        b.algorithm = alg;
        b.replay.collectives.collnet_enable = true;
        const FlowAnalytic t = flow_and_analytic(topo, BenchOp::AllReduce, 32, size, b);
        CHECK(t.flow == approx(t.analytic).epsilon(1e-9));
        CHECK(t.flow > 0);
      }
}

TEST_CASE("CollNet beside other traffic: a pipeline send on a head's NIC slows it in flow, not in analytic") {
  // Two H100 nodes: a 1 GiB CollNetChain while GPU 0 sends 4 GiB to GPU 8 over the same rail.
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  const auto run = [&](Fidelity f, bool with_send) {
    return makespan_beside_rail_send(two, CollectiveKind::AllReduce, A::CollnetChain, S, f, with_send);
  };
  const double alone = run(Fidelity::Flow, false);
  CHECK(alone == approx(run(Fidelity::Analytic, false)).epsilon(1e-9));
  CHECK(run(Fidelity::Flow, true) > run(Fidelity::Analytic, true));
}

TEST_CASE("CollNet on forced channels: one channel puts S through one head's NIC") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  for (A alg : {A::CollnetChain, A::CollnetDirect}) {
    CAPTURE(static_cast<int>(alg));
    const CollectivePlan p =
        plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 1, collnet_on(alg));
    REQUIRE(p.algorithm == alg);
    CHECK(p.channels == 1);
    // One NIC of 400 Gb/s carries S each way.
    CHECK(p.bulk_s >= S / 50e9);
  }
}

TEST_CASE("a forced algorithm that cannot run: the condition that failed, in words") {
  const Topology two = h100_nodes(2);
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const auto why = [](const Topology& t, int n, CollectiveKind k, const CollectiveOptions& o, A a) {
    return algorithm_unavailable_reason(t, first(n), k, 0, o, a);
  };
  CHECK(why(two, 16, CollectiveKind::AllReduce, collnet_on(), A::CollnetChain) == "");
  CHECK(why(two, 16, CollectiveKind::AllReduce, CollectiveOptions{}, A::CollnetChain).find("NCCL_COLLNET_ENABLE=1") !=
        std::string::npos);
  CollectiveOptions bf = collnet_on();
  bf.datatype = DataType::Bfloat16;
  CHECK(why(a100, 16, CollectiveKind::AllReduce, bf, A::CollnetChain) ==
        "SHARP 2 (the topology's fabric.sharp) does not reduce bfloat16 (SHARP 3 does)");
  CHECK(why(two, 9, CollectiveKind::AllReduce, collnet_on(), A::CollnetDirect).find("same number of GPUs") !=
        std::string::npos);
  CHECK(why(two, 16, CollectiveKind::AllGather, collnet_on(), A::CollnetChain).find("AllReduce only") !=
        std::string::npos);
  CHECK(why(two, 2, CollectiveKind::AllReduce, CollectiveOptions{}, A::Nvls) == "NVLS needs 3 or more GPUs, found 2");
  CHECK(why(a100, 8, CollectiveKind::AllReduce, CollectiveOptions{}, A::Nvls).find("compute capability 8.0") !=
        std::string::npos);
  CHECK(why(two, 16, CollectiveKind::AllGather, CollectiveOptions{}, A::Pat).find("on a node of its own") !=
        std::string::npos);
  CHECK(why(two, 16, CollectiveKind::AllReduce, CollectiveOptions{}, A::Ring) == "");
}

TEST_CASE("CollNet in Auto: NCCL's tuner ranks it with the rest only where NCCL_COLLNET_ENABLE is set") {
  const Topology eight = h100_nodes(8);
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const std::vector<int> all = first(64);
  // 1 GiB over 8 DGX H100 nodes: with CollNet NCCL's model ranks NVLS across nodes (NVLink SHARP
  // and the network's) first, and, where NCCL_ALGO leaves NVLS out, the chain, whose
  // NVSwitch-bound 2 S beats the ring's NIC bound; off by default, where NVLS_TREE or the ring runs.
  const CollectivePlan on = plan_collective(eight, eff, all, CollectiveKind::AllReduce, 1024 * kMiB, 0, collnet_on());
  CHECK(on.algorithm == A::Nvls);
  CollectiveOptions no_nvls = collnet_on();
  parse_nccl_algo_list("^nvls", no_nvls.allowed);
  CHECK(plan_collective(eight, eff, all, CollectiveKind::AllReduce, 1024 * kMiB, 0, no_nvls).algorithm ==
        A::CollnetChain);
  const CollectivePlan off =
      plan_collective(eight, eff, all, CollectiveKind::AllReduce, 1024 * kMiB, 0, CollectiveOptions{});
  CHECK(off.algorithm != A::CollnetChain);
  CHECK(off.algorithm != A::CollnetDirect);
  // NCCL_ALGO's list leaves it out.
  CollectiveOptions o = collnet_on();
  parse_nccl_algo_list("^collnetchain,collnetdirect,nvls", o.allowed);
  const CollectivePlan listed = plan_collective(eight, eff, all, CollectiveKind::AllReduce, 1024 * kMiB, 0, o);
  CHECK(listed.algorithm != A::CollnetChain);
  CHECK(listed.algorithm != A::CollnetDirect);
}

TEST_CASE("fabric.sharp: 2, 3 or none, anything else refused with the file, line and key") {
  CHECK(h100_nodes(2, {{"fabric.sharp", "2"}}).sharp_version == 2);
  CHECK(h100_nodes(2, {{"fabric.sharp", "none"}}).sharp_version == 0);
  CHECK_THROWS_WITH_AS(load_topology(kSrc + "/topologies/dgx-a100.yaml", {{"fabric.sharp", "3"}}),
                       doctest::Contains("needs a fabric"), InputError);
  const std::string path = temp_path(".yaml");
  {
    std::ofstream out(path);
    out << "name: t\nnode:\n  count: 2\n  gpus: {count: 8, model: h100-sxm5-80gb}\n"
           "  intra: {kind: nvswitch, bandwidth: 450GB/s, latency: 0.7us}\n"
           "  nics: {bandwidth: 400Gb/s, latency: 1us, attach: per-gpu, pcie: 64GB/s}\n"
           "fabric: {kind: single-switch, sharp: yes}\n";
  }
  try {
    load_topology(path);
    FAIL("a bad fabric.sharp was accepted");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find(path) != std::string::npos);
    CHECK(m.find(":7") != std::string::npos);
    CHECK(m.find("fabric.sharp") != std::string::npos);
    CHECK(m.find("'yes'") != std::string::npos);
  }
}

TEST_CASE("nccl.collnet_enable and --set nccl.collnet_enable: NCCL_COLLNET_ENABLE of the job") {
  NcclEnvironment env;
  CHECK(describe(env).find("COLLNET") == std::string::npos);
  env.collnet_enable = true;
  CHECK(describe(env) == "NCCL_COLLNET_ENABLE=1");
  CollectiveOptions o;
  env.apply(o);
  CHECK(o.collnet_enable);
  const Run forced = run_cli("collective --op allreduce -t " + kSrc +
                             "/topologies/dgx-h100-superpod.yaml --override node.count=2 --sizes 1GiB:1GiB --algo "
                             "collnetchain --collnet");
  CHECK(forced.status == 0);
  CHECK(forced.output.find("collnetchain/Simple") != std::string::npos);
  // Without --collnet NCCL runs no CollNet: the ring, said so.
  const Run off = run_cli("collective --op allreduce -t " + kSrc +
                          "/topologies/dgx-h100-superpod.yaml --override node.count=2 --sizes 1GiB:1GiB --algo "
                          "collnetchain");
  CHECK(off.status == 0);
  CHECK(off.output.find("collnetchain/") == std::string::npos);
  CHECK(off.output.find("NCCL_COLLNET_ENABLE") != std::string::npos);
}

TEST_CASE("run with nccl.collnet_enable on a fabric without SHARP: a note says CollNet cannot run") {
  // The small DGX A100 scenario: its topology's single switch has no fabric.sharp.
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  REQUIRE(load_topology(sc.topology_path).sharp_version == 0);
  SimulateOptions o;
  o.fidelity = Fidelity::Analytic;
  o.strategies = {"megatron"};
  CHECK(simulate(sc, o).notes.find("collnet_enable") == std::string::npos);
  sc.nccl.collnet_enable = true;
  CHECK(simulate(sc, o).notes.find("nccl.collnet_enable: dgx-a100's fabric does not reduce in its switches (no "
                                   "fabric.sharp), so CollNet cannot run") != std::string::npos);
}
