// Topology loading and routing (sim/topology.hpp): the shipped topologies, their routes, and
// one small bad file per input error, each checked for file name, line and key.
#include "sim/error.hpp"
#include "sim/topology.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <utility>
#include <string>
#include <vector>

using namespace overlapsim;

namespace {

std::string shipped(const std::string& name) { return std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/" + name; }
std::string bad_file(const std::string& name) {
  return std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/data/topology/" + name;
}

/// Device names along route(src, dst), from the source GPU to the destination GPU. Also checks
/// that every hop's direction agrees with endpoints() and that consecutive hops join up.
std::vector<std::string> path_names(const Topology& t, int src, int dst) {
  std::vector<std::string> names{t.gpu(src).name};
  VertexId at = t.gpus[static_cast<std::size_t>(src)];
  for (const Hop& h : t.route(src, dst)) {
    const auto [a, b] = t.endpoints(h.link_id);
    CHECK(at == (h.forward ? a : b));
    at = h.forward ? b : a;
    names.push_back(t.graph[at].name);
  }
  CHECK(at == t.gpus[static_cast<std::size_t>(dst)]);
  return names;
}

std::vector<LinkKind> path_kinds(const Topology& t, int src, int dst) {
  std::vector<LinkKind> kinds;
  for (const Hop& h : t.route(src, dst)) kinds.push_back(t.link(h.link_id).kind);
  return kinds;
}

bool same_route(const std::vector<Hop>& a, const std::vector<Hop>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].link_id != b[i].link_id || a[i].forward != b[i].forward) return false;
  return true;
}

/// The InputError load_topology throws for `path`; FAILs if it loads.
InputError load_error(const std::string& path, const TopologyOverrides& overrides = {}) {
  try {
    load_topology(path, overrides);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError from " << path);
  return InputError("unreachable");
}

/// Checks an error names the file (and line, when `line` > 0) and the key.
void check_error(const InputError& e, const std::string& file, int line, const std::string& key) {
  const std::string msg = e.what();
  INFO("message: " << msg);
  CHECK(msg.find(file) != std::string::npos);
  CHECK(e.where().file.find(file) != std::string::npos);
  if (line > 0) {
    CHECK(e.where().line == line);
    CHECK(e.where().column > 0);
    CHECK(msg.find(file + ":" + std::to_string(line) + ":") != std::string::npos);
  }
  CHECK(e.key() == key);
  CHECK(msg.find(key) != std::string::npos);
}

}  // namespace

TEST_CASE("topology: dgx-a100 loads as one NVSwitch node with 8 NICs") {
  const Topology t = load_topology(shipped("dgx-a100.yaml"));
  CHECK(t.name == "dgx-a100");
  CHECK(t.num_gpus() == 8);
  CHECK(t.num_nodes == 1);
  CHECK(t.gpus_per_node == 8);
  CHECK(t.gpu_model() == "a100-sxm4-80gb");
  CHECK(boost::num_vertices(t.graph) == 17);  // 8 GPUs, 1 NVSwitch, 8 NICs
  CHECK(t.num_links() == 16);                 // 8 GPU-NVSwitch, 8 GPU-NIC
  for (int id = 0; id < t.num_links(); ++id) CHECK(t.link(id).id == id);
  for (int r = 0; r < 8; ++r) {
    CHECK(t.gpu(r).name == "n0.gpu" + std::to_string(r));
    CHECK(t.node_of(r) == 0);
  }

  // Intra-node: GPU -> NVSwitch -> GPU, 2 hops at 300 GB/s per direction.
  CHECK(path_names(t, 0, 5) == std::vector<std::string>{"n0.gpu0", "n0.nvswitch", "n0.gpu5"});
  const std::vector<Hop> r = t.route(0, 5);
  REQUIRE(r.size() == 2);
  CHECK(r[0].forward);   // gpu0 -> nvswitch: the GPU is the lower-numbered endpoint
  CHECK(!r[1].forward);  // nvswitch -> gpu5: crossed backwards
  for (const Hop& h : r) {
    CHECK(t.link(h.link_id).kind == LinkKind::NvSwitch);
    CHECK(t.link(h.link_id).bandwidth_Bps == testing::approx(300e9));
    CHECK(t.link(h.link_id).latency_s == testing::approx(0.35e-6));
    CHECK(t.link(h.link_id).full_duplex);
  }
}

TEST_CASE("topology: dgx-a100-superpod expands to a rail-optimized two-level fat tree") {
  const Topology t = load_topology(shipped("dgx-a100-superpod.yaml"));
  CHECK(t.num_gpus() == 1120);
  CHECK(t.num_nodes == 140);
  CHECK(t.gpus_per_node == 8);
  // Vertices: 140 x (8 GPUs + NVSwitch + 8 NICs) + 56 leaves (8 rails x 7) + 20 spine planes.
  CHECK(boost::num_vertices(t.graph) == 140 * 17 + 56 + 20);
  // Links: 140 x 16 in the nodes + 1120 NIC-leaf + 56 x 20 leaf-spine.
  CHECK(t.num_links() == 140 * 16 + 1120 + 56 * 20);
  CHECK(t.node_of(0) == 0);
  CHECK(t.node_of(8) == 1);
  CHECK(t.node_of(1119) == 139);
  CHECK(t.gpu(8 * 17 + 3).name == "n17.gpu3");

  SUBCASE("same rail, same leaf: GPU -> NIC -> leaf -> NIC -> GPU, 4 hops") {
    CHECK(path_names(t, 0, 8) == std::vector<std::string>{"n0.gpu0", "n0.nic0", "leaf0", "n1.nic0", "n1.gpu0"});
    CHECK(path_kinds(t, 0, 8) ==
          std::vector<LinkKind>{LinkKind::Pcie, LinkKind::Network, LinkKind::Network, LinkKind::Pcie});
  }
  SUBCASE("other rail: GPU -> NIC -> leaf -> spine -> leaf -> NIC -> GPU, 6 hops") {
    const std::vector<std::string> p = path_names(t, 0, 8 + 3);  // n1.gpu3, rail 3
    REQUIRE(p.size() == 7);
    CHECK(p[1] == "n0.nic0");
    CHECK(p[2] == "leaf0");
    CHECK(p[3].rfind("spine", 0) == 0);
    CHECK(p[4] == "leaf21");  // rail 3, first SU: 3 x 7 + 0
    CHECK(p[5] == "n1.nic3");
    CHECK(p[6] == "n1.gpu3");
    const Hop up = t.route(0, 11)[2];
    CHECK(t.link(up.link_id).bandwidth_Bps == testing::approx(25e9));  // 200Gb/s, oversubscription 1
    CHECK(t.link(up.link_id).latency_s == testing::approx(130e-9));
    const Hop nic = t.route(0, 11)[1];
    CHECK(t.link(nic.link_id).bandwidth_Bps == testing::approx(25e9));
    CHECK(t.link(nic.link_id).latency_s == testing::approx(1e-6 + 65e-9));
    const Hop pcie = t.route(0, 11)[0];
    CHECK(t.link(pcie.link_id).bandwidth_Bps == testing::approx(32e9));
  }
  SUBCASE("same rail, other scalable unit: 6 hops through a spine plane") {
    const std::vector<std::string> p = path_names(t, 0, 20 * 8);  // n20.gpu0: rail 0, second leaf
    REQUIRE(p.size() == 7);
    CHECK(p[2] == "leaf0");
    CHECK(p[4] == "leaf1");
  }
  SUBCASE("intra-node routes stay on the NVSwitch") {
    CHECK(path_names(t, 8 * 5 + 1, 8 * 5 + 6) == std::vector<std::string>{"n5.gpu1", "n5.nvswitch", "n5.gpu6"});
  }
  SUBCASE("routes are deterministic and ECMP spreads over the spine planes") {
    std::set<int> up_links;
    for (int dst = 9; dst < 1120; dst += 7) {
      const std::vector<Hop> a = t.route(0, dst);
      CHECK(same_route(a, t.route(0, dst)));
      if (a.size() == 6) up_links.insert(a[2].link_id);
    }
    CHECK(up_links.size() > 5);  // 20 planes to pick from
    const Topology again = load_topology(shipped("dgx-a100-superpod.yaml"));
    for (int dst : {9, 300, 1119}) CHECK(same_route(t.route(0, dst), again.route(0, dst)));
  }
}

namespace {

/// The uplink (leaf -> spine plane) and downlink (spine plane -> leaf) of a 6-hop fat-tree route.
std::pair<int, int> spine_links(const Topology& t, int src, int dst) {
  const std::vector<Hop> r = t.route(src, dst);
  REQUIRE(r.size() == 6);
  return {r[2].link_id, r[3].link_id};
}

/// A shift permutation across scalable units: GPU 0 of node i (rail 0, leaf 0) sends to GPU 3 of
/// node 20 + (i + 7) mod 20 (rail 3, the second SU's leaf), for i = 0 .. 19. Returns the number
/// of distinct uplinks and of distinct downlinks the 20 flows use.
std::pair<std::size_t, std::size_t> shift_spread(const Topology& t) {
  std::set<int> up, down;
  for (int i = 0; i < 20; ++i) {
    const auto [u, d] = spine_links(t, 8 * i, 8 * (20 + (i + 7) % 20) + 3);
    up.insert(u);
    down.insert(d);
  }
  return {up.size(), down.size()};
}

}  // namespace

TEST_CASE("topology: fat trees route destination-mod-k unless told ecmp") {
  SUBCASE("d-mod-k (default): the plane is the destination NIC's port on its leaf") {
    const Topology t = load_topology(shipped("dgx-a100-superpod.yaml"));
    REQUIRE(t.dmodk_port.size() == 1120);
    CHECK(t.dmodk_port[8 * 17 + 3] == 17);        // n17.gpu3: port 17 of its rail-3 leaf
    CHECK(t.dmodk_port[8 * 45 + 6] == 45 % 20);   // n45.gpu6: third SU, port 5
    // Every source reaches n37.gpu2 (port 17) through spine plane 17.
    for (int src : {0, 8 * 3 + 5, 8 * 100 + 2, 8 * 139 + 7})
      CHECK(path_names(t, src, 8 * 37 + 2)[3] == "spine17");
    // A shift permutation out of one leaf: 20 flows, 20 uplinks, 20 downlinks (no link shared).
    CHECK(shift_spread(t) == std::pair<std::size_t, std::size_t>{20, 20});
  }
  SUBCASE("ecmp: a hash per flow, which lets some of the same 20 flows collide") {
    const Topology t = load_topology(bad_file("superpod-ecmp.yaml"));
    CHECK(t.dmodk_port.empty());
    const auto [up, down] = shift_spread(t);
    CHECK(up < 20);
    CHECK(down < 20);
    const Topology again = load_topology(bad_file("superpod-ecmp.yaml"));
    for (int dst : {9, 300, 319}) CHECK(same_route(t.route(0, dst), again.route(0, dst)));
  }
  SUBCASE("a non-rail fat tree numbers ports in node-major NIC order") {
    const Topology t = load_topology(bad_file("nonrail-fat-tree.yaml"));
    REQUIRE(t.dmodk_port.size() == static_cast<std::size_t>(t.num_gpus()));
    for (int r = 0; r < t.num_gpus(); ++r) CHECK(t.dmodk_port[static_cast<std::size_t>(r)] == r % 5);  // radix 10
  }
  SUBCASE("explicit topologies keep the hash") {
    CHECK(load_topology(shipped("a6000-8gpu-nvlink-pairs.yaml")).dmodk_port.empty());
  }
}

TEST_CASE("topology: the nodes' CPU vendor, from the shipped datasheets") {
  CHECK(load_topology(shipped("dgx-a100.yaml")).cpu_vendor == "amd");
  CHECK(load_topology(shipped("dgx-a100-superpod.yaml"), {{"node.count", "2"}}).cpu_vendor == "amd");
  CHECK(load_topology(shipped("dgx-h100-superpod.yaml"), {{"node.count", "2"}}).cpu_vendor == "intel");
  CHECK(load_topology(bad_file("nonrail-fat-tree.yaml")).cpu_vendor.empty());
}

TEST_CASE("topology: node.count override rebuilds the template") {
  const Topology t = load_topology(shipped("dgx-a100-superpod.yaml"), {{"node.count", "4"}});
  CHECK(t.num_gpus() == 32);
  CHECK(t.num_nodes == 4);
  // 4 nodes fit one leaf per rail: 8 leaves, 20 spine planes.
  CHECK(t.num_links() == 4 * 16 + 32 + 8 * 20);
  CHECK(t.route(0, 8).size() == 4);
  CHECK(t.route(0, 9).size() == 6);

  const Topology u = load_topology(bad_file("override-base.yaml"), {{"node.count", "3"}, {"node.gpus.count", "2"}});
  CHECK(u.num_gpus() == 6);
  CHECK(u.gpus_per_node == 2);
  CHECK(u.node_of(5) == 2);
  // Single switch: GPU -> NIC -> switch -> NIC -> GPU.
  CHECK(path_names(u, 0, 2) == std::vector<std::string>{"n0.gpu0", "n0.nic0", "switch", "n1.nic0", "n1.gpu0"});
}

TEST_CASE("topology: dgx-h100-superpod is one scalable unit on an NDR fat tree") {
  const Topology t = load_topology(shipped("dgx-h100-superpod.yaml"));
  CHECK(t.num_gpus() == 256);
  CHECK(t.num_nodes == 32);
  CHECK(t.gpu_model() == "h100-sxm5-80gb");
  // 32 x (8 + 1 + 8) vertices + 8 leaves (one per rail) + 32 spine planes.
  CHECK(boost::num_vertices(t.graph) == 32 * 17 + 8 + 32);
  CHECK(t.num_links() == 32 * 16 + 256 + 8 * 32);
  const std::vector<Hop> intra = t.route(0, 7);
  REQUIRE(intra.size() == 2);
  CHECK(t.link(intra[0].link_id).bandwidth_Bps == testing::approx(450e9));
  CHECK(t.route(0, 8 * 31).size() == 4);      // rail 0, the one rail-0 leaf
  CHECK(t.route(0, 8 * 31 + 1).size() == 6);  // rail 1: through a spine plane
  const std::vector<Hop> inter = t.route(0, 8 * 31);
  CHECK(t.link(inter[1].link_id).bandwidth_Bps == testing::approx(50e9));  // 400Gb/s
}

TEST_CASE("topology: a6000 box routes pairs over NVLink and the rest over PCIe") {
  const Topology t = load_topology(shipped("a6000-8gpu-nvlink-pairs.yaml"));
  CHECK(t.num_gpus() == 8);
  CHECK(t.gpu_model() == "rtx-a6000");
  CHECK(t.num_nodes == 1);
  CHECK(boost::num_vertices(t.graph) == 8 + 4 + 2);
  CHECK(t.num_links() == 4 + 8 + 4 + 1);  // NVLink pairs, GPU-switch, switch-socket, UPI
  for (int r = 0; r < 8; ++r) CHECK(t.gpu(r).name == "gpu" + std::to_string(r));

  // The NVLink bridge: 1 hop, 56.25 GB/s per direction.
  const std::vector<Hop> pair = t.route(0, 1);
  REQUIRE(pair.size() == 1);
  CHECK(t.link(pair[0].link_id).kind == LinkKind::NvLink);
  CHECK(t.link(pair[0].link_id).bandwidth_Bps == testing::approx(56.25e9));
  CHECK(pair[0].forward);
  CHECK(!t.route(1, 0)[0].forward);
  CHECK(t.route(6, 7).size() == 1);

  // No bridge between 0 and 2: PCIe through both switches and socket 0 (the block rule put
  // gpu0,gpu1 on pcie-sw0 and gpu2,gpu3 on pcie-sw1; pcie-sw0,1 on cpu0).
  CHECK(path_names(t, 0, 2) == std::vector<std::string>{"gpu0", "pcie-sw0", "cpu0", "pcie-sw1", "gpu2"});
  for (LinkKind k : path_kinds(t, 0, 2)) CHECK(k == LinkKind::Pcie);
  // Across sockets: over UPI.
  CHECK(path_names(t, 0, 4) == std::vector<std::string>{"gpu0", "pcie-sw0", "cpu0", "cpu1", "pcie-sw2", "gpu4"});
  CHECK(path_kinds(t, 0, 4)[2] == LinkKind::Upi);
  // GPUs do not forward: gpu1 -> gpu2 does not borrow the 0-1 bridge.
  CHECK(path_names(t, 1, 2) == std::vector<std::string>{"gpu1", "pcie-sw0", "cpu0", "pcie-sw1", "gpu2"});
}

TEST_CASE("topology: a non-rail, oversubscribed fat tree") {
  const Topology t = load_topology(bad_file("nonrail-fat-tree.yaml"));
  CHECK(t.num_gpus() == 20);
  CHECK(boost::num_vertices(t.graph) == 5 * 9 + 4 + 5);  // 5 x (4 GPUs, NVSwitch, 4 NICs), leaves, spines
  CHECK(t.num_links() == 5 * 8 + 20 + 4 * 5);
  CHECK(path_names(t, 0, 4) == std::vector<std::string>{"n0.gpu0", "n0.nic0", "leaf0", "n1.nic0", "n1.gpu0"});
  const std::vector<std::string> p = path_names(t, 0, 5);  // n1.nic1 is NIC 5: leaf1
  REQUIRE(p.size() == 7);
  CHECK(p[4] == "leaf1");
  const std::vector<Hop> r = t.route(0, 5);
  CHECK(t.link(r[2].link_id).bandwidth_Bps == testing::approx(25e9 / 2.5));
  CHECK(t.link(r[2].link_id).latency_s == testing::approx(130e-9));  // the default switch latency
  CHECK(t.link(r[0].link_id).bandwidth_Bps == testing::approx(32e9));  // the default PCIe Gen4 x16

  // Every route is as short as a plain BFS (GPUs not passed through) says, for all pairs.
  for (int s = 0; s < t.num_gpus(); ++s) {
    std::vector<int> dist(boost::num_vertices(t.graph), -1);
    std::vector<VertexId> queue{t.gpus[static_cast<std::size_t>(s)]};
    dist[queue[0]] = 0;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const VertexId v = queue[i];
      if (i > 0 && t.graph[v].kind == DeviceKind::Gpu) continue;
      for (auto [e, end] = boost::out_edges(v, t.graph); e != end; ++e) {
        const VertexId w = boost::target(*e, t.graph);
        if (dist[w] < 0) dist[w] = dist[v] + 1, queue.push_back(w);
      }
    }
    for (int d = 0; d < t.num_gpus(); ++d)
      if (d != s) CHECK(static_cast<int>(t.route(s, d).size()) == dist[t.gpus[static_cast<std::size_t>(d)]]);
  }
}

TEST_CASE("topology: copies and moves keep their links") {
  std::vector<Hop> expected;
  Topology copy, moved;
  {
    const Topology original = load_topology(shipped("dgx-a100-superpod.yaml"), {{"node.count", "3"}});
    expected = original.route(0, 17);
    copy = original;
    Topology tmp = original;
    moved = std::move(tmp);
  }  // the original and the moved-from object are gone: nothing may point into them
  for (const Topology* t : {&copy, &moved}) {
    const Topology again(*t);
    for (const Topology* u : {t, &again}) {
      CHECK(u->num_links() == 3 * 16 + 24 + 8 * 20);
      CHECK(same_route(u->route(0, 17), expected));
      for (int id = 0; id < u->num_links(); ++id) {
        CHECK(u->link(id).id == id);
        const auto [a, b] = u->endpoints(id);
        CHECK(a < b);
      }
    }
  }
}

TEST_CASE("topology: input errors name the file, the line and the key") {
  SUBCASE("unit typo: 300GB where a bandwidth is expected") {
    const InputError e = load_error(bad_file("unit-typo.yaml"));
    check_error(e, "unit-typo.yaml", 7, "links[0].bandwidth");
    CHECK(std::string(e.what()).find("found '300GB'") != std::string::npos);
  }
  SUBCASE("bare number where a bandwidth is expected") {
    check_error(load_error(bad_file("bare-number.yaml")), "bare-number.yaml", 8, "node.intra.bandwidth");
  }
  SUBCASE("unknown device model") {
    const InputError e = load_error(bad_file("unknown-model.yaml"));
    check_error(e, "unknown-model.yaml", 4, "devices[0].model");
    CHECK(std::string(e.what()).find("a100-sxm4-40gb") != std::string::npos);
  }
  SUBCASE("dangling link") {
    const InputError e = load_error(bad_file("dangling-link.yaml"));
    check_error(e, "dangling-link.yaml", 8, "links[1].between");
    CHECK(std::string(e.what()).find("nvswitch0") != std::string::npos);
  }
  SUBCASE("disconnected GPU") {
    const InputError e = load_error(bad_file("disconnected-gpu.yaml"));
    check_error(e, "disconnected-gpu.yaml", 5, "devices[1].name");
    CHECK(std::string(e.what()).find("'gpu2'") != std::string::npos);
  }
  SUBCASE("disconnected island of GPUs") {
    const InputError e = load_error(bad_file("disconnected-island.yaml"));
    check_error(e, "disconnected-island.yaml", 5, "devices[0].name");
    CHECK(std::string(e.what()).find("'gpu2'") != std::string::npos);
  }
  SUBCASE("two GPUs joined only through a third GPU") {
    const InputError e = load_error(bad_file("nvlink-chain.yaml"));
    check_error(e, "nvlink-chain.yaml", 6, "devices[0].name");
    CHECK(std::string(e.what()).find("'gpu2' has no route to GPU 'gpu1'") != std::string::npos);
  }
  SUBCASE("unknown key") {
    const InputError e = load_error(bad_file("unknown-key.yaml"));
    check_error(e, "unknown-key.yaml", 6, "node.intra.bandwith");  // by its full key
    CHECK(std::string(e.what()).find("did you mean 'bandwidth'") != std::string::npos);
  }
  SUBCASE("a key given twice is named by its full key and the line of the first") {
    const InputError e = load_error(bad_file("duplicate-key.yaml"));
    check_error(e, "duplicate-key.yaml", 6, "node.gpus.count");
    CHECK(std::string(e.what()).find("node.gpus.count: duplicate key (first at line 5); expected each key once") !=
          std::string::npos);
  }
  SUBCASE("unknown fabric routing") {
    const InputError e = load_error(bad_file("bad-routing.yaml"));
    check_error(e, "bad-routing.yaml", 10, "fabric.routing");
    CHECK(std::string(e.what()).find("expected d-mod-k or ecmp, found 'adaptive'") != std::string::npos);
  }
  SUBCASE("unknown CPU vendor") {
    const InputError e = load_error(bad_file("bad-cpu-vendor.yaml"));
    check_error(e, "bad-cpu-vendor.yaml", 5, "node.cpu_vendor");
    CHECK(std::string(e.what()).find("expected intel, amd or arm, found 'power9'") != std::string::npos);
  }
  SUBCASE("an empty value is reported at its key's line, not the next one") {
    const InputError e = load_error(bad_file("bad-empty-value.yaml"));
    check_error(e, "bad-empty-value.yaml", 5, "node.nccl_channels");
    CHECK(std::string(e.what()).find("found an empty value") != std::string::npos);
  }
  SUBCASE("more NCCL channels than NCCL opens") {
    const InputError e = load_error(bad_file("bad-nccl-channels.yaml"));
    check_error(e, "bad-nccl-channels.yaml", 5, "node.nccl_channels");
    CHECK(std::string(e.what()).find("expected at most 64 (NCCL's MAXCHANNELS), found '65'") != std::string::npos);
  }
  SUBCASE("a fat tree's radix past any switch's ports") {
    // (2^62 asked for a vector past max_size(), named no file; 2e6 took 33 s for 16 GPUs.)
    const InputError e = load_error(bad_file("bad-radix.yaml"));
    check_error(e, "bad-radix.yaml", 11, "fabric.radix");
    CHECK(std::string(e.what()).find("expected an even number of switch ports from 2 to 1024, found '4611686018427387904'") !=
          std::string::npos);
  }
  SUBCASE("oversubscription past one uplink port's bandwidth per leaf") {
    // (1e300 timed an iteration at 1.6e297 s, below the loader's 1 B/s floor for links.)
    const InputError e = load_error(bad_file("bad-oversubscription.yaml"));
    check_error(e, "bad-oversubscription.yaml", 11, "fabric.oversubscription");
    CHECK(std::string(e.what()).find("expected a ratio from 1 (full bisection) to radix / 2 = 2, found '1e300'") !=
          std::string::npos);
  }
  SUBCASE("explicit devices beside a template's fabric: the error points at the fabric") {
    const InputError e = load_error(bad_file("explicit-and-fabric.yaml"));
    check_error(e, "explicit-and-fabric.yaml", 9, "fabric");
    CHECK(std::string(e.what()).find("either explicit") != std::string::npos);
  }
  SUBCASE("count <= 0") {
    check_error(load_error(bad_file("zero-count.yaml")), "zero-count.yaml", 4, "node.count");
  }
  SUBCASE("missing name") {
    check_error(load_error(bad_file("missing-name.yaml")), "missing-name.yaml", 2, "name");
  }
  SUBCASE("duplicate device name") {
    const InputError e = load_error(bad_file("duplicate-device.yaml"));
    check_error(e, "duplicate-device.yaml", 5, "devices[1].name");
    CHECK(std::string(e.what()).find("line 4") != std::string::npos);
  }
  SUBCASE("range counts that do not divide") {
    check_error(load_error(bad_file("range-mismatch.yaml")), "range-mismatch.yaml", 7, "links[0].between");
  }
  SUBCASE("unknown override key") {
    check_error(load_error(bad_file("override-base.yaml"), {{"node.cuont", "4"}}), "override-base.yaml", 0,
                "node.cuont");
  }
  SUBCASE("bad override value, reported at the value it replaces") {
    const InputError e = load_error(bad_file("override-base.yaml"), {{"node.count", "0"}});
    check_error(e, "override-base.yaml", 4, "node.count");
    CHECK(std::string(e.what()).find("override") != std::string::npos);
    check_error(load_error(bad_file("override-base.yaml"), {{"node.gpus.count", "four"}}), "override-base.yaml", 5,
                "node.gpus.count");
  }
  SUBCASE("more GPUs than a machine may have: refused before the template is expanded") {
    // (regression: node.count=100000 of a DGX H100 SuperPOD built 800,000 GPUs, 10 s and 1 GB,
    // before `overlapsim collective` refused them)
    InputError e = load_error(bad_file("override-base.yaml"), {{"node.count", "100000"}});
    check_error(e, "override-base.yaml", 4, "node.count");
    CHECK(std::string(e.what()).find("node.count: expected at most 16384 GPUs in the machine (the largest simulated: "
                                     "2048 nodes of 8, scenarios/bench/gpt-405b-class-16384gpu.yaml), found 100000 "
                                     "nodes of 4 GPUs = 400000 (from the topology override node.count=100000)") !=
          std::string::npos);
    // Counts whose product overflows, and one node too many GPUs by itself (named at its count).
    e = load_error(bad_file("override-base.yaml"), {{"node.count", "9000000000000000000"}});
    check_error(e, "override-base.yaml", 4, "node.count");
    CHECK(std::string(e.what()).find("= more than 2^63") != std::string::npos);
    e = load_error(bad_file("override-base.yaml"), {{"node.gpus.count", "20000"}});
    check_error(e, "override-base.yaml", 5, "node.gpus.count");
    CHECK(std::string(e.what()).find("found 20000 GPUs per node") != std::string::npos);
    // The largest accepted: 4096 nodes of 4.
    CHECK(load_topology(bad_file("override-base.yaml"), {{"node.count", "4096"}}).num_gpus() == kMaxTopologyGpus);
    // An explicit machine, at the entry that passes the limit.
    e = load_error(bad_file("too-many-gpus.yaml"));
    check_error(e, "too-many-gpus.yaml", 6, "devices[1].name");
    CHECK(std::string(e.what()).find("found 16385 with this entry's 16377") != std::string::npos);
  }
  SUBCASE("what an overridden count makes wrong names the override") {
    // (regression: node.count=2 on one DGX A100 said "a machine of 2 nodes needs a 'fabric'
    // section", as if the file said 2)
    InputError e = load_error(shipped("dgx-a100.yaml"), {{"node.count", "2"}});
    check_error(e, "dgx-a100.yaml", 25, "fabric");
    CHECK(std::string(e.what()).find("fabric: a machine of 2 nodes (from the topology override node.count=2) needs a "
                                     "'fabric' section") != std::string::npos);
    // node.nics.count stated, node.gpus.count overridden: one NIC per GPU no longer holds.
    const std::string copy = overlapsim::testing::temp_path(".yaml");
    std::string text = overlapsim::testing::slurp(bad_file("override-base.yaml"));
    const auto at = text.find("nics: {");
    REQUIRE(at != std::string::npos);
    text.insert(at + 7, "count: 4, ");
    { std::ofstream(copy) << text; }
    CHECK(load_topology(copy).num_gpus() == 8);
    e = load_error(copy, {{"node.gpus.count", "8"}});
    check_error(e, copy, 7, "node.nics.count");
    CHECK(std::string(e.what()).find("expected one NIC per GPU (attach: per-gpu), i.e. 8 (from the topology override "
                                     "node.gpus.count=8), found '4'") != std::string::npos);
    std::remove(copy.c_str());
  }
  SUBCASE("override on an explicit topology") {
    check_error(load_error(shipped("a6000-8gpu-nvlink-pairs.yaml"), {{"node.count", "2"}}),
                "a6000-8gpu-nvlink-pairs.yaml", 0, "node.count");
  }
  SUBCASE("file that does not exist") {
    const InputError e = load_error(bad_file("no-such-file.yaml"));
    CHECK(std::string(e.what()).find("no-such-file.yaml") != std::string::npos);
  }
}

TEST_CASE("find_routes_to finds, from one search per destination, the routes route() finds") {
  // Destination-mod-k and hashed ECMP fat trees, rail-optimised or not, and NVLink pairs beside
  // PCIe: every pair's hops equal route()'s own search.
  const std::vector<std::pair<std::string, TopologyOverrides>> cases = {
      {"topologies/dgx-a100-superpod.yaml", {{"node.count", "4"}}},
      {"topologies/dgx-h100-superpod.yaml", {{"node.count", "3"}}},
      {"topologies/a6000-8gpu-nvlink-pairs.yaml", {}},
      {"tests/data/topology/superpod-ecmp.yaml", {}},
      {"tests/data/topology/nonrail-fat-tree.yaml", {}},
  };
  for (const auto& [file, overrides] : cases) {
    CAPTURE(file);
    const std::string path = std::string(OVERLAPSIM_SOURCE_DIR) + "/" + file;
    const Topology searched = load_topology(path, overrides);
    const Topology batched = load_topology(path, overrides);
    const int n = searched.num_gpus();
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r) all[r] = r;
    for (int d = 0; d < n; ++d) batched.find_routes_to(d, all);
    long long pairs = 0;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        if (s == d) continue;
        const auto& a = searched.route(s, d);
        const auto& b = batched.route(s, d);
        REQUIRE(a.size() == b.size());
        for (size_t h = 0; h < a.size(); ++h) {
          CHECK(a[h].link_id == b[h].link_id);
          CHECK(a[h].forward == b[h].forward);
        }
        ++pairs;
      }
    CHECK(pairs == static_cast<long long>(n) * (n - 1));
  }
}
