// Profile comparison (compare.hpp).
#include "calibrate/compare.hpp"

#include "calibrate/harness/grid.hpp"
#include "models/cost_model.hpp"
#include "models/transformer.hpp"
#include "sim/error.hpp"
#include "sim/op_estimate.hpp"
#include "sim/scenario.hpp"
#include "sim/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace overlapsim {

namespace {

const char* table_dtype(DType d) {
  switch (d) {
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
    default: return "";
  }
}

std::string ratio(double a, double b) {
  if (!(a > 0) || !(b > 0)) return "-";
  return fmt::format("{:.3f}", b / a);
}

std::string short_source(const Profile& p) {
  std::string s = p.provenance_kind + ": " + p.provenance_source;
  if (s.size() > 150) s = s.substr(0, 147) + "...";
  return s;
}

std::string tables_of(const Profile& p) {
  if (p.gemm_tables.empty()) return "none";
  std::string s;
  for (const auto& t : p.gemm_tables) s += (s.empty() ? "" : ",") + t.dtype;
  return s;
}

}  // namespace

double calibrated_gemm_time_s(const Profile& profile, const DeviceSpec& device, int64_t m, int64_t n, int64_t k,
                              DType dtype, int64_t batch) {
  // The cost model reads the profile's table itself when there is one.
  return CostModel(device, profile).gemm_time_s(m, n, k, dtype, batch);
}

std::vector<GemmQuery> standard_gemm_shapes() {
  std::vector<GemmQuery> out;
  for (const harness::GemmShape& s : harness::key_gemm_shapes(/*quick=*/false))
    out.push_back(GemmQuery{s.label, s.m, s.n, s.k, 1, DType::BF16, 1});
  return out;
}

/// The most ops `scenario_gemm_shapes` builds (run's default --max-ops, sim/simulate.hpp).
constexpr long long kMaxCompareOps = 20'000'000;

std::vector<GemmQuery> scenario_gemm_shapes(const std::string& scenario_path) {
  const Scenario sc = load_scenario(scenario_path);
  const Topology topo = load_topology(sc.topology_path, sc.topology_overrides);
  Parallelism par = sc.parallelism;
  const int gpus = topo.num_gpus();
  if (!sc.dp_given) {
    if (gpus % (par.tp * par.pp) != 0)
      throw InputError(SourceLocation{sc.path, 0, 0}, "parallelism.dp",
                       fmt::format("omitted, and the machine's {} GPUs are not divisible by tp · pp = {}", gpus,
                                   par.tp * par.pp));
    par.dp = gpus / (par.tp * par.pp);
  }
  check_layout(sc.model, par);
  const DeviceSpec& dev = device_spec(topo.gpu_model());
  const Profile base = load_profile(default_profile_path(dev.model));
  // The workload is built whole to count its GEMMs: refused first where it would not fit, from
  // its projection (sim/op_estimate.hpp; regression: 10^4 layers ended in std::bad_alloc).
  const CostModel cost(dev, base);
  const long long ops = projected_workload(sc.model, par, cost).at(par.num_micro_batches());
  if (ops > kMaxCompareOps)
    throw InputError(SourceLocation{sc.path, 0, 0}, "",
                     fmt::format("its workload would hold about {} ops ({}) on {} simulated rank(s); calibrate compare "
                                 "builds it whole to count its GEMMs and takes at most {} (as run's --max-ops): "
                                 "expected a scenario of fewer layers or micro-batches",
                                 ops, format_ops(ops), par.pp, kMaxCompareOps));
  const Schedule s = build_iteration(sc.model, par, cost, Folding::Representatives);
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, GemmQuery> shapes;
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> order;
  for (const RankProgram& prog : s.programs)
    for (const Op& op : prog.ops) {
      if (op.type != OpType::Compute || op.compute != ComputeKind::Gemm || op.gemm_m <= 0) continue;
      const auto key = std::make_tuple(op.gemm_m, op.gemm_n, op.gemm_k, std::max<int64_t>(1, op.gemm_batch));
      auto it = shapes.find(key);
      if (it == shapes.end()) {
        shapes[key] = GemmQuery{op.name, op.gemm_m, op.gemm_n, op.gemm_k, std::get<3>(key), sc.model.dtype, 1};
        order.push_back(key);
      } else {
        ++it->second.count;
        if (it->second.label.find(op.name) == std::string::npos && it->second.label.size() < 40)
          it->second.label += "," + op.name;
      }
    }
  std::vector<GemmQuery> out;
  for (const auto& key : order) out.push_back(shapes[key]);
  return out;
}

void print_profile_comparison(std::ostream& out, const Profile& a, const Profile& b, const std::vector<GemmQuery>& shapes,
                              const std::string& shapes_from) {
  out << fmt::format("profile A  {}\n           {} ({})\n", a.path, a.device, short_source(a));
  out << fmt::format("profile B  {}\n           {} ({})\n", b.path, b.device, short_source(b));
  if (a.device != b.device)
    out << fmt::format("note: the profiles are for different devices; GEMM times use each profile's own device\n");
  out << "\n";

  out << fmt::format("{:<30} {:>14} {:>14} {:>8}\n", "scalar", "A", "B", "B/A");
  auto row = [&](const char* name, double x, double y, const char* unit, double scale) {
    auto show = [&](double v) {
      if (!(v > 0)) return std::string("-");
      return scale == 1 ? fmt::format("{:.3f}", v) : fmt::format("{:.2f} {}", v * scale, unit);
    };
    const std::string xs = show(x), ys = show(y);
    out << fmt::format("{:<30} {:>14} {:>14} {:>8}\n", name, xs, ys, ratio(x, y));
  };
  row("gemm.max_efficiency", a.gemm_max_efficiency, b.gemm_max_efficiency, "", 1);
  out << fmt::format("{:<30} {:>14} {:>14}\n", "gemm tables", tables_of(a), tables_of(b));
  row("memory.efficiency", a.memory_efficiency, b.memory_efficiency, "", 1);
  if (a.hbm_bandwidth_Bps > 0 || b.hbm_bandwidth_Bps > 0)
    row("memory.hbm_bandwidth", a.hbm_bandwidth_Bps, b.hbm_bandwidth_Bps, "GB/s", 1e-9);
  row("attention.efficiency", a.attention_efficiency, b.attention_efficiency, "", 1);
  row("kernel.launch_overhead", a.launch_overhead_s, b.launch_overhead_s, "us", 1e6);
  row("kernel.fixed_overhead", a.kernel_fixed_overhead_s, b.kernel_fixed_overhead_s, "us", 1e6);
  if (a.sm_interference > 0 || b.sm_interference > 0)
    row("interference.sm_interference", a.sm_interference, b.sm_interference, "", 1);
  row("network.nvlink_efficiency", a.nvlink_efficiency, b.nvlink_efficiency, "", 1);
  row("network.network_efficiency", a.network_efficiency, b.network_efficiency, "", 1);
  row("network.pcie_efficiency", a.pcie_efficiency, b.pcie_efficiency, "", 1);
  if (a.simple_slice_nvlink_s > 0 || b.simple_slice_nvlink_s > 0)
    row("network.simple_slice_nvlink", a.simple_slice_nvlink_s, b.simple_slice_nvlink_s, "us", 1e6);
  if (a.ll128_step_nvlink_s > 0 || b.ll128_step_nvlink_s > 0)
    row("network.ll128_step_nvlink", a.ll128_step_nvlink_s, b.ll128_step_nvlink_s, "us", 1e6);
  if (a.ll128_busbw_nvlink_Bps > 0 || b.ll128_busbw_nvlink_Bps > 0)
    row("network.ll128_busbw_nvlink", a.ll128_busbw_nvlink_Bps, b.ll128_busbw_nvlink_Bps, "GB/s", 1e-9);
  if (a.nvls_loop_s > 0 || b.nvls_loop_s > 0) row("network.nvls_loop", a.nvls_loop_s, b.nvls_loop_s, "us", 1e6);
  if (a.p2p_round_s > 0 || b.p2p_round_s > 0) row("network.p2p_round", a.p2p_round_s, b.p2p_round_s, "us", 1e6);
  if (a.p2p_channel_nvlink_Bps > 0 || b.p2p_channel_nvlink_Bps > 0)
    row("network.p2p_channel_nvlink", a.p2p_channel_nvlink_Bps, b.p2p_channel_nvlink_Bps, "GB/s", 1e-9);

  const DeviceSpec& da = device_spec(a.device);
  const DeviceSpec& db = device_spec(b.device);
  if (!shapes.empty()) {
    out << fmt::format("\nGEMM time per call ({}; 'table': from the profile's measured table, 'v0': cost model v0)\n",
                       shapes_from);
    out << fmt::format("{:<28} {:>6} {:>6} {:>6} {:>5} {:>6} {:>9} {:>7} {:>5} {:>9} {:>7} {:>5} {:>7}\n", "GEMM", "M",
                       "N", "K", "batch", "calls", "A us", "A TF/s", "A", "B us", "B TF/s", "B", "B/A");
    struct R {
      double ratio;
      std::string label;
    };
    std::vector<R> ratios;
    double ta_total = 0, tb_total = 0;
    for (const GemmQuery& q : shapes) {
      const double ta = calibrated_gemm_time_s(a, da, q.m, q.n, q.k, q.dtype, q.batch);
      const double tb = calibrated_gemm_time_s(b, db, q.m, q.n, q.k, q.dtype, q.batch);
      const double flops = 2.0 * q.batch * q.m * q.n * q.k;
      const bool table_a = a.gemm_table(table_dtype(q.dtype)) != nullptr;
      const bool table_b = b.gemm_table(table_dtype(q.dtype)) != nullptr;
      std::string label = q.label.size() > 28 ? q.label.substr(0, 25) + "..." : q.label;
      out << fmt::format("{:<28} {:>6} {:>6} {:>6} {:>5} {:>6} {:>9.1f} {:>7.1f} {:>5} {:>9.1f} {:>7.1f} {:>5} {:>7.3f}\n",
                         label, q.m, q.n, q.k, q.batch, q.count, ta * 1e6, flops / ta / 1e12, table_a ? "table" : "v0",
                         tb * 1e6, flops / tb / 1e12, table_b ? "table" : "v0", tb / ta);
      ratios.push_back(R{tb / ta, q.label});
      ta_total += ta * q.count;
      tb_total += tb * q.count;
    }
    std::sort(ratios.begin(), ratios.end(), [](const R& x, const R& y) { return x.ratio < y.ratio; });
    out << fmt::format("GEMM time B/A over {} shapes: min {:.3f} ({}), median {:.3f}, max {:.3f} ({}); all calls "
                       "together {:.3f}\n",
                       ratios.size(), ratios.front().ratio, ratios.front().label, ratios[ratios.size() / 2].ratio,
                       ratios.back().ratio, ratios.back().label, tb_total / ta_total);
  }

  // Collectives: every (collective, ranks, nodes) either profile fitted.
  std::set<std::tuple<std::string, int, int>> keys;
  for (const auto* p : {&a, &b})
    for (const auto& f : p->collectives) keys.insert({f.collective, f.ranks, f.nodes});
  if (!keys.empty()) {
    out << fmt::format("\n{:<40} {:>12} {:>12} {:>12} {:>12} {:>9}\n", "collectives (t = alpha + S*f(n)/busbw)",
                       "A alpha us", "A busbw GB/s", "B alpha us", "B busbw GB/s", "busbw B/A");
    for (const auto& [coll, ranks, nodes] : keys) {
      const CollectiveFit* fa = a.collective(coll, ranks, nodes);
      const CollectiveFit* fb = b.collective(coll, ranks, nodes);
      auto alpha = [](const CollectiveFit* f) { return f ? fmt::format("{:.2f}", f->alpha_s * 1e6) : std::string("-"); };
      auto bw = [](const CollectiveFit* f) { return f ? fmt::format("{:.1f}", f->busbw_Bps / 1e9) : std::string("-"); };
      out << fmt::format("{:<40} {:>12} {:>12} {:>12} {:>12} {:>9}\n",
                         fmt::format("  {} {} ranks {} node(s)", coll, ranks, nodes), alpha(fa), bw(fa), alpha(fb),
                         bw(fb), fa && fb ? ratio(fa->busbw_Bps, fb->busbw_Bps) : "-");
    }
  }

  std::set<std::pair<std::string, int>> ikeys;
  for (const auto* p : {&a, &b})
    for (const auto& i : p->interference) ikeys.insert({i.companion, i.num_sm});
  if (!ikeys.empty()) {
    out << fmt::format("\n{:<40} {:>12} {:>12}\n", "interference (compute slowdown)", "A", "B");
    for (const auto& [comp, sms] : ikeys) {
      auto val = [&](const Profile& p) {
        for (const auto& i : p.interference)
          if (i.companion == comp && i.num_sm == sms) return fmt::format("{:.3f}", i.compute_slowdown);
        return std::string("-");
      };
      out << fmt::format("{:<40} {:>12} {:>12}\n", fmt::format("  {} on {} SMs", comp, sms), val(a), val(b));
    }
  }
}

}  // namespace overlapsim
