// NVLS AllGather and ReduceScatter across nodes (NCCL's NVLS algorithm with CollNet's AllGather
// and ReduceScatter, "NVLS + IB SHARP": NVLink SHARP inside each Hopper node, the network's
// SHARP 3 between them; collective_plan.hpp, NVLS across nodes): where they run, NCCL's tuner
// model of them, the closed form, the bytes their flows move, flow against analytic, contention
// and where Auto takes them.
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

// NCCL's NVLS efficiency on Hopper over 16 channels (nvlsEfficiency · 15/16).
constexpr double kEta = 0.85 * 15 / 16;

}  // namespace

TEST_CASE("NVLS AllGather and ReduceScatter run across nodes with CollNet's, on SHARP 3, on nodes that run NVLS") {
  const Topology two = h100_nodes(2);
  const auto why = [&](const Topology& t, K k, const CollectiveOptions& o) {
    return algorithm_unavailable_reason(t, first(16), k, 0, o, A::Nvls);
  };
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    CHECK(why(two, k, collnet_on()) == "");
    CHECK(why(two, k, CollectiveOptions{}) ==
          "NVLS runs across nodes only with CollNet (NVLSTree runs without): CollNet needs NCCL_COLLNET_ENABLE=1 "
          "(collective --collnet, nccl.collnet_enable)");
    // SHARP 2 switches have no AllGather or ReduceScatter for CollNet's communicator.
    CHECK(why(h100_nodes(2, {{"fabric.sharp", "2"}}), k, collnet_on()) ==
          "NVLS runs across nodes only with CollNet (NVLSTree runs without): CollNet runs an AllGather or "
          "ReduceScatter on SHARP 3 switches, and the topology's fabric.sharp is 2");
    // Nodes of one GPU each cannot run NVLS inside, whatever the network.
    const Topology four = h100_nodes(4);
    const std::vector<int> one_a_node = {0, 8, 16, 24};
    CHECK(algorithm_unavailable_reason(four, one_a_node, k, 0, collnet_on(), A::Nvls) ==
          "NVLS across nodes runs NVLS inside each node, and there NVLS needs 3 or more GPUs, found 1");
  }
  // A ReduceScatter reduces in both switches: a max of floats NVLS's kernels cannot do.
  CollectiveOptions mx = collnet_on();
  mx.reduce_op = ReduceOp::Max;
  CHECK(why(two, K::ReduceScatter, mx).find("NVLS has no max of float") != std::string::npos);
  CHECK(why(two, K::AllGather, mx) == "");
  // DGX A100 nodes cannot run NVLS inside: said before the network.
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(algorithm_unavailable_reason(a100, first(16), K::AllGather, 0, collnet_on(), A::Nvls)
            .find("compute capability 8.0") != std::string::npos);
  // Forced where it cannot run: the ring, marked.
  const CollectivePlan p =
      plan_collective(two, LinkEfficiency{}, first(16), K::AllGather, 64 * kMiB, 0, CollectiveOptions{});
  CHECK(p.algorithm != A::Nvls);
  CollectiveOptions forced;
  forced.algorithm = A::Nvls;
  const CollectivePlan q = plan_collective(two, LinkEfficiency{}, first(16), K::AllGather, 64 * kMiB, 0, forced);
  CHECK(q.algorithm == A::Ring);
  CHECK(q.fallback);
}

TEST_CASE("NCCL's tuner model of NVLS AllGather across nodes: h · min(I/h · eta · (h−1)/h · (ppn−1)/ppn, E/h), 43 us") {
  NcclTunerInputs in = dgx_h100_8_nodes_tuner_inputs();
  in.nvls = true;
  in.nvls_heads = 8;
  in.nvls_intra_Bps = 450e9;
  in.nvls_inter_Bps = 8 * 50e9;
  in.collnet = true;
  in.collnet_heads = 8;
  in.collnet_intra_Bps = 450e9;
  in.collnet_inter_Bps = 50e9;
  const double S = 1024 * kMiB;
  const double eta = 0.85;  // nvlsEfficiency (the channels' (h − 1)/h is the heads' here)
  // The port binds: 450 · 0.85 · 7/8 · 7/8 = 292.9 GB/s < 400; not converted to algbw.
  const double bus = 450e9 * eta * 7.0 / 8 * 7.0 / 8;
  CHECK(nccl_model_allgather_s(A::Nvls, Protocol::Simple, S, in) == approx(43e-6 + S / bus).epsilon(1e-12));
  in.nvls_inter_Bps = 8 * 25e9;
  CHECK(nccl_model_allgather_s(A::Nvls, Protocol::Simple, S, in) == approx(43e-6 + S / 200e9).epsilon(1e-12));
  CHECK(std::isinf(nccl_model_allgather_s(A::Nvls, Protocol::LL128, S, in)));
  // Without CollNet, or with more GPUs a node than CollNet's heads: none.
  in.collnet_heads = 4;
  CHECK(std::isinf(nccl_model_allgather_s(A::Nvls, Protocol::Simple, S, in)));
  in.collnet_heads = 8;
  in.collnet = false;
  CHECK(std::isinf(nccl_model_allgather_s(A::Nvls, Protocol::Simple, S, in)));
  // It comes after CollNetDirect in NCCL's order, and wins only where its latency does (43 us
  // against CollNetDirect's 44 us, a lesser busBw: 292.9 against 8 · 45 = 360 GB/s).
  in.collnet = true;
  in.algorithms = algorithm_bit(A::Ring) | algorithm_bit(A::CollnetDirect) | algorithm_bit(A::Nvls);
  CHECK(nccl_model_allgather_algorithm(64 * 1024, in) == A::Nvls);
  CHECK(nccl_model_allgather_algorithm(64 * kMiB, in) == A::CollnetDirect);
}

TEST_CASE("NVLS AllGather across nodes, closed form: 43 us + the slower of each node's NVLS port time and the rails' S/h") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const CollectivePlan p = plan_collective(two, LinkEfficiency{}, first(16), k, S, 0, collnet_on(A::Nvls));
    REQUIRE(p.algorithm == A::Nvls);
    REQUIRE_FALSE(p.fallback);
    CHECK(p.kind == k);
    CHECK(p.protocol == Protocol::Simple);
    CHECK(p.channels == 16);
    CHECK(p.base_latency_s == approx(43e-6).epsilon(1e-12));
    // Inside each node as NVLS alone of the same collective (its two-stage pipeline, 25 us of
    // latency aside): S / eta at 450 GB/s (2.99 ms) binds the rails' S / 8 at 50 GB/s (2.68 ms
    // with its fill of a 128 KiB chunk of each of 16 channels, there and back).
    CollectiveOptions in_node;
    in_node.algorithm = A::Nvls;
    const CollectivePlan alone = plan_collective(two, LinkEfficiency{}, first(8), k, S, 0, in_node);
    REQUIRE(alone.algorithm == A::Nvls);
    CHECK(p.closed_form_s() == approx(43e-6 + alone.closed_form_s() - 25e-6).epsilon(1e-12));
    const double rails_s = S / 8 / 50e9 * (1 + 2.0 * 16 * 131072 / (S / 8));
    CHECK(p.closed_form_s() > 43e-6 + rails_s);
  }
  // An AllGather's node pipeline has two stages, an AllReduce's three: the AllGather is quicker
  // by one loop's fill at this size.
  const CollectivePlan ag = plan_collective(two, LinkEfficiency{}, first(16), K::AllGather, S, 0, collnet_on(A::Nvls));
  const CollectivePlan ar = plan_collective(two, LinkEfficiency{}, first(16), K::AllReduce, S, 0, collnet_on(A::Nvls));
  REQUIRE(ar.algorithm == A::Nvls);
  CHECK(ag.closed_form_s() < ar.closed_form_s());
}

TEST_CASE("NVLS AllGather and ReduceScatter across nodes move S / eta through each GPU's switch port, S / 8 over each NIC") {
  const Topology two = h100_nodes(2);
  const double S = 256 * kMiB;
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const RankFlowBytes b = flow_bytes_per_rank(two, k, A::Nvls, S);
    for (int r = 0; r < 16; ++r) {
      CAPTURE(r);
      CHECK(b.intra_in[r] == approx(S / kEta).epsilon(1e-12));
      CHECK(b.intra_out[r] == approx(S / kEta).epsilon(1e-12));
      CHECK(b.inter_in[r] == approx(S / 8).epsilon(1e-12));
      CHECK(b.inter_out[r] == approx(S / 8).epsilon(1e-12));
    }
  }
}

TEST_CASE("NVLS AllGather and ReduceScatter across nodes: flow == analytic, folded and unfolded") {
  const Topology topo = h100_nodes(4);
  for (BenchOp op : {BenchOp::AllGather, BenchOp::ReduceScatter})
    for (bool unfold : {true, false})
      for (double size : {32.0 * 8, 1 * kMiB, 256 * kMiB}) {
        CAPTURE(static_cast<int>(op));
        CAPTURE(unfold);
        CAPTURE(size);
        BenchOptions b;
        b.unfold = unfold;
        b.algorithm = A::Nvls;
        b.replay.collectives.collnet_enable = true;
        const FlowAnalytic t = flow_and_analytic(topo, op, 32, size, b);
        CHECK(t.flow == approx(t.analytic).epsilon(1e-9));
        CHECK(t.flow >= 43e-6);
      }
}

TEST_CASE("NVLS AllGather across nodes beside a pipeline send into a NIC: slower in flow, not in analytic") {
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  const auto run = [&](Fidelity f, bool with_send) {
    return makespan_beside_rail_send(two, K::AllGather, A::Nvls, S, f, with_send);
  };
  CHECK(run(Fidelity::Flow, false) == approx(run(Fidelity::Analytic, false)).epsilon(1e-9));
  CHECK(run(Fidelity::Flow, true) > run(Fidelity::Analytic, true));
}

TEST_CASE("NVLS AllGather and ReduceScatter across nodes in Auto: small sizes with CollNet, never without") {
  const Topology eight = h100_nodes(8);
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const std::vector<int> all = first(64);
  for (K k : {K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    // NCCL's model: NVLS's 43 us against CollNetDirect's 44 us below 1 MiB here, then
    // CollNetDirect's busBw to 512 MiB, then the ring's.
    for (double size : {4096.0, 64 * 1024.0, 512 * 1024.0})
      CHECK(plan_collective(eight, eff, all, k, size, 0, collnet_on()).algorithm == A::Nvls);
    for (double size : {4 * kMiB, 256 * kMiB})
      CHECK(plan_collective(eight, eff, all, k, size, 0, collnet_on()).algorithm == A::CollnetDirect);
    CHECK(plan_collective(eight, eff, all, k, 4096 * kMiB, 0, collnet_on()).algorithm == A::Ring);
    CHECK(plan_collective(eight, eff, all, k, 64 * 1024.0, 0, CollectiveOptions{}).algorithm != A::Nvls);
    // NCCL_ALGO without CollNetDirect: NVLS where it beats the ring in NCCL's model.
    CollectiveOptions o = collnet_on();
    parse_nccl_algo_list("^collnetdirect", o.allowed);
    CHECK(plan_collective(eight, eff, all, k, 64 * kMiB, 0, o).algorithm == A::Nvls);
    CollectiveOptions no_nvls = collnet_on();
    parse_nccl_algo_list("^nvls", no_nvls.allowed);
    CHECK(plan_collective(eight, eff, all, k, 64 * 1024.0, 0, no_nvls).algorithm == A::CollnetDirect);
  }
}

TEST_CASE("import-nccl-tests: NCCL's TUNING lines choosing NVLS for a ReduceScatter across nodes make a rule, with CollNet") {
  // NCCL's algorithm 4 is NVLS, protocol 2 Simple (src/include/device.h).
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string path = temp_path("reduce_scatter_perf.log");
  std::ofstream(path) << "dgx-h100-01:70110:70145 [0] NCCL INFO ReduceScatter: 65536 Bytes -> Algo 4 proto 2 time "
                         "20.000000\n"
                      << base;
  const ImportResult r = import_nccl_tests({path}, ImportOptions{});
  REQUIRE(r.profile.tuning.size() == 1);
  CHECK(r.profile.tuning[0].kind == K::ReduceScatter);
  CHECK(r.profile.tuning[0].algorithm == A::Nvls);
  // NCCL ran NVLS across nodes, which needs CollNet: the log's fit is of a job with it on.
  REQUIRE(r.profile.collectives.size() == 1);
  CHECK(r.profile.collectives[0].collnet_enable);
}

TEST_CASE("collective --compare: a 2-node ReduceScatter log that ran NCCL_ALGO=NVLS runs NVLS across nodes, with CollNet") {
  const std::string base = slurp(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const std::string info = "dgx-h100-01:70110:70145 [0] NCCL INFO ";
  const std::string path = temp_path("reduce_scatter_perf.log");
  const auto compare = [&](const std::string& lines) {
    std::ofstream(path) << lines << base;
    return run_cli("collective --fidelity analytic -t " + kSrc +
                   "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare " + path);
  };
  SUBCASE("the log's NCCL: NVLS with CollNet, which it needed") {
    const Run r = compare(info + "NCCL_ALGO set by environment to NVLS\n");
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find("# note: NCCL_ALGO=NVLS as the log ran it") != std::string::npos);
    CHECK(r.output.find("# note: NCCL_COLLNET_ENABLE=1, which NCCL_ALGO=NVLS needs across nodes") != std::string::npos);
    CHECK(r.output.find("nvls/Simple/16") != std::string::npos);
    CHECK(r.output.find("ring/") == std::string::npos);
  }
  const std::string v218 = info + "NCCL version 2.18.5+cuda12.2\n";
  const std::string on = info + "NCCL_COLLNET_ENABLE set by environment to 1.\n";
  const char* const lacks = "NCCL 2.18.5 (the log's) cannot run NVLS across nodes for reduce_scatter (it came in NCCL 2.20)";
  SUBCASE("NCCL 2.18 had no NVLS ReduceScatter across nodes: its NCCL_ALGO=NVLS runs the ring, said, CollNet or not") {
    for (const std::string& collnet : {std::string(), on}) {
      CAPTURE(collnet);
      const Run r = compare(v218 + collnet + info + "NCCL_ALGO set by environment to NVLS\n");
      REQUIRE(r.status == 0);
      CAPTURE(r.output);
      CHECK(r.output.find("NCCL_COLLNET_ENABLE=1, which") == std::string::npos);
      CHECK(r.output.find(std::string("# note: the log ran NCCL_ALGO=NVLS, which ") + lacks + ": the ring here") !=
            std::string::npos);
      CHECK(r.output.find("nvls/") == std::string::npos);
      CHECK(r.output.find("ring/") != std::string::npos);
    }
  }
  SUBCASE("NCCL 2.18, a list naming NVLS, CollNet on: NVLS left out, said") {
    const Run r = compare(v218 + on + info + "NCCL_ALGO set by environment to nvls,ring\n");
    REQUIRE(r.status == 0);
    CAPTURE(r.output);
    CHECK(r.output.find(std::string("# note: ") + lacks + ": left out here") != std::string::npos);
    CHECK(r.output.find("nvls/") == std::string::npos);
  }
  SUBCASE("NCCL 2.18, CollNet on: --algo auto leaves out what the default does") {
    std::ofstream(path) << v218 << on << base;
    const std::string cmd = "collective --fidelity analytic -t " + kSrc +
                            "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare " + path;
    const Run plain = run_cli(cmd), automatic = run_cli(cmd + " --algo auto");
    REQUIRE(plain.status == 0);
    REQUIRE(automatic.status == 0);
    CAPTURE(automatic.output);
    for (const Run* r : {&plain, &automatic}) {
      CHECK(r->output.find(std::string("# note: ") + lacks + ": left out here") != std::string::npos);
      CHECK(r->output.find("collnetdirect/") == std::string::npos);
      CHECK(r->output.find("nvls/") == std::string::npos);
    }
  }
}

TEST_CASE("collective --compare: an AllReduce log of NCCL 2.17 across nodes runs no NVLS across nodes, nor NVLSTree") {
  const std::string info = "dgx-h100-01:70110:70145 [0] NCCL INFO ";
  const std::string path = temp_path("all_reduce_perf.log");
  std::ofstream(path) << h100_2x8_allreduce_log(info + "NCCL version 2.17.1+cuda12.1\n" + info +
                                                "NCCL_COLLNET_ENABLE set by environment to 1.\n");
  const Run r = run_cli("collective --fidelity analytic -t " + kSrc +
                        "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare " + path);
  REQUIRE(r.status == 0);
  CAPTURE(r.output);
  CHECK(r.output.find("# note: NCCL 2.17.1 (the log's) cannot run NVLS across nodes for all_reduce (it came in NCCL "
                      "2.18): left out here") != std::string::npos);
  CHECK(r.output.find("# note: NCCL 2.17.1 (the log's) cannot run NVLSTree for all_reduce (it came in NCCL 2.18): left "
                      "out here") != std::string::npos);
  CHECK(r.output.find("nvls/") == std::string::npos);
  CHECK(r.output.find("nvlstree/") == std::string::npos);
}

TEST_CASE("collective --compare: --algo naming what the log's NCCL did not have runs as that NCCL ran it, the ring") {
  // (regression: --algo nvls on an NCCL 2.18.5 AllGather log ran NVLS, which came in 2.19)
  const std::string cmd = "collective --fidelity analytic -t " + kSrc +
                          "/topologies/dgx-h100-superpod.yaml --override node.count=1 --compare " + kSrc +
                          "/tests/data/nccl-tests/all_gather_perf_8xh100.log --algo ";
  const Run one = run_cli(cmd + "nvls");
  REQUIRE(one.status == 0);
  CAPTURE(one.output);
  CHECK(one.output.find("# note: --algo nvls: NCCL 2.18.5 (the log's) cannot run NVLS for all_gather (it came in NCCL "
                        "2.19): the ring here, as that NCCL ran NCCL_ALGO=nvls") != std::string::npos);
  CHECK(one.output.find("nvls/") == std::string::npos);
  CHECK(one.output.find("ring/") != std::string::npos);
  // A list given by the flag leaves it out, as the log's own list would.
  const Run list = run_cli(cmd + "nvls,ring");
  REQUIRE(list.status == 0);
  CHECK(list.output.find("# note: NCCL 2.18.5 (the log's) cannot run NVLS for all_gather (it came in NCCL 2.19): left "
                         "out here") != std::string::npos);
  CHECK(list.output.find("nvls/") == std::string::npos);
}

TEST_CASE("NVLS across nodes on forced channels: the fewer of NCCL's NVLS channels and the communicator's") {
  // src/enqueue.cc: nc = min(nvlsChannels, comm->nChannels) across nodes, and NCCL_MIN/MAX_NCHANNELS
  // set comm->nChannels (src/graph/connect.cc); inside one node NVLS keeps its own 16.
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  for (K k : {K::AllReduce, K::AllGather, K::ReduceScatter}) {
    CAPTURE(static_cast<int>(k));
    const CollectivePlan all16 = plan_collective(two, LinkEfficiency{}, first(16), k, S, 0, collnet_on(A::Nvls));
    const CollectivePlan c8 = plan_collective(two, LinkEfficiency{}, first(16), k, S, 8, collnet_on(A::Nvls));
    const CollectivePlan c32 = plan_collective(two, LinkEfficiency{}, first(16), k, S, 32, collnet_on(A::Nvls));
    REQUIRE(c8.algorithm == A::Nvls);
    CHECK(all16.channels == 16);
    CHECK(c8.channels == 8);
    CHECK(c32.channels == 16);
    // Fewer channels, less of NCCL's NVLS efficiency ((C − 1)/C): slower through the ports.
    CHECK(c8.closed_form_s() > all16.closed_form_s());
    CHECK(c32.closed_form_s() == approx(all16.closed_form_s()).epsilon(1e-12));
  }
  CollectiveOptions in_node;
  in_node.algorithm = A::Nvls;
  CHECK(plan_collective(two, LinkEfficiency{}, first(8), K::AllGather, S, 8, in_node).channels == 16);
  // The collective command says where --channels leaves NVLS's channels as they are.
  const Run one = run_cli("collective --op allreduce -t " + kSrc +
                          "/topologies/dgx-h100-superpod.yaml --override node.count=1 --sizes 1GiB:1GiB --channels 4");
  REQUIRE(one.status == 0);
  CHECK(one.output.find("# note: --channels 4: the 1 size(s) run on NVLS or NVLSTree use NCCL's NVLS channels, which "
                        "NCCL_MIN/MAX_NCHANNELS do not set") != std::string::npos);
  const Run across = run_cli("collective --op allgather -t " + kSrc +
                             "/topologies/dgx-h100-superpod.yaml --override node.count=2 --sizes 1GiB:1GiB --collnet "
                             "--algo nvls --channels 8");
  REQUIRE(across.status == 0);
  CHECK(across.output.find("nvls/Simple/8") != std::string::npos);
  CHECK(across.output.find("--channels 8:") == std::string::npos);
}
