// NCCL's double binary tree AllReduce and the automatic ring/tree choice (issue: collective
// communication as NCCL does it): tree shape, closed form, flow == analytic, bytes moved, Auto.
#include "calibrate/profile.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"
#include "sim/tree_flows.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
const std::string kStar8 = kSrc + "/tests/data/replay/star8.yaml";
const std::string kSuperpod = kSrc + "/topologies/dgx-a100-superpod.yaml";
constexpr double kB = 100e9;     // bytes/s of every star8 route
constexpr double kAlpha = 1e-6;  // seconds of every star8 route
constexpr double kSlice = 512.0 * 1024;

double bench_time(const Topology& t, int n, double size, const ReplayOptions& ro, bool unfold,
                  CollectiveAlgorithm algo) {
  BenchOptions b;
  b.replay = ro;
  b.unfold = unfold;
  b.algorithm = algo;
  return run_collective_bench(t, BenchOp::AllReduce, n, {size}, b).at(0).time_s;
}

int depth(int n, int t, int i) {
  int d = 0;
  for (int p = dtree_parent(n, t, i); p >= 0; p = dtree_parent(n, t, p)) ++d;
  return d;
}

}  // namespace

TEST_CASE("double binary tree: two binary trees over the nodes, no node a leaf in both") {
  for (int n = 2; n <= 40; ++n) {
    CAPTURE(n);
    for (int t : {0, 1}) {
      std::vector<int> kids(n, 0);
      int roots = 0;
      for (int i = 0; i < n; ++i) {
        const int p = dtree_parent(n, t, i);
        if (p < 0) ++roots;
        else ++kids[p];
        REQUIRE(depth(n, t, i) < n);  // reaches the root: no cycle
      }
      CHECK(roots == 1);
      for (int k : kids) CHECK(k <= 2);
    }
    for (int i = 0; i < n; ++i) {
      bool leaf[2] = {true, true};
      for (int t : {0, 1})
        for (int j = 0; j < n; ++j)
          if (dtree_parent(n, t, j) == i) leaf[t] = false;
      CHECK_FALSE((leaf[0] && leaf[1]));
    }
  }
  // NCCL's illustration (src/graph/trees.cc) for 14 ranks: 0 is the root with child 8.
  CHECK(dtree_parent(14, 0, 8) == 0);
  CHECK(dtree_parent(14, 0, 12) == 8);
  CHECK(dtree_parent(14, 0, 13) == 12);
  CHECK(dtree_parent(14, 1, 13 - 8) == 13);  // the mirror: 13 is tree 1's root, child 5
}

TEST_CASE("tree closed form on a uniform machine: 2D slice times + (K - 1) copies, shares from the overlap") {
  // star8, forced tree, one channel: a chain 0 - 1 - ... - 7 (D = 7 hops from the deepest leaf).
  // Each middle GPU sends up to its predecessor and down to its successor through one port.
  const Topology topo = load_topology(kStar8);
  const LinkEfficiency eff;
  CollectiveOptions o;
  o.textbook = true;
  o.algorithm = CollectiveAlgorithm::Tree;
  SUBCASE("K = 16 slices: every port carries an up and a down hop at once, each gets B/2") {
    const CollectivePlan p = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, 16 * kSlice, 1, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
    REQUIRE(p.steps == 16);
    // The first slice crosses 2D = 14 hops (latency + copy each); the 15 after it follow one
    // copy apart, the latency overlapping the next copy.
    CHECK(p.closed_form_s() ==
          testing::approx(2 * 7 * (kAlpha + kSlice / (kB / 2)) + (16 - 1) * kSlice / (kB / 2)).epsilon(1e-9));
  }
  SUBCASE("K = 1: the up and down hops of a port never overlap, each gets B") {
    const double S = 64e3;
    const CollectivePlan p = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, S, 1, o);
    REQUIRE(p.steps == 1);
    CHECK(p.closed_form_s() == testing::approx(2 * 7 * (kAlpha + S / kB)).epsilon(1e-9));
  }
}

TEST_CASE("tree flow == analytic where no link is shared, member by member") {
  // Two nodes of two GPUs, one channel: each GPU's NVSwitch and NIC links carry one tree hop
  // each way, so nothing is shared and the flows must end exactly where the closed form says.
  const Topology topo = load_topology(kSuperpod, {{"node.count", "2"}, {"node.gpus.count", "2"}});
  const LinkEfficiency eff;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Tree;
  o.channels = 1;
  for (double size : {64.0 * 1024, 4.0 * 1024 * 1024 + 1000}) {
    CAPTURE(size);
    // As the bench plans it: one channel of the options' (NCCL's chunk is its call's channels').
    const CollectivePlan p = plan_collective(topo, eff, first(4), CollectiveKind::AllReduce, size, 0, o);
    REQUIRE(p.channels == 1);
    REQUIRE(p.trees.size() == 1);
    for (int v = 0; v < 4; ++v)
      if (v != p.trees[0].root) {
        REQUIRE(p.trees[0].up[v].share_Bps == p.trees[0].up[v].bandwidth_Bps);
        REQUIRE(p.trees[0].down[v].share_Bps == p.trees[0].down[v].bandwidth_Bps);
      }
    ReplayOptions flow, analytic;
    flow.collectives = analytic.collectives = o;
    analytic.fidelity = Fidelity::Analytic;
    const double expected = p.closed_form_s();
    REQUIRE(expected > 0);
    // The bench times a tree on every rank whether or not --unfold is given (regression: folded,
    // it timed rank 0, the root, which is done before the deepest leaf).
    for (bool unfold : {false, true}) {
      CAPTURE(unfold);
      // (Within a nanosecond: SimGrid's timers and flows add up rounding over the slices, 0.59 ns
      // at 4 MiB, where a slice's hop takes microseconds.)
      CHECK(std::abs(bench_time(topo, 4, size, flow, unfold, CollectiveAlgorithm::Tree) - expected) <= 1e-9);
      CHECK(bench_time(topo, 4, size, analytic, unfold, CollectiveAlgorithm::Tree) ==
            testing::approx(expected).epsilon(1e-9));
    }
    CHECK(p.member_ends_s()[0] < expected);
  }
}

TEST_CASE("tree flows deliver what received_bytes documents, to every member") {
  struct Case {
    int nodes, gpus, channels;
  };
  for (Case k : {Case{4, 8, 8}, Case{5, 1, 4}, Case{3, 2, 3}}) {
    CAPTURE(k.nodes);
    CAPTURE(k.gpus);
    const Topology topo = load_topology(
        kSuperpod, {{"node.count", std::to_string(k.nodes)}, {"node.gpus.count", std::to_string(k.gpus)}});
    const LinkEfficiency eff;
    CollectiveOptions o;
    o.algorithm = CollectiveAlgorithm::Tree;
    o.protocol_auto = false;
    o.protocol = Protocol::Simple;  // wire bytes = payload bytes
    const int n = k.nodes * k.gpus;
    const double S = 5.0 * 1024 * 1024 + 12;
    const CollectivePlan p = plan_collective(topo, eff, first(n), CollectiveKind::AllReduce, S, k.channels, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
    if (k.gpus == 1) CHECK(p.trees.size() == 2);  // channels c and c+2 are the same tree: merged
    // Drive the flows with no clock: every action ends in issue order.
    TreeRun run(p);
    std::deque<TreeAction> q;
    std::vector<TreeAction> acts;
    std::vector<int> finished;
    for (int v = 0; v < n; ++v) run.set_present(v, acts);
    std::vector<double> got(n, 0.0);
    long long flows = 0;
    while (true) {
      q.insert(q.end(), acts.begin(), acts.end());
      acts.clear();
      if (q.empty()) break;
      const TreeAction a = q.front();
      q.pop_front();
      switch (a.kind) {
        case TreeAction::Delay:
          run.delay_done(a.tree, a.hop, acts);
          break;
        case TreeAction::Slot:
          run.slot_done(a.tree, a.hop, acts);
          break;
        case TreeAction::Arrival:
          run.arrival_done(a.tree, a.hop, acts, finished);
          break;
        case TreeAction::Flow:
          got[a.dst_pos] += a.bytes;
          ++flows;
          run.flow_done(a.tree, a.hop, acts, finished);
          break;
      }
    }
    CHECK(static_cast<int>(finished.size()) == n);
    CHECK(flows == p.tree_flows());
    double sum = 0;
    for (int v = 0; v < n; ++v) {
      CHECK(got[v] == testing::approx(tree_received_bytes(p, v)).epsilon(1e-12));
      sum += got[v];
    }
    CHECK(sum / n == testing::approx(2.0 * (n - 1) / n * S).epsilon(1e-12));
    CHECK(received_bytes_per_rank(p) == testing::approx(2.0 * (n - 1) / n * S).epsilon(1e-12));
  }
}

TEST_CASE("automatic algorithm: tree for a small AllReduce over many nodes, ring inside a node, forcing") {
  const LinkEfficiency eff;
  CollectiveOptions o;  // Auto
  const Topology pod = load_topology(kSuperpod, {{"node.count", "16"}});
  const CollectivePlan small = plan_collective(pod, eff, first(128), CollectiveKind::AllReduce, 64 * 1024, 0, o);
  CHECK(small.algorithm == CollectiveAlgorithm::Tree);
  const Topology node = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CHECK(plan_collective(node, eff, first(8), CollectiveKind::AllReduce, 1024.0 * 1024 * 1024, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  SUBCASE("the ring is kept inside one node even for a tiny message") {
    CHECK(plan_collective(node, eff, first(8), CollectiveKind::AllReduce, 8, 0, o).algorithm ==
          CollectiveAlgorithm::Ring);
  }
  SUBCASE("forcing") {
    o.algorithm = CollectiveAlgorithm::Ring;
    CHECK(plan_collective(pod, eff, first(128), CollectiveKind::AllReduce, 64 * 1024, 0, o).algorithm ==
          CollectiveAlgorithm::Ring);
    o.algorithm = CollectiveAlgorithm::Tree;
    const CollectivePlan chain = plan_collective(node, eff, first(8), CollectiveKind::AllReduce, 1e9, 0, o);
    CHECK(chain.algorithm == CollectiveAlgorithm::Tree);
    // NCCL runs the tree for AllReduce only.
    CHECK(plan_collective(pod, eff, first(128), CollectiveKind::AllGather, 64 * 1024, 0, o).algorithm ==
          CollectiveAlgorithm::Ring);
  }
  SUBCASE("an op's algorithm field reaches the replay") {
    ReplayOptions ro;
    ro.fidelity = Fidelity::Analytic;
    const double tree = bench_time(pod, 128, 64 * 1024, ro, false, CollectiveAlgorithm::Tree);
    const double ring = bench_time(pod, 128, 64 * 1024, ro, false, CollectiveAlgorithm::Ring);
    const double autom = bench_time(pod, 128, 64 * 1024, ro, false, CollectiveAlgorithm::Auto);
    CHECK(tree < ring);
    CHECK(autom == tree);
  }
}

TEST_CASE("overlapsim collective --algo forces the algorithm and refuses a bad value") {
  const std::string cmd = "collective --op allreduce -t " + kSuperpod + " --override node.count=16 --sizes 64KiB:64KiB";
  const Run tree = run_cli(cmd + " --algo tree"), ring = run_cli(cmd + " --algo ring"), autom = run_cli(cmd);
  REQUIRE(tree.status == 0);
  REQUIRE(ring.status == 0);
  CHECK(tree.output != ring.output);
  CHECK(autom.output == tree.output);
  // The last column says what ran.
  CHECK(tree.output.find(" tree/") != std::string::npos);
  CHECK(ring.output.find(" ring/") != std::string::npos);
  CHECK(ring.output.find(" tree/") == std::string::npos);
  const Run bad = run_cli(cmd + " --algo trees");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--algo") != std::string::npos);
  // An empty value is refused, not taken as auto; NCCL_ALGO's own spellings of NVLS_TREE are read.
  for (const char* flag : {" --algo ''", " --protocol ''"}) {
    const Run empty = run_cli(cmd + flag);
    CHECK(empty.status == 2);
    CHECK(empty.output.find("expected a value") != std::string::npos);
  }
  for (const char* name : {"NVLSTree", "nvls_tree"}) CHECK(run_cli(cmd + " --algo " + name).status == 0);
}

TEST_CASE("tree flow == analytic where a tree's up and down hops share GPU ports and NICs") {
  // Regression: a tree's hops share each GPU's port (its up and down hops, over every channel),
  // and a flow ran at the port's whole bandwidth while the others waited, so flow beat the
  // closed form: one DGX A100 node, 32 MiB, Simple: 346.6 µs flow against 664.4 µs. A slice
  // now reaches the next member no sooner than at its channel's share of the hop's links.
  const std::vector<ProtocolCase> cases{
      {"/topologies/dgx-a100.yaml", {}, 8, Protocol::Simple, 32.0 * 1024 * 1024},
      {"/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}}, 8, Protocol::Simple, 16.0 * 1024 * 1024},
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, 16, Protocol::LL128, 128.0 * 1024 * 1024},
  };
  for (const ProtocolCase& c : cases) {
    const Topology topo = load_topology(kSrc + c.topology, c.overrides);
    BenchOptions b = forced_protocol(c);
    b.algorithm = CollectiveAlgorithm::Tree;
    b.replay.collectives.tree_slice_flows = kMaxTreeFlows;  // slice by slice, not in bulk
    const auto [flow, analytic] = flow_and_analytic(topo, BenchOp::AllReduce, c.ranks, c.size, b);
    INFO(c.topology << ": flow " << flow * 1e6 << " µs, analytic " << analytic * 1e6 << " µs");
    // (1e-5: a few ns over hundreds of µs, the flows' and timers' rounding over NCCL's chunks of
    // 64-128 KiB at these sizes, hundreds of slices a channel)
    CHECK(flow == testing::approx(analytic).epsilon(1e-5));
  }
  // More channels than GPUs in the node: identical channels merge into one flow of their summed
  // bytes and rate (regression: the floor charged the merged bytes at one channel's share, 2×).
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Tree;
  b.replay.collectives.protocol_auto = false;
  b.replay.collectives.protocol = Protocol::Simple;
  b.channels = 16;
  b.replay.collectives.tree_slice_flows = kMaxTreeFlows;
  const FlowAnalytic merged = flow_and_analytic(one, BenchOp::AllReduce, 8, 16.0 * 1024 * 1024, b);
  CHECK(merged.flow == testing::approx(merged.analytic).epsilon(1e-6));
}

TEST_CASE("a tree over 16 nodes routed destination-mod-k shares no spine link, hashed (ecmp) it is slowed") {
  // Regression: routes hashed per flow put 3-4 of the tree's cross-rail hops (a child node's
  // head to the parent's intra[1]) on one spine link, so 1 GiB over 16 DGX A100 nodes reached
  // 79 GB/s busbw against 141 GB/s over 4 nodes. Destination-mod-k gives each hop its own
  // spine plane: the tree is then bound by its NICs as over 4 nodes, and flow equals the
  // closed form.
  const double size = 1024.0 * 1024 * 1024;
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Tree;
  const Topology dmodk = load_topology(kSuperpod, {{"node.count", "16"}});
  const Topology ecmp = load_topology(kSrc + "/tests/data/topology/superpod-ecmp.yaml", {{"node.count", "16"}});
  const FlowAnalytic d = flow_and_analytic(dmodk, BenchOp::AllReduce, 128, size, b);
  const FlowAnalytic e = flow_and_analytic(ecmp, BenchOp::AllReduce, 128, size, b);
  const double four_nodes = bench_time(load_topology(kSuperpod, {{"node.count", "4"}}), 32, size, b.replay, false,
                                       CollectiveAlgorithm::Tree);
  INFO("d-mod-k flow " << d.flow * 1e6 << " µs, analytic " << d.analytic * 1e6 << " µs; ecmp flow " << e.flow * 1e6
                       << " µs; 4 nodes " << four_nodes * 1e6 << " µs");
  CHECK(d.flow == testing::approx(d.analytic).epsilon(1e-6));
  CHECK(d.flow == testing::approx(four_nodes).epsilon(0.05));  // NIC-bound at either node count
  CHECK(e.flow > 1.5 * d.flow);
}

TEST_CASE("tree slices are NCCL's chunks for the size: smaller while a channel's bytes are few per tree level") {
  // Two DGX A100 nodes: 16 ranks, the tree's depth 8 - 1 + log2(2) = 8; NCCL's call runs on the
  // communicator's 16 channels (sm_blocks), the plan's flows on 8.
  const Topology topo = load_topology(kSuperpod, {{"node.count", "2"}});
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Tree;
  o.protocol_auto = false;
  o.protocol = Protocol::Simple;
  const double MiB = 1024.0 * 1024;
  // 16 MiB: 16 MiB / (16 x 512 KiB) = 2 chunks < 8 x 8: halved to 128 KiB; 8 < 4 x 8: to 64 KiB
  // (no further: 16 >= 8). 2 MiB a plan channel in 64 KiB slices.
  const CollectivePlan mid = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 16 * MiB, 0, o);
  REQUIRE(mid.sm_blocks == 16);
  REQUIRE(mid.channels == 8);
  CHECK(mid.steps == 32);
  // 1 GiB: 128 chunks of 512 KiB a channel >= 64: the step itself.
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 1024 * MiB, 0, o).steps == 256);
  // LL128: s = 1 + log2(2) + 0.1 x 8 = 2.8; 16 MiB / (16 x 614,400) = 1 < 64 x 2.8 / 8 = 22.4:
  // halved while above 128 KiB, to 307,200 (3), 153,600 (6), 76,800 B of lines (13 chunks, no
  // longer above 128 KiB); 13 >= 16 x 2.8 / 8 = 5.6: kept. 72,000 B of payload a slice.
  o.protocol = Protocol::LL128;
  const CollectivePlan ll128 = plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 16 * MiB, 0, o);
  CHECK(ll128.steps == static_cast<int>(std::ceil(2 * MiB / 72000)));
  // A textbook tree keeps the protocol's step (512 KiB for Simple).
  o.protocol = Protocol::Simple;
  o.textbook = true;
  CHECK(plan_collective(topo, {}, first(16), CollectiveKind::AllReduce, 16 * MiB, 8, o).steps == 4);
}

TEST_CASE("a forced tree in one DGX A100 node stays under NCCL's LL and LL128 limits (regression: 212 GB/s busbw)") {
  // Forced (NCCL_ALGO=Tree), the tree's LL and LL128 hops were held to no protocol limit: LL128
  // reached 212 GB/s busbw at 1 GiB, above the ring's measured LL128 ceiling (131 GB/s). A tree
  // member sends S up and S down per AllReduce of S bytes, so a busBw limit B holds the tree's
  // nccl-tests busbw, 2 (n − 1) / n · S / T, to (n − 1) / n · B at large sizes.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const Profile prof = load_profile(default_profile_path("a100-sxm4-80gb"));
  REQUIRE(prof.ll128_busbw_nvlink_Bps > 0);
  ReplayOptions flow, analytic;
  flow.link_efficiency = analytic.link_efficiency = LinkEfficiency::of_profile(prof);
  flow.collectives.read_profile(prof);
  analytic.collectives.read_profile(prof);
  analytic.fidelity = Fidelity::Analytic;
  flow.collectives.tree_slice_flows = kMaxTreeFlows;  // slice by slice (tree_bulk_test: in bulk)
  const double S = 1024.0 * 1024 * 1024, n = 8;
  for (Protocol proto : {Protocol::LL, Protocol::LL128}) {
    CAPTURE(static_cast<int>(proto));
    flow.collectives.protocol_auto = analytic.collectives.protocol_auto = false;
    flow.collectives.protocol = analytic.collectives.protocol = proto;
    // NCCL's llMaxBw in one Ampere node (src/graph/tuning.cc); the profile's LL128 ceiling on NVLink.
    const double limit = proto == Protocol::LL ? 87.7e9 : prof.ll128_busbw_nvlink_Bps;
    const double t = bench_time(topo, 8, S, analytic, false, CollectiveAlgorithm::Tree);
    const double busbw = 2 * (n - 1) / n * S / t;
    CHECK(busbw <= (n - 1) / n * limit);
    CHECK(busbw >= 0.97 * (n - 1) / n * limit);  // the limit binds: the links would allow more
    CHECK(bench_time(topo, 8, S, flow, false, CollectiveAlgorithm::Tree) == testing::approx(t).epsilon(1e-6));
    // The ring stays faster than the forced tree under the same limit, as NCCL's tuner has it.
    CHECK(bench_time(topo, 8, S, analytic, false, CollectiveAlgorithm::Ring) < t);
  }
}

TEST_CASE("the tree's protocol limit bounds its pipeline's rate, not a slice's way along the tree") {
  // One slice per channel: the limit (a floor on each sender's occupancy per slice) cannot act,
  // so the time is the plan's without it; many slices: the busiest sender's occupancy sets it.
  const Topology topo = load_topology(kSuperpod, {{"node.count", "4"}});
  const LinkEfficiency eff;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Tree;
  o.protocol_auto = false;
  o.protocol = Protocol::LL;
  for (double size : {4096.0, 1024.0 * 1024 * 1024}) {
    CAPTURE(size);
    const CollectivePlan p = plan_collective(topo, eff, first(32), CollectiveKind::AllReduce, size, 0, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
    CollectivePlan unlimited = p;
    bool limited = false;
    for (auto& tp : unlimited.trees)
      for (int v = 0; v < p.members; ++v)
        if (v != tp.root)
          for (Hop2* h : {&tp.up[v], &tp.down[v]}) {
            // LL over more than 2 nodes on AMD CPUs: llMaxBw 19.0 GB/s over the plan's channels,
            // two hops a member, LL's half-payload wire.
            CHECK(h->rate_cap_Bps == testing::approx(19.0e9 / (2.0 * p.channels) / 0.5).epsilon(1e-12));
            limited |= h->rate_cap_Bps < h->share_Bps;
            h->rate_cap_Bps = std::numeric_limits<double>::infinity();
          }
    REQUIRE(limited);
    if (p.steps == 1) {
      CHECK(p.closed_form_s() == testing::approx(unlimited.closed_form_s()).epsilon(1e-12));
    } else {
      CHECK(p.closed_form_s() > 1.5 * unlimited.closed_form_s());
      const double busbw = 2.0 * 31 / 32 * size / p.closed_form_s();
      CHECK(busbw <= 31.0 / 32 * 19.0e9);
      CHECK(busbw >= 0.97 * 31.0 / 32 * 19.0e9);
    }
  }
}
