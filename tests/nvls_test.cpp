// NVLS (NVLink SHARP) AllReduce, AllGather and ReduceScatter inside a Hopper NVSwitch node, and
// NVLS_TREE across such nodes (collective_plan.hpp): their closed forms, flow == analytic, where
// Auto takes them, where they cannot run, and the bytes each port carries (issue: collective
// communication as NCCL does it).
#include "calibrate/profile.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;

Topology h100_node() { return load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}}); }

}  // namespace

TEST_CASE("NVLS closed form: 25 µs + (ceil(S / L) + 2) · L / (NCCL's NVLS efficiency · 15/16) over the GPU's port") {
  const Topology topo = h100_node();
  LinkEfficiency eff;
  eff.nvlink = 0.8;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Nvls;
  const double S = 256 * kMiB;
  const CollectivePlan p = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, S, 0, o);
  REQUIRE(p.algorithm == CollectiveAlgorithm::Nvls);
  CHECK(p.channels == 16);  // NVLS_NCHANNELS_SM90
  CHECK(p.base_latency_s == 0);
  // The DGX H100 node: 450 GB/s per GPU per direction into the NVSwitch fabric (topology file).
  const double port = 450e9 * 0.8;
  const double eta = 0.85 * 15.0 / 16.0;
  // 256 MiB: below 64 loops of 16 · 8 · 128 KiB (1 GiB), so 64 KiB chunks, loops L = 8 MiB; the
  // three-stage pipeline passes 32 + 2 loops.
  CHECK(p.closed_form_s() == testing::approx(25e-6 + (32 + 2) * 8 * kMiB / eta / port).epsilon(1e-9));
  SUBCASE("NCCL's chunk steps down with the size: L = 16, 8, 4, 2 MiB") {
    // {bytes, loop L, loops}: 1 GiB and up 128 KiB chunks; below 8 · (16 · 8 · 64 KiB) = 64 MiB
    // 32 KiB; below 2 · (16 · 8 · 32 KiB) = 8 MiB 16 KiB; a partial loop counts whole.
    const double cases[][3] = {{1024 * kMiB, 16 * kMiB, 64}, {64 * kMiB, 8 * kMiB, 8}, {32 * kMiB, 4 * kMiB, 8},
                               {4 * kMiB, 2 * kMiB, 2},      {1 * kMiB, 2 * kMiB, 1}};
    for (const auto& c : cases) {
      CAPTURE(c[0]);
      const CollectivePlan q = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, c[0], 0, o);
      CHECK(q.closed_form_s() == testing::approx(25e-6 + (c[2] + 2) * c[1] / eta / port).epsilon(1e-9));
    }
  }
  SUBCASE("below one channel's unit (8 · 16 KiB) only channel 0 works: 3 · C · S pass, not three loops") {
    for (double size : {8.0, 64.0 * 1024}) {
      CAPTURE(size);
      const CollectivePlan q = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, size, 0, o);
      CHECK(q.closed_form_s() == testing::approx(25e-6 + 3 * 16 * size / eta / port).epsilon(1e-9));
    }
  }
  // Every member receives S: the switch's reduced shard and every other member's result.
  CHECK(received_bytes_per_rank(p) == testing::approx(S));
}

TEST_CASE("NVLS: flow == analytic, folded and unfolded") {
  const Topology topo = h100_node();
  for (bool unfold : {true, false})
    for (double size : {8.0, 1 * kMiB, 64 * kMiB, 1024 * kMiB}) {
      BenchOptions b;
      b.unfold = unfold;
      b.algorithm = CollectiveAlgorithm::Nvls;
      const BenchRow flow = run_collective_bench(topo, BenchOp::AllReduce, 8, {size}, b).at(0);
      b.replay.fidelity = Fidelity::Analytic;
      const BenchRow analytic = run_collective_bench(topo, BenchOp::AllReduce, 8, {size}, b).at(0);
      INFO("size " << size << ", unfold " << unfold);
      CHECK(flow.plan.rfind("nvls/", 0) == 0);
      CHECK(flow.time_s == testing::approx(analytic.time_s).epsilon(1e-9));
    }
}

TEST_CASE("NVLS: Auto takes it where it beats the ring, and never where it cannot run") {
  CollectiveOptions o;  // Auto
  const Topology h100 = h100_node();
  // Tiny messages: ring LL's ~15 µs beats NVLS's 25 µs latency; large ones: NVLS moves S per
  // port where the ring moves 2(n−1)/n · S.
  CHECK(plan_collective(h100, {}, first(8), CollectiveKind::AllReduce, 8, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(h100, {}, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Nvls);
  // AllGather and ReduceScatter: the ring, which NCCL's tuner ranks first (below).
  CHECK(plan_collective(h100, {}, first(8), CollectiveKind::AllGather, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  // Across nodes (NVLS_TREE there, below), on A100 (NVSwitch gen 2 has no SHARP), or forced
  // where it cannot run (NVLS alone across nodes needs CollNet): the ring.
  const Topology two = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm !=
        CollectiveAlgorithm::Nvls);
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CHECK(plan_collective(a100, {}, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  o.algorithm = CollectiveAlgorithm::Nvls;
  CHECK(plan_collective(a100, {}, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  // A textbook model has no NVLS.
  o.textbook = true;
  CHECK(plan_collective(h100, {}, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
}

TEST_CASE("NVLS inside a node beside the tree, where NCCL_ALGO leaves both and not the ring: the lesser closed form") {
  const Topology h100 = h100_node();
  const LinkEfficiency eff = shipped_link_efficiency("h100-sxm5-80gb");
  CollectiveOptions o;  // Auto, within NCCL_ALGO=tree,nvls
  parse_nccl_algo_list("tree,nvls", o.allowed);
  for (const double bytes : {8.0 * 1024, 1 * kMiB, 8 * kMiB, 256 * kMiB}) {
    CAPTURE(bytes);
    const CollectivePlan p = plan_collective(h100, eff, first(8), CollectiveKind::AllReduce, bytes, 0, o);
    CollectiveOptions t = o, n = o;
    t.algorithm = CollectiveAlgorithm::Tree;
    n.algorithm = CollectiveAlgorithm::Nvls;
    const double tree = plan_collective(h100, eff, first(8), CollectiveKind::AllReduce, bytes, 0, t).closed_form_s();
    const double nvls = plan_collective(h100, eff, first(8), CollectiveKind::AllReduce, bytes, 0, n).closed_form_s();
    CHECK_FALSE(p.fallback);
    CHECK(p.algorithm == (tree < nvls ? CollectiveAlgorithm::Tree : CollectiveAlgorithm::Nvls));
    CHECK(p.closed_form_s() == std::min(tree, nvls));
  }
  // 8 KiB: the tree's LL chain (16.9 µs) under NVLS's 25 µs latency; 256 MiB: NVLS.
  CHECK(plan_collective(h100, eff, first(8), CollectiveKind::AllReduce, 8192, 0, o).algorithm == CollectiveAlgorithm::Tree);
  CHECK(plan_collective(h100, eff, first(8), CollectiveKind::AllReduce, 256 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::Nvls);
}

TEST_CASE("NVLS: the time does not depend on the group size (S crosses each port either way)") {
  // Unlike the ring's 2(n−1)/n · S per port: 4 GPUs take as long as 8 for the same buffer.
  const Topology topo = h100_node();
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Nvls;
  const double eight = run_collective_bench(topo, BenchOp::AllReduce, 8, {512 * kMiB}, b).at(0).time_s;
  const double four = run_collective_bench(topo, BenchOp::AllReduce, 4, {512 * kMiB}, b).at(0).time_s;
  CHECK(four == testing::approx(eight).epsilon(1e-9));
}

TEST_CASE("NVLS cannot run on 2 GPUs, below 2 channels or with a protocol other than Simple: the ring") {
  // NCCL src/transport/nvls.cc (gpuCount <= 2), src/graph/tuning.cc (nChannels < 2, Simple only).
  const Topology topo = h100_node();
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Nvls;
  const double S = 256 * kMiB;
  CHECK(plan_collective(topo, {}, first(2), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(topo, {}, first(3), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Nvls);
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, S, 1, o).algorithm == CollectiveAlgorithm::Ring);
  o.protocol_auto = false;
  o.protocol = Protocol::LL;
  CHECK(plan_collective(topo, {}, first(8), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
}

TEST_CASE("an nvls tuning rule where NVLS cannot run gives the ring with its own protocol choice") {
  // Regression: the rule's protocol (Simple) was kept for the fallback ring: 8 B took 56 µs
  // (ring Simple) instead of 16.4 µs (ring LL).
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CollectiveOptions o;
  TuningRule r;
  r.kind = CollectiveKind::AllReduce;
  r.max_bytes = 1e12;
  r.algorithm = CollectiveAlgorithm::Nvls;
  r.protocol = Protocol::Simple;
  o.tuning = {r};
  const CollectivePlan p = plan_collective(a100, {}, first(8), CollectiveKind::AllReduce, 8, 0, o);
  CHECK(p.algorithm == CollectiveAlgorithm::Ring);
  CHECK(p.protocol == Protocol::LL);
}

TEST_CASE("NVLS_TREE closed form over 2 DGX H100 nodes: NCCL's per-channel ceiling, or the rails' tree") {
  const Topology two = h100_nodes(2);
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::NvlsTree;
  const double S = 8192 * kMiB;
  const double latency = 25e-6 + 2 * 1 * 20.9e-6;  // hwLat NVLink + 2 log2(N) hwLat network
  SUBCASE("full-speed NICs: the kernel's ceiling, 8 heads x 57.7 GB/s of busbw") {
    // Below it: each port's NVLS (514 loops of 16 MiB at 0.85 x 15/16 of 450 GB/s: 24 ms) and
    // each rail's tree (1 GiB a rail, two hops each way on a NIC of 50 GB/s: 21.5 ms).
    const CollectivePlan p = plan_collective(two, LinkEfficiency{}, first(16), CollectiveKind::AllReduce, S, 0, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::NvlsTree);
    CHECK(p.channels == 16);
    CHECK(p.base_latency_s == testing::approx(latency).epsilon(1e-12));
    CHECK(p.closed_form_s() == testing::approx(latency + S / (8 * 57.7e9 * 16 / 30)).epsilon(1e-9));
    CHECK(received_bytes_per_rank(p) == testing::approx(S));
  }
  SUBCASE("NICs at a fifth: the rails' tree, one chunk per channel up and down to fill it") {
    LinkEfficiency eff;
    eff.network = 0.2;  // 10 GB/s per NIC; each carries 2 hops a way (tree 0 down, tree 1 up)
    const CollectivePlan p = plan_collective(two, eff, first(16), CollectiveKind::AllReduce, S, 0, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::NvlsTree);
    const double rail = S / 8;
    CHECK(p.closed_form_s() ==
          testing::approx(latency + rail / 2 / (10e9 / 2) + 2 * 1 * 16 * 131072 / 10e9).epsilon(1e-9));
  }
}

TEST_CASE("NVLS_TREE: Auto takes it across H100 nodes where NCCL's tuner ranks it first, where it cannot run, the ring") {
  CollectiveOptions o;  // Auto
  const Topology two = h100_nodes(2);
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 1024 * kMiB, 0, o).algorithm ==
        CollectiveAlgorithm::NvlsTree);
  // 8 B: its 67 us latency loses to the tree's LL.
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 8, 0, o).algorithm == CollectiveAlgorithm::Tree);
  o.algorithm = CollectiveAlgorithm::NvlsTree;
  const double S = 1024 * kMiB;
  // One node; A100 nodes; 1 or 2 GPUs a node (no NVLS inside them); 8 + 1 GPUs (uneven); one
  // channel; LL forced; the textbook model: the ring.
  CHECK(plan_collective(h100_nodes(1), {}, first(8), CollectiveKind::AllReduce, S, 0, o).algorithm ==
        CollectiveAlgorithm::Ring);
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(plan_collective(a100, {}, first(16), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, {0, 8}, CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, {0, 1, 8, 9}, CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, {0, 1, 2, 8, 9, 10}, CollectiveKind::AllReduce, S, 0, o).algorithm ==
        CollectiveAlgorithm::NvlsTree);
  CHECK(plan_collective(two, {}, first(9), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 1, o).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllGather, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
  CollectiveOptions ll = o;
  ll.protocol_auto = false;
  ll.protocol = Protocol::LL;
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 0, ll).algorithm == CollectiveAlgorithm::Ring);
  CollectiveOptions textbook = o;
  textbook.textbook = true;
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 0, textbook).algorithm ==
        CollectiveAlgorithm::Ring);
}

TEST_CASE("NVLS_TREE: flow == analytic without other traffic (its flows run under its closed form)") {
  const Topology two = h100_nodes(2);
  for (double size : {64 * kMiB, 1024 * kMiB}) {
    BenchOptions b;
    b.algorithm = CollectiveAlgorithm::NvlsTree;
    const BenchRow flow = run_collective_bench(two, BenchOp::AllReduce, 16, {size}, b).at(0);
    b.replay.fidelity = Fidelity::Analytic;
    const BenchRow analytic = run_collective_bench(two, BenchOp::AllReduce, 16, {size}, b).at(0);
    INFO("size " << size);
    CHECK(flow.plan.rfind("nvlstree/", 0) == 0);
    CHECK(flow.time_s == testing::approx(analytic.time_s).epsilon(1e-12));
  }
}

TEST_CASE("NVLS_TREE in flow: alone it takes its closed form, a ring sharing a rail's NICs delays it") {
  // Two H100 nodes, NICs at a quarter (12.5 GB/s) so that the rails' tree binds: A is an NVLS_TREE
  // AllReduce over 3 GPUs a node (3 heads, rail r on NIC r); B a ring AllReduce between GPU 0 of
  // each node on another stream, all its channels through NIC 0, rail 0's.
  const Topology two = h100_nodes(2);
  const std::vector<int> a_ranks{0, 1, 2, 8, 9, 10};
  auto schedule = [&](bool with_b) {
    Schedule s;
    s.world_size = 16;
    const int ga = s.intern_group(a_ranks, CommPurpose::DataParallel);
    const int gb = s.intern_group({0, 8}, CommPurpose::Pipeline);
    for (int r : a_ranks) {
      RankProgram p{r, 2, {collective_op(ga, 1, 1024 * kMiB, "a", CollectiveAlgorithm::NvlsTree)}};
      if (with_b && (r == 0 || r == 8))
        p.ops.push_back(collective_op(gb, 2, 2048 * kMiB, "b", CollectiveAlgorithm::Ring, 1));
      s.programs.push_back(p);
    }
    return s;
  };
  ReplayOptions flow, analytic;
  flow.link_efficiency.network = analytic.link_efficiency.network = 0.25;
  analytic.fidelity = Fidelity::Analytic;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::NvlsTree;
  const CollectivePlan p = plan_collective(two, flow.link_efficiency, a_ranks, CollectiveKind::AllReduce, 1024 * kMiB, 0, o);
  REQUIRE(p.algorithm == CollectiveAlgorithm::NvlsTree);
  REQUIRE(p.bulk.size() == 6 + 2 * 2 * 3);  // 3 GPUs a node's NVLS ring on 2 nodes; 2 trees x up/down x 3 rails
  // Alone: flow == analytic == the closed form (rank 1 is in A only: its op 0).
  const double alone_flow = replay(schedule(false), two, flow).end_s[1][0];
  CHECK(alone_flow == testing::approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(replay(schedule(false), two, analytic).end_s[1][0] == testing::approx(p.closed_form_s()).epsilon(1e-9));
  // Beside B: analytic does not see it; flow's rail 0 shares NIC 0 with B's ring.
  CHECK(replay(schedule(true), two, analytic).end_s[1][0] == testing::approx(p.closed_form_s()).epsilon(1e-9));
  CHECK(replay(schedule(true), two, flow).end_s[1][0] > 1.2 * alone_flow);
}

TEST_CASE("NVLS_TREE: a tiny message costs its latency whatever the channels, a forced protocol is ranked alone") {
  // Regression: the tree's fill charged every channel's whole chunk even for 8 B (2 nodes: 89 us
  // on 16 channels, 156 us on 64, where NCCL's latency is 66.8 us).
  const Topology two = h100_nodes(2);
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::NvlsTree;
  for (int channels : {2, 16, 64}) {
    CAPTURE(channels);
    const CollectivePlan p = plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 8, channels, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::NvlsTree);
    CHECK(p.closed_form_s() == testing::approx(25e-6 + 2 * 20.9e-6).epsilon(1e-3));
  }
  // Regression: with --protocol simple NCCL's tuner still ranked LL and LL128 and picked the
  // tree (tree Simple 92 us at 8 B), where with Simple alone it ranks NVLS_TREE (67 us) first.
  CollectiveOptions simple;
  simple.protocol_auto = false;
  simple.protocol = Protocol::Simple;
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, 8, 0, simple).algorithm ==
        CollectiveAlgorithm::NvlsTree);
}

TEST_CASE("a tuning rule naming NVLS or NVLS_TREE where it cannot run leaves the choice to the model") {
  // Regression: it forced the ring (A100, 2 nodes: 35.6 us at 8 B where the automatic tree takes 26.6).
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::Nvls, CollectiveAlgorithm::NvlsTree}) {
    CollectiveOptions o;
    TuningRule r;
    r.kind = CollectiveKind::AllReduce;
    r.max_bytes = 1e12;
    r.algorithm = a;
    r.protocol = Protocol::Simple;
    o.tuning = {r};
    const CollectivePlan ruled = plan_collective(a100, {}, first(16), CollectiveKind::AllReduce, 8, 0, o);
    const CollectivePlan autom = plan_collective(a100, {}, first(16), CollectiveKind::AllReduce, 8, 0, CollectiveOptions{});
    CHECK(ruled.algorithm == autom.algorithm);
    CHECK(ruled.closed_form_s() == testing::approx(autom.closed_form_s()).epsilon(1e-12));
    // Forced by the op, as NCCL_ALGO: the ring.
    CollectiveOptions forced;
    forced.algorithm = a;
    CHECK(plan_collective(a100, {}, first(16), CollectiveKind::AllReduce, 8, 0, forced).algorithm ==
          CollectiveAlgorithm::Ring);
  }
}

TEST_CASE("NVLS as measured: each loop after the first adds the profile's nvls_loop_s") {
  const Topology topo = h100_node();
  LinkEfficiency eff;
  eff.nvlink = 0.8;
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Nvls;
  const double S = 256 * kMiB;  // 32 loops of 8 MiB (64 KiB chunks), as in the closed-form test
  const double without = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, S, 0, o).closed_form_s();
  o.nvls_loop_s = 4e-6;
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, S, 0, o).closed_form_s() ==
        testing::approx(without + 31 * 4e-6).epsilon(1e-9));
  // One loop: nothing added.
  const double one = plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, 1 * kMiB, 0, o).closed_form_s();
  o.nvls_loop_s = 0;
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::AllReduce, 1 * kMiB, 0, o).closed_form_s() ==
        testing::approx(one).epsilon(1e-12));
  // The shipped H100 profile carries it, a write and a read keep it, the A100 profile has none.
  const Profile h100 = load_profile(default_profile_path("h100-sxm5-80gb"));
  CHECK(h100.nvls_loop_s == 4e-6);
  CollectiveOptions from;
  from.read_profile(h100);
  CHECK(from.nvls_loop_s == 4e-6);
  const std::string out = testing::temp_path(".json");
  write_profile(h100, out);
  CHECK(load_profile(out).nvls_loop_s == 4e-6);
  CHECK(load_profile(default_profile_path("a100-sxm4-80gb")).nvls_loop_s == 0);
  // Flow equals analytic with it.
  BenchOptions b;
  b.algorithm = CollectiveAlgorithm::Nvls;
  b.replay.collectives.nvls_loop_s = 4e-6;
  const double flow = run_collective_bench(topo, BenchOp::AllReduce, 8, {S}, b).at(0).time_s;
  b.replay.fidelity = Fidelity::Analytic;
  CHECK(flow == testing::approx(run_collective_bench(topo, BenchOp::AllReduce, 8, {S}, b).at(0).time_s).epsilon(1e-9));
}

TEST_CASE("NVLS_TREE's flows move what it requires: S / eta through each GPU's switch port, S / h over each head's rail") {
  // Two H100 nodes, all 16 GPUs: 8 heads (one per NIC), each a rail carrying S / 8, half on each
  // of the two trees; over 2 nodes every head receives its rail's S / 8 once (from its parent on
  // one tree, its child on the other), and every GPU receives S / eta from its switch port.
  const Topology two = h100_nodes(2);
  const double S = 256 * kMiB;
  const testing::RankFlowBytes b =
      testing::flow_bytes_per_rank(two, CollectiveKind::AllReduce, CollectiveAlgorithm::NvlsTree, S, false);
  const double eta = 0.85 * 15.0 / 16.0;
  for (int r = 0; r < 16; ++r) {
    CAPTURE(r);
    CHECK(b.intra_in[r] == testing::approx(S / eta).epsilon(1e-12));
    CHECK(b.inter_in[r] == testing::approx(S / 8).epsilon(1e-12));
  }
}

TEST_CASE("NVLS AllGather and ReduceScatter in one node: 25 µs + (ceil(S / L) + 1) · L / eta, forced only") {
  const Topology topo = h100_node();
  LinkEfficiency eff;
  eff.nvlink = 0.8;
  const double port = 450e9 * 0.8;
  const double eta = 0.85 * 15.0 / 16.0;
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    CAPTURE(static_cast<int>(kind));
    CollectiveOptions o;
    o.algorithm = CollectiveAlgorithm::Nvls;
    const double S = 256 * kMiB;  // the gathered output, the scattered input
    const CollectivePlan p = plan_collective(topo, eff, first(8), kind, S, 0, o);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Nvls);
    CHECK(p.kind == kind);
    CHECK(p.channels == 16);
    CHECK(p.sm_blocks == 16);
    CHECK_FALSE(p.fallback);
    // As the AllReduce's loops (L = 8 MiB at 256 MiB) with one stage fewer to fill: two stages
    // (broadcast through the switch and gather; scatter and reduce through the switch).
    CHECK(p.closed_form_s() == testing::approx(25e-6 + (32 + 1) * 8 * kMiB / eta / port).epsilon(1e-9));
    for (double size : {8.0, 64.0 * 1024}) {  // below one unit: 2 · C · S pass
      const CollectivePlan q = plan_collective(topo, eff, first(8), kind, size, 0, o);
      CHECK(q.closed_form_s() == testing::approx(25e-6 + 2 * 16 * size / eta / port).epsilon(1e-9));
    }
    // The loaded direction carries S: an AllGather's port receives every member's shard, a
    // ReduceScatter's sends every shard of its buffer to the switch's reductions.
    CHECK(received_bytes_per_rank(p) == testing::approx(S));
    // The loop cost as measured for the AllReduce's kernel applies to every loop after the first.
    o.nvls_loop_s = 4e-6;
    CHECK(plan_collective(topo, eff, first(8), kind, S, 0, o).closed_form_s() ==
          testing::approx(p.closed_form_s() + 31 * 4e-6).epsilon(1e-9));
  }
  // Where NVLS cannot run for them: 2 GPUs, across nodes (NCCL needs CollNet there), NVLS
  // disabled, another protocol forced: the ring, marked as a fallback.
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Nvls;
  const Topology two = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  CHECK(plan_collective(topo, eff, first(2), CollectiveKind::AllGather, kMiB, 0, o).fallback);
  CHECK(plan_collective(two, eff, {0, 8, 1, 9}, CollectiveKind::ReduceScatter, kMiB, 0, o).fallback);
  CollectiveOptions off = o;
  off.nvls_enable = false;
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::AllGather, kMiB, 0, off).algorithm ==
        CollectiveAlgorithm::Ring);
  CollectiveOptions ll = o;
  ll.protocol_auto = false;
  ll.protocol = Protocol::LL;
  CHECK(plan_collective(topo, eff, first(8), CollectiveKind::ReduceScatter, kMiB, 0, ll).algorithm ==
        CollectiveAlgorithm::Ring);
}

TEST_CASE("NVLS AllGather and ReduceScatter: NCCL's tuner model ranks the ring first at every size on a DGX H100") {
  NcclTunerInputs in;
  in.ranks = 8;
  in.cc_index = 2;
  in.graph_channels = 8;
  in.comm_channels = 16;
  in.graph_busbw_Bps = 360e9;
  const double S = 1024 * kMiB;
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Nvls, Protocol::Simple, S, in) == inf);  // in.nvls unset
  in.nvls = true;
  in.nvls_heads = 8;
  in.nvls_intra_Bps = 360e9;
  // src/graph/tuning.cc: h · bwIntra · nvlsEfficiency · (h − 1)/h · (ppn − 1)/ppn, not converted,
  // and NVLS's NVLink latency, 25 µs, with no base latency.
  CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Nvls, Protocol::Simple, S, in) ==
        testing::approx(25e-6 + S / (360e9 * 0.85 * 7.0 / 8 * 7.0 / 8)).epsilon(1e-12));
  CHECK(nccl_model_allgather_s(CollectiveAlgorithm::Nvls, Protocol::LL128, S, in) == inf);
  for (double size = 8; size <= 8 * 1024 * kMiB; size *= 4) {
    CAPTURE(size);
    CHECK(nccl_model_allgather_algorithm(size, in) == CollectiveAlgorithm::Ring);
  }
  // With the ring left out (NCCL_ALGO=allgather:nvls,pat), NVLS.
  in.algorithms = algorithm_bit(CollectiveAlgorithm::Nvls) | algorithm_bit(CollectiveAlgorithm::Pat);
  CHECK(nccl_model_allgather_algorithm(S, in) == CollectiveAlgorithm::Nvls);
  // The plans agree: Auto takes the ring inside a DGX H100 at every size, a list without the
  // ring NVLS.
  const Topology topo = h100_node();
  CollectiveOptions o;
  for (double size : {8.0, 1 * kMiB, 64 * kMiB, 8 * 1024 * kMiB})
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
      CHECK(plan_collective(topo, {}, first(8), kind, size, 0, o).algorithm == CollectiveAlgorithm::Ring);
  parse_nccl_algo_list("allgather:nvls;reducescatter:nvls,pat", o.allowed);
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const CollectivePlan p = plan_collective(topo, {}, first(8), kind, 64 * kMiB, 0, o);
    CHECK(p.algorithm == CollectiveAlgorithm::Nvls);
    CHECK_FALSE(p.fallback);
  }
}

TEST_CASE("NVLS AllGather and ReduceScatter: flow == analytic, folded and unfolded") {
  const Topology topo = h100_node();
  for (BenchOp op : {BenchOp::AllGather, BenchOp::ReduceScatter})
    for (bool unfold : {true, false})
      for (double size : {256.0, 1 * kMiB, 64 * kMiB, 1024 * kMiB}) {
        BenchOptions b;
        b.unfold = unfold;
        b.algorithm = CollectiveAlgorithm::Nvls;
        const BenchRow flow = run_collective_bench(topo, op, 8, {size}, b).at(0);
        b.replay.fidelity = Fidelity::Analytic;
        const BenchRow analytic = run_collective_bench(topo, op, 8, {size}, b).at(0);
        INFO(to_string(op) << " size " << size << ", unfold " << unfold);
        CHECK(flow.plan == "nvls/Simple/16");
        CHECK_FALSE(flow.fallback);
        CHECK(flow.time_s == testing::approx(analytic.time_s).epsilon(1e-9));
      }
}

TEST_CASE("NVLS and NVLS_TREE reduce floats by sum only, as NCCL's kernels: other reductions run without them") {
  // src/include/device.h ncclNvlsSupported: Sum for float; MinMax for half, bf16, integers;
  // an average is PreMulSum. An AllGather reduces nothing and keeps NVLS.
  const Topology one = h100_node();
  const Topology two = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  const double S = 1024 * kMiB;
  CollectiveOptions sum;
  CHECK(plan_collective(one, {}, first(8), CollectiveKind::AllReduce, S, 0, sum).algorithm == CollectiveAlgorithm::Nvls);
  CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 0, sum).algorithm ==
        CollectiveAlgorithm::NvlsTree);
  for (ReduceOp r : {ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum}) {
    CAPTURE(static_cast<int>(r));
    CollectiveOptions o;
    o.reduce_op = r;
    CHECK(plan_collective(one, {}, first(8), CollectiveKind::AllReduce, S, 0, o).algorithm == CollectiveAlgorithm::Ring);
    const CollectiveAlgorithm across = plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 0, o).algorithm;
    CHECK((across == CollectiveAlgorithm::Ring || across == CollectiveAlgorithm::Tree));
    o.algorithm = CollectiveAlgorithm::Nvls;
    for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter}) {
      const CollectivePlan p = plan_collective(one, {}, first(8), k, S, 0, o);
      CHECK(p.algorithm == CollectiveAlgorithm::Ring);
      CHECK(p.fallback);
    }
    const CollectivePlan g = plan_collective(one, {}, first(8), CollectiveKind::AllGather, S, 0, o);
    CHECK(g.algorithm == CollectiveAlgorithm::Nvls);
    o.algorithm = CollectiveAlgorithm::NvlsTree;
    CHECK(plan_collective(two, {}, first(16), CollectiveKind::AllReduce, S, 0, o).fallback);
  }
}

TEST_CASE("NVLS runs on NCCL's NVLS channels whatever NCCL_MIN/MAX_NCHANNELS (--channels) say") {
  // src/transport/nvls.cc ncclNvlsTuning: nvlsChannels is NVLS_NCHANNELS_SM90 (16), clamped by
  // NCCL_MIN/MAX_CTAS only (regression: --channels 64 ran it on 64 channels, 8 MiB at 106.5 us).
  const Topology one = h100_node();
  CollectiveOptions o;
  o.algorithm = CollectiveAlgorithm::Nvls;
  for (int forced : {2, 8, 64})
    for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather}) {
      const CollectivePlan p = plan_collective(one, {}, first(8), k, 8 * kMiB, forced, o);
      CHECK(p.algorithm == CollectiveAlgorithm::Nvls);
      CHECK(p.channels == 16);
      CHECK(p.closed_form_s() == testing::approx(plan_collective(one, {}, first(8), k, 8 * kMiB, 0, o).closed_form_s()));
    }
}
