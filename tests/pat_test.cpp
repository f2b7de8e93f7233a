// NCCL's PAT AllGather and ReduceScatter over one GPU per node (collective_plan.hpp, PAT): NCCL's
// tuner model of it, where Auto picks it, its closed form, its flows and their bytes, and what
// happens beside other traffic.
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// `nodes` H100 nodes of one GPU each (one NIC each) on the SuperPOD's fat tree.
Topology one_gpu_nodes(int nodes) {
  return load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml",
                       {{"node.count", std::to_string(nodes)}, {"node.gpus.count", "1"}});
}

/// NCCL's tuner inputs for a PAT-capable group: n ranks on n nodes, graph busbw B.
NcclTunerInputs inputs(int n, double B) {
  NcclTunerInputs in;
  in.ranks = in.nodes = n;
  in.cc_index = 2;  // Hopper
  in.graph_channels = 2;
  in.graph_busbw_Bps = B;
  in.comm_channels = 2;
  return in;
}

}  // namespace

TEST_CASE("NCCL's tuner model of PAT: 8 us + log2(n) x 14 us / 3.5 + n x 2.8 us, at 0.75 of the graph's busbw") {
  const double B = 48e9, S = 4 * kMiB;
  for (int n : {2, 5, 16, 128}) {
    CAPTURE(n);
    const NcclTunerInputs in = inputs(n, B);
    const double lat = 8e-6 + std::floor(std::log2(n)) * 14e-6 / 3.5 + n * 2.8e-6;
    CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Pat, Protocol::Simple, S, in) ==
          approx(lat + S / (0.75 * B)).epsilon(1e-12));
    // PAT runs Simple only; the ring at NCCL's ring model: baseLat 8.4 us + (n − 1) network steps
    // at the tree's 14 us (one rank a node), algbw busBw · n / (n − 1), no plateau factor.
    CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Pat, Protocol::LL, S, in) == kInf);
    CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Ring, Protocol::Simple, S, in) ==
          approx(8.4e-6 + (n - 1) * 14e-6 + S / (B * n / (n - 1.0))).epsilon(1e-12));
    CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Ring, Protocol::LL, S, in) ==
          approx(6.6e-6 + (n - 1) * 5e-6 + S / (std::min(n == 2 ? 39e9 : 20.4e9, B / 2) * n / (n - 1.0)))
              .epsilon(1e-12));
  }
  // A node holding two of the ranks: no PAT (NCCL: "PAT only supports 1 GPU per node").
  NcclTunerInputs two_a_node = inputs(16, B);
  two_a_node.nodes = 8;
  CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Pat, Protocol::Simple, S, two_a_node) == kInf);
  CHECK(nccl_model_allgather_algorithm(S, two_a_node) == CollectiveAlgorithm::Ring);
}

TEST_CASE("NCCL's tuner ranks PAT first below a size that grows with the ranks, the ring above") {
  const double B = 48e9;
  for (int n : {16, 128}) {
    CAPTURE(n);
    const NcclTunerInputs in = inputs(n, B);
    // Where PAT and the ring meet with Simple alone (NCCL_PROTO=Simple): their latencies'
    // difference over their inverse bandwidths'.
    const double d_lat = (8.4e-6 + (n - 1) * 14e-6) - (8e-6 + std::floor(std::log2(n)) * 4e-6 + n * 2.8e-6);
    const double cross = d_lat / (1 / (0.75 * B) - 1 / (B * n / (n - 1.0)));
    Protocol simple = Protocol::Simple, ll = Protocol::LL;
    NcclTunerInputs only_simple = in;
    only_simple.only_protocol = &simple;
    CHECK(nccl_model_allgather_algorithm(0.99 * cross, only_simple) == CollectiveAlgorithm::Pat);
    CHECK(nccl_model_allgather_algorithm(1.01 * cross, only_simple) == CollectiveAlgorithm::Ring);
    // Every protocol ranked: PAT beats the ring's LL at 64 KiB (16 ranks: 70.6 us against 84.6),
    // the ring's LL128 and Simple win at 1 GiB.
    CHECK(nccl_model_allgather_algorithm(65536, in) == CollectiveAlgorithm::Pat);
    CHECK(nccl_model_allgather_algorithm(1024 * kMiB, in) == CollectiveAlgorithm::Ring);
    NcclTunerInputs only_ll = in;
    only_ll.only_protocol = &ll;  // NCCL_PROTO=LL: PAT is out
    CHECK(nccl_model_allgather_algorithm(65536, only_ll) == CollectiveAlgorithm::Ring);
  }
}

TEST_CASE("PAT closed form: NCCL's latency plus the slower of its kernel's ceiling and its flows' busiest link") {
  const Topology topo = one_gpu_nodes(16);
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Pat;
  const std::vector<int> ranks = first(16);
  const NcclTunerInputs in = plan_detail::tuner_inputs(topo, eff, ranks, 16, CollectiveKind::AllGather, o);
  REQUIRE(in.graph_busbw_Bps > 0);
  const double lat = 8e-6 + 4 * 14e-6 / 3.5 + 16 * 2.8e-6;
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
    for (double S : {8.0, 1 * kMiB, 64 * kMiB}) {
      CAPTURE(S);
      const CollectivePlan p = plan_collective(topo, eff, ranks, kind, S, 0, o);
      REQUIRE(p.algorithm == CollectiveAlgorithm::Pat);
      CHECK(p.protocol == Protocol::Simple);
      CHECK(p.base_latency_s == approx(lat).epsilon(1e-12));
      CHECK(p.sm_blocks == in.comm_channels);
      // Each GPU's one NIC carries the n − 1 parts it receives (and those it sends): (n − 1)/n · S
      // over the NIC, below the kernel's S / (0.75 B) since B is that NIC's bandwidth.
      const double kernel = S / (0.75 * in.graph_busbw_Bps);
      CHECK(p.closed_form_s() == approx(lat + kernel).epsilon(1e-12));
      CHECK(received_bytes_per_rank(p) == approx(15.0 / 16 * S).epsilon(1e-12));
    }
  // NICs at a fifth of their speed while the kernel's ceiling stays NCCL's graph's (computed at
  // full speed): the NIC binds, (n − 1)/n · S over a fifth of 400 Gb/s after efficiency.
  LinkEfficiency slow = eff;
  slow.network = eff.network / 5;
  const double S = 64 * kMiB;
  CollectivePlan p = plan_detail::plan_pat(topo, slow, ranks, CollectiveKind::AllGather, S, 0, in);
  CHECK(p.closed_form_s() == approx(lat + 15.0 / 16 * S / (50e9 * slow.network)).epsilon(1e-9));
}

TEST_CASE("PAT's flows move exactly what it requires: every member sends and receives n − 1 parts of S / n") {
  for (int n : {2, 3, 5, 6, 8, 16, 300}) {
    CAPTURE(n);
    const Topology topo = one_gpu_nodes(n);
    CollectiveOptions o;
    o.algorithm = CollectiveAlgorithm::Pat;
    const double S = 96 * kMiB;
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
      const CollectivePlan p = plan_collective(topo, {}, first(n), kind, S, 0, o);
      REQUIRE(p.algorithm == CollectiveAlgorithm::Pat);
      std::vector<double> sent(n, 0.0), received(n, 0.0);
      for (const CollectivePlan::BulkFlow& f : p.bulk) {
        CHECK(f.src_pos != f.dst_pos);
        sent[f.src_pos] += f.bytes;
        received[f.dst_pos] += f.bytes;
      }
      // ceil(log2 n) distances, one flow per member at each; past kMaxPatFlows one flow per
      // member to its neighbour (300 members: 2,700 flows of the exchange).
      const long long exchange = n * static_cast<long long>(std::ceil(std::log2(n)));
      if (exchange <= kMaxPatFlows) {
        CHECK(p.bulk.size() == static_cast<size_t>(exchange));
      } else {
        CHECK(p.bulk.size() == static_cast<size_t>(n));
        for (const CollectivePlan::BulkFlow& f : p.bulk)
          CHECK((f.dst_pos - f.src_pos + n) % n == (kind == CollectiveKind::AllGather ? 1 : n - 1));
      }
      for (int i = 0; i < n; ++i) {
        CHECK(sent[i] == approx((n - 1.0) / n * S).epsilon(1e-12));
        CHECK(received[i] == approx((n - 1.0) / n * S).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("PAT: Auto takes it where NCCL's tuner ranks it first, and never where it cannot run") {
  const Topology topo = one_gpu_nodes(16);
  CollectiveOptions o;  // Auto
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    CHECK(plan_collective(topo, {}, first(16), kind, 1 * kMiB, 0, o).algorithm == CollectiveAlgorithm::Pat);
    CHECK(plan_collective(topo, {}, first(16), kind, 1024 * kMiB, 0, o).algorithm == CollectiveAlgorithm::Ring);
  }
  // Not for AllReduce (forced: the ring), nor where a node holds two members, nor with LL
  // forced, nor in the textbook model.
  CollectiveOptions pat = o;
  pat.algorithm = CollectiveAlgorithm::Pat;
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, kMiB, 0, pat).algorithm ==
        CollectiveAlgorithm::Ring);
  const Topology full = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  CHECK(plan_collective(full, {}, first(16), CollectiveKind::AllGather, kMiB, 0, pat).algorithm ==
        CollectiveAlgorithm::Ring);
  CHECK(plan_collective(full, {}, {0, 1, 8}, CollectiveKind::AllGather, kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  CollectiveOptions ll = pat;
  ll.protocol_auto = false;
  ll.protocol = Protocol::LL;
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllGather, kMiB, 0, ll).algorithm ==
        CollectiveAlgorithm::Ring);
  CollectiveOptions textbook = pat;
  textbook.textbook = true;
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllGather, kMiB, 0, textbook).algorithm ==
        CollectiveAlgorithm::Ring);
  // One GPU of each of 4 full DGX H100 nodes (a DP group beside TP 8): PAT at 1 MiB.
  const Topology four = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "4"}});
  CHECK(plan_collective(four, {}, {0, 8, 16, 24}, CollectiveKind::ReduceScatter, kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Pat);
  // A tuning rule naming PAT where it cannot run leaves the choice to the model (the ring's LL here).
  TuningRule r;
  r.kind = CollectiveKind::AllGather;
  r.max_bytes = 1e12;
  r.algorithm = CollectiveAlgorithm::Pat;
  CollectiveOptions ruled;
  ruled.tuning = {r};
  const CollectivePlan q = plan_collective(full, {}, first(16), CollectiveKind::AllGather, 8, 0, ruled);
  CHECK(q.algorithm == CollectiveAlgorithm::Ring);
  CHECK(q.protocol == Protocol::LL);
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllGather, 4096 * kMiB, 0, ruled).algorithm ==
        CollectiveAlgorithm::Pat);
}

TEST_CASE("PAT: flow == analytic without other traffic") {
  for (int nodes : {4, 16, 300}) {
    const Topology topo = one_gpu_nodes(nodes);
    for (BenchOp op : {BenchOp::AllGather, BenchOp::ReduceScatter})
      for (double size : {64 * 1024.0, 4 * kMiB, 64 * kMiB}) {
        if (nodes == 300 && size != 4 * kMiB) continue;  // its neighbour flows (kMaxPatFlows): one size
        CAPTURE(nodes);
        CAPTURE(size);
        BenchOptions b;
        b.algorithm = CollectiveAlgorithm::Pat;
        const FlowAnalytic t = flow_and_analytic(topo, op, nodes, size, b);
        CHECK(run_collective_bench(topo, op, nodes, {size}, b).at(0).plan.rfind("pat/Simple/", 0) == 0);
        CHECK(t.flow == approx(t.analytic).epsilon(1e-12));
      }
  }
}

TEST_CASE("PAT in flow: sends through a member's NIC delay it, analytic does not see them") {
  // Four one-GPU H100 nodes: A is a PAT AllGather of 256 MiB over all four; B three 1 GiB
  // messages from GPU 0 to GPU 1 on three other streams (pipeline sends in flight), through
  // their NICs. Alone, A's flows (3/4 of S through each NIC) end before NCCL's kernel ceiling (S
  // at 0.75 of the NIC); beside B, GPU 0's NIC gives A's two flows out of it 2/5 of its rate.
  const Topology topo = one_gpu_nodes(4);
  auto schedule = [&](bool with_b) {
    Schedule s;
    s.world_size = 4;
    const int ga = s.intern_group(first(4), CommPurpose::DataParallel);
    for (int r = 0; r < 4; ++r) {
      RankProgram p{r, 4,
                    {collective_op(ga, 1, 256 * kMiB, "a", CollectiveAlgorithm::Pat, 0, CollectiveKind::AllGather)}};
      if (with_b && r <= 1)
        for (int k = 0; k < 3; ++k) {
          const auto [send, recv] = send_recv_ops(0, 1, 1024 * kMiB, 10 + k);
          Op m = r == 0 ? send : recv;
          m.stream = 1 + k;
          p.ops.push_back(m);
        }
      s.programs.push_back(p);
    }
    return s;
  };
  ReplayOptions flow, analytic;
  analytic.fidelity = Fidelity::Analytic;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Pat;
  const CollectivePlan p = plan_collective(topo, {}, first(4), CollectiveKind::AllGather, 256 * kMiB, 0, o);
  REQUIRE(p.algorithm == CollectiveAlgorithm::Pat);
  // Alone: flow == analytic == the closed form (rank 2 is in A only).
  const double alone = replay(schedule(false), topo, flow).end_s[2][0];
  CHECK(alone == approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(replay(schedule(false), topo, analytic).end_s[2][0] == approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(replay(schedule(true), topo, analytic).end_s[2][0] == approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(replay(schedule(true), topo, flow).end_s[2][0] > 1.4 * alone);
}

TEST_CASE("A ring over one GPU per node pays the tree's network hwLat per step across nodes, as NCCL's tuner") {
  // NCCL (tuning.cc): "with ppn=1 latencies are fully exposed, use the Tree network latency":
  // LL 5.0, LL128 8.5, Simple 14 us per network step, where a node holding two members pays the
  // ring's 2.7, 4.0, 14.
  const Topology topo = one_gpu_nodes(4);
  const Topology full = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "4"}});
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  const double tree_net[3] = {5.0e-6, 8.5e-6, 14.0e-6}, ring_net[3] = {2.7e-6, 4.0e-6, 14.0e-6};
  for (Protocol proto : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    CAPTURE(static_cast<int>(proto));
    CollectiveOptions o;
    o.algorithm = CollectiveAlgorithm::Ring;
    o.protocol_auto = false;
    o.protocol = proto;
    const int pi = static_cast<int>(proto);
    int network_hops = 0;
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
      const CollectivePlan one = plan_collective(topo, eff, first(4), kind, kMiB, 0, o);
      for (const ChannelPlan& ch : one.rings)
        for (const Hop2& h : ch.hops) {
          REQUIRE(h.kind == HopKind::Network);
          ++network_hops;
          CHECK(h.step_latency_s == approx(std::max(h.route_latency_s, tree_net[pi])).epsilon(1e-12));
        }
      // Two members on each of 2 nodes: the ring's network hwLat.
      const CollectivePlan two = plan_collective(full, eff, {0, 1, 8, 9}, kind, kMiB, 0, o);
      for (const ChannelPlan& ch : two.rings)
        for (const Hop2& h : ch.hops)
          if (h.kind == HopKind::Network) {
            ++network_hops;
            CHECK(h.step_latency_s == approx(std::max(h.route_latency_s, ring_net[pi])).epsilon(1e-12));
          }
    }
    CHECK(network_hops > 0);
    // A Broadcast's chain over one GPU a node keeps the ring's network hwLat (NCCL's tuner
    // times Broadcast and Reduce with it).
    int chain_hops = 0;
    for (const ChannelPlan& ch : plan_collective(topo, eff, first(4), CollectiveKind::Broadcast, kMiB, 0, o).rings)
      for (const Hop2& h : ch.hops) {
        ++chain_hops;
        REQUIRE(h.kind == HopKind::Network);
        CHECK(h.step_latency_s == approx(std::max(h.route_latency_s, ring_net[pi])).epsilon(1e-12));
      }
    CHECK(chain_hops > 0);
  }
}

TEST_CASE("Auto's PAT is not slower than the ring it was preferred to at small sizes") {
  // 16 one-GPU H100 nodes: at 4 B to 4 MiB NCCL ranks PAT first, and the model's own ring
  // (forced) is slower there too, now that both pay NCCL's one-rank-a-node network latency.
  const Topology topo = one_gpu_nodes(16);
  for (double S : {4.0, 64 * 1024.0, 4 * kMiB}) {
    CAPTURE(S);
    BenchOptions a, r;
    r.algorithm = CollectiveAlgorithm::Ring;
    const auto auto_row = run_collective_bench(topo, BenchOp::AllGather, 16, {S}, a).at(0);
    const auto ring_row = run_collective_bench(topo, BenchOp::AllGather, 16, {S}, r).at(0);
    REQUIRE(auto_row.plan.rfind("pat/", 0) == 0);
    CHECK(auto_row.time_s < ring_row.time_s);
  }
}

TEST_CASE("PAT: a ReduceScatter NCCL scales (avg, mulsum) runs as the ring, a summing one or an AllGather as PAT") {
  // NCCL 2.30.7 src/enqueue.cc: "Tree reduceScatter doesn't support scaling yet" (PAT skipped
  // for ncclDevPreMulSum and ncclDevSumPostDiv, which ncclAvg becomes).
  const Topology topo = one_gpu_nodes(16);
  for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum}) {
    CAPTURE(to_string(r));
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Pat}) {
      CollectiveOptions o;
      o.algorithm = a;
      o.reduce_op = r;
      CHECK(plan_collective(topo, {}, first(16), CollectiveKind::ReduceScatter, kMiB, 0, o).algorithm ==
            (scales(r) ? CollectiveAlgorithm::Ring : CollectiveAlgorithm::Pat));
      CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllGather, kMiB, 0, o).algorithm ==
            CollectiveAlgorithm::Pat);
    }
    // The replay plans each op with its own reduction, in both fidelities.
    for (Fidelity f : {Fidelity::Analytic, Fidelity::Flow}) {
      BenchOptions b;
      b.replay.fidelity = f;
      b.replay.collectives.reduce_op = r;
      CHECK(run_collective_bench(topo, BenchOp::ReduceScatter, 16, {kMiB}, b).at(0).plan.rfind(
                scales(r) ? "ring/" : "pat/", 0) == 0);
    }
  }
  ReduceOp parsed = ReduceOp::Sum;
  for (const char* name : {"sum", "prod", "max", "min", "avg", "mulsum"}) {
    CAPTURE(name);
    REQUIRE(parse_reduce_op(name, &parsed));
    CHECK(std::string(to_string(parsed)) == name);
  }
  CHECK(parse_reduce_op("AVG", &parsed));
  CHECK(parsed == ReduceOp::Avg);
  CHECK_FALSE(parse_reduce_op("mean", &parsed));
  CHECK_FALSE(parse_reduce_op("", &parsed));
}
