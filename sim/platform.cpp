#include "sim/platform.hpp"

#include "sim/error.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace sg4 = simgrid::s4u;

namespace overlapsim {

namespace {


namespace sgr = simgrid::kernel::routing;

/// A netzone of explicit host-to-host routes kept only for the pairs given, in a hash map.
/// SimGrid 3.32's full zone (create_full_zone) keeps a route slot for every pair of its
/// hosts, N² pointers: 0.5 GB at 8,192 GPUs, 2.1 GB at 16,384, allocated whatever the routes
/// (a flow run of one collective over 2,048 DGX H100 nodes took 3.3 GB). Routes and their
/// latencies are the ones the full zone gave: the links in route order, the latency their sum
/// in that order (`latency_s`, the same values the links carry).
class SparseRouteZone final : public sgr::NetZoneImpl {
 public:
  explicit SparseRouteZone(const std::string& name) : NetZoneImpl(name) {}

  /// Records the route src → dst (one direction); `latency_s`: the sum of its links' latencies.
  void add_explicit_route(sgr::NetPoint* src, sgr::NetPoint* dst, const std::vector<sg4::LinkInRoute>& links,
                          double latency_s) {
    Entry& e = routes_[{src, dst}];
    e.links = get_link_list_impl(links, false);
    e.latency_s = latency_s;
  }

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    const auto it = routes_.find({src, dst});
    OVERLAPSIM_CHECK(it != routes_.end(), "a flow between two GPUs without a route");
    into->link_list_.insert(into->link_list_.end(), it->second.links.begin(), it->second.links.end());
    if (latency) *latency += it->second.latency_s;
  }

  void add_route(sgr::NetPoint*, sgr::NetPoint*, sgr::NetPoint*, sgr::NetPoint*, const std::vector<sg4::LinkInRoute>&,
                 bool) override {
    OVERLAPSIM_CHECK(false, "routes of this zone are added with add_explicit_route");
  }

 private:
  struct PairHash {
    size_t operator()(const std::pair<const sgr::NetPoint*, const sgr::NetPoint*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  struct Entry {
    std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
    double latency_s = 0;
  };
  std::unordered_map<std::pair<const sgr::NetPoint*, const sgr::NetPoint*>, Entry, PairHash> routes_;
};

}  // namespace

void configure_ideal_network() {
  sg4::Engine* e = sg4::Engine::get_instance();
  e->set_config("network/model:CM02");
  e->set_config("network/crosstraffic:0");
  e->set_config("network/TCP-gamma:0");
}

Platform build_platform(const Topology& topo, const std::vector<int>& ranks,
                        const std::vector<std::pair<int, int>>& pairs, const LinkEfficiency& eff,
                        const std::vector<double>& gpu_speeds) {
  OVERLAPSIM_CHECK(!gpu_speeds.empty(), "a GPU needs at least one speed");
  auto* routing = new SparseRouteZone("machine");  // owned by the engine, as create_full_zone's
  sg4::NetZone* zone = routing->get_iface();
  Platform pf;
  for (int r : ranks) {
    if (pf.gpu_hosts.count(r)) continue;
    pf.gpu_hosts[r] = zone->create_host("rank" + std::to_string(r), gpu_speeds);
  }
  for (const auto& [s, d] : pairs)
    for (int r : {s, d})
      if (!pf.gpu_hosts.count(r)) pf.gpu_hosts[r] = zone->create_host("rank" + std::to_string(r), gpu_speeds);

  // Links are created lazily: only those some route uses.
  std::vector<sg4::Link*> fwd(topo.num_links(), nullptr), bwd(topo.num_links(), nullptr);
  auto get_link = [&](const Hop& h) -> sg4::Link* {
    auto& slot = (h.forward ? fwd : bwd)[h.link_id];
    if (slot) return slot;
    const Link& l = topo.link(h.link_id);
    const double bw = l.bandwidth_Bps * eff.of(l.kind);
    if (!l.full_duplex) {
      // One shared capacity for both directions.
      sg4::Link*& other = (h.forward ? bwd : fwd)[h.link_id];
      if (!other) other = zone->create_link("L" + std::to_string(h.link_id), bw)->set_latency(l.latency_s)->seal();
      slot = other;
      return slot;
    }
    slot = zone->create_link("L" + std::to_string(h.link_id) + (h.forward ? "+" : "-"), bw)
               ->set_latency(l.latency_s)
               ->seal();
    return slot;
  };
  std::set<std::pair<int, int>> routed;
  for (const auto& [s, d] : pairs) {
    if (!routed.insert({s, d}).second) continue;
    OVERLAPSIM_CHECK(s != d, "a flow from a rank to itself");
    std::vector<sg4::LinkInRoute> route;
    double latency_s = 0;  // summed in route order, as SimGrid's full zone summed its links'
    for (const Hop& h : topo.route(s, d)) {
      route.emplace_back(get_link(h));
      latency_s += topo.link(h.link_id).latency_s;
    }
    routing->add_explicit_route(pf.gpu_hosts[s]->get_netpoint(), pf.gpu_hosts[d]->get_netpoint(), route, latency_s);
  }
  zone->seal();
  return pf;
}

}  // namespace overlapsim
