// Builds the SimGrid platform of a Topology (design §1, §4, §7).
//
// Only what a simulation touches is instantiated: one SimGrid host per GPU that runs ops or
// terminates a flow, every link of the topology (two SimGrid links per full-duplex link, one
// per direction; one shared link for a half-duplex one), and one route per (src, dst) pair of
// GPUs that exchanges data, following Topology::route, kept in a netzone of explicit routes for
// those pairs only (SimGrid's full zone holds a slot for every pair of hosts: N², 2.1 GB at
// 16,384 GPUs). Switches, NICs and CPU sockets are not
// hosts: they only appear as the links around them. The network model is SimGrid's CM02 with
// cross-traffic and TCP-gamma off (ideal max-min sharing; design §7): a flow of S bytes on a
// route of bottleneck bandwidth B and total latency L alone takes exactly L + S/B.
//
// Part of the flow module (liboverlapsim_flow.so, sim/flow_replay.cpp), the only code that links
// SimGrid. REQUIRES: a simgrid::s4u::Engine exists and no platform has been created yet.
#pragma once

#include "sim/link_efficiency.hpp"
#include "sim/topology.hpp"

#include <map>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace overlapsim {

struct Platform {
  std::map<int, simgrid::s4u::Host*> gpu_hosts;  ///< global rank → host
};

/// Sets the network model configuration (call right after creating the Engine).
void configure_ideal_network();

/// Creates hosts for `ranks`, all links, and routes for `pairs` (src rank, dst rank).
/// gpu_speeds: the speed of every GPU host in each of its power states (work units per second;
/// the replay expresses a kernel of t seconds as t · speed of state 0 units, and uses the other
/// states to slow a GPU while communication kernels hold some of its SMs).
Platform build_platform(const Topology& topo, const std::vector<int>& ranks,
                        const std::vector<std::pair<int, int>>& pairs, const LinkEfficiency& eff,
                        const std::vector<double>& gpu_speeds);

}  // namespace overlapsim
