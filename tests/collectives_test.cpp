// NCCL-style collectives: plans, protocols, channels, every kind's closed form, bytes moved,
// contention and SM interference (issue: collective communication as NCCL does it).
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
const std::string kStar8 = kSrc + "/tests/data/replay/star8.yaml";
constexpr double kB = 100e9;     // bytes/s of every star8 route
constexpr double kAlpha = 1e-6;  // seconds of every star8 route

ReplayOptions textbook() {
  ReplayOptions o;
  o.collectives.textbook = true;
  o.collectives.channels = 1;
  return o;
}

double bench_time(const Topology& t, BenchOp op, int n, double size, const ReplayOptions& ro, bool unfold) {
  BenchOptions b;
  b.replay = ro;
  b.unfold = unfold;
  return run_collective_bench(t, op, n, {size}, b).at(0).time_s;
}

/// A one-channel chain whose hops share no link, K slices: baseLat + Σ_p e_p + (K − 1) · max_p d_p
/// (e_p: step latency + slice / hop bandwidth, when a slice has arrived; d_p: serial + slice /
/// hop bandwidth, how long it keeps the sender busy), seconds.
double one_channel_chain_s(const CollectivePlan& p) {
  double sum = 0, busiest = 0;
  for (const Hop2& h : p.rings[0].hops) {
    sum += h.step_latency_s + p.wire_bytes / h.bandwidth_Bps;
    busiest = std::max(busiest, h.serial_s + p.wire_bytes / h.bandwidth_Bps);
  }
  return p.base_latency_s + sum + (p.steps - 1) * busiest;
}

/// A Broadcast of 4 MiB (8 slices) from rank 0 over ranks 0..n−1 on one channel, Simple: its
/// plan, and replay options that run it so in flow and in analytic fidelity.
struct OneChannelChain {
  static constexpr double kBytes = 4.0 * 1024 * 1024;
  CollectivePlan plan;
  ReplayOptions flow, analytic;
};
OneChannelChain one_channel_chain(const Topology& topo, int n) {
  OneChannelChain c;
  CollectiveOptions o;
  o.protocol_auto = false;
  o.protocol = Protocol::Simple;
  c.plan = plan_collective(topo, {}, first(n), CollectiveKind::Broadcast, OneChannelChain::kBytes, 1, o);
  c.flow.collectives = c.analytic.collectives = o;
  c.flow.collectives.channels = c.analytic.collectives.channels = 1;
  c.analytic.fidelity = Fidelity::Analytic;
  return c;
}

}  // namespace

TEST_CASE("NCCL protocol latencies: a large Simple ring AllReduce adds baseLat and hwLat per step") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions ro;
  ro.collectives.channels = 1;
  ro.collectives.protocol_auto = false;
  ro.collectives.protocol = Protocol::Simple;
  const int n = 8;
  const double S = 800e6;
  // NCCL tuning.cc: ring Simple baseLat 8.4 us; NVLink hop 3.4 us > the route's 1 us.
  const double expected = 8.4e-6 + 2 * (n - 1) * (3.4e-6 + S / n / kB);
  for (bool unfold : {false, true}) {
    CAPTURE(unfold);
    CHECK(bench_time(topo, BenchOp::AllReduce, n, S, ro, unfold) == testing::approx(expected).epsilon(1e-9));
  }
  ro.fidelity = Fidelity::Analytic;
  CHECK(bench_time(topo, BenchOp::AllReduce, n, S, ro, false) == testing::approx(expected).epsilon(1e-9));
}

TEST_CASE("automatic protocol: LL for tiny messages, Simple for large ones") {
  const Topology topo = load_topology(kStar8);
  const LinkEfficiency eff;
  CollectiveOptions o;
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, 8, 0, o).protocol == Protocol::LL);
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, 1e9, 0, o).protocol == Protocol::Simple);
}

TEST_CASE("every collective kind moves the bytes its algorithm requires per rank") {
  const Topology topo = load_topology(kStar8);
  const LinkEfficiency eff;
  CollectiveOptions o;
  const int n = 8;
  const double S = 64.0 * 1024 * 1024;
  CHECK(received_bytes_per_rank(plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, S, 0, o)) ==
        testing::approx(2.0 * (n - 1) / n * S));
  CHECK(received_bytes_per_rank(plan_collective(topo, eff, first(n), CollectiveKind::AllGather, S, 0, o)) ==
        testing::approx(1.0 * (n - 1) / n * S));
  CHECK(received_bytes_per_rank(plan_collective(topo, eff, first(n), CollectiveKind::ReduceScatter, S, 0, o)) ==
        testing::approx(1.0 * (n - 1) / n * S));
  CHECK(received_bytes_per_rank(plan_collective(topo, eff, first(n), CollectiveKind::Broadcast, S, 0, o)) ==
        testing::approx(S));
}

TEST_CASE("Broadcast is a pipelined chain: the first 512 KiB slice crosses n-1 hops, K-1 more follow at the wire's pace") {
  // A sender's next slice follows its last one onto the wire; the link latency only delays the
  // arrival (regression: every slice paid it before the next, (n − 1 + K − 1) · (α + s / B)).
  const Topology topo = load_topology(kStar8);
  const int n = 4;
  const double slice = 512.0 * 1024;
  const int K = 8;
  const double expected = (n - 1) * (kAlpha + slice / kB) + (K - 1) * slice / kB;
  for (bool unfold : {false, true}) {
    CAPTURE(unfold);
    CHECK(bench_time(topo, BenchOp::Broadcast, n, K * slice, textbook(), unfold) ==
          testing::approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("AllToAll: n-1 pieces of S/n leave each GPU at once and share its port") {
  const Topology topo = load_topology(kStar8);
  const int n = 4;
  const double S = 400e6;
  const double expected = kAlpha + (n - 1) * (S / n) / kB;
  for (bool unfold : {false, true}) {
    CAPTURE(unfold);
    CHECK(bench_time(topo, BenchOp::AllToAll, n, S, textbook(), unfold) == testing::approx(expected).epsilon(1e-9));
    // Analytic: the same closed form (regression: its flows ignored one another, (S/n) / B).
    ReplayOptions a = textbook();
    a.fidelity = Fidelity::Analytic;
    CHECK(bench_time(topo, BenchOp::AllToAll, n, S, a, unfold) == testing::approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("analytic AllToAll == flow where the members' ports are the bottleneck (DGX A100, 4 DGX A100 nodes)") {
  // Regression: analytic AllToAll let each piece run at its route's bandwidth alone: 1 GiB over
  // one DGX A100 took 593 µs against 4079 µs in flow, and 4 nodes 1421 µs against 33577 µs.
  for (int nodes : {1, 4}) {
    const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", std::to_string(nodes)}});
    ReplayOptions f;
    ReplayOptions a;
    a.fidelity = Fidelity::Analytic;
    const double size = 256.0 * 1024 * 1024;
    const double flow = bench_time(topo, BenchOp::AllToAll, 8 * nodes, size, f, false);
    const double analytic = bench_time(topo, BenchOp::AllToAll, 8 * nodes, size, a, false);
    INFO(nodes << " node(s): flow " << flow * 1e6 << " µs, analytic " << analytic * 1e6 << " µs");
    CHECK(analytic == testing::approx(flow).epsilon(0.01));
    // Latency-bound, the closed form is how the flows run: each member's slowest piece's extra
    // latency once, then its farthest route (regression: 9.30 µs against flow's 9.56 at 8 B;
    // 1e-4: the closed form adds the busiest link's time for the 0.25 B pieces, 0.24 ns).
    const double tiny_flow = bench_time(topo, BenchOp::AllToAll, 8 * nodes, 8, f, false);
    CHECK(bench_time(topo, BenchOp::AllToAll, 8 * nodes, 8, a, false) == testing::approx(tiny_flow).epsilon(1e-4));
  }
}

TEST_CASE("folded flow AllToAll meets the mirrors' load on the links: == analytic where routes pile up (33 DGX H100 nodes)") {
  // Regression: folded (rank 0 simulated, the others mirrors) the mirrors' pieces were no flows,
  // so uplinks that a fat tree's routes pile onto with an uneven node count looked free: 1 GiB
  // over 33 DGX H100 nodes took 23.2 ms folded against 42.0 ms unfolded and analytic (the
  // closed form, every member's pieces on every link); over 32 nodes the routes spread evenly.
  for (int nodes : {32, 33}) {
    const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", std::to_string(nodes)}});
    ReplayOptions f;
    ReplayOptions a;
    a.fidelity = Fidelity::Analytic;
    for (double size : {128.0 * 1024 * 1024, 1024.0 * 1024 * 1024}) {
      const double flow = bench_time(topo, BenchOp::AllToAll, 8 * nodes, size, f, false);
      const double analytic = bench_time(topo, BenchOp::AllToAll, 8 * nodes, size, a, false);
      INFO(nodes << " nodes, " << size << " B: flow " << flow * 1e6 << " µs, analytic " << analytic * 1e6 << " µs");
      CHECK(flow == testing::approx(analytic).epsilon(0.01));
    }
  }
}

TEST_CASE("channels of a ring across nodes leave each node through different NICs") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const LinkEfficiency eff;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Ring;
  const CollectivePlan p = plan_collective(topo, eff, first(16), CollectiveKind::AllReduce, 1e9, 8, o);
  REQUIRE(p.rings.size() == 8);  // uneven (NVSwitch and NIC hops): not merged
  std::set<int> first_links;
  for (const auto& ch : p.rings)
    for (const Hop2& h : ch.hops)
      if (h.kind == HopKind::Network && topo.node_of(h.src_pos) == 0) first_links.insert(h.links.front());
  CHECK(first_links.size() == 8);  // 8 channels, 8 GPU→NIC links out of node 0
  // With all 8 NICs carrying one channel each, a large AllReduce over 2 nodes approaches
  // 8 NICs' worth of bus bandwidth, far above one NIC's.
  ReplayOptions ro;
  BenchOptions b;
  b.replay = ro;
  b.algorithm = CollectiveAlgorithm::Ring;
  const auto row = run_collective_bench(topo, BenchOp::AllReduce, 16, {1e9}, b).at(0);
  CHECK(row.busbw_Bps > 4 * 25e9);
}

TEST_CASE("contention: two rings through one PCIe switch are slower in flow than in analytic") {
  // A6000 box: GPUs 0,1 hang off pcie-sw0 and 2,3 off pcie-sw1; rings {0,2} and {1,3} both cross
  // pcie-sw0 → cpu0 → pcie-sw1. Analytic ignores that; flow shares the switch uplinks.
  const Topology topo = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  Schedule s;
  s.world_size = 8;
  const int g0 = s.intern_group({0, 2}, CommPurpose::TensorParallel);
  const int g1 = s.intern_group({1, 3}, CommPurpose::TensorParallel);
  for (int r : {0, 1, 2, 3}) {
    RankProgram p{r, 1, {}};
    Op op;
    op.type = OpType::Collective;
    op.group = (r == 0 || r == 2) ? g0 : g1;
    op.match = op.group;
    op.bytes = 256e6;
    op.name = "ar";
    p.ops.push_back(op);
    s.programs.push_back(p);
  }
  ReplayOptions flow, analytic;
  analytic.fidelity = Fidelity::Analytic;
  const double tf = replay(s, topo, flow).makespan_s, ta = replay(s, topo, analytic).makespan_s;
  CHECK(tf > 1.5 * ta);
}

TEST_CASE("SM interference: a kernel beside a collective holding half the SMs runs at half speed") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions ro = textbook();
  ro.sm_count = 108;
  Schedule s;
  s.world_size = 8;
  const int g = s.intern_group({0, 1}, CommPurpose::TensorParallel);
  RankProgram p{0, 2, {}};
  Op c;
  c.type = OpType::Collective;
  c.group = g;
  c.match = 1;
  c.bytes = 100e6;
  c.num_sm = 54;
  c.stream = 1;
  c.name = "ar";
  Op k;
  k.type = OpType::Compute;
  k.duration_s = 0.010;
  k.name = "gemm";
  p.ops = {k, c};
  s.programs.push_back(p);
  const ReplayTimes t = replay(s, topo, ro);
  const double tc = 2 * (kAlpha + 50e6 / kB);  // the collective alone
  REQUIRE(t.end_s[0][1] == testing::approx(tc).epsilon(1e-9));
  CHECK(t.end_s[0][0] == testing::approx(0.010 + 0.5 * tc).epsilon(1e-9));
  SUBCASE("a copy-engine transfer takes no SM") {
    s.programs[0].ops[1].num_sm = 0;
    CHECK(replay(s, topo, ro).end_s[0][0] == testing::approx(0.010).epsilon(1e-12));
  }
}

TEST_CASE("nccl-tests terms: busbw factors and size ranges") {
  CHECK(busbw_factor(BenchOp::AllReduce, 8) == testing::approx(14.0 / 8));
  CHECK(busbw_factor(BenchOp::AllGather, 8) == testing::approx(7.0 / 8));
  CHECK(busbw_factor(BenchOp::Broadcast, 8) == 1.0);
  CHECK(size_range(8, 8 * 1024, 2).size() == 11);
  CHECK_THROWS_AS(size_range(0, 8, 2), std::invalid_argument);
  CHECK(parse_bench_op("all_reduce_perf") == BenchOp::AllReduce);
  CHECK_THROWS_AS(parse_bench_op("allreduse"), std::invalid_argument);
}

TEST_CASE("a Broadcast or Reduce chain pays NCCL's base latency once: flow == analytic for small buffers") {
  // Regression: every member of the chain paid the base latency on its first step, and along the
  // chain they added up (8 B over 8 GPUs: 51 us in flow against 11.5 us in the closed form).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  for (BenchOp op : {BenchOp::Broadcast, BenchOp::Reduce}) {
    CAPTURE(static_cast<int>(op));
    ReplayOptions flow, analytic;
    analytic.fidelity = Fidelity::Analytic;
    const double f = bench_time(topo, op, 8, 8, flow, false), a = bench_time(topo, op, 8, 8, analytic, false);
    CHECK(f == testing::approx(a).epsilon(1e-9));
    CHECK(f < 20e-6);
  }
}

TEST_CASE("a chain's channels stay on their own hops: flow == analytic where they share no link") {
  // Regression: even channels were merged onto channel 0's hops at C times their share. A
  // chain's channels are rotations that each leave out another hop (on 2 GPUs, half of them run
  // 1 → 0), so the merged flows ran beyond the link: 128 MiB over 2 GPUs on 2 channels took
  // 1025 us in flow against 734 us analytic, and over 8 GPUs flow was 11-14% above.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  ReplayOptions flow, analytic;
  flow.collectives.channels = analytic.collectives.channels = 2;
  analytic.fidelity = Fidelity::Analytic;
  const double S = 128.0 * 1024 * 1024;
  for (bool unfold : {false, true}) {
    const double f = bench_time(topo, BenchOp::Broadcast, 2, S, flow, unfold);
    // (1e-6: 128 slices' timers add up rounding, 0.2 ns here)
    CHECK(f == testing::approx(bench_time(topo, BenchOp::Broadcast, 2, S, analytic, unfold)).epsilon(1e-6));
  }
  // Over 8 GPUs the channels share every GPU's port; the closed form counts, wave by wave, the
  // hops sending at once (regression: it charged every wave the steady-state 1/7 share, 2.4×
  // flow's time at 8 MiB, where only 2 slices per channel are in flight).
  flow.collectives.channels = analytic.collectives.channels = 8;
  for (double size : {8.0 * 1024 * 1024, S}) {
    const double folded = bench_time(topo, BenchOp::Broadcast, 8, size, flow, false);
    const double unfolded = bench_time(topo, BenchOp::Broadcast, 8, size, flow, true);
    const double closed = bench_time(topo, BenchOp::Broadcast, 8, size, analytic, false);
    CHECK(folded == testing::approx(unfolded).epsilon(1e-9));
    CHECK(unfolded == testing::approx(closed).epsilon(1e-6));
  }
}

TEST_CASE("a chain's slices move at their share among the hops of their wave: flow == analytic") {
  // Regression: free-running flows let a channel take a link while the other channels waited
  // out their step latency, so flow beat the closed form: 5 GPUs of one node on 8 channels (the
  // rotations load the ports unevenly), LL128, 1 GiB: 4377 µs against 4852 µs; 2 A100 nodes,
  // 16 MiB, Simple, 8 channels: 266.5 µs against 299.3 µs.
  const std::vector<ProtocolCase> cases{
      {"/topologies/dgx-a100.yaml", {}, 5, Protocol::LL128, 64.0 * 1024 * 1024},
      {"/topologies/dgx-a100.yaml", {}, 7, Protocol::LL128, 1024.0 * 1024 * 1024},
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, 16, Protocol::Simple, 16.0 * 1024 * 1024},
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "4"}}, 32, Protocol::LL128, 256.0 * 1024 * 1024},
  };
  for (const ProtocolCase& c : cases) {
    const Topology topo = load_topology(kSrc + c.topology, c.overrides);
    const BenchOptions b = forced_protocol(c);
    for (BenchOp op : {BenchOp::Broadcast, BenchOp::Reduce}) {
      const FlowAnalytic t = flow_and_analytic(topo, op, c.ranks, c.size, b);
      INFO(c.topology << " " << to_string(op) << " over " << c.ranks << ", " << c.size << " B: flow " << t.flow * 1e6
                      << " µs, analytic " << t.analytic * 1e6 << " µs");
      CHECK(t.flow == testing::approx(t.analytic).epsilon(0.01));
    }
  }
}

TEST_CASE("the collective bench times each size alone: a Broadcast never gets faster as it grows") {
  // Regression: sizes ran one after the other, so a size started on some ranks while others
  // were finishing the previous one (16 B 15.00 µs, 32 B 12.20 µs, 64 B 15.00 µs).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  BenchOptions b;
  b.replay.collectives.channels = 2;
  std::vector<double> sizes;
  for (double s = 8; s <= 65536; s *= 2) sizes.push_back(s);
  const auto rows = run_collective_bench(topo, BenchOp::Broadcast, 8, sizes, b);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].time_s >= rows[i - 1].time_s);
}

TEST_CASE("the collective bench hands each size's row over as it is done, in order, and counts them") {
  // (`overlapsim collective` prints them so, as nccl-tests does: a long sweep shows its rows as
  // they come, and one stopped keeps those done.)
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  std::atomic<long long> done{0};
  std::vector<std::pair<size_t, double>> seen;  // (index, size) as handed over
  BenchOptions b;
  b.sizes_done = &done;
  b.on_row = [&](size_t i, const BenchRow& r) {
    CHECK(static_cast<long long>(i) + 1 == done.load());  // counted before it is handed over
    seen.emplace_back(i, r.size_bytes);
  };
  const std::vector<double> sizes = {1024, 65536, 1048576};
  const std::vector<BenchRow> rows = run_collective_bench(topo, BenchOp::AllReduce, 8, sizes, b);
  REQUIRE(seen.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(seen[i].first == i);
    CHECK(seen[i].second == rows[i].size_bytes);
  }
  CHECK(done.load() == 3);
}

TEST_CASE("a chain's last slice carries what is left: a Broadcast or Reduce never gets faster as it grows") {
  // NCCL cuts a channel's part into chunks of its chunk size, the last one shorter. With equal
  // slices one byte past a whole slice halved every slice: a Broadcast over one DGX A100 took
  // 32.42 µs at 262144 B and 23.46 µs at 262148 B (every power of two a slow point), and 285868 B
  // was 24% faster than 262144 B.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  std::vector<double> sizes;
  for (double s = 16384; s <= 4.0 * 1024 * 1024; s = std::floor(s * 1.09 / 4) * 4) sizes.push_back(s);
  sizes.push_back(262144);
  sizes.push_back(262148);
  std::sort(sizes.begin(), sizes.end());
  for (BenchOp op : {BenchOp::Broadcast, BenchOp::Reduce})
    for (Fidelity f : {Fidelity::Analytic, Fidelity::Flow}) {
      BenchOptions b;
      b.replay.fidelity = f;
      b.replay.collectives.protocol_auto = false;
      b.replay.collectives.protocol = Protocol::LL;  // one protocol: no switch between sizes
      b.channels = 8;
      const std::vector<BenchRow> rows = run_collective_bench(topo, op, 8, sizes, b);
      for (size_t i = 1; i < rows.size(); ++i) {
        CAPTURE(rows[i].size_bytes);
        CHECK(rows[i].time_s >= rows[i - 1].time_s * (1 - 1e-9));
      }
    }
  // The plan: full slices of 32 KiB per channel (LL), then what is left; the bytes add up to
  // the buffer (the 8 channels share their hops here, so they run as one ring of 8 times the
  // bytes).
  CollectiveOptions o;
  o.protocol_auto = false;
  o.protocol = Protocol::LL;
  const CollectivePlan p = plan_collective(topo, {}, first(8), CollectiveKind::Broadcast, 8 * (32768.0 + 4), 8, o);
  REQUIRE(p.chain);
  const double channels = 8.0 / static_cast<double>(p.rings.size());  // merged into each ring
  CHECK(p.steps == 2);
  CHECK(p.step_bytes == 32768.0 * channels);
  CHECK(p.last_step_bytes == 4.0 * channels);
  CHECK(p.channel_bytes() * static_cast<double>(p.rings.size()) == 8 * 32772.0);
}

TEST_CASE("a tree's last chunk carries what is left, in its closed form and in its flows alike") {
  // NCCL's tree kernel cuts a channel's part as the chain's does (all_reduce.h runTreeUpDown):
  // LL128's 576,000 B chunks leave a short last one of 1 MiB over 8 channels.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Tree;
  o.protocol_auto = false;
  o.protocol = Protocol::LL128;
  const double S = 4.0 * 1024 * 1024;
  const CollectivePlan p = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, S, 8, o);
  REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
  REQUIRE(p.steps >= 2);
  CHECK(p.last_step_bytes > 0);
  CHECK(p.last_step_bytes < p.step_bytes);
  CHECK(p.channel_bytes() == testing::approx(S / 8).epsilon(1e-12));
  // The closed form of the last chunk's extra layer: more than K − 1 equal chunks, less than K.
  for (const TreePlan& tp : p.trees) {
    const double with_last = tp.pipeline_s(p.steps, p.wire_bytes, p.last_wire_bytes);
    CHECK(with_last > tp.pipeline_s(p.steps - 1, p.wire_bytes));
    CHECK(with_last < tp.pipeline_s(p.steps, p.wire_bytes));
  }
  // The flows (TreeRun) follow the same recurrences.
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Tree;
  b.channels = 8;
  b.replay.collectives.protocol_auto = false;
  b.replay.collectives.protocol = Protocol::LL128;
  const FlowAnalytic t = flow_and_analytic(topo, BenchOp::AllReduce, 16, S, b);
  CHECK(t.flow == testing::approx(t.analytic).epsilon(0.01));
  // Four bytes a channel past a whole number of chunks is no faster than that number (with equal
  // chunks it was: every chunk shrank).
  const double whole = 8 * p.steps * p.step_bytes;
  const CollectivePlan at_whole = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, whole, 8, o);
  const CollectivePlan past = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, whole + 32, 8, o);
  REQUIRE(at_whole.step_bytes == p.step_bytes);  // the same chunk at both sizes
  REQUIRE(past.step_bytes == p.step_bytes);
  REQUIRE(past.steps == at_whole.steps + 1);
  CHECK(flow_and_analytic(topo, BenchOp::AllReduce, 16, whole + 32, b).analytic >=
        flow_and_analytic(topo, BenchOp::AllReduce, 16, whole, b).analytic);
}

TEST_CASE("a chain's waves: each hop's time is its share among the hops of its wave, counted afresh") {
  // chain_waves recomputes, as the window of sending positions slides, only the hops whose links
  // gained or lost a sender. Here every wave's table row is checked against the shares counted
  // from scratch over that wave's window: 32 channels over 2 DGX H100 nodes, whose chains pass
  // a GPU's NVSwitch port at different positions (so hops of different positions share links
  // and the fill's and the drain's waves differ).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  const int n = 16, C = 32, K = 20;
  const double wire = 64.0 * 1024;
  const CollectivePlan p = plan_collective(topo, {}, first(n), CollectiveKind::Broadcast, 64.0 * 1024 * 1024, C,
                                           CollectiveOptions{});
  REQUIRE(p.chain);
  REQUIRE(static_cast<int>(p.rings.size()) == C);
  const LinkEfficiency eff;
  const ChainWaves cw = chain_waves(topo, eff, p.rings, wire, n, K);
  const int W = n - 1 + K - 1;
  REQUIRE(static_cast<int>(cw.wave_id.size()) == W);
  std::map<int, std::set<int>> positions;  // directed link → the positions whose hops cross it
  for (const ChannelPlan& ch : p.rings)
    for (int q = 0; q < n - 1; ++q)
      for (int l : ch.hops[q].links) positions[l].insert(q);
  CHECK(std::any_of(positions.begin(), positions.end(), [](const auto& e) { return e.second.size() > 1; }));
  for (int w = 0; w < W; ++w) {
    const int lo = std::max(0, w - K + 1), hi = std::min(w, n - 2);
    std::map<int, int> users;
    for (const ChannelPlan& ch : p.rings)
      for (int q = lo; q <= hi; ++q)
        for (int l : ch.hops[q].links) ++users[l];
    for (int c = 0; c < C; ++c)
      for (int q = lo; q <= hi; ++q) {
        const Hop2& h = p.rings[c].hops[q];
        double share = std::numeric_limits<double>::infinity();
        for (int l : h.links) {
          const Link& link = topo.link(l / 2);
          share = std::min(share, link.bandwidth_Bps * eff.of(link.kind) / users[l]);
        }
        CAPTURE(w);
        CAPTURE(c);
        CAPTURE(q);
        CHECK(cw.hop_s[static_cast<size_t>(cw.wave_id[static_cast<size_t>(w)])][static_cast<size_t>(c) * (n - 1) + q] ==
              h.step_latency_s + wire / share);
      }
  }
}

TEST_CASE("a chain across nodes: each slice pays each hop's own time, the busiest hop paces the rest") {
  // One channel over 2 DGX A100 nodes, Simple, 4 MiB = 8 slices: no two hops of a wave share a
  // link, so T = baseLat + Σ_p e_p + (K − 1) · max_p d_p (one_channel_chain_s), and flow equals
  // it (regressions: the closed form charged every wave its slowest, NIC, hop: 2.3× flow at 16
  // nodes and 16 MiB; then every slice its NIC hop's 14 µs Simple latency before the next).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const OneChannelChain c = one_channel_chain(topo, 16);
  const CollectivePlan& p = c.plan;
  REQUIRE(p.chain);
  REQUIRE(p.steps == 8);
  CHECK(p.closed_form_s() == testing::approx(one_channel_chain_s(p)).epsilon(1e-9));
  const double S = OneChannelChain::kBytes;
  const double f = bench_time(topo, BenchOp::Broadcast, 16, S, c.flow, true);
  CHECK(f == testing::approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(bench_time(topo, BenchOp::Broadcast, 16, S, c.analytic, true) == testing::approx(f).epsilon(1e-9));
}

TEST_CASE("a chain's step latency overlaps its next slice: a large Broadcast across nodes runs at the rails' rate") {
  // Regression: every slice paid its hop's step latency before the next one left, so the NIC
  // hop's 14 µs Simple latency beside a 512 KiB slice's 11 µs held a Broadcast of 4 GiB over 2
  // DGX H100 nodes to 165 GB/s (`overlapsim collective`, the H100 profile; LL128's smaller
  // latency then won, at 226 GB/s) where the AllGather over the same rails reaches 375 GB/s
  // busbw. Both cross each node boundary once per channel with every byte; the Broadcast's
  // busbw is its algbw.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  const double S = 4.0 * 1024 * 1024 * 1024;
  for (Fidelity f : {Fidelity::Flow, Fidelity::Analytic}) {
    BenchOptions b;
    b.replay.fidelity = f;
    b.replay.collectives.protocol_auto = false;
    b.replay.collectives.protocol = Protocol::Simple;
    const BenchRow bcast = run_collective_bench(topo, BenchOp::Broadcast, 16, {S}, b).at(0);
    const BenchRow ag = run_collective_bench(topo, BenchOp::AllGather, 16, {S}, b).at(0);
    INFO("fidelity " << std::string(to_string(f)) << ": Broadcast " << bcast.busbw_Bps / 1e9 << " GB/s, AllGather "
                     << ag.busbw_Bps / 1e9 << " GB/s busbw");
    CHECK(bcast.busbw_Bps >= 0.95 * ag.busbw_Bps);
    CHECK(bcast.busbw_Bps <= 1.02 * ag.busbw_Bps);
  }
}

TEST_CASE("a chain's closed form is no faster than its most loaded link: 9 GPUs over 8 + 1 of two nodes") {
  // Regression: the waves' shares count the channels that cross a link in the same wave; on 64
  // channels whose chains reach the ninth GPU at different positions, each entering it through its
  // one NIC, the closed form of a 64 MiB Broadcast took 967 us, below the 1.34 ms that NIC needs
  // for 64 MiB (flow: 2232 us). Every byte of the buffer enters the ninth GPU once.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  double nic = std::numeric_limits<double>::infinity();  // the ninth GPU's way out of its node
  for (const Hop& h : topo.route(8, 0)) nic = std::min(nic, topo.link(h.link_id).bandwidth_Bps);
  const double S = 64.0 * 1024 * 1024;
  ReplayOptions flow, analytic;
  flow.collectives.channels = analytic.collectives.channels = 64;
  analytic.fidelity = Fidelity::Analytic;
  BenchOptions bf, ba;
  bf.replay = flow;
  ba.replay = analytic;
  bf.channels = ba.channels = 64;
  const double t_analytic = run_collective_bench(topo, BenchOp::Broadcast, 9, {S}, ba).at(0).time_s;
  const double t_flow = run_collective_bench(topo, BenchOp::Broadcast, 9, {S}, bf).at(0).time_s;
  INFO("analytic " << t_analytic * 1e6 << " us, flow " << t_flow * 1e6 << " us, NIC bound " << S / nic * 1e6 << " us");
  CHECK(t_analytic >= S / nic);
  // Every chain now enters and leaves the nodes through the one NIC rail the short node has
  // (ring_order), so no two hops of a wave share a link the closed form does not count: flow
  // equals analytic, to SimGrid's rounding (it was 2232 us, the hops crossing rails).
  CHECK(t_flow >= t_analytic * (1 - 1e-9));
}

TEST_CASE("every channel's chain leaves the root: a Broadcast moves no faster than the root's port") {
  // Regression: a chain ran along its channel's ring order from the order's first member, so over
  // 2 GPUs half the channels sent 1 -> 0 and a Broadcast of 8 GiB reached 336 GB/s over one
  // DGX A100 port of 300 GB/s. NCCL's broadcast runs the ring from the root (the root sends, its
  // predecessor only receives).
  const Topology node = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  // Reduce runs the other way: from the root's ring successor, which only sends, into the root.
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce})
    for (int n : {2, 3, 8}) {
      const CollectivePlan p = plan_collective(node, {}, first(n), kind, 64.0 * 1024 * 1024, 0, CollectiveOptions{});
      REQUIRE(p.chain);
      const bool reduce = kind == CollectiveKind::Reduce;
      for (const ChannelPlan& ch : p.rings) {
        CHECK((reduce ? ch.order.back() : ch.order.front()) == 0);
        CHECK((reduce ? ch.hops.back().dst_pos : ch.hops.front().src_pos) == 0);
        for (const Hop2& h : ch.hops) CHECK((reduce ? h.src_pos : h.dst_pos) != 0);
      }
    }
  ReplayOptions ro;
  const double S = 8.0 * 1024 * 1024 * 1024;
  const double t = bench_time(node, BenchOp::Broadcast, 2, S, ro, false);
  CHECK(S / t <= 300e9);
}

TEST_CASE("a chain of more than 2,048 hops: each channel's own pipeline still times it, in both fidelities") {
  // Regression: above 2,048 hops the closed form fell back to the waves' sum (every wave at its
  // slowest, NIC, hop) and flow ran without its floors: a Broadcast of 32 MiB over 1024 GPUs
  // took 27915 µs analytic against 7739 µs in flow (and 71 s for three sizes). Now the pipeline
  // is computed for any chain (O(hops) memory), a chain whose flows (over kMaxTreeFlows) or hop
  // table (over 4 M cells) are too many is timed by it in flow too, and the bench simulates rank
  // 0 and the member that ends last.
  // One channel over 264 DGX A100 nodes (2,111 hops), Simple, 4 MiB = 8 slices: as over 2 nodes,
  // T = baseLat + Σ_p e_p + (K − 1) · max_p d_p.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "264"}});
  const OneChannelChain c = one_channel_chain(topo, 2112);
  const CollectivePlan& p = c.plan;
  REQUIRE(p.chain);
  REQUIRE(p.steps == 8);
  REQUIRE(p.chain_flows() > kMaxTreeFlows);
  CHECK(p.closed_form_s() == testing::approx(one_channel_chain_s(p)).epsilon(1e-9));
  const double S = OneChannelChain::kBytes;
  CHECK(bench_time(topo, BenchOp::Broadcast, 2112, S, c.flow, false) == testing::approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(bench_time(topo, BenchOp::Broadcast, 2112, S, c.analytic, false) == testing::approx(p.closed_form_s()).epsilon(1e-9));
  // The regression's case: 1024 GPUs, 8 channels, automatic protocol.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "128"}});
  ReplayOptions f8, a8;
  a8.fidelity = Fidelity::Analytic;
  const double t_flow = bench_time(pod, BenchOp::Broadcast, 1024, 32.0 * 1024 * 1024, f8, false);
  CHECK(t_flow == testing::approx(bench_time(pod, BenchOp::Broadcast, 1024, 32.0 * 1024 * 1024, a8, false)).epsilon(1e-9));
  // Twice the nodes of a fill-bound chain, a little under twice the time: the first slice's
  // n − 1 hops double, the K − 1 slices behind it do not (1.93 with LL128's 64 KiB slices; 16
  // nodes: 2319 µs when every slice paid its latency before the next).
  const Topology half = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "64"}});
  const double t_half = bench_time(half, BenchOp::Broadcast, 512, 32.0 * 1024 * 1024, a8, false);
  CHECK(t_flow / t_half > 1.85);
  CHECK(t_flow / t_half < 2.0);
}

TEST_CASE("collective bench: folded equals unfolded where one rank cannot stand for the others") {
  // Regressions: AllGather over 8 + 4 GPUs of two nodes took 1304 µs folded against 2586 µs
  // unfolded at 256 MiB (the representative's flows had links to themselves that the short
  // node's ranks load; now they move no faster than their share, and these fold); SendRecv
  // folded took twice its time (a mirror's send started after the representative's); AllToAll
  // inside a node of NVLink pairs beside PCIe was 2× fast (these two simulate every rank).
  struct Case {
    std::string topology;
    std::map<std::string, std::string> overrides;
    BenchOp op;
    int ranks;
    double size;
  };
  const std::vector<Case> cases{
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, BenchOp::AllGather, 12, 256.0 * 1024 * 1024},
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, BenchOp::AllReduce, 9, 16.0 * 1024 * 1024},
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "4"}}, BenchOp::ReduceScatter, 12, 1024.0 * 1024},
      {"/topologies/dgx-h100-superpod.yaml", {{"node.count", "4"}}, BenchOp::AllReduce, 28, 64.0 * 1024 * 1024},
      {"/topologies/dgx-a100.yaml", {}, BenchOp::SendRecv, 8, 8.0 * 1024 * 1024},
      {"/topologies/a6000-8gpu-nvlink-pairs.yaml", {}, BenchOp::AllToAll, 8, 64.0 * 1024 * 1024},
      // An AllToAll over 8 + 1 GPUs: the short node's GPU sends 8/9 of its buffer through one
      // NIC (regression: 4993 µs folded against 39791 µs once rings over such layouts folded).
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, BenchOp::AllToAll, 9, 1024.0 * 1024 * 1024},
  };
  for (const Case& c : cases) {
    const Topology topo = load_topology(kSrc + c.topology, c.overrides);
    BenchOptions b;
    b.algorithm = CollectiveAlgorithm::Ring;  // (Auto may take the tree, which simulates every rank)
    const double folded = run_collective_bench(topo, c.op, c.ranks, {c.size}, b).at(0).time_s;
    b.unfold = true;
    const double unfolded = run_collective_bench(topo, c.op, c.ranks, {c.size}, b).at(0).time_s;
    INFO(c.topology << " " << to_string(c.op) << " over " << c.ranks << ": folded " << folded * 1e6 << " µs, unfolded "
                    << unfolded * 1e6 << " µs");
    // Folded equals the closed form; unfolded, flows on the links the short node's channels share
    // drift by up to 3.4e-5 (1 ns of 29.39 µs, ReduceScatter over 12 ranks of 4 nodes at 1 MiB).
    CHECK(folded == testing::approx(unfolded).epsilon(1e-4));
  }
  // Where every node is full and alike, folding stays (and agrees).
  const Topology two = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(two.ranks_fill_nodes_alike(16));
  CHECK(two.ranks_fill_nodes_alike(8));
  CHECK_FALSE(two.ranks_fill_nodes_alike(12));
  CHECK(two.uniform_within_nodes(first(16)));
  const Topology pairs = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  CHECK_FALSE(pairs.uniform_within_nodes(first(8)));
}

TEST_CASE("a folded ring's representative on its bottleneck hop moves no faster than its share") {
  // Regression: 16 channels over a box of NVLink pairs and PCIe (more channels than mirrored
  // flows per step, so the folded ring is timed by one representative on its bottleneck PCIe
  // hop) took 35.8 ms folded against 71.6 ms unfolded and analytic at 1 GiB: the ranks sharing
  // that PCIe path were not simulated, so its one flow had the path alone.
  const Topology topo = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Ring;
  b.channels = 16;
  const std::vector<double> sizes{1024.0 * 1024, 32.0 * 1024 * 1024, 1024.0 * 1024 * 1024};
  const std::vector<BenchRow> folded = run_collective_bench(topo, BenchOp::AllReduce, 8, sizes, b);
  b.unfold = true;
  const std::vector<BenchRow> unfolded = run_collective_bench(topo, BenchOp::AllReduce, 8, sizes, b);
  b.replay.fidelity = Fidelity::Analytic;
  const std::vector<BenchRow> analytic = run_collective_bench(topo, BenchOp::AllReduce, 8, sizes, b);
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("size " << sizes[i] << " B: folded " << folded[i].time_s * 1e6 << " µs, unfolded " << unfolded[i].time_s * 1e6
                 << " µs, analytic " << analytic[i].time_s * 1e6 << " µs");
    CHECK(folded[i].time_s == testing::approx(unfolded[i].time_s).epsilon(1e-6));
    CHECK(folded[i].time_s == testing::approx(analytic[i].time_s).epsilon(0.01));
  }
}

TEST_CASE("collective bench: a tree timed by its closed form is timed on its slowest member, not every rank") {
  // Above kMaxTreeFlows a tree is its closed form in both fidelities; the bench simulates rank 0
  // and the member that ends last (regression: 16,384 ranks unfolded grew past 24 GB).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "64"}});
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Tree;
  const double size = 16.0 * 1024 * 1024;
  CollectiveOptions tree;
  tree.algorithm = CollectiveAlgorithm::Tree;
  const CollectivePlan t = plan_collective(topo, b.replay.link_efficiency, first(512), CollectiveKind::AllReduce, size,
                                           0, tree);
  REQUIRE(t.tree_flows() > kMaxTreeFlows);
  const double folded = run_collective_bench(topo, BenchOp::AllReduce, 512, {size}, b).at(0).time_s;
  b.unfold = true;
  const double unfolded = run_collective_bench(topo, BenchOp::AllReduce, 512, {size}, b).at(0).time_s;
  CHECK(folded == testing::approx(unfolded).epsilon(1e-9));
  const std::vector<double> ends = t.member_ends_s();
  CHECK(folded == testing::approx(*std::max_element(ends.begin(), ends.end())).epsilon(1e-9));
}

TEST_CASE("flow: an AllToAll of more than 16 k simulated flows is timed by its closed form") {
  // Regression: 256 GPUs with --unfold (65,280 flows at once) ran for over 5 minutes.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "32"}});
  ReplayOptions f;
  ReplayOptions a;
  a.fidelity = Fidelity::Analytic;
  const double flow = bench_time(topo, BenchOp::AllToAll, 256, 1048576, f, true);
  const double analytic = bench_time(topo, BenchOp::AllToAll, 256, 1048576, a, true);
  CHECK(flow > 0);
  CHECK(flow == analytic);
}

TEST_CASE("contention: a pipeline send beside a DP AllReduce through the same NIC is slower in flow than in analytic") {
  // Two DGX A100 nodes: GPU 0 of each is on rail 0. A 1 GB pipeline send from rank 0 to rank 8
  // (its route leaves through GPU 0's NIC) on its own stream, while the DP group {0, 8} reduces 1 GB
  // of gradients on another: in flow both share rail 0's NICs and uplinks, so the send ends later
  // than alone; analytic has no contention, so it ends as alone. Alone, the fidelities agree.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  const auto schedule = [](bool with_dp) {
    Schedule s;
    s.world_size = 16;
    const int dp = s.intern_group({0, 8}, CommPurpose::DataParallel);
    for (int r : {0, 8}) {
      RankProgram p{r, 2, {}};
      Op msg;
      msg.type = r == 0 ? OpType::Send : OpType::Recv;
      msg.peer = r == 0 ? 8 : 0;
      msg.bytes = 1e9;
      msg.match = -7;
      msg.purpose = CommPurpose::Pipeline;
      msg.stream = 1;
      msg.name = r == 0 ? "pp.send" : "pp.recv";
      p.ops.push_back(msg);
      if (with_dp) {
        Op ar;
        ar.type = OpType::Collective;
        ar.group = dp;
        ar.match = 1;
        ar.bytes = 1e9;
        ar.purpose = CommPurpose::DataParallel;
        ar.name = "dp.grad_sync";
        p.ops.push_back(ar);
      }
      s.programs.push_back(p);
    }
    return s;
  };
  ReplayOptions flow, analytic;
  analytic.fidelity = Fidelity::Analytic;
  const Schedule alone = schedule(false), beside = schedule(true);
  const ReplayTimes fa = replay(alone, pod, flow), aa = replay(alone, pod, analytic);
  const ReplayTimes fb = replay(beside, pod, flow), ab = replay(beside, pod, analytic);
  const double send_alone = fa.end_s[0][0];
  CHECK(aa.end_s[0][0] == testing::approx(send_alone).epsilon(1e-6));
  CHECK(ab.end_s[0][0] == testing::approx(send_alone).epsilon(1e-6));  // analytic: no contention
  // Flow: the NIC is shared, max-min fair between the send and the AllReduce's flows on it:
  // when written, 0.0800 s against 0.0400 alone (2.0x), the AllReduce likewise (0.0800 against
  // analytic's 0.0400).
  CHECK(fb.end_s[0][0] > 1.5 * send_alone);
  CHECK(fb.end_s[0][1] > 1.5 * ab.end_s[0][1]);
  MESSAGE("send alone " << send_alone << " s, beside the AllReduce " << fb.end_s[0][0] << " s (flow); AllReduce "
                        << fb.end_s[0][1] << " s flow, " << ab.end_s[0][1] << " s analytic");
}
