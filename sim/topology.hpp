// The machine: devices (GPUs, switches, NICs, CPU sockets) and the links between them.
//
// A Topology is a Boost.Graph (undirected multigraph; every edge is a link that may be full
// duplex — an independent `bandwidth_Bps` in each direction — or half duplex, one capacity
// shared by both directions). GPUs are numbered in *rank order*: `gpus[r]` is the vertex of the
// GPU that runs global rank r. In the template form, rank r lives on node r / gpus_per_node, local
// index r % gpus_per_node (Megatron-LM's placement: consecutive ranks share a node).
//
// Routing: route() returns the path a flow takes, as hops over edges with a direction. It is the
// path of fewest hops whose intermediate vertices are not GPUs (a GPU does not forward traffic;
// relaying through a peer GPU, as NCCL's PXN does, is a strategy's business and shows up as two
// flows). Among equally short paths (the spine planes of a fat tree, parallel links) it picks
// one deterministically, so that the same input always gives the same routes: in a fat tree
// routed destination-mod-k (the default, `dmodk_port`), the plane of the destination NIC's port
// on its leaf; elsewhere a hash of (src, dst, step), as ECMP does.
// Inside a DGX node the path is GPU→NVSwitch→GPU (2 hops); across nodes of the template form it
// is GPU→NIC (the PCIe link)→leaf→spine→leaf→NIC→GPU (6 hops), or GPU→NIC→leaf→NIC→GPU (4 hops)
// when both NICs hang off the same leaf switch (same rail within a scalable unit).
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace overlapsim {

enum class DeviceKind { Gpu, Switch, Nic, Cpu };
enum class LinkKind { NvLink, NvSwitch, Pcie, Network, Upi };

const char* to_string(DeviceKind k);
const char* to_string(LinkKind k);

struct Device {
  std::string name;     ///< unique, e.g. "gpu3" or "n12.gpu3"
  DeviceKind kind = DeviceKind::Gpu;
  std::string model;    ///< device-catalog key for GPUs (e.g. "a100-sxm4-80gb"), empty otherwise
  int node = -1;        ///< node index in the template form; -1 in the explicit form
  int local_index = -1; ///< index inside its node (GPU j, NIC j); -1 when not applicable
};

struct Link {
  LinkKind kind = LinkKind::Network;
  double bandwidth_Bps = 0;  ///< bytes per second, per direction when full duplex
  double latency_s = 0;      ///< seconds
  bool full_duplex = true;
  int id = -1;               ///< dense index 0..num_links-1, stable for the same input
};

using TopologyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, Device, Link>;
using VertexId = TopologyGraph::vertex_descriptor;
using EdgeId = TopologyGraph::edge_descriptor;

/// One hop of a route: the link, and whether it is crossed from endpoints(link_id).first (the
/// edge's boost::source; load_topology always adds an edge from its lower-numbered endpoint) to
/// endpoints(link_id).second (forward) or back.
struct Hop {
  int link_id = -1;
  bool forward = true;
};

class Topology {
 public:
  std::string name;
  std::string source_file;   ///< file it was loaded from (for messages)
  TopologyGraph graph;
  std::vector<VertexId> gpus; ///< rank order
  int gpus_per_node = 0;      ///< template form: GPUs per node; explicit form: number of GPUs
  int num_nodes = 1;
  /// Destination-mod-k routing (InfiniBand subnet managers' fat-tree routing: OpenSM's `ftree`
  /// engine, Zahavi et al., "Optimized InfiniBand fat-tree routing for shift all-to-all
  /// communication patterns", CCPE 22(2), 2010): per rank, the port index of its NIC on its leaf
  /// switch. A flow to rank d that may go up to several spine planes takes plane
  /// dmodk_port[d] mod (planes), so each spine-to-leaf link carries the traffic of one
  /// destination port only. Empty (explicit topologies, `fabric.routing: ecmp`): every choice
  /// among equal paths is the hash of (src, dst, step).
  std::vector<int> dmodk_port;
  /// The nodes' CPU vendor ("intel", "amd", "arm"; empty: not stated), which NCCL's tuning
  /// model reads for the LL protocol's bandwidth across nodes (collective_plan.hpp).
  std::string cpu_vendor;
  /// Channels NCCL's communicator opens over the GPUs of one node (its NCCL_DEBUG=INFO lines
  /// "Channel 00/24"; 0: not stated). Together with nccl_channels() it sets how NCCL's Simple
  /// protocol cuts a collective into loops and slices (collective_plan.hpp).
  int nccl_channels_one_node = 0;
  /// NICs per node (template form; 0: none, or the explicit form).
  int nics_per_node = 0;
  /// The SHARP generation of the fabric's switches (template form's fabric.sharp): 2 (NVIDIA
  /// Quantum HDR) or 3 (Quantum-2 NDR), which reduce in the network for NCCL's CollNet
  /// algorithms (collective_plan.hpp, CollNet); 0: none (explicit topologies too).
  int sharp_version = 0;

  /// Channels NCCL's communicator opens over a group on `nodes` nodes holding `local_ranks` GPUs
  /// of each (NCCL's localRanks; 0: every GPU of the node), or 0 where not known.
  /// One node: nccl_channels_one_node. Several (template form with NICs): two per NIC local to
  /// the group's GPUs of a node — NCCL's ring search runs over the communicator's GPUs of the
  /// node and the NICs nearest them (src/graph/search.cc, ncclTopoSelectNets: the GPU's own
  /// NICs first), one channel per NIC rail at the NIC's speed (200 Gb/s HDR runs at 24 GB/s,
  /// 400 Gb/s NDR at 45 GB/s, below the 25 and 50 GB/s at which ncclTopoDupChannels would double
  /// them), and ncclTopoPostset doubles every ring (src/graph/connect.cc). A DGX's NICs are one
  /// per GPU pair or GPU, so a group of g of a node's G GPUs reaches max(1, NICs · g / G) of
  /// them: a 3-node H100 communicator of every GPU logs "Channel 05/16" (NVIDIA/nccl#1453); a
  /// data-parallel group beside TP 8 (one GPU a node) opens 2.
  int nccl_channels(int nodes, int local_ranks = 0) const;

  Topology() = default;
  /// Copies (and moves, which Boost's adjacency_list can only do by copying) re-point the
  /// link-id table at the new object's own edges: a Boost edge descriptor points into the graph
  /// that made it, so the implicit members would leave it pointing into the source.
  Topology(const Topology& other);
  Topology& operator=(const Topology& other);
  Topology(Topology&& other);
  Topology& operator=(Topology&& other);
  ~Topology() = default;

  int num_gpus() const { return static_cast<int>(gpus.size()); }
  const Device& gpu(int rank) const { return graph[gpus.at(rank)]; }
  /// Node of a rank (template form), or 0 in the explicit form.
  int node_of(int rank) const;
  /// GPU model of the machine; all GPUs must be the same model (checked at load time).
  const std::string& gpu_model() const;
  int num_links() const { return static_cast<int>(links_by_id_.size()); }
  /// Link by dense id.
  const Link& link(int id) const;
  /// The two endpoints of a link, by dense id (source, target as Boost stores them).
  std::pair<VertexId, VertexId> endpoints(int id) const;

  /// Fewest-hop path from the GPU of rank src to that of rank dst (destination-mod-k where
  /// `dmodk_port` is set, else deterministic ECMP).
  /// REQUIRES: 0 <= src, dst < num_gpus(), src != dst. Throws InputError if unreachable.
  /// Not thread-safe (it uses scratch space in the object and remembers every route it found,
  /// so that the replays of one run search each pair once): one Topology per thread. The
  /// reference stays valid for the Topology's lifetime (until finalize() is called again).
  const std::vector<Hop>& route(int src_rank, int dst_rank) const;
  /// Finds and remembers the routes from every rank of `src_ranks` (dst_rank itself skipped) to
  /// dst_rank with one breadth-first search from dst_rank: the routes route() would find (its
  /// walk takes the same candidates at each step), for a caller about to ask for all of them
  /// (an AllToAll's n·(n−1) routes: n searches instead of n·(n−1)). Throws as route() does.
  void find_routes_to(int dst_rank, const std::vector<int>& src_ranks) const;

  /// How `ranks` sit on nodes: {nodes touched, ranks on each}, or {0, 0} when the nodes hold
  /// different numbers of them. Two groups with the same shape are placed alike.
  std::pair<int, int> node_shape(const std::vector<int>& ranks) const;
  /// Whether ranks 0 … n−1 fill their nodes alike (the same number on every node they touch):
  /// where they do not, the ranks of a short node have NICs and links to themselves, so one rank
  /// cannot stand for the others (folding, design §9). REQUIRES: 1 <= n <= num_gpus().
  bool ranks_fill_nodes_alike(int n) const;
  /// Whether every pair of `ranks` on one node has routes of the same bottleneck bandwidth and
  /// latency (an NVSwitch node; not NVLink pairs beside PCIe), so that one member sees the node as
  /// any other does.
  bool uniform_within_nodes(const std::vector<int>& ranks) const;

  /// Call after the graph is complete: assigns dense link ids (in edge-insertion order) and
  /// checks that there is at least one GPU, all GPUs are one catalog-known model, and every pair
  /// of GPUs has a route. Throws InputError (naming source_file) otherwise.
  void finalize();

  /// The first pair of ranks (a < b, in order) that no route joins, or {-1, -1} when every pair
  /// has one. Routes never pass through a GPU, so "every GPU reaches GPU 0" is not enough: two
  /// GPUs that each have an NVLink to GPU 0 and nothing else have no route between them.
  /// Works on the graph as it stands; the loader uses it to point at the offending declaration.
  std::pair<int, int> unroutable_pair() const;

 private:
  std::vector<EdgeId> links_by_id_;
  // Scratch space of route()'s bidirectional search, sized by finalize(); every entry is back to
  // its idle value (-1 / 0) between calls.
  mutable std::vector<int> fwd_hops_, bwd_hops_;        ///< hops from src / to dst, -1 = unseen
  mutable std::vector<char> on_path_;                   ///< forward-seen vertex on a shortest path
  mutable std::vector<VertexId> fwd_seen_, bwd_seen_;   ///< vertices to reset after a search
  mutable std::vector<VertexId> front_f_, front_b_, next_;  ///< a search's frontiers (kept: no allocation per route)
  mutable std::vector<EdgeId> candidates_;              ///< a walk step's next hops
  /// Routes found so far, by src · num_gpus() + dst (a fat tree of 1024 GPUs took 2.5 ms of
  /// searches per replay of the default scenario, six replays per analytic run).
  mutable std::unordered_map<int64_t, std::vector<Hop>> routes_;
  /// The search itself.
  std::vector<Hop> search_route(int src_rank, int dst_rank) const;
  /// One level of a breadth-first search from `start`: every unlabelled neighbour of `front`
  /// (GPUs other than start are reached, not crossed) gets `depth` in `hops`, joins `seen` and the
  /// next front (swapped into `front`), and is passed to on_new.
  template <typename OnNew>
  void expand_level(std::vector<VertexId>& front, std::vector<VertexId>& next, std::vector<int>& hops,
                    std::vector<VertexId>& seen, VertexId start, int depth, OnNew on_new) const;
  /// A search's last step: the walk from src along vertices `on_path(w, step)` accepts (on a
  /// shortest path, at distance step + 1 from src), `total` hops.
  template <typename OnPath>
  std::vector<Hop> walk(int src_rank, int dst_rank, int total, OnPath on_path) const;
};

/// Overrides from a scenario or the command line, e.g. {"node.count", "192"}.
using TopologyOverrides = std::map<std::string, std::string>;

/// Most GPUs a machine may have: design §9's largest machine, 16,384 GPUs (2,048 DGX H100 nodes,
/// scenarios/bench/gpt-405b-class-16384gpu.yaml), and so the most ranks of one collective
/// (`overlapsim collective`: a tree's mirrors and the platform's routes grow with the group,
/// measured 3.3 GB at 16,384 ranks, 13 GB at 32,768). load_topology refuses more before it
/// builds anything (regression: node.count=100000 expanded 800,000 GPUs, 10 s and 1 GB, before
/// `overlapsim collective` refused them).
inline constexpr int kMaxTopologyGpus = 16384;

/// Loads a topology YAML file (explicit or template form, design §3). Throws InputError naming
/// file:line:column and the key on any problem: unknown keys, a unit typo ("300GB"), an unknown
/// device model, a link to an undeclared device, a GPU no link reaches, more than
/// kMaxTopologyGpus GPUs (a template's node.count × node.gpus.count, checked before expanding it).
Topology load_topology(const std::string& path, const TopologyOverrides& overrides = {});

}  // namespace overlapsim
