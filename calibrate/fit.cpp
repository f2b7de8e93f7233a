// Raw measurements -> profile (rules in fit.hpp).
#include "calibrate/fit.hpp"

#include "calibrate/collective_fit.hpp"
#include "calibrate/gpu_names.hpp"
#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace overlapsim {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double peak_for(const DeviceSpec& d, const std::string& dtype) {
  return dtype == "fp8" ? d.peak_fp8_flops : d.peak_fp16_flops;
}

struct Clamp {
  int count = 0;
  double worst = 0;
  double operator()(double e) {
    if (e > 1.0) {
      ++count;
      worst = std::max(worst, e);
      return 1.0;
    }
    return e;
  }
  void note(std::vector<std::string>& notes, const std::string& what) const {
    if (count)
      notes.push_back(fmt::format("{}: {} value(s) above the datasheet peak (up to {:.3f}) clamped to 1", what, count, worst));
  }
};

std::string index_of(const std::vector<int64_t>& axis, int64_t v) {
  const auto it = std::find(axis.begin(), axis.end(), v);
  return it == axis.end() ? std::string() : std::to_string(it - axis.begin());
}

void fit_gemm(const RawMeasurements& raw, const DeviceSpec& spec, const std::string& run, Profile& p,
              std::vector<std::string>& notes) {
  if (!raw.gemm_skipped.empty() || raw.gemm.empty()) {
    notes.push_back("gemm: not measured (" + (raw.gemm_skipped.empty() ? std::string("no points") : raw.gemm_skipped) +
                    "); kept from the datasheet profile");
    p.gemm_source = "not measured (" + raw.gemm_skipped + "); datasheet: " + p.gemm_source;
    return;
  }
  std::map<std::string, std::vector<const RawGemmPoint*>> by_dtype;
  for (const RawGemmPoint& g : raw.gemm) by_dtype[g.dtype].push_back(&g);
  Clamp clamp;
  for (const std::string dtype : {"bf16", "fp16", "fp8"}) {
    const auto it = by_dtype.find(dtype);
    if (it == by_dtype.end()) continue;
    const double peak = peak_for(spec, dtype);
    if (peak <= 0) {
      notes.push_back("gemm " + dtype + ": the device catalog has no " + dtype + " peak for " + spec.model + "; no table");
      continue;
    }
    GemmEfficiencyTable t;
    t.dtype = dtype;
    t.peak_flops = peak;
    t.m = raw.gemm_m;
    t.n = raw.gemm_n;
    t.k = raw.gemm_k;
    const std::size_t nm = t.m.size(), nn = t.n.size(), nk = t.k.size();
    std::vector<double> eff(nm * nn * nk, -1.0);
    for (const RawGemmPoint* g : it->second) {
      if (!g->label.empty()) continue;
      const std::string i = index_of(t.m, g->m), j = index_of(t.n, g->n), l = index_of(t.k, g->k);
      if (i.empty() || j.empty() || l.empty()) continue;
      const double e = 2.0 * g->m * g->n * g->k / g->time.median / peak;
      eff[(std::stoul(i) * nn + std::stoul(j)) * nk + std::stoul(l)] = clamp(e);
    }
    // Fill grid points the harness skipped from the nearest measured one.
    int filled = 0, measured = 0;
    for (double e : eff) measured += e > 0;
    if (measured == 0) {
      notes.push_back("gemm " + dtype + ": no grid point measured; no table");
      continue;
    }
    std::vector<double> out = eff;
    for (std::size_t a = 0; a < nm; ++a)
      for (std::size_t b = 0; b < nn; ++b)
        for (std::size_t c = 0; c < nk; ++c) {
          double& v = out[(a * nn + b) * nk + c];
          if (v > 0) continue;
          long best = -1;
          for (std::size_t x = 0; x < nm; ++x)
            for (std::size_t y = 0; y < nn; ++y)
              for (std::size_t z = 0; z < nk; ++z) {
                const double e = eff[(x * nn + y) * nk + z];
                if (!(e > 0)) continue;
                const long d = std::labs(long(x) - long(a)) + std::labs(long(y) - long(b)) + std::labs(long(z) - long(c));
                if (best < 0 || d < best) {
                  best = d;
                  v = e;
                }
              }
          ++filled;
        }
    if (filled) notes.push_back(fmt::format("gemm {}: {} grid point(s) not measured, filled from the nearest measured", dtype, filled));
    t.efficiency = out;
    p.gemm_tables.push_back(t);
    for (const RawGemmPoint* g : it->second) {
      if (g->label.empty()) continue;
      GemmKeyShape s;
      s.label = g->label;
      s.dtype = dtype;
      s.m = g->m;
      s.n = g->n;
      s.k = g->k;
      s.efficiency = clamp(2.0 * g->m * g->n * g->k / g->time.median / peak);
      s.interpolated = p.gemm_tables.back().efficiency_at(g->m, g->n, g->k);
      p.gemm_key_shapes.push_back(s);
    }
  }
  clamp.note(notes, "gemm");
  // The clock each point ended at, where the harness read it: a spread says how much of the
  // table's variation is the GPU's clock (power limit) rather than the shapes.
  int clock_lo = 0, clock_hi = 0;
  for (const RawGemmPoint& g : raw.gemm)
    if (g.sm_clock_mhz > 0) {
      clock_lo = clock_lo == 0 ? g.sm_clock_mhz : std::min(clock_lo, g.sm_clock_mhz);
      clock_hi = std::max(clock_hi, g.sm_clock_mhz);
    }
  const std::string clocks =
      clock_hi > 0 ? fmt::format("; SM clock after the points {}-{} MHz (NVML)", clock_lo, clock_hi) : "";
  const GemmEfficiencyTable* t = p.gemm_table("bf16");
  if (t) {
    std::vector<double> large;
    for (std::size_t a = 0; a < t->m.size(); ++a)
      for (std::size_t b = 0; b < t->n.size(); ++b)
        for (std::size_t c = 0; c < t->k.size(); ++c)
          if (t->m[a] >= 4096 && t->n[b] >= 4096 && t->k[c] >= 4096) large.push_back(t->at(a, b, c));
    if (!large.empty()) {
      p.gemm_max_efficiency = median_of(large);
      p.gemm_source = fmt::format(
          "measured ({}): max_efficiency = median efficiency of the {} {} grid GEMMs with M, N, K >= 4096 "
          "(cuBLASLt, TN, fp32 accumulate) against the datasheet peak {:.1f} TFLOP/s; tables: efficiency over "
          "the harness's M x N x K grid per dtype; tiles kept from the datasheet profile{}",
          run, large.size(), t->dtype, t->peak_flops / 1e12, clocks);
      return;
    }
  }
  notes.push_back("gemm: no bf16/fp16 GEMM with M, N, K >= 4096; max_efficiency kept from the datasheet profile");
  p.gemm_source = "tables measured (" + run + ")" + clocks + "; max_efficiency and tiles from the datasheet: " +
                  p.gemm_source;
}

void fit_memory(const RawMeasurements& raw, const DeviceSpec& spec, const std::string& run, Profile& p,
                std::vector<std::string>& notes) {
  if (!raw.memory_skipped.empty() || raw.memory.empty()) {
    notes.push_back("memory: not measured (" + raw.memory_skipped + "); kept from the datasheet profile");
    p.memory_source = "not measured (" + raw.memory_skipped + "); datasheet: " + p.memory_source;
    return;
  }
  std::map<std::string, const RawMemoryPoint*> largest;
  for (const RawMemoryPoint& m : raw.memory) {
    p.memory_points.push_back(MemoryPoint{m.kernel, m.bytes, m.bytes / m.time.median});
    const RawMemoryPoint*& l = largest[m.kernel];
    if (!l || m.bytes > l->bytes) l = &m;
  }
  std::vector<double> effs;
  std::string parts;
  for (const auto& [kernel, m] : largest) {
    const double bw = m->bytes / m->time.median;
    effs.push_back(bw / spec.hbm_bandwidth_Bps);
    parts += fmt::format("{}{} {:.0f} GB/s", parts.empty() ? "" : ", ", kernel, bw / 1e9);
    if (kernel == "copy") p.hbm_bandwidth_Bps = bw;
  }
  Clamp clamp;
  p.memory_efficiency = clamp(median_of(effs));
  clamp.note(notes, "memory.efficiency");
  p.memory_source = fmt::format(
      "measured ({}): median over kernels of the bandwidth at the largest size ({}) against the datasheet "
      "{:.0f} GB/s; points: every kernel and size (bytes = HBM bytes read + written)",
      run, parts, spec.hbm_bandwidth_Bps / 1e9);
}

void fit_attention(const RawMeasurements& raw, const DeviceSpec& spec, const std::string& run, Profile& p,
                   std::vector<std::string>& notes) {
  if (!raw.attention_skipped.empty() || raw.attention.empty()) {
    notes.push_back("attention: not measured (" + raw.attention_skipped + "); kept from the datasheet profile");
    p.attention_source = "not measured (" + raw.attention_skipped + "); datasheet: " + p.attention_source;
    return;
  }
  Clamp clamp;
  std::vector<double> effs;
  for (const RawAttentionPoint& a : raw.attention) {
    const double e = clamp(a.flops / (spec.peak_fp16_flops * (a.qk_s + a.pv_s)));
    effs.push_back(e);
    p.attention_points.push_back(AttentionPoint{a.batch, a.heads, a.seq, a.head_dim, a.time.median, e});
  }
  clamp.note(notes, "attention");
  p.attention_efficiency = median_of(effs);
  p.attention_source = fmt::format(
      "measured ({}): unfused attention (batched GEMM QK^T, softmax, batched GEMM PV, bf16); efficiency = median "
      "over {} shapes of 4*b*h*s^2*d / (peak * (QK^T time + PV time)); the softmax is left to memory.efficiency",
      run, effs.size());
}

void fit_launch(const RawMeasurements& raw, const std::string& run, Profile& p, std::vector<std::string>& notes) {
  if (!raw.launch_skipped.empty()) {
    notes.push_back("kernel: launch overhead not measured (" + raw.launch_skipped + "); kept from the datasheet profile");
    p.kernel_source = "not measured (" + raw.launch_skipped + "); datasheet: " + p.kernel_source;
    return;
  }
  p.launch_overhead_s = raw.host_launch.median;
  p.kernel_fixed_overhead_s = raw.gpu_kernel.median;
  p.kernel_source = fmt::format(
      "measured ({}): launch_overhead_s = host time of one asynchronous launch of an empty kernel (median); "
      "fixed_overhead_s = GPU time per empty kernel run back to back from a CUDA graph (median); a launch "
      "followed by a synchronisation took {:.2f} us",
      run, raw.sync_roundtrip.median * 1e6);
}

void fit_collectives(const RawMeasurements& raw, const std::string& run, Profile& p, std::vector<std::string>& notes) {
  p.network_source = "datasheet (link efficiencies need the topology's link bandwidths; measured collectives are in "
                     "the collectives section): " + p.network_source;
  if (!raw.collectives_skipped.empty() || raw.collectives.empty()) {
    notes.push_back("collectives: not measured (" + raw.collectives_skipped + ")");
    return;
  }
  for (const RawCollectiveGroup& g : raw.collectives) {
    std::vector<SizeTime> pts;
    for (const RawCollectivePoint& c : g.points) pts.push_back(SizeTime{c.size_bytes, c.time.median});
    try {
      p.collectives.push_back(make_collective_fit(g.collective, g.ranks, raw.collective_nodes, raw.collective_algorithm,
                                                  raw.collective_protocol, pts,
                                                  "overlapsim-calibrate-harness, " + raw.path));
    } catch (const InputError& e) {
      notes.push_back("collectives " + g.collective + " on " + std::to_string(g.ranks) + " ranks: not fitted: " + e.what());
    }
  }
  p.collectives_source = fmt::format(
      "measured ({}): NCCL {} in one process (ncclCommInitAll), bf16, medians of host-timed batches; t = alpha + "
      "S*f(n)/busbw fitted by least relative squares",
      run, raw.nccl);
}

void fit_interference(const RawMeasurements& raw, const std::string& run, Profile& p, std::vector<std::string>& notes) {
  if (!raw.interference_skipped.empty() || raw.interference.empty()) {
    notes.push_back("interference: not measured (" + raw.interference_skipped + ")");
    return;
  }
  for (const RawInterferencePoint& i : raw.interference)
    p.interference.push_back(
        InterferencePoint{i.companion, i.num_sm, i.gemm.median / raw.interference_alone.median, i.companion_bytes_per_s});
  p.interference_gemm = raw.interference_gemm;
  const bool nccl = std::any_of(p.interference.begin(), p.interference.end(),
                                [](const InterferencePoint& i) { return i.companion == "nccl_all_reduce"; });
  p.sm_interference = fit_sm_interference(p.interference, nccl ? "nccl_all_reduce" : "copy", raw.sm_count);
  p.interference_source = fmt::format(
      "measured ({}): GEMM {} time beside a companion kernel on num_sm SMs / time alone (medians); companions: an "
      "SM-limited HBM copy kernel (one block per SM), and an NCCL AllReduce limited to num_sm CTAs with >= 2 GPUs; "
      "sm_interference: I of the replay's model (speed 1 - I*k/{} SMs) fitted to the {} points",
      run, raw.interference_gemm, raw.sm_count, nccl ? "nccl_all_reduce" : "copy");
}

}  // namespace

FitResult fit_profile(const RawMeasurements& raw, const FitOptions& options) {
  std::string device = options.device;
  check_device_option(device);
  if (device.empty()) device = device_model_for_gpu_name(raw.gpu);
  if (device.empty()) {
    throw InputError(SourceLocation{raw.path, 0, 0}, "provenance.gpu",
                     "expected a GPU of the device catalog (" + device_models_text() + "), found '" + raw.gpu +
                         "'; pass --device MODEL to fit against one of them");
  }
  const DeviceSpec& spec = device_spec(device);
  FitResult res;
  // --device over a run the catalog knows as another model (an H200 run written as an A100
  // profile: its GEMM efficiencies taken against the A100's peaks), said as the import says it.
  if (const std::string m = device_model_for_gpu_name(raw.gpu); !options.device.empty() && !m.empty() && m != device)
    res.notes.push_back("measured on '" + raw.gpu + "' (" + m + "), fitted and written as " + device +
                        " as --device asks: its efficiencies are against " + device + "'s peaks");
  Profile& p = res.profile;
  p = load_profile(default_profile_path(device));
  const std::string run = fmt::format("{} run of overlapsim-calibrate-harness on {} ({}), {}", raw.quick ? "quick" : "full",
                                      raw.gpu, raw.host, raw.date);
  fit_gemm(raw, spec, run, p, res.notes);
  fit_memory(raw, spec, run, p, res.notes);
  fit_attention(raw, spec, run, p, res.notes);
  fit_launch(raw, run, p, res.notes);
  fit_collectives(raw, run, p, res.notes);
  fit_interference(raw, run, p, res.notes);

  p.provenance_kind = "measured";
  p.provenance_date = raw.date;
  p.provenance_source = fmt::format(
      "overlapsim calibrate: {} ({} GPU(s), compute capability {}), driver {}, CUDA runtime {}, cuBLASLt {}, NCCL "
      "{}, host {}, {}; sections not measured are kept from calibrate/profiles/{}.json",
      raw.gpu, raw.gpu_count, raw.compute_capability, raw.driver, raw.cuda_runtime, raw.cublaslt, raw.nccl, raw.host,
      raw.date, device);
  p.provenance_extra.clear();
  p.provenance_extra["gpu"] = raw.gpu;
  p.provenance_extra["host"] = raw.host;
  p.provenance_extra["driver"] = raw.driver;
  p.provenance_extra["cuda"] = raw.cuda_runtime;
  p.provenance_extra["cuda_driver"] = raw.cuda_driver;
  p.provenance_extra["cublaslt"] = raw.cublaslt;
  p.provenance_extra["nccl"] = raw.nccl;
  p.provenance_extra["compute_capability"] = raw.compute_capability;
  p.provenance_extra["harness"] = raw.command;
  p.provenance_extra["raw"] = raw.path;
  for (const std::string& n : raw.notes) res.notes.push_back("harness: " + n);
  return res;
}

}  // namespace overlapsim
