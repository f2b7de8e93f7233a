// load_topology: reads the explicit and the template form of a topology file (design §3;
// the schema, with every key, unit and default, is documented in topologies/README.md).
//
// Explicit form:  name, devices (name ranges like "gpu[0-7]"), links (between two names or
//                 ranges; see expand_pairs for how two ranges pair up).
// Template form:  name, node {count, gpus, intra, nics}, fabric {single-switch | fat-tree}.
//                 It is expanded here into the same graph the explicit form gives.
// Every problem is an InputError at the file:line:column of the offending value, naming its key.
#include "models/device_catalog.hpp"
#include "sim/topology.hpp"
#include "sim/units.hpp"
#include "sim/yaml_input.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

namespace overlapsim {

namespace {

/// Longest list one name range may expand to (guards against "gpu[0-999999999]").
constexpr std::size_t kMaxRangeExpansion = 1u << 20;
constexpr long long kMaxNcclChannels = 64;  ///< NCCL's MAXCHANNELS (src/include/device.h, 2.19 and later)

/// PCIe Gen4 x16, per direction: 16 GT/s x 16 lanes x 128/130 encoding / 8 = 31.5 GB/s, which
/// PCI-SIG rounds to "32 GB/s" per direction (64 GB/s total) — "PCI Express 4.0 Base
/// Specification" and PCI-SIG FAQ, https://pcisig.com/faq. Achieved GPU<->host copies reach ~25 GB/s.
constexpr const char* kDefaultPcieBandwidth = "32GB/s";
/// Port-to-port latency of an NVIDIA Quantum HDR InfiniBand switch: 130 ns ("NVIDIA Quantum HDR
/// 200Gb/s InfiniBand Smart Switches" datasheet, QM8700/QM8790,
/// https://www.nvidia.com/en-us/networking/infiniband/qm8700/).
constexpr const char* kDefaultSwitchLatency = "130ns";

/// The message of a machine of more than kMaxTopologyGpus GPUs; `found`: how many it would have.
std::string too_many_gpus(const std::string& found) {
  return "expected at most " + std::to_string(kMaxTopologyGpus) +
         " GPUs in the machine (the largest simulated: 2048 nodes of 8, "
         "scenarios/bench/gpt-405b-class-16384gpu.yaml), found " + found;
}

std::string idx(const std::string& key, std::size_t i) { return key + "[" + std::to_string(i) + "]"; }

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}

/// Expands a device name with bracket ranges: "gpu[0-7]" → gpu0 … gpu7 (no zero padding);
/// several ranges multiply, leftmost slowest: "n[0-1].gpu[0-1]" → n0.gpu0 n0.gpu1 n1.gpu0 n1.gpu1.
std::vector<std::string> expand_names(const YamlFile& f, const YAML::Node& node, const std::string& key) {
  const std::string text = as_string(f, node, key);
  auto bad = [&](const std::string& why) {
    fail(f, node, key,
         "expected a device name such as gpu3 or a range such as gpu[0-7], found '" + text + "' (" + why + ")");
  };
  if (text.empty()) bad("empty name");
  std::vector<std::string> out{""};
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '[') {
      const std::size_t close = text.find(']', i);
      if (close == std::string::npos) bad("'[' without ']'");
      const std::string inner = text.substr(i + 1, close - i - 1);
      const std::size_t dash = inner.find('-');
      long lo = -1, hi = -1;
      auto number = [&](const std::string& s, long* v) {
        const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
        return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size() && *v >= 0;
      };
      if (dash == std::string::npos || !number(inner.substr(0, dash), &lo) || !number(inner.substr(dash + 1), &hi))
        bad("a range is [FIRST-LAST] with non-negative integers");
      if (lo > hi) bad("the first index of a range is larger than the last");
      const std::size_t width = static_cast<std::size_t>(hi - lo + 1);
      if (out.size() * width > kMaxRangeExpansion) bad("the range is too large");
      std::vector<std::string> next;
      next.reserve(out.size() * width);
      for (const std::string& prefix : out)
        for (long k = lo; k <= hi; ++k) next.push_back(prefix + std::to_string(k));
      out.swap(next);
      i = close + 1;
    } else if (name_char(c)) {
      for (std::string& s : out) s += c;
      ++i;
    } else if (c == ']') {
      bad("']' without '['");
    } else {
      bad(std::string("character '") + c + "' is not allowed; use letters, digits, '_', '-', '.', ':'");
    }
  }
  return out;
}

/// Builds the graph: unique names, edges always added from the lower-numbered vertex.
struct Builder {
  const YamlFile& f;
  Topology& t;
  std::unordered_map<std::string, VertexId> by_name;
  std::vector<YAML::Node> decl_node;  ///< per vertex: where it was declared (for messages)
  std::vector<std::string> decl_key;  ///< per vertex: the key of that declaration

  VertexId add_device(Device d, const YAML::Node& where, const std::string& key) {
    if (by_name.count(d.name)) {
      const SourceLocation first = location_of(f, decl_node[by_name[d.name]]);
      fail(f, where, key,
           "duplicate device name '" + d.name + "' (first declared at line " + std::to_string(first.line) + ")");
    }
    const bool is_gpu = d.kind == DeviceKind::Gpu;
    const std::string name = d.name;
    const VertexId v = boost::add_vertex(std::move(d), t.graph);
    by_name.emplace(name, v);
    decl_node.push_back(where);
    decl_key.push_back(key);
    if (is_gpu) t.gpus.push_back(v);
    return v;
  }

  void add_link(VertexId a, VertexId b, const Link& l) {
    if (a > b) std::swap(a, b);
    boost::add_edge(a, b, l, t.graph);
  }
};

Link make_link(LinkKind kind, double bandwidth_Bps, double latency_s, bool full_duplex = true) {
  Link l;
  l.kind = kind;
  l.bandwidth_Bps = bandwidth_Bps;
  l.latency_s = latency_s;
  l.full_duplex = full_duplex;
  return l;
}

long long positive_count(const YamlFile& f, const YAML::Node& v, const std::string& key) {
  const long long n = as_int(f, v, key);
  if (n <= 0) fail(f, v, key, "expected a positive count, found '" + v.Scalar() + "'");
  return n;
}

double positive_bandwidth(const YamlFile& f, const YAML::Node& v, const std::string& key) {
  const double bw = as_bandwidth_Bps(f, v, key);
  if (bw <= 0) fail(f, v, key, "expected a positive bandwidth, found '" + v.Scalar() + "'");
  return bw;
}

/// Value of an optional key, parsed from `fallback` (a literal default) when the key is absent.
double optional_quantity(const YamlFile& f, const YAML::Node& map, const std::string& k, const std::string& key,
                         const char* fallback, double (*as)(const YamlFile&, const YAML::Node&, const std::string&),
                         double (*parse)(const std::string&)) {
  const YAML::Node v = map[k];
  return v.IsDefined() ? as(f, v, key) : parse(fallback);
}

void check_gpu_model(const YamlFile& f, const YAML::Node& v, const std::string& key, const std::string& model) {
  if (is_known_device(model)) return;
  fail(f, v, key, "unknown GPU model '" + model + "'; known models: " + device_models_text());
}

// ---------------------------------------------------------------------------------------------
// Explicit form
// ---------------------------------------------------------------------------------------------

DeviceKind parse_device_kind(const YamlFile& f, const YAML::Node& v, const std::string& key) {
  const std::string s = as_string(f, v, key);
  if (s == "gpu") return DeviceKind::Gpu;
  if (s == "switch") return DeviceKind::Switch;
  if (s == "nic") return DeviceKind::Nic;
  if (s == "cpu") return DeviceKind::Cpu;
  fail(f, v, key, "expected one of gpu, switch, nic, cpu, found '" + s + "'");
}

LinkKind parse_link_kind(const YamlFile& f, const YAML::Node& v, const std::string& key) {
  const std::string s = as_string(f, v, key);
  if (s == "nvlink") return LinkKind::NvLink;
  if (s == "nvswitch") return LinkKind::NvSwitch;
  if (s == "pcie") return LinkKind::Pcie;
  if (s == "network") return LinkKind::Network;
  if (s == "upi") return LinkKind::Upi;
  fail(f, v, key, "expected one of nvlink, nvswitch, pcie, network, upi, found '" + s + "'");
}

/// Pairs the two ends of `between` after range expansion. The rule: the longer side is cut into
/// consecutive blocks of equal size, one block per element of the shorter side, and each element
/// of a block is linked to that element. Hence equal counts pair one-to-one (gpu[0-7] with
/// nic[0-7]), a single name links to every element of the other side (a star), and
/// gpu[0-7] with sw[0-3] gives gpu0,gpu1→sw0, gpu2,gpu3→sw1, …. A longer side whose length is
/// not a multiple of the shorter one is an error.
std::vector<std::pair<std::string, std::string>> expand_pairs(const YamlFile& f, const YAML::Node& between,
                                                              const std::string& key,
                                                              const std::vector<std::string>& a,
                                                              const std::vector<std::string>& b) {
  const std::size_t m = a.size(), n = b.size();
  const std::size_t lo = std::min(m, n), hi = std::max(m, n);
  if (hi % lo != 0)
    fail(f, between, key,
         "expected two ends whose expanded counts are equal, or one a multiple of the other, found " +
             std::to_string(m) + " and " + std::to_string(n) + " devices");
  const std::size_t block = hi / lo;
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(hi);
  for (std::size_t i = 0; i < hi; ++i)
    out.emplace_back(m >= n ? a[i] : a[i / block], m >= n ? b[i / block] : b[i]);
  return out;
}

void load_explicit(const YamlFile& f, Builder& bld) {
  const YAML::Node& root = f.root;
  const YAML::Node devices = require(f, root, "devices");
  if (!devices.IsSequence() || devices.size() == 0)
    fail(f, devices, "devices", "expected a non-empty list of devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const YAML::Node d = devices[i];
    const std::string key = idx("devices", i);
    check_keys(f, d, {"name", "kind", "model"}, key);
    const YAML::Node name_node = require(f, d, "name");
    const std::vector<std::string> names = expand_names(f, name_node, key + ".name");
    const DeviceKind kind = parse_device_kind(f, require(f, d, "kind"), key + ".kind");
    std::string model;
    if (kind == DeviceKind::Gpu) {
      const YAML::Node m = require(f, d, "model");
      model = as_string(f, m, key + ".model");
      check_gpu_model(f, m, key + ".model", model);
      if (!bld.t.gpus.empty() && bld.t.gpu(0).model != model)
        fail(f, m, key + ".model",
             "all GPUs must be the same model, found '" + model + "' after '" + bld.t.gpu(0).model + "' (line " +
                 std::to_string(location_of(f, bld.decl_node[bld.t.gpus[0]]).line) + ")");
    } else if (d["model"].IsDefined()) {
      fail(f, d["model"], key + ".model", "a model is given only for devices of kind gpu");
    }
    if (kind == DeviceKind::Gpu && bld.t.gpus.size() + names.size() > static_cast<std::size_t>(kMaxTopologyGpus))
      fail(f, name_node, key + ".name",
           too_many_gpus(std::to_string(bld.t.gpus.size() + names.size()) + " with this entry's " +
                         std::to_string(names.size())));
    int local = 0;
    for (const std::string& n : names) {
      Device dev;
      dev.name = n;
      dev.kind = kind;
      dev.model = model;
      dev.local_index = kind == DeviceKind::Gpu ? static_cast<int>(bld.t.gpus.size()) : local;
      bld.add_device(std::move(dev), name_node, key + ".name");
      ++local;
    }
  }

  const YAML::Node links = root["links"];  // optional: a one-GPU machine needs none
  if (links.IsDefined() && !links.IsSequence() && !links.IsNull())
    fail(f, links, "links", "expected a list of links");
  for (std::size_t i = 0; links.IsDefined() && links.IsSequence() && i < links.size(); ++i) {
    const YAML::Node l = links[i];
    const std::string key = idx("links", i);
    check_keys(f, l, {"between", "kind", "bandwidth", "latency", "duplex"}, key);
    const YAML::Node between = require(f, l, "between");
    if (!between.IsSequence() || between.size() != 2)
      fail(f, between, key + ".between", "expected a list of two device names, e.g. [gpu0, nvswitch]");
    std::vector<std::string> ends[2];
    for (std::size_t e = 0; e < 2; ++e) {
      ends[e] = expand_names(f, between[e], key + ".between");
      for (const std::string& n : ends[e])
        if (!bld.by_name.count(n))
          fail(f, between[e], key + ".between", "unknown device '" + n + "' (not declared under devices)");
    }
    Link link = make_link(parse_link_kind(f, require(f, l, "kind"), key + ".kind"),
                          positive_bandwidth(f, require(f, l, "bandwidth"), key + ".bandwidth"),
                          as_time_s(f, require(f, l, "latency"), key + ".latency"));
    if (l["duplex"].IsDefined()) {
      const std::string d = as_string(f, l["duplex"], key + ".duplex");
      if (d != "full" && d != "half") fail(f, l["duplex"], key + ".duplex", "expected full or half, found '" + d + "'");
      link.full_duplex = d == "full";
    }
    for (const auto& [a, b] : expand_pairs(f, between, key + ".between", ends[0], ends[1])) {
      if (a == b) fail(f, between, key + ".between", "a link joins '" + a + "' to itself");
      bld.add_link(bld.by_name.at(a), bld.by_name.at(b), link);
    }
  }
  bld.t.num_nodes = 1;
  bld.t.gpus_per_node = bld.t.num_gpus();
}

// ---------------------------------------------------------------------------------------------
// Template form
// ---------------------------------------------------------------------------------------------

/// " (from the topology override KEY=VALUE)" where `key` is overridden, else "": for a message
/// whose cause is an overridden count, reported at the file's value it replaced.
std::string from_override(const TopologyOverrides& overrides, const std::string& key) {
  const auto o = overrides.find(key);
  return o == overrides.end() ? std::string() : " (from the topology override " + key + "=" + o->second + ")";
}

/// node.count / node.gpus.count, possibly replaced by an override (reported at the file's value).
long long count_with_override(const YamlFile& f, const YAML::Node& map, const std::string& k,
                              const std::string& key, const TopologyOverrides& overrides) {
  const YAML::Node v = require(f, map, k);
  const auto o = overrides.find(key);
  if (o == overrides.end()) return positive_count(f, v, key);
  long long n = 0;
  const std::string& s = o->second;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
  // (Digits past 2^63 are a count too large, not one that is no count: the machine limit's words.)
  if (!s.empty() && r.ec == std::errc::result_out_of_range && r.ptr == s.data() + s.size())
    fail(f, v, key, "expected at most " + std::to_string(kMaxTopologyGpus) + " GPUs in the machine, found '" + s +
                        "' " + (key == "node.count" ? "nodes" : "GPUs per node") + " (from the topology override " +
                        key + ")");
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || n <= 0)
    fail(f, v, key, "expected a positive count, found '" + s + "' (from the topology override " + key + ")");
  return n;
}

void load_template(const YamlFile& f, Builder& bld, const TopologyOverrides& overrides) {
  const YAML::Node& root = f.root;
  Topology& t = bld.t;

  // --- node ---
  const YAML::Node node = require(f, root, "node");
  check_keys(f, node, {"count", "gpus", "intra", "nics", "cpu_vendor", "nccl_channels"}, "node");
  const long long num_nodes = count_with_override(f, node, "count", "node.count", overrides);
  if (node["cpu_vendor"].IsDefined()) {
    t.cpu_vendor = as_string(f, node["cpu_vendor"], "node.cpu_vendor");
    if (t.cpu_vendor != "intel" && t.cpu_vendor != "amd" && t.cpu_vendor != "arm")
      fail(f, node["cpu_vendor"], "node.cpu_vendor", "expected intel, amd or arm, found '" + t.cpu_vendor + "'");
  }
  if (node["nccl_channels"].IsDefined()) {
    const long long c = positive_count(f, node["nccl_channels"], "node.nccl_channels");
    if (c > kMaxNcclChannels)
      fail(f, node["nccl_channels"], "node.nccl_channels",
           "expected at most " + std::to_string(kMaxNcclChannels) + " (NCCL's MAXCHANNELS), found '" +
               node["nccl_channels"].Scalar() + "'");
    t.nccl_channels_one_node = static_cast<int>(c);
  }
  const YAML::Node gpus = require(f, node, "gpus");
  check_keys(f, gpus, {"count", "model"}, "node.gpus");
  const long long per_node = count_with_override(f, gpus, "count", "node.gpus.count", overrides);
  const YAML::Node model_node = require(f, gpus, "model");
  std::string model = as_string(f, model_node, "node.gpus.model");
  check_gpu_model(f, model_node, "node.gpus.model", model);
  // The override swaps the GPU alone (a DGX H200 is a DGX H100's NVLink, NVSwitches and NICs
  // around another GPU); the links keep the bandwidths the file gives them.
  if (const auto o = overrides.find("node.gpus.model"); o != overrides.end()) {
    model = o->second;
    if (!is_known_device(model))
      fail(f, model_node, "node.gpus.model",
           "unknown GPU model '" + model + "' (from the topology override node.gpus.model); known models: " +
               device_models_text());
  }
  // Before anything is expanded (kMaxTopologyGpus, sim/topology.hpp). Named at the count that is
  // too large alone, else at node.count; the product is not formed where it would overflow.
  if (num_nodes > kMaxTopologyGpus / per_node) {
    const bool per_node_alone = per_node > kMaxTopologyGpus;
    const std::string key = per_node_alone ? "node.gpus.count" : "node.count";
    const std::string found =
        per_node_alone ? std::to_string(per_node) + " GPUs per node"
                       : std::to_string(num_nodes) + " nodes of " + std::to_string(per_node) +
                             (per_node == 1 ? " GPU = " : " GPUs = ") +
                             (num_nodes > std::numeric_limits<long long>::max() / per_node
                                  ? std::string("more than 2^63")
                                  : std::to_string(num_nodes * per_node));
    fail(f, per_node_alone ? gpus["count"] : node["count"], key,
         too_many_gpus(found + from_override(overrides, key)));
  }

  const YAML::Node intra = require(f, node, "intra");
  check_keys(f, intra, {"kind", "bandwidth", "latency"}, "node.intra");
  const YAML::Node intra_kind = require(f, intra, "kind");
  if (as_string(f, intra_kind, "node.intra.kind") != "nvswitch")
    fail(f, intra_kind, "node.intra.kind", "expected nvswitch, found '" + intra_kind.Scalar() + "'");
  const double intra_bw = positive_bandwidth(f, require(f, intra, "bandwidth"), "node.intra.bandwidth");
  const double intra_lat = as_time_s(f, require(f, intra, "latency"), "node.intra.latency");

  const YAML::Node nics = node["nics"];
  double nic_bw = 0, nic_lat = 0, pcie_bw = 0, pcie_lat = 0;
  if (nics.IsDefined()) {
    check_keys(f, nics, {"count", "bandwidth", "latency", "attach", "pcie", "pcie_latency"}, "node.nics");
    if (nics["attach"].IsDefined() && as_string(f, nics["attach"], "node.nics.attach") != "per-gpu")
      fail(f, nics["attach"], "node.nics.attach", "expected per-gpu, found '" + nics["attach"].Scalar() + "'");
    if (nics["count"].IsDefined() && positive_count(f, nics["count"], "node.nics.count") != per_node)
      fail(f, nics["count"], "node.nics.count",
           "expected one NIC per GPU (attach: per-gpu), i.e. " + std::to_string(per_node) +
               from_override(overrides, "node.gpus.count") + ", found '" + nics["count"].Scalar() + "'");
    nic_bw = positive_bandwidth(f, require(f, nics, "bandwidth"), "node.nics.bandwidth");
    nic_lat = as_time_s(f, require(f, nics, "latency"), "node.nics.latency");
    t.nics_per_node = static_cast<int>(per_node);
    pcie_bw = optional_quantity(f, nics, "pcie", "node.nics.pcie", kDefaultPcieBandwidth, as_bandwidth_Bps,
                                parse_bandwidth_Bps);
    if (pcie_bw <= 0) fail(f, nics["pcie"], "node.nics.pcie", "expected a positive bandwidth");
    pcie_lat = optional_quantity(f, nics, "pcie_latency", "node.nics.pcie_latency", "0s", as_time_s, parse_time_s);
  }

  // --- vertices and links of each node ---
  std::vector<VertexId> nic_of;  // node-major: nic_of[i * per_node + j]
  for (long long i = 0; i < num_nodes; ++i) {
    const std::string prefix = "n" + std::to_string(i) + ".";
    std::vector<VertexId> g(static_cast<std::size_t>(per_node));
    for (long long j = 0; j < per_node; ++j) {
      Device d{prefix + "gpu" + std::to_string(j), DeviceKind::Gpu, model, static_cast<int>(i), static_cast<int>(j)};
      g[static_cast<std::size_t>(j)] = bld.add_device(std::move(d), gpus, "node.gpus");
    }
    const VertexId sw =
        bld.add_device(Device{prefix + "nvswitch", DeviceKind::Switch, "", static_cast<int>(i), -1}, intra, "node.intra");
    // intra.latency is GPU-to-GPU through the NVSwitch: half on each of the two links.
    for (VertexId v : g) bld.add_link(v, sw, make_link(LinkKind::NvSwitch, intra_bw, intra_lat / 2));
    if (!nics.IsDefined()) continue;
    for (long long j = 0; j < per_node; ++j) {
      Device d{prefix + "nic" + std::to_string(j), DeviceKind::Nic, "", static_cast<int>(i), static_cast<int>(j)};
      const VertexId nic = bld.add_device(std::move(d), nics, "node.nics");
      nic_of.push_back(nic);
      bld.add_link(g[static_cast<std::size_t>(j)], nic, make_link(LinkKind::Pcie, pcie_bw, pcie_lat));
    }
  }
  t.num_nodes = static_cast<int>(num_nodes);
  t.gpus_per_node = static_cast<int>(per_node);

  // --- fabric ---
  const YAML::Node fabric = root["fabric"];
  if (!fabric.IsDefined()) {
    if (overrides.count("fabric.sharp"))
      throw InputError(SourceLocation{f.path, 0, 0}, "fabric.sharp",
                       "the topology override fabric.sharp needs a fabric, and this topology has none (one node)");
    if (num_nodes > 1)
      fail(f, node, "fabric",
           "a machine of " + std::to_string(num_nodes) + " nodes" + from_override(overrides, "node.count") +
               " needs a 'fabric' section");
    return;
  }
  if (!nics.IsDefined()) fail(f, fabric, "node.nics", "a fabric needs NICs: add node.nics");
  const YAML::Node kind_node = require(f, fabric, "kind");
  const std::string kind = as_string(f, kind_node, "fabric.kind");
  // In-network reduction (NCCL's CollNet over InfiniBand SHARP): the SHARP generation of the
  // fabric's switches, 2 (Quantum HDR, QM8700) or 3 (Quantum-2 NDR, QM9700; adds bfloat16, int8
  // and uint8 to what it reduces: sim/collective_collnet.cpp).
  const char* sharp_expected = "expected the switches' SHARP generation, 2 (Quantum HDR) or 3 (Quantum-2 NDR), or none";
  if (const auto o = overrides.find("fabric.sharp"); o != overrides.end()) {
    if (o->second == "2" || o->second == "3") t.sharp_version = o->second[0] - '0';
    else if (o->second != "none")
      throw InputError(SourceLocation{f.path, 0, 0}, "fabric.sharp",
                       std::string(sharp_expected) + ", found '" + o->second + "' (the topology override fabric.sharp)");
  } else if (fabric["sharp"].IsDefined()) {
    const YAML::Node v = fabric["sharp"];
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    if (v.IsNull() || (v.IsScalar() && text.empty())) fail(f, v, "fabric.sharp", std::string(sharp_expected) + ", found an empty value");
    if (text == "2" || text == "3") t.sharp_version = text[0] - '0';
    else if (text != "none")
      fail(f, v, "fabric.sharp",
           std::string(sharp_expected) + ", found '" +
               (v.IsScalar() ? text : std::string("a ") + (v.IsMap() ? "map" : "list")) + "'");
  }
  // One switch traversal costs fabric.latency: a NIC-leaf link carries half of it (plus the
  // NIC's own latency), a leaf-spine link all of it, so a path pays each switch exactly once.
  if (kind == "single-switch") {
    check_keys(f, fabric, {"kind", "latency", "sharp"}, "fabric");
    const double sw_lat =
        optional_quantity(f, fabric, "latency", "fabric.latency", kDefaultSwitchLatency, as_time_s, parse_time_s);
    const VertexId sw = bld.add_device(Device{"switch", DeviceKind::Switch, "", -1, 0}, fabric, "fabric");
    for (VertexId nic : nic_of) bld.add_link(nic, sw, make_link(LinkKind::Network, nic_bw, nic_lat + sw_lat / 2));
    return;
  }
  if (kind != "fat-tree")
    fail(f, kind_node, "fabric.kind", "expected single-switch or fat-tree, found '" + kind + "'");

  check_keys(f, fabric,
             {"kind", "levels", "radix", "oversubscription", "rail_optimized", "bandwidth", "latency", "routing", "sharp"},
             "fabric");
  if (fabric["levels"].IsDefined() && as_int(f, fabric["levels"], "fabric.levels") != 2)
    fail(f, fabric["levels"], "fabric.levels", "expected 2 (only two-level fat trees are supported), found '" +
                                                   fabric["levels"].Scalar() + "'");
  const YAML::Node radix_node = require(f, fabric, "radix");
  const long long radix = positive_count(f, radix_node, "fabric.radix");
  // A switch of more than 1024 ports does not exist; past it the spine planes (radix / 2 of
  // them, each linked to every leaf) only cost memory and time (radix 2^62: a vector past
  // max_size(); 4e7: minutes).
  if (radix < 2 || radix % 2 != 0 || radix > 1024)
    fail(f, radix_node, "fabric.radix",
         "expected an even number of switch ports from 2 to 1024, found '" + radix_node.Scalar() + "'");
  double oversub = 1;
  if (fabric["oversubscription"].IsDefined()) {
    oversub = as_double(f, fabric["oversubscription"], "fabric.oversubscription");
    // At most radix / 2: a leaf keeps at least one port's bandwidth up (1e300 timed an
    // iteration in 1.6e297 s and printed 0.0 TFLOP/s).
    if (oversub < 1 || oversub > static_cast<double>(radix / 2))
      fail(f, fabric["oversubscription"], "fabric.oversubscription",
           "expected a ratio from 1 (full bisection) to radix / 2 = " + std::to_string(radix / 2) + ", found '" +
               fabric["oversubscription"].Scalar() + "'");
  }
  const bool rail = fabric["rail_optimized"].IsDefined() ? as_bool(f, fabric["rail_optimized"], "fabric.rail_optimized") : true;
  const double port_bw = fabric["bandwidth"].IsDefined()
                             ? positive_bandwidth(f, fabric["bandwidth"], "fabric.bandwidth")
                             : nic_bw;
  const double sw_lat =
      optional_quantity(f, fabric, "latency", "fabric.latency", kDefaultSwitchLatency, as_time_s, parse_time_s);
  bool dmodk = true;  // InfiniBand's fat-tree routing (Topology::dmodk_port)
  if (fabric["routing"].IsDefined()) {
    const std::string routing = as_string(f, fabric["routing"], "fabric.routing");
    if (routing != "d-mod-k" && routing != "ecmp")
      fail(f, fabric["routing"], "fabric.routing", "expected d-mod-k or ecmp, found '" + routing + "'");
    dmodk = routing == "d-mod-k";
  }

  // Leaves: radix/2 ports down. Rail-optimized: NIC j of every node goes to the rail-j leaves,
  // filled node by node (leaf = j * leaves_per_rail + i / down); otherwise NICs fill leaves in
  // node-major order (leaf = (i * per_node + j) / down).
  const long long down = radix / 2;
  const long long leaves_per_rail = (num_nodes + down - 1) / down;
  const long long num_leaves = rail ? per_node * leaves_per_rail : (num_nodes * per_node + down - 1) / down;
  std::vector<VertexId> leaf(static_cast<std::size_t>(num_leaves));
  for (long long k = 0; k < num_leaves; ++k)
    leaf[static_cast<std::size_t>(k)] =
        bld.add_device(Device{"leaf" + std::to_string(k), DeviceKind::Switch, "", -1, static_cast<int>(k)}, fabric, "fabric");
  if (dmodk) t.dmodk_port.assign(static_cast<std::size_t>(num_nodes * per_node), 0);
  for (long long i = 0; i < num_nodes; ++i)
    for (long long j = 0; j < per_node; ++j) {
      const long long k = rail ? j * leaves_per_rail + i / down : (i * per_node + j) / down;
      bld.add_link(nic_of[static_cast<std::size_t>(i * per_node + j)], leaf[static_cast<std::size_t>(k)],
                   make_link(LinkKind::Network, nic_bw, nic_lat + sw_lat / 2));
      // The NIC's port on its leaf; rank i · per_node + j is GPU j of node i (rank order).
      if (dmodk)
        t.dmodk_port[static_cast<std::size_t>(i * per_node + j)] =
            static_cast<int>(rail ? i % down : (i * per_node + j) % down);
    }
  if (num_leaves == 1) return;
  // Spines: radix/2 spine *planes*. Uplink k of every leaf goes to plane k; a plane stands for
  // all the spine switches (and, past radix leaves, the core above them) that serve uplink k,
  // so any number of leaves works. Each leaf-plane link has the leaf's uplink bandwidth
  // (radix/2 ports x port bandwidth / oversubscription) divided among the planes.
  const long long num_spines = down;
  const double up_bw = static_cast<double>(down) * port_bw / oversub / static_cast<double>(num_spines);
  std::vector<VertexId> spine(static_cast<std::size_t>(num_spines));
  for (long long s = 0; s < num_spines; ++s)
    spine[static_cast<std::size_t>(s)] =
        bld.add_device(Device{"spine" + std::to_string(s), DeviceKind::Switch, "", -1, static_cast<int>(s)}, fabric, "fabric");
  for (VertexId l : leaf)
    for (VertexId s : spine) bld.add_link(l, s, make_link(LinkKind::Network, up_bw, sw_lat));
}

}  // namespace

Topology load_topology(const std::string& path, const TopologyOverrides& overrides) {
  const YamlFile f = load_yaml_file(path);
  if (!f.root.IsMap()) fail(f, f.root, "", "expected a topology (a map with 'name' and 'devices' or 'node')");

  const bool is_explicit = f.root["devices"].IsDefined() || f.root["links"].IsDefined();
  const bool is_template = f.root["node"].IsDefined() || f.root["fabric"].IsDefined();
  if (is_explicit && is_template) {
    const char* key = f.root["node"].IsDefined() ? "node" : "fabric";  // the template key it has
    fail(f, f.root[key], key, "a topology is either explicit (devices, links) or a template (node, fabric), not both");
  }
  if (!is_explicit && !is_template)
    fail(f, f.root, "devices", "expected 'devices' and 'links' (explicit form) or 'node' (template form)");

  for (const auto& [key, value] : overrides) {
    if (key != "node.count" && key != "node.gpus.count" && key != "node.gpus.model" && key != "fabric.sharp")
      throw InputError(SourceLocation{path, 0, 0}, key,
                       "unknown topology override '" + key + "' (= '" + value +
                           "'); known overrides: node.count, node.gpus.count, node.gpus.model, fabric.sharp");
    if (is_explicit)
      throw InputError(SourceLocation{path, 0, 0}, key,
                       "topology override '" + key + "' applies only to the template form (node, fabric)");
  }

  if (is_explicit)
    check_keys(f, f.root, {"name", "description", "devices", "links"}, "");
  else
    check_keys(f, f.root, {"name", "description", "node", "fabric"}, "");

  Topology t;
  t.source_file = path;
  const YAML::Node name_node = require(f, f.root, "name");
  t.name = as_string(f, name_node, "name");
  if (t.name.empty()) fail(f, name_node, "name", "expected a non-empty name");

  Builder bld{f, t, {}, {}, {}};
  if (is_explicit)
    load_explicit(f, bld);
  else
    load_template(f, bld, overrides);

  if (t.gpus.empty()) fail(f, f.root, "devices", "the machine has no GPU (no device of kind gpu)");
  // Point at the declaration of the first GPU that has no route to an earlier one.
  const auto [a, b] = t.unroutable_pair();
  if (a >= 0) {
    const VertexId v = t.gpus[static_cast<std::size_t>(b)];
    fail(f, bld.decl_node[v], bld.decl_key[v],
         "GPU '" + t.graph[v].name + "' has no route to GPU '" + t.gpu(a).name +
             "' (no path of links through switches, NICs or CPUs; GPUs do not forward traffic)");
  }
  t.finalize();
  return t;
}

}  // namespace overlapsim
