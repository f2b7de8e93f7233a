// Topology: link ids, consistency checks and fewest-hop routing (destination-mod-k or
// deterministic ECMP).
//
// Routing: a path may pass through switches, NICs and CPU sockets but not through a GPU other
// than its two ends. route() finds the fewest-hop length with a bidirectional breadth-first
// search (a few hundred vertices in a fat tree of any size, where a full BFS per destination
// would visit the whole machine: 16k destinations of a 16k-GPU fat tree took 15 s that way),
// marks the vertices that lie on some shortest path, and walks from the source; where several
// links qualify (equal-cost multipath: parallel links, spine planes of a fat tree) the
// destination's port (dmodk_port, fat trees) or a hash of (src, dst, step) picks one. The
// choice offered at each step is exactly that of a full BFS from the destination (the
// neighbours one hop closer), so the routes are those a per-destination BFS with a distance
// cache gives (checked equal on 159k routes), without the cache: nothing is kept between calls
// but scratch arrays.
#include "sim/topology.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

namespace overlapsim {

namespace {

/// SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a well-mixed deterministic hash of a 64-bit key.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

const char* to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Switch: return "switch";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::Cpu: return "cpu";
  }
  return "?";
}

const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::NvSwitch: return "nvswitch";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Network: return "network";
    case LinkKind::Upi: return "upi";
  }
  return "?";
}

Topology::Topology(const Topology& other) { *this = other; }

Topology& Topology::operator=(const Topology& other) {
  if (this == &other) return *this;
  name = other.name;
  source_file = other.source_file;
  graph = other.graph;  // copies vertices, then edges in their order: same ids, same routes
  gpus = other.gpus;
  gpus_per_node = other.gpus_per_node;
  num_nodes = other.num_nodes;
  dmodk_port = other.dmodk_port;
  cpu_vendor = other.cpu_vendor;
  nccl_channels_one_node = other.nccl_channels_one_node;
  nics_per_node = other.nics_per_node;
  links_by_id_.clear();
  if (!other.links_by_id_.empty())
    for (auto [e, end] = boost::edges(graph); e != end; ++e) links_by_id_.push_back(*e);
  fwd_hops_ = other.fwd_hops_;
  bwd_hops_ = other.bwd_hops_;
  on_path_ = other.on_path_;
  fwd_seen_.clear();
  bwd_seen_.clear();
  return *this;
}

// Boost's adjacency_list has neither a move constructor nor a real swap (both copy), so a move
// is a copy that re-points the link-id table; load_topology's return is elided anyway.
Topology::Topology(Topology&& other) { *this = static_cast<const Topology&>(other); }

Topology& Topology::operator=(Topology&& other) { return *this = static_cast<const Topology&>(other); }

int Topology::nccl_channels(int nodes, int local_ranks) const {
  if (nodes <= 1) return nccl_channels_one_node;
  if (nics_per_node <= 0) return 0;
  if (local_ranks <= 0 || gpus_per_node <= 0 || local_ranks >= gpus_per_node) return 2 * nics_per_node;
  return 2 * std::max(1, nics_per_node * local_ranks / gpus_per_node);
}

int Topology::node_of(int rank) const {
  const Device& d = gpu(rank);
  return d.node >= 0 ? d.node : 0;
}

std::pair<int, int> Topology::node_shape(const std::vector<int>& ranks) const {
  std::map<int, int> per_node;
  for (int r : ranks) ++per_node[node_of(r)];
  if (per_node.empty()) return {0, 0};
  for (const auto& [node, count] : per_node)
    if (count != per_node.begin()->second) return {0, 0};
  return {static_cast<int>(per_node.size()), per_node.begin()->second};
}

bool Topology::ranks_fill_nodes_alike(int n) const {
  std::vector<int> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) ranks[static_cast<size_t>(r)] = r;
  return node_shape(ranks).first > 0;
}

bool Topology::uniform_within_nodes(const std::vector<int>& ranks) const {
  bool first = true;
  double bw0 = 0, lat0 = 0;
  for (int a : ranks)
    for (int b : ranks) {
      if (a == b || node_of(a) != node_of(b)) continue;
      double bw = std::numeric_limits<double>::infinity(), lat = 0;
      for (const Hop& h : route(a, b)) {
        bw = std::min(bw, link(h.link_id).bandwidth_Bps);
        lat += link(h.link_id).latency_s;
      }
      if (first) {
        bw0 = bw;
        lat0 = lat;
        first = false;
      } else if (std::abs(bw - bw0) > 1e-9 * bw0 || std::abs(lat - lat0) > 1e-12 + 1e-9 * lat0) {
        return false;
      }
    }
  return true;
}

const std::string& Topology::gpu_model() const {
  OVERLAPSIM_CHECK(!gpus.empty(), "topology has no GPU");
  return graph[gpus.front()].model;
}

const Link& Topology::link(int id) const {
  OVERLAPSIM_CHECK(id >= 0 && id < num_links(), "link id out of range (was finalize() called?)");
  return graph[links_by_id_[static_cast<std::size_t>(id)]];
}

std::pair<VertexId, VertexId> Topology::endpoints(int id) const {
  OVERLAPSIM_CHECK(id >= 0 && id < num_links(), "link id out of range (was finalize() called?)");
  const EdgeId e = links_by_id_[static_cast<std::size_t>(id)];
  return {boost::source(e, graph), boost::target(e, graph)};
}

const std::vector<Hop>& Topology::route(int src_rank, int dst_rank) const {
  OVERLAPSIM_CHECK(src_rank >= 0 && src_rank < num_gpus() && dst_rank >= 0 && dst_rank < num_gpus(),
                   "route(): rank out of range");
  OVERLAPSIM_CHECK(src_rank != dst_rank, "route(): source and destination are the same rank");
  const int64_t key = int64_t{src_rank} * num_gpus() + dst_rank;
  const auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  return routes_.emplace(key, search_route(src_rank, dst_rank)).first->second;
}

template <typename OnNew>
void Topology::expand_level(std::vector<VertexId>& front, std::vector<VertexId>& next, std::vector<int>& hops,
                            std::vector<VertexId>& seen, VertexId start, int depth, OnNew on_new) const {
  next.clear();
  for (VertexId v : front) {
    if (v != start && graph[v].kind == DeviceKind::Gpu) continue;  // GPUs do not forward
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const VertexId w = boost::target(*e, graph);
      if (hops[w] >= 0) continue;
      hops[w] = depth;
      seen.push_back(w);
      next.push_back(w);
      on_new(w);
    }
  }
  front.swap(next);
}

std::vector<Hop> Topology::search_route(int src_rank, int dst_rank) const {
  OVERLAPSIM_CHECK(num_links() == static_cast<int>(boost::num_edges(graph)) &&
                       fwd_hops_.size() == boost::num_vertices(graph),
                   "route(): call finalize() after building the graph");
  const VertexId src = gpus[static_cast<std::size_t>(src_rank)];
  const VertexId dst = gpus[static_cast<std::size_t>(dst_rank)];
  std::vector<int>& df = fwd_hops_;
  std::vector<int>& db = bwd_hops_;
  // A vertex may be inside a path (or end it) unless it is a GPU other than src and dst.
  auto usable = [&](VertexId w) { return w == src || w == dst || graph[w].kind != DeviceKind::Gpu; };
  auto reset = [&] {
    for (VertexId v : fwd_seen_) df[v] = -1, on_path_[v] = 0;
    for (VertexId v : bwd_seen_) db[v] = -1;
    fwd_seen_.clear();
    bwd_seen_.clear();
  };

  // 1. Bidirectional BFS, one whole level at a time on the side with the smaller frontier,
  //    until the two searches meet. Then the length is exact: D = kf + kb.
  df[src] = 0;
  db[dst] = 0;
  fwd_seen_.push_back(src);
  bwd_seen_.push_back(dst);
  std::vector<VertexId>& front_f = front_f_;
  std::vector<VertexId>& front_b = front_b_;
  std::vector<VertexId>& next = next_;
  front_f.assign(1, src);
  front_b.assign(1, dst);
  int kf = 0, kb = 0;
  bool met = false;
  while (!met) {
    if (front_f.empty() || front_b.empty()) {
      reset();
      throw InputError(SourceLocation{source_file, 0, 0}, "links",
                       "no route from GPU '" + graph[src].name + "' to GPU '" + graph[dst].name + "'");
    }
    const bool forward = front_f.size() <= front_b.size();
    std::vector<VertexId>& front = forward ? front_f : front_b;
    std::vector<int>& mine = forward ? df : db;
    const std::vector<int>& theirs = forward ? db : df;
    std::vector<VertexId>& seen = forward ? fwd_seen_ : bwd_seen_;
    const VertexId start = forward ? src : dst;
    const int depth = (forward ? kf : kb) + 1;
    expand_level(front, next, mine, seen, start, depth, [&](VertexId w) {
      if (theirs[w] >= 0 && usable(w)) met = true;
    });
    (forward ? kf : kb) = depth;
  }
  const int total = kf + kb;

  // 2. Mark the forward-seen vertices that lie on a shortest path: those the backward search
  //    saw at the complementary distance, and, going back level by level, those with a
  //    marked successor. fwd_seen_ is in BFS order, so reverse order visits successors first.
  for (auto it = fwd_seen_.rbegin(); it != fwd_seen_.rend(); ++it) {
    const VertexId v = *it;
    if (!usable(v)) continue;
    if (db[v] >= 0) {
      on_path_[v] = df[v] + db[v] == total;
      continue;
    }
    if (v != src && graph[v].kind == DeviceKind::Gpu) continue;
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const VertexId w = boost::target(*e, graph);
      if (df[w] == df[v] + 1 && on_path_[w]) {
        on_path_[v] = 1;
        break;
      }
    }
  }

  // 3. Walk from src along the vertices on a shortest path (Topology::walk).
  std::vector<Hop> path = walk(src_rank, dst_rank, total, [&](VertexId w, int step) {
    return db[w] >= 0 ? db[w] == total - step - 1 : (df[w] == step + 1 && on_path_[w]);
  });
  reset();
  return path;
}

template <typename OnPath>
std::vector<Hop> Topology::walk(int src_rank, int dst_rank, int total, OnPath on_path) const {
  // At step s the candidates are the neighbours on a shortest path at distance s+1 from src, in
  // out-edge order (a leaf's spine planes in plane order); the destination's port picks one
  // (destination-mod-k), or a hash of (src, dst, s). (This is the same choice a full BFS from dst
  // would offer: the neighbours one hop closer to dst; find_routes_to walks on that.)
  const VertexId src = gpus[static_cast<std::size_t>(src_rank)];
  const VertexId dst = gpus[static_cast<std::size_t>(dst_rank)];
  auto usable = [&](VertexId w) { return w == src || w == dst || graph[w].kind != DeviceKind::Gpu; };
  const int dst_port = dmodk_port.empty() ? -1 : dmodk_port[static_cast<std::size_t>(dst_rank)];
  const std::uint64_t pair_hash =
      mix64((static_cast<std::uint64_t>(src_rank) << 32) ^ static_cast<std::uint64_t>(dst_rank));
  std::vector<Hop> path;
  path.reserve(static_cast<std::size_t>(total));
  std::vector<EdgeId>& candidates = candidates_;
  VertexId v = src;
  for (int step = 0; v != dst; ++step) {
    candidates.clear();
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const VertexId w = boost::target(*e, graph);
      if (usable(w) && on_path(w, step)) candidates.push_back(*e);
    }
    OVERLAPSIM_CHECK(!candidates.empty(), "route(): search labels are inconsistent");
    const std::size_t pick = candidates.size() == 1 ? 0
                             : dst_port >= 0    ? static_cast<std::size_t>(dst_port) % candidates.size()
                                                : mix64(pair_hash + static_cast<std::uint64_t>(step)) % candidates.size();
    const EdgeId e = candidates[pick];
    const int id = graph[e].id;
    const VertexId stored_source = boost::source(links_by_id_[static_cast<std::size_t>(id)], graph);
    path.push_back(Hop{id, stored_source == v});
    v = boost::target(e, graph);
  }
  OVERLAPSIM_CHECK(static_cast<int>(path.size()) == total, "route(): walk length differs from the distance");
  return path;
}

void Topology::find_routes_to(int dst_rank, const std::vector<int>& src_ranks) const {
  OVERLAPSIM_CHECK(dst_rank >= 0 && dst_rank < num_gpus(), "find_routes_to(): rank out of range");
  OVERLAPSIM_CHECK(fwd_hops_.size() == boost::num_vertices(graph), "route(): call finalize() after building the graph");
  const VertexId dst = gpus[static_cast<std::size_t>(dst_rank)];
  std::vector<int>& db = bwd_hops_;
  // Breadth-first from dst over the whole graph; GPUs other than dst are reached, not crossed.
  db[dst] = 0;
  bwd_seen_.push_back(dst);
  std::vector<VertexId>& front = front_b_;
  std::vector<VertexId>& next = next_;
  front.assign(1, dst);
  for (int depth = 1; !front.empty(); ++depth) expand_level(front, next, db, bwd_seen_, dst, depth, [](VertexId) {});
  auto reset = [&] {
    for (VertexId v : bwd_seen_) db[v] = -1;
    bwd_seen_.clear();
  };
  for (int src_rank : src_ranks) {
    OVERLAPSIM_CHECK(src_rank >= 0 && src_rank < num_gpus(), "find_routes_to(): rank out of range");
    if (src_rank == dst_rank) continue;
    const int64_t key = int64_t{src_rank} * num_gpus() + dst_rank;
    if (routes_.count(key) != 0) continue;
    const VertexId src = gpus[static_cast<std::size_t>(src_rank)];
    const int total = db[src];
    if (total < 0) {
      reset();
      throw InputError(SourceLocation{source_file, 0, 0}, "links",
                       "no route from GPU '" + graph[src].name + "' to GPU '" + graph[dst].name + "'");
    }
    routes_.emplace(key, walk(src_rank, dst_rank, total,
                              [&](VertexId w, int step) { return db[w] == total - step - 1; }));
  }
  reset();
}

std::pair<int, int> Topology::unroutable_pair() const {
  // Two GPUs have a route iff a link joins them directly, or both touch the same connected
  // component of the graph of non-GPU vertices (switches, NICs, CPUs).
  const std::size_t n = boost::num_vertices(graph);
  std::vector<VertexId> parent(n);
  for (std::size_t v = 0; v < n; ++v) parent[v] = v;
  auto find = [&](VertexId v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  auto is_gpu = [&](VertexId v) { return graph[v].kind == DeviceKind::Gpu; };
  for (auto [e, end] = boost::edges(graph); e != end; ++e) {
    const VertexId a = boost::source(*e, graph), b = boost::target(*e, graph);
    if (!is_gpu(a) && !is_gpu(b)) parent[find(a)] = find(b);
  }
  // Per rank: the components it touches and the GPUs it is linked to directly (sorted).
  const std::size_t g = gpus.size();
  std::vector<std::vector<VertexId>> comps(g), peers(g);
  std::vector<std::size_t> touching(n, 0);  // per component root: how many GPUs touch it
  for (std::size_t r = 0; r < g; ++r) {
    for (auto [e, end] = boost::out_edges(gpus[r], graph); e != end; ++e) {
      const VertexId w = boost::target(*e, graph);
      (is_gpu(w) ? peers[r] : comps[r]).push_back(is_gpu(w) ? w : find(w));
    }
    for (auto* list : {&comps[r], &peers[r]}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    for (VertexId c : comps[r]) ++touching[c];
  }
  for (std::size_t c = 0; c < n; ++c)
    if (touching[c] == g) return {-1, -1};  // one fabric reaches every GPU (the usual case)
  auto shares = [](const std::vector<VertexId>& x, const std::vector<VertexId>& y) {
    for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
      if (x[i] == y[j]) return true;
      x[i] < y[j] ? ++i : ++j;
    }
    return false;
  };
  for (std::size_t a = 0; a < g; ++a)
    for (std::size_t b = a + 1; b < g; ++b)
      if (!shares(comps[a], comps[b]) &&
          !std::binary_search(peers[a].begin(), peers[a].end(), gpus[b]))
        return {static_cast<int>(a), static_cast<int>(b)};
  return {-1, -1};
}

void Topology::finalize() {
  const SourceLocation where{source_file, 0, 0};
  links_by_id_.clear();
  const std::size_t n = boost::num_vertices(graph);
  fwd_hops_.assign(n, -1);
  bwd_hops_.assign(n, -1);
  on_path_.assign(n, 0);
  fwd_seen_.clear();
  bwd_seen_.clear();
  routes_.clear();
  int next_id = 0;
  for (auto [e, end] = boost::edges(graph); e != end; ++e) {
    graph[*e].id = next_id++;
    links_by_id_.push_back(*e);
  }

  if (gpus.empty()) throw InputError(where, "devices", "the machine has no GPU");
  std::set<VertexId> seen;
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    const VertexId v = gpus[r];
    OVERLAPSIM_CHECK(v < boost::num_vertices(graph), "gpus[] names a vertex that does not exist");
    OVERLAPSIM_CHECK(graph[v].kind == DeviceKind::Gpu, "gpus[] names a vertex that is not a GPU");
    OVERLAPSIM_CHECK(seen.insert(v).second, "gpus[] names a vertex twice");
  }
  for (auto [v, end] = boost::vertices(graph); v != end; ++v)
    OVERLAPSIM_CHECK(graph[*v].kind != DeviceKind::Gpu || seen.count(*v), "a GPU vertex has no rank");
  for (auto [e, end] = boost::edges(graph); e != end; ++e) {
    const Link& l = graph[*e];
    if (boost::source(*e, graph) == boost::target(*e, graph))
      throw InputError(where, "links", "a link joins '" + graph[boost::source(*e, graph)].name + "' to itself");
    OVERLAPSIM_CHECK(l.bandwidth_Bps > 0 && l.latency_s >= 0, "link with non-positive bandwidth");
  }

  const std::string& model = gpu_model();
  if (!is_known_device(model))
    throw InputError(where, "model", "unknown GPU model '" + model + "'");
  for (VertexId v : gpus)
    if (graph[v].model != model)
      throw InputError(where, "model",
                       "all GPUs must be the same model: '" + graph[v].name + "' is '" + graph[v].model +
                           "' but '" + graph[gpus.front()].name + "' is '" + model + "'");

  const auto [a, b] = unroutable_pair();
  if (a >= 0)
    throw InputError(where, "links",
                     "GPU '" + gpu(b).name + "' has no route to GPU '" + gpu(a).name +
                         "' (no path of links through switches, NICs or CPUs; GPUs do not forward traffic)");
}

}  // namespace overlapsim
