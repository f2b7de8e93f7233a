// Writing a profile as version-2 JSON (format in profile.hpp and calibrate/README.md). Keys are
// written in a fixed order and numbers in nlohmann-json's shortest round-trip form, so the same
// profile always gives the same bytes and loads back to the same values.
#include "calibrate/profile.hpp"
#include "sim/output_file.hpp"

#include "sim/error.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

namespace overlapsim {

namespace {

using ojson = nlohmann::ordered_json;

ojson gemm_json(const Profile& p) {
  ojson g;
  g["max_efficiency"] = p.gemm_max_efficiency;
  g["tile_m"] = p.gemm_tile_m;
  g["tile_n"] = p.gemm_tile_n;
  g["source"] = p.gemm_source;
  if (!p.gemm_tables.empty()) {
    ojson tables = ojson::array();
    for (const auto& t : p.gemm_tables) {
      ojson o;
      o["dtype"] = t.dtype;
      o["peak_flops"] = t.peak_flops;
      o["m"] = t.m;
      o["n"] = t.n;
      o["k"] = t.k;
      ojson e = ojson::array();
      for (std::size_t i = 0; i < t.m.size(); ++i) {
        ojson plane = ojson::array();
        for (std::size_t j = 0; j < t.n.size(); ++j) {
          ojson row = ojson::array();
          for (std::size_t l = 0; l < t.k.size(); ++l) row.push_back(t.at(i, j, l));
          plane.push_back(row);
        }
        e.push_back(plane);
      }
      o["efficiency"] = e;
      tables.push_back(o);
    }
    g["tables"] = tables;
  }
  if (!p.gemm_key_shapes.empty()) {
    ojson keys = ojson::array();
    for (const auto& s : p.gemm_key_shapes)
      keys.push_back(ojson{{"label", s.label}, {"dtype", s.dtype}, {"m", s.m}, {"n", s.n}, {"k", s.k},
                           {"efficiency", s.efficiency}, {"interpolated", s.interpolated}});
    g["key_shapes"] = keys;
  }
  return g;
}

ojson collectives_json(const Profile& p) {
  ojson c;
  c["source"] = p.collectives_source;
  ojson fits = ojson::array();
  for (const auto& f : p.collectives) {
    ojson o;
    o["collective"] = f.collective;
    o["ranks"] = f.ranks;
    o["nodes"] = f.nodes;
    o["algorithm"] = f.algorithm;
    o["protocol"] = f.protocol;
    if (f.collnet_enable) o["collnet_enable"] = true;  // absent = false: older profiles read alike
    o["alpha_s"] = f.alpha_s;
    o["busbw_Bps"] = f.busbw_Bps;
    o["max_relative_error"] = f.max_relative_error;
    o["source"] = f.source;
    ojson pts = ojson::array();
    for (const auto& pt : f.points)
      pts.push_back(ojson{{"size_bytes", pt.size_bytes}, {"time_s", pt.time_s}, {"busbw_Bps", pt.busbw_Bps}});
    o["points"] = pts;
    fits.push_back(o);
  }
  c["fits"] = fits;
  return c;
}

}  // namespace

std::string profile_to_json(const Profile& p) {
  ojson root;
  root["schema"] = "overlapsim-profile";
  root["version"] = 2;
  root["device"] = p.device;
  ojson prov;
  prov["kind"] = p.provenance_kind;
  prov["source"] = p.provenance_source;
  if (!p.provenance_date.empty()) prov["date"] = p.provenance_date;
  for (const auto& [k, v] : p.provenance_extra) prov[k] = v;
  root["provenance"] = prov;
  root["gemm"] = gemm_json(p);

  ojson memory;
  memory["efficiency"] = p.memory_efficiency;
  memory["source"] = p.memory_source;
  if (p.hbm_bandwidth_Bps > 0) memory["hbm_bandwidth_Bps"] = p.hbm_bandwidth_Bps;
  if (!p.memory_points.empty()) {
    ojson pts = ojson::array();
    for (const auto& m : p.memory_points)
      pts.push_back(ojson{{"kernel", m.kernel}, {"bytes", m.bytes}, {"bandwidth_Bps", m.bandwidth_Bps}});
    memory["points"] = pts;
  }
  root["memory"] = memory;

  root["kernel"] = ojson{{"launch_overhead_s", p.launch_overhead_s},
                         {"fixed_overhead_s", p.kernel_fixed_overhead_s},
                         {"source", p.kernel_source}};
  root["network"] = ojson{{"nvlink_efficiency", p.nvlink_efficiency},
                          {"network_efficiency", p.network_efficiency},
                          {"pcie_efficiency", p.pcie_efficiency},
                          {"source", p.network_source}};
  if (p.simple_slice_nvlink_s > 0) root["network"]["simple_slice_nvlink_s"] = p.simple_slice_nvlink_s;
  if (p.ll128_step_nvlink_s > 0) root["network"]["ll128_step_nvlink_s"] = p.ll128_step_nvlink_s;
  if (p.ll128_busbw_nvlink_Bps > 0) root["network"]["ll128_busbw_nvlink_Bps"] = p.ll128_busbw_nvlink_Bps;
  if (p.nvls_loop_s > 0) root["network"]["nvls_loop_s"] = p.nvls_loop_s;
  if (p.p2p_channel_nvlink_Bps > 0) root["network"]["p2p_channel_nvlink_Bps"] = p.p2p_channel_nvlink_Bps;
  if (p.p2p_round_s > 0) root["network"]["p2p_round_s"] = p.p2p_round_s;

  ojson attention;
  attention["efficiency"] = p.attention_efficiency;
  attention["source"] = p.attention_source;
  if (!p.attention_points.empty()) {
    ojson pts = ojson::array();
    for (const auto& a : p.attention_points)
      pts.push_back(ojson{{"batch", a.batch}, {"heads", a.heads}, {"seq", a.seq}, {"head_dim", a.head_dim},
                          {"time_s", a.time_s}, {"efficiency", a.efficiency}});
    attention["points"] = pts;
  }
  root["attention"] = attention;

  if (!p.collectives.empty()) root["collectives"] = collectives_json(p);
  if (!p.interference.empty()) {
    ojson pts = ojson::array();
    for (const auto& i : p.interference)
      pts.push_back(ojson{{"companion", i.companion},
                          {"num_sm", i.num_sm},
                          {"compute_slowdown", i.compute_slowdown},
                          {"companion_bandwidth_Bps", i.companion_bandwidth_Bps}});
    ojson i{{"source", p.interference_source}, {"gemm", p.interference_gemm}};
    if (p.sm_interference > 0) i["sm_interference"] = p.sm_interference;
    i["points"] = pts;
    root["interference"] = i;
  }
  if (!p.tuning.empty()) {
    ojson rules = ojson::array();
    for (const TuningRule& t : p.tuning) {
      ojson o;
      static const char* const kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce"};
      o["collective"] = kinds[static_cast<int>(t.kind)];
      if (t.min_ranks > 1 || t.max_ranks < INT_MAX) o["ranks"] = ojson::array({t.min_ranks, t.max_ranks});
      if (t.min_nodes > 1 || t.max_nodes < INT_MAX) o["nodes"] = ojson::array({t.min_nodes, t.max_nodes});
      o["max_bytes"] = t.max_bytes;
      o["algorithm"] = to_string(t.algorithm);
      o["protocol"] = t.protocol == Protocol::LL ? "LL" : t.protocol == Protocol::LL128 ? "LL128" : "Simple";
      rules.push_back(o);
    }
    root["tuning"] = ojson{{"source", p.tuning_source}, {"rules", rules}};
  }
  return root.dump(2) + "\n";
}

void write_profile(const Profile& p, const std::string& path) {
  write_file_atomically(path, profile_to_json(p), "--out");
}

}  // namespace overlapsim
