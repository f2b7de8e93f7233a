// `overlapsim topo TOPOLOGY`: print the expanded topology (counts, or Graphviz dot).
#include "tools/overlapsim/commands.hpp"

#include "sim/error.hpp"
#include "sim/topology.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>

namespace overlapsim::cli {

void add_topo_command(CLI::App& app, TopoArgs& a) {
  CLI::App* t = app.add_subcommand("topo", "print the expanded topology of a topology file");
  t->add_option("topology", a.file, "topology YAML file")->required();
  t->add_option("--override", a.overrides, "KEY=VALUE, e.g. node.count=4 (repeatable)")
      ->allow_extra_args(false);  // one value per flag: `--override K=V topology.yaml` leaves the file positional
  t->add_flag("--dot", a.dot, "print Graphviz dot instead of a summary");
}

int topo_command(const TopoArgs& a) {
  TopologyOverrides ov;
  for (const auto& kv : a.overrides) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--override", "expected KEY=VALUE, found '" + kv + "'");
    if (!ov.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--override",
                       "'" + kv.substr(0, eq) + "' is given twice; expected each key once");
  }
  const Topology t = load_topology(a.file, ov);
  const auto& g = t.graph;
  if (a.dot) {
    std::cout << "graph \"" << t.name << "\" {\n";
    for (auto v : boost::make_iterator_range(boost::vertices(g)))
      std::cout << fmt::format("  \"{}\" [shape={}];\n", g[v].name, g[v].kind == DeviceKind::Gpu ? "box" : "ellipse");
    for (auto e : boost::make_iterator_range(boost::edges(g)))
      std::cout << fmt::format("  \"{}\" -- \"{}\" [label=\"{} {:.2f}GB/s\"];\n", g[boost::source(e, g)].name,
                               g[boost::target(e, g)].name, to_string(g[e].kind), g[e].bandwidth_Bps / 1e9);
    std::cout << "}\n";
    return 0;
  }
  std::map<std::string, int> devices, links;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) ++devices[to_string(g[v].kind)];
  for (auto e : boost::make_iterator_range(boost::edges(g)))
    ++links[fmt::format("{} {:.2f}GB/s {:.2f}us", to_string(g[e].kind), g[e].bandwidth_Bps / 1e9, g[e].latency_s * 1e6)];
  std::cout << fmt::format("topology {} ({}): {} GPUs of {}, {} node(s)\n", t.name, t.source_file, t.num_gpus(),
                           t.gpu_model(), t.num_nodes);
  if (!t.cpu_vendor.empty() || t.nccl_channels_one_node > 0 || t.nics_per_node > 0)
    std::cout << fmt::format("nccl: cpu vendor {}, channels {} in one node, {} across nodes{}\n",
                             t.cpu_vendor.empty() ? "not stated" : t.cpu_vendor,
                             t.nccl_channels(1) > 0 ? std::to_string(t.nccl_channels(1)) : "not stated",
                             t.nccl_channels(2) > 0 ? std::to_string(t.nccl_channels(2)) : "not known",
                             t.nccl_channels(2) > 0 && t.gpus_per_node > 1
                                 ? fmt::format(" ({} for a communicator of one GPU a node)", t.nccl_channels(2, 1))
                                 : std::string());
  // In-network reduction: what CollNet (and NVLS across nodes) needs (README "CollNet").
  if (t.num_nodes > 1 || t.sharp_version > 0)
    std::cout << (t.sharp_version > 0
                      ? fmt::format("fabric: SHARP {} in its switches (CollNet can run, with NCCL_COLLNET_ENABLE=1)\n",
                                    t.sharp_version)
                      : std::string("fabric: no in-switch reduction (no fabric.sharp: CollNet cannot run)\n"));
  std::cout << "devices:\n";
  for (const auto& [k, n] : devices) std::cout << fmt::format("  {:>6} {}\n", n, k);
  std::cout << "links (per direction when full duplex):\n";
  for (const auto& [k, n] : links) std::cout << fmt::format("  {:>6} {}\n", n, k);
  if (t.num_gpus() > 1) {
    const int last = t.num_gpus() - 1;
    auto show = [&](int s, int d) {
      std::string path = t.gpu(s).name;
      VertexId cur = t.gpus[s];
      for (const Hop& h : t.route(s, d)) {
        auto [a, b] = t.endpoints(h.link_id);
        cur = (cur == a) ? b : a;
        path += " -> " + g[cur].name;
      }
      std::cout << fmt::format("route rank {} -> rank {}: {}\n", s, d, path);
    };
    show(0, 1);
    if (last != 1) show(0, last);
  }
  return 0;
}

}  // namespace overlapsim::cli
