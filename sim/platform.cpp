#include "sim/platform.hpp"

#include "sim/error.hpp"

#include <simgrid/s4u.hpp>

#include <set>
#include <string>

namespace sg4 = simgrid::s4u;

namespace overlapsim {

void configure_ideal_network() {
  sg4::Engine* e = sg4::Engine::get_instance();
  e->set_config("network/model:CM02");
  e->set_config("network/crosstraffic:0");
  e->set_config("network/TCP-gamma:0");
}

Platform build_platform(const Topology& topo, const std::vector<int>& ranks,
                        const std::vector<std::pair<int, int>>& pairs, const LinkEfficiency& eff,
                        const std::vector<double>& gpu_speeds, bool with_timer) {
  OVERLAPSIM_CHECK(!gpu_speeds.empty(), "a GPU needs at least one speed");
  const double gpu_speed = gpu_speeds[0];
  sg4::NetZone* zone = sg4::create_full_zone("machine");
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
    for (const Hop& h : topo.route(s, d)) route.emplace_back(get_link(h));
    zone->add_route(pf.gpu_hosts[s]->get_netpoint(), pf.gpu_hosts[d]->get_netpoint(), nullptr, nullptr, route,
                    false);
  }
  if (with_timer) pf.timer = zone->create_host("timer", gpu_speed)->set_core_count(1 << 24);
  zone->seal();
  return pf;
}

}  // namespace overlapsim
