// Strict loading of calibration profiles (format in profile.hpp and calibrate/README.md).
//
// Every error is an InputError naming the file, the JSON path of the offending key (e.g.
// "gemm.max_efficiency", "collectives.fits[2].busbw_Bps") and what was expected. Required keys
// are all those of version 1; inside the known sections (provenance excepted, whose extra keys
// record where a measurement came from) an unknown key is an error, so that a typo cannot
// silently fall back to a default. Version 2 adds optional keys to gemm, memory and attention
// and the optional sections collectives and interference (an error in a version-1 profile).
// Unknown top-level sections are ignored, as other readers' sections, unless the name is within
// two edits of one of ours (or equal ignoring case): that is a typo, and an error.
#include "calibrate/profile.hpp"

#include "calibrate/json_reader.hpp"
#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <cctype>
#include <filesystem>
#include <limits>
#include <set>

namespace overlapsim {

namespace {

using calib::describe;
using calib::idx;
using calib::json;
using Reader = calib::JsonReader;

constexpr const char* kSchema = "overlapsim-profile";
constexpr int kMinVersion = 1;
constexpr int kMaxVersion = 2;

/// A measured bandwidth, bytes/s: at least 1 MB/s (below that a typo in an exponent: 1e-308
/// printed inf in `calibrate compare` and timed collectives in centuries), at most 10^15.
double measured_bandwidth(const Reader& r, const json& obj, const std::string& sec, const char* key) {
  return r.number(obj, sec, key, 1e6, 1e15, false, "a bandwidth in bytes/s from 1e6 to 1e15");
}

std::string dtype_of(const Reader& r, const json& obj, const std::string& sec) {
  const std::string d = r.string(obj, sec, "dtype");
  if (d != "fp16" && d != "bf16" && d != "fp8")
    r.fail(sec + ".dtype", "expected \"fp16\", \"bf16\" or \"fp8\", found \"" + d + "\"");
  return d;
}

[[noreturn]] void fail_size(const Reader& r, const std::string& where, std::size_t want, std::size_t found,
                            const char* axis) {
  r.fail(where, "expected an array of " + std::to_string(want) + " entries (one per value of axis " + axis + "), found " +
                    std::to_string(found));
}

void load_gemm_tables(const Reader& r, const json& gemm, Profile& p) {
  const json& tables = r.array(gemm, "gemm", "tables", "GEMM efficiency tables");
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const std::string sec = idx("gemm.tables", t);
    const json& o = tables[t];
    r.check_object(o, sec, {"dtype", "peak_flops", "m", "n", "k", "efficiency"}, true);
    GemmEfficiencyTable tab;
    tab.dtype = dtype_of(r, o, sec);
    for (const auto& other : p.gemm_tables)
      if (other.dtype == tab.dtype) r.fail(sec + ".dtype", "expected one table per dtype, found a second \"" + tab.dtype + "\"");
    tab.peak_flops = r.positive(o, sec, "peak_flops", "FLOP/s");
    tab.m = r.axis(o, sec, "m");
    tab.n = r.axis(o, sec, "n");
    tab.k = r.axis(o, sec, "k");
    const std::string shape =
        std::to_string(tab.m.size()) + " × " + std::to_string(tab.n.size()) + " × " + std::to_string(tab.k.size());
    const json& e = r.array(o, sec, "efficiency", "arrays (m × n × k = " + shape + ")");
    const std::string where = sec + ".efficiency";
    if (e.size() != tab.m.size()) fail_size(r, where, tab.m.size(), e.size(), "m");
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (!e[i].is_array() || e[i].size() != tab.n.size()) fail_size(r, idx(where, i), tab.n.size(), e[i].is_array() ? e[i].size() : 0, "n");
      for (std::size_t j = 0; j < e[i].size(); ++j) {
        const json& row = e[i][j];
        if (!row.is_array() || row.size() != tab.k.size())
          fail_size(r, idx(idx(where, i), j), tab.k.size(), row.is_array() ? row.size() : 0, "k");
        for (std::size_t l = 0; l < row.size(); ++l)
          tab.efficiency.push_back(r.number_value(row[l], idx(idx(idx(where, i), j), l), 0.0, 1.0, true, "a number in (0, 1]"));
      }
    }
    p.gemm_tables.push_back(std::move(tab));
  }
}

void load_key_shapes(const Reader& r, const json& gemm, Profile& p) {
  const json& keys = r.array(gemm, "gemm", "key_shapes", "measured GEMM shapes");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string sec = idx("gemm.key_shapes", i);
    r.check_object(keys[i], sec, {"label", "dtype", "m", "n", "k", "efficiency", "interpolated"}, true);
    GemmKeyShape s;
    s.label = r.string(keys[i], sec, "label");
    s.dtype = dtype_of(r, keys[i], sec);
    s.m = r.integer(keys[i], sec, "m", 1, 1LL << 40);
    s.n = r.integer(keys[i], sec, "n", 1, 1LL << 40);
    s.k = r.integer(keys[i], sec, "k", 1, 1LL << 40);
    s.efficiency = r.efficiency(keys[i], sec, "efficiency");
    s.interpolated = r.efficiency(keys[i], sec, "interpolated");
    p.gemm_key_shapes.push_back(s);
  }
}

void load_memory_points(const Reader& r, const json& memory, Profile& p) {
  const json& pts = r.array(memory, "memory", "points", "measured memory-bound kernels");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("memory.points", i);
    r.check_object(pts[i], sec, {"kernel", "bytes", "bandwidth_Bps"}, true);
    MemoryPoint m;
    m.kernel = r.string(pts[i], sec, "kernel");
    m.bytes = r.positive(pts[i], sec, "bytes", "a byte count");
    m.bandwidth_Bps = measured_bandwidth(r, pts[i], sec, "bandwidth_Bps");
    p.memory_points.push_back(m);
  }
}

void load_attention_points(const Reader& r, const json& attention, Profile& p) {
  const json& pts = r.array(attention, "attention", "points", "measured attention shapes");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("attention.points", i);
    r.check_object(pts[i], sec, {"batch", "heads", "seq", "head_dim", "time_s", "efficiency"}, true);
    AttentionPoint a;
    a.batch = r.integer(pts[i], sec, "batch", 1, 1LL << 30);
    a.heads = r.integer(pts[i], sec, "heads", 1, 1LL << 30);
    a.seq = r.integer(pts[i], sec, "seq", 1, 1LL << 30);
    a.head_dim = r.integer(pts[i], sec, "head_dim", 1, 1LL << 30);
    a.time_s = r.positive(pts[i], sec, "time_s", "a time in seconds");
    a.efficiency = r.efficiency(pts[i], sec, "efficiency");
    p.attention_points.push_back(a);
  }
}

void load_collectives(const Reader& r, const json& root, Profile& p) {
  const json& c = r.section(root, "collectives", {"source", "fits"}, true);
  p.collectives_source = r.string(c, "collectives", "source");
  const json& fits = r.array(c, "collectives", "fits", "collective fits");
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const std::string sec = idx("collectives.fits", i);
    const json& o = fits[i];
    r.check_object(o, sec,
                   {"collective", "ranks", "nodes", "algorithm", "protocol", "collnet_enable", "alpha_s", "busbw_Bps",
                    "max_relative_error", "source", "points"},
                   true);
    CollectiveFit f;
    f.collective = r.string(o, sec, "collective");
    bool known = false;
    for (const auto& n : collective_names()) known = known || n == f.collective;
    if (!known) {
      std::string list;
      for (const auto& n : collective_names()) list += (list.empty() ? "" : ", ") + n;
      r.fail(sec + ".collective", "expected one of " + list + ", found \"" + f.collective + "\"");
    }
    f.ranks = static_cast<int>(r.integer(o, sec, "ranks", 1, 1 << 24));
    f.nodes = static_cast<int>(r.integer(o, sec, "nodes", 1, f.ranks));
    f.algorithm = r.string(o, sec, "algorithm");
    f.protocol = r.string(o, sec, "protocol");
    // What the log ran: "auto", or NCCL_ALGO / NCCL_PROTO as set (a name or a list, any case).
    // Another word would never match a collective (measured_collectives.cpp), silently.
    if (f.algorithm.empty() || !unknown_nccl_word(f.algorithm, true).empty())
      r.fail(sec + ".algorithm", "expected \"auto\" or NCCL_ALGO as the log set it (ring, tree, nvls, nvls_tree, "
                                 "collnet_direct, collnet_chain, pat, or a list of them), found \"" + f.algorithm + "\"");
    if (f.protocol.empty() || !unknown_nccl_word(f.protocol, false).empty())
      r.fail(sec + ".protocol", "expected \"auto\" or NCCL_PROTO as the log set it (LL, LL128, Simple, or a list of "
                                "them), found \"" + f.protocol + "\"");
    if (o.contains("collnet_enable")) f.collnet_enable = r.boolean(o, sec, "collnet_enable");
    f.alpha_s = r.seconds(o, sec, "alpha_s");
    f.busbw_Bps = measured_bandwidth(r, o, sec, "busbw_Bps");
    f.max_relative_error = r.number(o, sec, "max_relative_error", 0.0, std::numeric_limits<double>::max(), false, "a number >= 0");
    f.source = r.string(o, sec, "source");
    const json& pts = r.array(o, sec, "points", "measured (size, time) points");
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const std::string ps = idx(sec + ".points", j);
      r.check_object(pts[j], ps, {"size_bytes", "time_s", "busbw_Bps"}, true);
      CollectivePoint cp;
      cp.size_bytes = r.positive(pts[j], ps, "size_bytes", "a byte count");
      cp.time_s = r.positive(pts[j], ps, "time_s", "a time in seconds");
      cp.busbw_Bps = r.number(pts[j], ps, "busbw_Bps", 0.0, std::numeric_limits<double>::max(), false, "a bandwidth >= 0");
      f.points.push_back(cp);
    }
    for (const auto& other : p.collectives)
      if (other.collective == f.collective && other.ranks == f.ranks && other.nodes == f.nodes)
        r.fail(sec, "expected one fit per (collective, ranks, nodes), found a second " + f.collective + " on " +
                        std::to_string(f.ranks) + " ranks and " + std::to_string(f.nodes) + " node(s)");
    p.collectives.push_back(std::move(f));
  }
}

void load_interference(const Reader& r, const json& root, Profile& p) {
  const json& s = r.section(root, "interference", {"source", "gemm", "sm_interference", "points"}, true);
  p.interference_source = r.string(s, "interference", "source");
  p.interference_gemm = r.string(s, "interference", "gemm");
  if (s.contains("sm_interference"))
    p.sm_interference = r.number(s, "interference", "sm_interference", 0.0, 100.0, false, "a coefficient in [0, 100]");
  const json& pts = r.array(s, "interference", "points", "interference measurements");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("interference.points", i);
    r.check_object(pts[i], sec, {"companion", "num_sm", "compute_slowdown", "companion_bandwidth_Bps"}, true);
    InterferencePoint ip;
    ip.companion = r.string(pts[i], sec, "companion");
    ip.num_sm = static_cast<int>(r.integer(pts[i], sec, "num_sm", 0, 1 << 16));
    ip.compute_slowdown = r.number(pts[i], sec, "compute_slowdown", 0.0, 100.0, true, "a slowdown factor in (0, 100]");
    ip.companion_bandwidth_Bps =
        r.number(pts[i], sec, "companion_bandwidth_Bps", 0.0, std::numeric_limits<double>::max(), false, "a bandwidth >= 0");
    p.interference.push_back(ip);
  }
}

/// `key` of a tuning rule: absent (any), an integer >= 1 or a range [lo, hi], 1 <= lo <= hi.
void load_range(const Reader& r, const json& o, const std::string& sec, const char* key, int* lo, int* hi) {
  if (!o.contains(key)) return;
  const json& v = o[key];
  const std::string where = sec + "." + key;
  const char* want = "an integer >= 1 or a range [lo, hi] of integers, 1 <= lo <= hi";
  auto one = [&](const json& x, const std::string& w) {
    if (!x.is_number_integer() || x.get<long long>() < 1 || x.get<long long>() > (1LL << 24))
      r.fail(w, std::string("expected ") + want + ", found " + describe(x));
    return static_cast<int>(x.get<long long>());
  };
  if (v.is_array()) {
    if (v.size() != 2) r.fail(where, std::string("expected ") + want + ", found an array of " + std::to_string(v.size()));
    *lo = one(v[0], idx(where, 0));
    *hi = one(v[1], idx(where, 1));
    if (*lo > *hi) r.fail(where, std::string("expected ") + want + ", found lo " + std::to_string(*lo) + " > hi " + std::to_string(*hi));
  } else {
    *lo = *hi = one(v, where);
  }
}

void load_tuning(const Reader& r, const json& root, Profile& p) {
  const json& s = r.section(root, "tuning", {"source", "rules"}, true);
  p.tuning_source = r.string(s, "tuning", "source");
  const json& rules = r.array(s, "tuning", "rules", "tuning rules");
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string sec = idx("tuning.rules", i);
    const json& o = rules[i];
    r.check_object(o, sec, {"collective", "ranks", "nodes", "max_bytes", "algorithm", "protocol"}, true);
    TuningRule t;
    std::string c = r.string(o, sec, "collective");
    if (c == "all_reduce" || c == "allreduce") t.kind = CollectiveKind::AllReduce;
    else if (c == "all_gather" || c == "allgather") t.kind = CollectiveKind::AllGather;
    else if (c == "reduce_scatter" || c == "reducescatter") t.kind = CollectiveKind::ReduceScatter;
    else if (c == "broadcast") t.kind = CollectiveKind::Broadcast;
    else if (c == "reduce") t.kind = CollectiveKind::Reduce;
    else
      r.fail(sec + ".collective",
             "expected all_reduce, all_gather, reduce_scatter, broadcast or reduce, found \"" + c + "\"");
    load_range(r, o, sec, "ranks", &t.min_ranks, &t.max_ranks);
    load_range(r, o, sec, "nodes", &t.min_nodes, &t.max_nodes);
    t.max_bytes = r.positive(o, sec, "max_bytes", "a size in bytes");
    CollectiveAlgorithm a = CollectiveAlgorithm::Auto;
    const bool gather = t.kind == CollectiveKind::AllGather || t.kind == CollectiveKind::ReduceScatter;
    if (parse_algorithm(r.string(o, sec, "algorithm"), &a) && a != CollectiveAlgorithm::Auto &&
        (a == CollectiveAlgorithm::Ring ||
         (a == CollectiveAlgorithm::Pat                                               ? gather
          : a == CollectiveAlgorithm::Nvls || a == CollectiveAlgorithm::CollnetDirect ? gather || t.kind == CollectiveKind::AllReduce
                                                                                      : t.kind == CollectiveKind::AllReduce)))
      t.algorithm = a;
    else
      r.fail(sec + ".algorithm",
             std::string("expected \"ring\"") +
                 (t.kind == CollectiveKind::AllReduce ? ", \"tree\", \"nvls\", \"nvlstree\", \"collnet_direct\" or \"collnet_chain\" (pat is for all_gather and reduce_scatter)"
                  : gather ? ", \"nvls\", \"pat\" or \"collnet_direct\" (tree, nvlstree and collnet_chain are for all_reduce only)"
                           : " (tree and nvlstree are for all_reduce only, nvls for all_reduce, all_gather and "
                             "reduce_scatter, pat for all_gather and reduce_scatter)") +
                 ", found \"" + r.string(o, sec, "algorithm") + "\"");
    if (!parse_protocol(r.string(o, sec, "protocol"), &t.protocol))
      r.fail(sec + ".protocol", "expected \"LL\", \"LL128\" or \"Simple\", found \"" + r.string(o, sec, "protocol") + "\"");
    if ((t.algorithm == CollectiveAlgorithm::Nvls || t.algorithm == CollectiveAlgorithm::NvlsTree ||
         t.algorithm == CollectiveAlgorithm::Pat || t.algorithm == CollectiveAlgorithm::CollnetDirect ||
         t.algorithm == CollectiveAlgorithm::CollnetChain) &&
        t.protocol != Protocol::Simple)
      r.fail(sec + ".protocol", "expected \"Simple\" for nvls, nvlstree, pat and collnet (NCCL runs them with Simple only), found \"" +
                                    r.string(o, sec, "protocol") + "\"");
    p.tuning.push_back(t);
  }
}

/// A whole-device efficiency (GEMM peak, memory, links, attention): at least 1%. Smaller is a
/// typo in an exponent; at 1e-306 the replay's times overflowed and `run` never ended, and at
/// 1e-308 on a link it printed inf and nan as figures.
double headline_efficiency(const Reader& r, const json& obj, const std::string& sec, const char* key) {
  return r.number(obj, sec, key, 0.01, 1.0, false, "a number in [0.01, 1]");
}

}  // namespace

std::string unknown_nccl_word(const std::string& text, bool algorithm) {
  static const std::set<std::string> kAlgorithms = {
      "auto", "default", "ring", "tree", "nvls", "nvls_tree", "nvlstree", "collnet", "collnet_direct",
      "collnetdirect", "collnet_chain", "collnetchain", "pat"};
  static const std::set<std::string> kProtocols = {"auto", "default", "ll", "ll128", "simple"};
  static const std::set<std::string> kFunctions = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                                   "sendrecv", "send", "recv"};
  std::string word;
  for (const char ch : text + ",") {
    if (ch == ',' || ch == ';' || ch == ':' || ch == '^' || ch == ' ') {
      if (!word.empty() && !(algorithm ? kAlgorithms : kProtocols).count(word) && !kFunctions.count(word)) return word;
      word.clear();
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  return "";
}

Profile load_profile(const std::string& path) {
  const json root = calib::parse_json_file(path, "a calibration profile (JSON)");

  Reader r(path);
  if (!root.is_object()) r.fail("", "expected a JSON object at the top level, found " + describe(root));

  Profile p;
  p.path = path;

  // A top-level key that is not ours is another reader's, unless it is a near-miss of ours (a
  // typo of an optional section would otherwise fall back to defaults without a word; of a
  // required one, it would be reported as missing). Checked before any section is read.
  static const char* const kSections[] = {"schema", "version",   "device",    "provenance",   "gemm",  "memory",
                                          "kernel", "network",   "attention", "collectives", "interference", "tuning"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    std::string lower = key, near;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    bool ours = false;
    for (const char* s : kSections) {
      ours |= key == s;
      if (key != s && (lower == s || (key.size() >= 4 && edit_distance(lower, s) <= 2))) near = s;
    }
    if (!ours && !near.empty())
      r.fail(key, "expected a known section (did you mean \"" + near +
                      "\"?), found an unknown key (other top-level keys are left to other readers)");
  }

  const json& schema = r.get(root, "schema", "schema", std::string("\"") + kSchema + "\"");
  if (!schema.is_string() || schema.get<std::string>() != kSchema)
    r.fail("schema", std::string("expected \"") + kSchema + "\", found " + describe(schema));

  const json& version = r.get(root, "version", "version", "1 or 2");
  if (!version.is_number_integer() || version.get<long long>() < kMinVersion || version.get<long long>() > kMaxVersion)
    r.fail("version", "expected 1 or 2, found " + describe(version));
  p.version = static_cast<int>(version.get<long long>());
  const bool v2 = p.version >= 2;
  const json& device = r.get(root, "device", "device", "a device model");
  if (!device.is_string() || !is_known_device(device.get<std::string>())) {
    r.fail("device", "expected a known device model (" + device_models_text() + "), found " + describe(device));
  }
  p.device = device.get<std::string>();

  // provenance: kind and source required, date optional; other keys (gpu, driver, ...) allowed.
  const json& prov = r.section(root, "provenance", {"kind", "source", "date"}, /*strict=*/false);
  p.provenance_kind = r.string(prov, "provenance", "kind");
  if (p.provenance_kind != "datasheet" && p.provenance_kind != "measured" && p.provenance_kind != "imported")
    r.fail("provenance.kind", "expected \"datasheet\", \"measured\" or \"imported\", found " + describe(prov["kind"]));
  p.provenance_source = r.string(prov, "provenance", "source");
  if (prov.contains("date")) p.provenance_date = r.string(prov, "provenance", "date");
  for (auto it = prov.begin(); it != prov.end(); ++it) {
    if (it.key() == "kind" || it.key() == "source" || it.key() == "date") continue;
    if (!it->is_string()) r.fail("provenance." + it.key(), "expected a string, found " + describe(*it));
    p.provenance_extra[it.key()] = it->get<std::string>();
  }

  std::vector<const char*> gemm_keys = {"max_efficiency", "tile_m", "tile_n", "source"};
  if (v2) gemm_keys.insert(gemm_keys.end(), {"tables", "key_shapes"});
  const json& gemm = r.section(root, "gemm", gemm_keys, true);
  p.gemm_max_efficiency = headline_efficiency(r, gemm, "gemm", "max_efficiency");
  p.gemm_tile_m = static_cast<int>(r.integer(gemm, "gemm", "tile_m", 1, 4096));  // 4096: a sanity bound, tiles are <= 256
  p.gemm_tile_n = static_cast<int>(r.integer(gemm, "gemm", "tile_n", 1, 4096));
  p.gemm_source = r.string(gemm, "gemm", "source");
  if (v2 && gemm.contains("tables")) load_gemm_tables(r, gemm, p);
  if (v2 && gemm.contains("key_shapes")) load_key_shapes(r, gemm, p);

  std::vector<const char*> memory_keys = {"efficiency", "source"};
  if (v2) memory_keys.insert(memory_keys.end(), {"hbm_bandwidth_Bps", "points"});
  const json& memory = r.section(root, "memory", memory_keys, true);
  p.memory_efficiency = headline_efficiency(r, memory, "memory", "efficiency");
  p.memory_source = r.string(memory, "memory", "source");
  if (v2 && memory.contains("hbm_bandwidth_Bps"))
    p.hbm_bandwidth_Bps = measured_bandwidth(r, memory, "memory", "hbm_bandwidth_Bps");
  if (v2 && memory.contains("points")) load_memory_points(r, memory, p);

  const json& kernel = r.section(root, "kernel", {"launch_overhead_s", "fixed_overhead_s", "source"}, true);
  p.launch_overhead_s = r.seconds(kernel, "kernel", "launch_overhead_s");
  p.kernel_fixed_overhead_s = r.seconds(kernel, "kernel", "fixed_overhead_s");
  p.kernel_source = r.string(kernel, "kernel", "source");

  const json& network =
      r.section(root, "network",
                {"nvlink_efficiency", "network_efficiency", "pcie_efficiency", "simple_slice_nvlink_s",
                 "ll128_step_nvlink_s", "ll128_busbw_nvlink_Bps", "nvls_loop_s", "p2p_channel_nvlink_Bps", "p2p_round_s",
                 "source"},
                true);
  p.nvlink_efficiency = headline_efficiency(r, network, "network", "nvlink_efficiency");
  p.network_efficiency = headline_efficiency(r, network, "network", "network_efficiency");
  p.pcie_efficiency = headline_efficiency(r, network, "network", "pcie_efficiency");
  if (network.contains("simple_slice_nvlink_s"))
    p.simple_slice_nvlink_s = r.seconds(network, "network", "simple_slice_nvlink_s");
  if (network.contains("ll128_step_nvlink_s"))
    p.ll128_step_nvlink_s = r.seconds(network, "network", "ll128_step_nvlink_s");
  if (network.contains("ll128_busbw_nvlink_Bps"))
    p.ll128_busbw_nvlink_Bps = measured_bandwidth(r, network, "network", "ll128_busbw_nvlink_Bps");
  if (network.contains("nvls_loop_s")) p.nvls_loop_s = r.seconds(network, "network", "nvls_loop_s");
  if (network.contains("p2p_channel_nvlink_Bps"))
    // A range wide enough for any GPU's one thread block, narrow enough to catch GB/s written
    // for bytes/s (12.85 for 12.85e9 timed a 1 GiB message at 60 days).
    p.p2p_channel_nvlink_Bps = r.number(network, "network", "p2p_channel_nvlink_Bps", 1e8, 1e13, false,
                                        "a per-channel copy rate in bytes/s, 1e8 (0.1 GB/s) to 1e13 (10 TB/s)");
  if (network.contains("p2p_round_s"))
    // Microseconds per round at most: written in µs for seconds (4.0 for 4.0e-6) would add 80 s
    // to an AllToAll over 20 ranks.
    p.p2p_round_s = r.number(network, "network", "p2p_round_s", 0, 1e-3, true,
                             "seconds per round of NCCL's p2p schedule, 0 to 1e-3");
  p.network_source = r.string(network, "network", "source");

  std::vector<const char*> attention_keys = {"efficiency", "source"};
  if (v2) attention_keys.push_back("points");
  const json& attention = r.section(root, "attention", attention_keys, true);
  p.attention_efficiency = headline_efficiency(r, attention, "attention", "efficiency");
  p.attention_source = r.string(attention, "attention", "source");
  if (v2 && attention.contains("points")) load_attention_points(r, attention, p);

  for (const char* s : {"collectives", "interference"})
    if (!v2 && root.contains(s)) r.fail(s, "expected \"version\": 2 for this section, found a version-1 profile");
  if (v2 && root.contains("collectives")) load_collectives(r, root, p);
  if (v2 && root.contains("interference")) load_interference(r, root, p);
  if (root.contains("tuning")) load_tuning(r, root, p);
  return p;
}

const GemmEfficiencyTable* Profile::gemm_table(const std::string& dtype) const {
  for (const auto& t : gemm_tables)
    if (t.dtype == dtype) return &t;
  const std::string twin = dtype == "fp16" ? "bf16" : dtype == "bf16" ? "fp16" : "";
  for (const auto& t : gemm_tables)
    if (t.dtype == twin) return &t;
  return nullptr;
}

const CollectiveFit* Profile::collective(const std::string& name, int ranks, int nodes) const {
  for (const auto& f : collectives)
    if (f.collective == name && f.ranks == ranks && (nodes < 0 || f.nodes == nodes)) return &f;
  return nullptr;
}

std::string default_profile_folder() {
  return (std::filesystem::path(OVERLAPSIM_SOURCE_DIR) / "calibrate" / "profiles").string();
}

std::string default_profile_path(const std::string& device_model) {
  const std::filesystem::path file = std::filesystem::path(default_profile_folder()) / (device_model + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw InputError("expected a default calibration profile for device '" + device_model + "' at " +
                     file.string() + ", found no such file");
  return file.string();
}

}  // namespace overlapsim
