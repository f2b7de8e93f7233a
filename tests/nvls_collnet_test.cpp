// NVLS across nodes (NCCL's NVLS algorithm with CollNet: NVLink SHARP inside each Hopper node, the
// network's SHARP between them; collective_plan.hpp, NVLS across nodes): where it can run, NCCL's
// tuner model of it, its closed form, the bytes its flows move, flow against analytic, contention
// and where Auto takes it.
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/nccl_constants.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;
using A = CollectiveAlgorithm;

// NCCL's NVLS efficiency on Hopper over 16 channels (nvlsEfficiency · 15/16).
constexpr double kEta = 0.85 * 15.0 / 16.0;

}  // namespace

TEST_CASE("NVLS across nodes runs only with CollNet, on nodes that run NVLS") {
  const Topology two = h100_nodes(2);
  const auto why = [&](int n, CollectiveKind k, const CollectiveOptions& o) {
    return algorithm_unavailable_reason(two, first(n), k, 0, o, A::Nvls);
  };
  CHECK(why(16, CollectiveKind::AllReduce, collnet_on()) == "");
  CHECK(why(16, CollectiveKind::AllReduce, CollectiveOptions{}) ==
        "NVLS runs across nodes only with CollNet (NVLSTree runs without): CollNet needs NCCL_COLLNET_ENABLE=1 "
        "(collective --collnet, nccl.collnet_enable)");
  // AllGather and ReduceScatter too, on CollNet's (tests/nvls_collnet_gather_test.cpp).
  CHECK(why(16, CollectiveKind::AllGather, collnet_on()) == "");
  CHECK(why(16, CollectiveKind::ReduceScatter, collnet_on()) == "");
  // A max of floats: NVLS's kernels cannot, whatever the network.
  CollectiveOptions mx = collnet_on();
  mx.reduce_op = ReduceOp::Max;
  CHECK(why(16, CollectiveKind::AllReduce, mx).find("NVLS has no max of float") != std::string::npos);
  // A fabric without SHARP.
  const Topology plain = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml",
                                       {{"node.count", "2"}, {"fabric.sharp", "none"}});
  CHECK(algorithm_unavailable_reason(plain, first(16), CollectiveKind::AllReduce, 0, collnet_on(), A::Nvls)
            .find("NVLS runs across nodes only with CollNet") == 0);
  // DGX A100 nodes cannot run NVLS inside.
  const Topology a100 =
      load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CollectiveOptions f16 = collnet_on();
  f16.datatype = DataType::Float16;
  CHECK(algorithm_unavailable_reason(a100, first(16), CollectiveKind::AllReduce, 0, f16, A::Nvls)
            .find("compute capability 8.0") != std::string::npos);
  // Forced where it cannot run: the ring, said.
  const CollectivePlan p = plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, 64 * kMiB, 0,
                                           [] { CollectiveOptions o; o.algorithm = A::Nvls; return o; }());
  CHECK(p.fallback);
  CHECK(p.algorithm == A::Ring);
}

TEST_CASE("NCCL's tuner model of NVLS across nodes: busBw = h · min(I/h · eta · (h−1)/h · 2, E/h), 25 + 18 us") {
  NcclTunerInputs in = dgx_h100_8_nodes_tuner_inputs();
  in.nvls = true;
  in.nvls_heads = 8;
  in.nvls_intra_Bps = 450e9;
  in.nvls_inter_Bps = 8 * 50e9;
  const double S = 1024 * kMiB;
  const double ratio = 64.0 / 126.0;
  // The rails bind: intra per head 56.25 GB/s · 0.85 · 7/8 · 2 = 83.7 GB/s > 50 GB/s.
  CHECK(nccl_model_allreduce_s(A::Nvls, Protocol::Simple, S, in) ==
        approx(43e-6 + S / (8 * 50e9 * ratio)).epsilon(1e-12));
  CHECK(nccl::kNvlsCollNetLatency == approx(43e-6).epsilon(1e-15));
  // Faster rails: the NVSwitch binds.
  in.nvls_inter_Bps = 8 * 200e9;
  CHECK(nccl_model_allreduce_s(A::Nvls, Protocol::Simple, S, in) ==
        approx(43e-6 + S / (8 * (450e9 / 8 * 0.85 * 7 / 8 * 2) * ratio)).epsilon(1e-12));
  CHECK(std::isinf(nccl_model_allreduce_s(A::Nvls, Protocol::LL128, S, in)));
  in.nvls = false;
  CHECK(std::isinf(nccl_model_allreduce_s(A::Nvls, Protocol::Simple, S, in)));
  // Inside one node this model does not rank NVLS (its closed forms do).
  in.nvls = true;
  in.nodes = 1;
  CHECK(std::isinf(nccl_model_allreduce_s(A::Nvls, Protocol::Simple, S, in)));
}

TEST_CASE("NVLS across nodes, closed form: 43 us + the slower of each node's NVLS port time and the rails' S/h") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  // Inside each node as NVLS alone: 1 GiB runs 64 loops of 16 MiB (128 KiB chunks), the pipeline
  // 64 + 2 loops through each GPU's 450 GB/s port at eta.
  const double intra = (64 + 2) * 16 * kMiB / kEta / 450e9;
  SUBCASE("the NVSwitch binds at full link rates") {
    const CollectivePlan p = plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 0,
                                             collnet_on(A::Nvls));
    REQUIRE(p.algorithm == A::Nvls);
    REQUIRE_FALSE(p.fallback);
    CHECK(p.protocol == Protocol::Simple);
    CHECK(p.channels == 16);
    CHECK(p.base_latency_s == approx(43e-6).epsilon(1e-12));
    // The rails: S / 8 over each 50 GB/s NIC, filled by two of a shard's first loops (16 channels
    // of 128 KiB: NCCL's tuner algbw, 8 · 50 GB/s · 16/30, is over 150 GB/s).
    const double inter = S / 8 / 50e9 * (1 + 2 * 16 * 131072 / (S / 8));
    REQUIRE(intra > inter);
    CHECK(p.closed_form_s() == approx(43e-6 + intra).epsilon(1e-9));
  }
  SUBCASE("half-rate NICs bind, on NCCL's 32 KiB chunk (its tuner algbw under 150 GB/s)") {
    LinkEfficiency eff;
    eff.network = 0.5;
    const CollectivePlan p =
        plan_collective(two, eff, first(16), CollectiveKind::AllReduce, S, 0, collnet_on(A::Nvls));
    REQUIRE(p.algorithm == A::Nvls);
    const double inter = S / 8 / 25e9 * (1 + 2 * 16 * 32768 / (S / 8));
    REQUIRE(inter > intra);
    CHECK(p.closed_form_s() == approx(43e-6 + inter).epsilon(1e-9));
  }
}

TEST_CASE("NVLS across nodes moves what it requires: S / eta through each GPU's switch port, S / 8 over each NIC") {
  const Topology two = h100_nodes(2);
  const double S = 256 * kMiB;
  const RankFlowBytes b = flow_bytes_per_rank(two, CollectiveKind::AllReduce, A::Nvls, S);
  for (int r = 0; r < 16; ++r) {
    CAPTURE(r);
    CHECK(b.intra_in[r] == approx(S / kEta).epsilon(1e-12));
    CHECK(b.inter_in[r] == approx(S / 8).epsilon(1e-12));
    CHECK(b.inter_out[r] == approx(S / 8).epsilon(1e-12));
  }
  const CollectivePlan p =
      plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 0, collnet_on(A::Nvls));
  CHECK(received_bytes_per_rank(p) == approx(S).epsilon(1e-12));
}

TEST_CASE("NVLS across nodes: flow == analytic, folded and unfolded") {
  const Topology topo = h100_nodes(4);
  for (bool unfold : {true, false})
    for (double size : {8.0, 1 * kMiB, 256 * kMiB}) {
      CAPTURE(unfold);
      CAPTURE(size);
      BenchOptions b;
      b.unfold = unfold;
      b.algorithm = A::Nvls;
      b.replay.collectives.collnet_enable = true;
      const FlowAnalytic t = flow_and_analytic(topo, BenchOp::AllReduce, 32, size, b);
      CHECK(t.flow == approx(t.analytic).epsilon(1e-9));
      CHECK(t.flow >= 43e-6);
    }
}

TEST_CASE("NVLS across nodes beside a pipeline send on a head's NIC: slower in flow, not in analytic") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  const auto run = [&](Fidelity f, bool with_send) {
    return makespan_beside_rail_send(two, CollectiveKind::AllReduce, A::Nvls, S, f, with_send);
  };
  CHECK(run(Fidelity::Flow, false) == approx(run(Fidelity::Analytic, false)).epsilon(1e-9));
  CHECK(run(Fidelity::Flow, true) > run(Fidelity::Analytic, true));
}

TEST_CASE("NVLS across nodes in Auto: NCCL's tuner ranks it first for large AllReduces with CollNet, never without") {
  const Topology eight = h100_nodes(8);
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const std::vector<int> all = first(64);
  for (double size : {64 * kMiB, 1024 * kMiB}) {
    CAPTURE(size);
    CHECK(plan_collective(eight, eff, all, CollectiveKind::AllReduce, size, 0, collnet_on()).algorithm == A::Nvls);
    const A off = plan_collective(eight, eff, all, CollectiveKind::AllReduce, size, 0, CollectiveOptions{}).algorithm;
    CHECK(off != A::Nvls);
  }
  // NCCL_ALGO without NVLS: CollNet's chain, which the tuner ranks next.
  CollectiveOptions o = collnet_on();
  parse_nccl_algo_list("^nvls", o.allowed);
  CHECK(plan_collective(eight, eff, all, CollectiveKind::AllReduce, 1024 * kMiB, 0, o).algorithm == A::CollnetChain);
  // An AllGather of 1 GiB: the ring, whose busBw NCCL's model puts above NVLS's across nodes
  // (which wins small ones: tests/nvls_collnet_gather_test.cpp).
  CHECK(plan_collective(eight, eff, all, CollectiveKind::AllGather, 1024 * kMiB, 0, collnet_on()).algorithm ==
        A::Ring);
}

TEST_CASE("collective --compare: a log run with NCCL_COLLNET_ENABLE=1, or NCCL_ALGO=NVLS across nodes, runs CollNet") {
  // A 2-node all_reduce_perf log of 16 H100s with NCCL's INFO lines.
  const std::string info = "dgx-h100-01:70110:70145 [0] NCCL INFO ";
  const std::string topo = " -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare ";
  SUBCASE("NCCL_ALGO=NVLS: NVLS with CollNet, which it needed") {
    const std::string path = temp_path("all_reduce_perf.log");
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_ALGO set by environment to NVLS\n");
    const Run r = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: NCCL_ALGO=NVLS as the log ran it") != std::string::npos);
    CHECK(r.output.find("# note: NCCL_COLLNET_ENABLE=1, which NCCL_ALGO=NVLS needs across nodes") !=
          std::string::npos);
    CHECK(r.output.find("nvls/Simple/16") != std::string::npos);
    CHECK(r.output.find("ring/") == std::string::npos);
    CHECK(r.output.find("warning") == std::string::npos);
    std::remove(path.c_str());
  }
  SUBCASE("NCCL_COLLNET_ENABLE=0 beside NCCL_ALGO=NVLS: CollNet stays off, NVLS cannot run, said") {
    const std::string path = temp_path("all_reduce_perf.log");
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_COLLNET_ENABLE set by environment to 0.\n" +
                                                  info + "NCCL_ALGO set by environment to NVLS\n");
    const Run r = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: the log set NCCL_COLLNET_ENABLE=0, with which NCCL cannot run NCCL_ALGO=NVLS "
                        "across nodes") != std::string::npos);
    CHECK(r.output.find("nvls/") == std::string::npos);
    // The fallback is the log's NCCL_ALGO's, not an --algo the user gave.
    CHECK(r.output.find("# note: the log's NCCL_ALGO=nvls did not run at 2 of 2 size(s), ring ran instead") !=
          std::string::npos);
    CHECK(r.output.find("--algo nvls") == std::string::npos);
    std::remove(path.c_str());
  }
  SUBCASE("--collnet beside a log that set NCCL_COLLNET_ENABLE=0: CollNet on, the flag said in its place") {
    const std::string path = temp_path("all_reduce_perf.log");
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_COLLNET_ENABLE set by environment to 0.\n" +
                                                  info + "NCCL_ALGO set by environment to NVLS\n");
    const Run r = run_cli("collective --fidelity analytic --collnet" + topo + path);
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: --collnet in place of the log's NCCL_COLLNET_ENABLE=0") != std::string::npos);
    CHECK(r.output.find("nvls/Simple/16") != std::string::npos);
    CHECK(r.output.find("with which NCCL cannot run") == std::string::npos);
    // Without the log's setting the flag replaces nothing: no such note.
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_ALGO set by environment to NVLS\n");
    const Run unset = run_cli("collective --fidelity analytic --collnet" + topo + path);
    REQUIRE(unset.status == 0);
    CHECK(unset.output.find("in place of the log's NCCL_COLLNET_ENABLE") == std::string::npos);
    std::remove(path.c_str());
  }
  SUBCASE("a list naming CollNet and NVLS: CollNet on as for one name, off with a '^' list or the log's 0") {
    const std::string path = temp_path("all_reduce_perf.log");
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_ALGO set by environment to collnetchain,nvls\n");
    const Run r = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: NCCL_COLLNET_ENABLE=1, which the CollNetChain and NVLS across nodes of "
                        "NCCL_ALGO=collnetchain,nvls need") != std::string::npos);
    CHECK(r.output.find("ring/") == std::string::npos);
    CHECK(r.output.find("did not run") == std::string::npos);
    // The log's 0: said, and the list leaves nothing that can run (the ring, said).
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_COLLNET_ENABLE set by environment to 0.\n" +
                                                  info + "NCCL_ALGO set by environment to collnetchain,nvls\n");
    const Run off = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(off.status == 0);
    CAPTURE(off.output);
    CHECK(off.output.find("# note: the log set NCCL_COLLNET_ENABLE=0, with which NCCL cannot run the CollNetChain "
                          "and NVLS across nodes of NCCL_ALGO=collnetchain,nvls") != std::string::npos);
    CHECK(off.output.find("collnetchain/") == std::string::npos);
    CHECK(off.output.find("nvls/") == std::string::npos);
    // '^ring' enables CollNet without naming it: NCCL ran it only with NCCL_COLLNET_ENABLE=1,
    // which this log does not say.
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_ALGO set by environment to ^ring\n");
    const Run neg = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(neg.status == 0);
    CAPTURE(neg.output);
    CHECK(neg.output.find("NCCL_COLLNET_ENABLE") == std::string::npos);
    CHECK(neg.output.find("collnet") == std::string::npos);
    CHECK(neg.output.find("nvls/") == std::string::npos);
    std::remove(path.c_str());
  }
  SUBCASE("NCCL_COLLNET_ENABLE=1: Auto ranks CollNet and NVLS across nodes") {
    const std::string path = temp_path("all_reduce_perf.log");
    // As NCCL prints it (src/init.cc: "... to %d.").
    std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL_COLLNET_ENABLE set by environment to 1.\n");
    const Run r = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: NCCL_COLLNET_ENABLE=1 as the log ran it") != std::string::npos);
    CHECK(r.output.find("nvls/Simple/16") != std::string::npos);
    // Without it, the same log runs NVLS_TREE at 64 MiB.
    std::ofstream(path) << h100_2x8_allreduce_log("");
    const Run off = run_cli("collective --fidelity analytic" + topo + path);
    REQUIRE(off.status == 0);
    CHECK(off.output.find("nvls/") == std::string::npos);
    CHECK(off.output.find("NCCL_COLLNET_ENABLE") == std::string::npos);
    std::remove(path.c_str());
  }
}

TEST_CASE("collective --unfold: NVLS across nodes runs no ring, so 1024 GPUs are not refused, without CollNet they are") {
  const std::string args = "collective --op allreduce -t " + kSrc +
                           "/topologies/dgx-h100-superpod.yaml --override node.count=128 --sizes 1MiB:1MiB --unfold "
                           "--algo nvls";
  const Run on = run_cli(args + " --collnet");
  REQUIRE(on.status == 0);
  CHECK(on.output.find("nvls/Simple/16") != std::string::npos);
  // Without --collnet NVLS falls back to the ring of every rank: refused, as any such ring.
  const Run off = run_cli(args);
  CHECK(off.status == 2);
  CHECK(off.output.find("--unfold: a ring of every rank") != std::string::npos);
}

TEST_CASE("NVLS forced across A100 nodes: the nodes' own reason first, with CollNet or without") {
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CollectiveOptions half;
  half.datatype = DataType::Float16;
  for (bool collnet : {false, true}) {
    CAPTURE(collnet);
    half.collnet_enable = collnet;
    CHECK(algorithm_unavailable_reason(a100, first(16), CollectiveKind::AllReduce, 0, half, A::Nvls)
              .find("NVLS across nodes runs NVLS inside each node, and there NVLS needs Hopper-or-later GPUs") == 0);
  }
}
