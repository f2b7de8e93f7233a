#include "sim/report.hpp"

#include "sim/error.hpp"
#include "sim/output_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdio>
#include <filesystem>

#include <unistd.h>
#include <fstream>

namespace overlapsim {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// Memory per GPU in GiB for the table: one decimal, or three significant digits in exponent
/// form past a million GiB (a layout that cannot fit by far: 3.44e+10, not 34426849835.0).
std::string gib(double bytes) {
  const double g = bytes / kGiB;
  return g < 1e6 ? fmt::format("{:.1f}", g) : fmt::format("{:.3g}", g);
}
}  // namespace

void print_table(std::ostream& out, const RunResult& r) {
  out << fmt::format("scenario  {}\nmodel     {} on {} GPUs of {}\nlayout    {}\nprofile   {} ({})\n{}fidelity  {}, "
                     "{} simulated rank(s)\n\n",
                     r.scenario, r.model, r.gpus, r.topology, r.layout, r.profile, r.profile_source,
                     r.nccl.empty() ? "" : "nccl      " + r.nccl + "\n",
                     r.flow_settings.empty() ? r.fidelity : r.fidelity + " (" + r.flow_settings + ")", r.simulated_ranks);
  size_t w = 12;  // composed strategy names (megatron+PASS...) widen the first column
  for (const auto& s : r.strategies) w = std::max(w, s.strategy.size());
  // Each row's cells first, so that a column widens for a value too long for it (an iteration of
  // 10^7 s, the memory of a model that cannot fit) and the columns stay aligned.
  std::vector<std::array<std::string, 10>> rows;
  for (const auto& s : r.strategies) {
    if (s.out_of_memory) {
      rows.push_back({s.strategy, "OOM", "-", "-", "-", "-", "-", "-", gib(s.peak_memory_bytes),
                      "-"});
      continue;
    }
    if (s.refusal) {  // why: under the table
      rows.push_back({s.strategy, "refused", "-", "-", "-", "-", "-", "-",
                      gib(s.peak_memory_bytes), "-"});
      continue;
    }
    rows.push_back({s.strategy, fmt::format("{:.4f}", s.iteration_s), fmt::format("{:.1f}", s.tflops_per_gpu),
                    fmt::format("{:.1f}", s.model_tflops_per_gpu), fmt::format("{:.1f}", 100 * s.mfu),
                    fmt::format("{:.4f}", s.compute_s), fmt::format("{:.4f}", s.exposed_comm_s),
                    fmt::format("{:.4f}", s.bubble_s), gib(s.peak_memory_bytes),
                    s.speedup_vs_megatron > 0 ? fmt::format("{:.3f}x", s.speedup_vs_megatron) : "-"});
  }
  std::array<size_t, 10> width{w, 11, 9, 9, 6, 10, 10, 10, 9, 8};
  for (const auto& row : rows)
    for (size_t c = 1; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  const auto line = [&](const std::array<std::string, 10>& cells) {
    std::string l = fmt::format("{:<{}}", cells[0], width[0]);
    for (size_t c = 1; c < cells.size(); ++c) l += fmt::format(" {:>{}}", cells[c], width[c]);
    out << l << "\n";
  };
  line({"strategy", "iteration", "TFLOP/s", "model", "MFU", "compute", "exposed", "bubble", "memory", "speedup"});
  line({"", "(s)", "per GPU", "TFLOP/s", "(%)", "(s)", "comm (s)", "(s)", "(GiB)", "vs meg."});
  for (const auto& row : rows) line(row);
  if (r.published_tflops_per_gpu) {
    out << fmt::format("\npublished {:.1f} TFLOP/s per GPU ({})\n", *r.published_tflops_per_gpu, r.published_source);
    for (const auto& s : r.strategies)
      if (s.strategy == "megatron" && !s.out_of_memory && !s.refusal)
        out << fmt::format("simulated {:.1f} TFLOP/s per GPU (megatron): error {:+.1f}%\n", s.tflops_per_gpu,
                           100.0 * (s.tflops_per_gpu - *r.published_tflops_per_gpu) / *r.published_tflops_per_gpu);
  }
  bool first_note = true;
  for (const auto& s : r.strategies)
    for (const auto& n : s.notes) {
      // A note names its row: composed strategies' notes come from their parts.
      const bool named = n.rfind(s.strategy + ":", 0) == 0;
      out << (first_note ? "\n" : "") << (named ? "" : "[" + s.strategy + "] ") << n << "\n";
      first_note = false;
    }
  for (const auto& s : r.strategies)
    if (s.refusal) {
      out << (first_note ? "\n" : "") << "refused " << s.refusal->why << "\n";
      first_note = false;
    }
  if (!r.notes.empty()) out << "\nnotes: " << r.notes << "\n";
}

namespace {
std::string size_label(double bytes) {
  if (bytes >= kGiB) return fmt::format("{:.2f} GiB", bytes / kGiB);
  if (bytes >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0));
  if (bytes >= 1024.0) return fmt::format("{:.2f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}
}  // namespace

void print_communication(std::ostream& out, const StrategyResult& s, const RunResult& r) {
  if (s.communication.empty()) return;
  out << fmt::format("\n{}: communication as replayed ({} of the {} micro-batches; per op on the {} simulated "
                     "rank(s), from its last member's start; us)\n",
                     s.strategy, s.communication_micro_batches, r.micro_batches, r.simulated_ranks);
  const auto group_of = [](const CommOpSummary& c) {
    std::string g = c.purpose + fmt::format(" {}", c.group_size);
    if (c.nodes > 1) g += fmt::format(" ({}x{})", c.nodes, c.local_ranks);
    return g;
  };
  const auto us = [](double s) { return fmt::format("{:.1f}", 1e6 * s); };
  const auto alone_of = [&](const CommOpSummary& c) { return c.alone_s < 0 ? std::string("-") : us(c.alone_s); };
  // Columns as wide as their widest entry (a 10 GiB gather's 205493.8 us, a 100 s one's more).
  size_t wop = 2, wtype = 4, wgroup = 5, wplan = 9, wtime = 10;
  for (const CommOpSummary& c : s.communication) {
    wop = std::max(wop, c.op.size());
    wtype = std::max(wtype, c.type.size());
    wgroup = std::max(wgroup, group_of(c).size());
    wplan = std::max(wplan, c.plan.size());
    wtime = std::max({wtime, alone_of(c).size(), us(c.mean_s).size(), us(c.max_s).size()});
  }
  out << fmt::format("  {:<{}} {:<13} {:<{}} {:<{}} {:>10} {:>9}  {:<{}} {:>4} {:>{}} {:>{}} {:>{}}\n", "op", wop,
                     "kind", "type", wtype, "group", wgroup, "size", "instances", "NCCL plan", wplan, "SMs", "alone",
                     wtime, "mean", wtime, "max", wtime);
  for (const CommOpSummary& c : s.communication)
    out << fmt::format("  {:<{}} {:<13} {:<{}} {:<{}} {:>10} {:>9}  {:<{}} {:>4} {:>{}} {:>{}} {:>{}}\n", c.op, wop,
                       c.kind, c.type.empty() ? "-" : c.type, wtype, group_of(c), wgroup, size_label(c.bytes),
                       c.instances, c.plan, wplan, c.sms, alone_of(c), wtime, us(c.mean_s), wtime, us(c.max_s), wtime);
}

void print_plans(std::ostream& out, const RunResult& r) {
  for (const auto& s : r.strategies) {
    if (s.out_of_memory) {
      out << fmt::format("\n{}: not simulated: the layout needs {} GiB per GPU, more than the device's {:.1f} GiB\n",
                         s.strategy, gib(s.peak_memory_bytes), r.device_memory_bytes / kGiB);
      continue;
    }
    if (s.refusal) {
      out << fmt::format("\n{}: not simulated: refused {}\n", s.strategy, s.refusal->why);
      continue;
    }
    print_communication(out, s, r);
    if (s.plan.empty()) {
      out << fmt::format("\n{}: no per-op plan (only searching strategies, e.g. centauri, have one)\n", s.strategy);
      continue;
    }
    out << fmt::format("\n{}: plan per communication op (predicted, contention-free; ms; * chosen)\n", s.strategy);
    for (const auto& p : s.plan) {
      out << fmt::format("  {} — {} {} over {} ranks, {}{}, {} instance(s)\n", p.op, p.purpose, p.kind, p.group_size,
                         size_label(p.bytes), p.gemm.empty() ? "" : ", with " + p.gemm, p.instances);
      for (size_t i = 0; i < p.alternatives.size(); ++i) {
        const auto& a = p.alternatives[i];
        const bool runs = std::isfinite(a.time_s);
        // A lowering NCCL_ALGO leaves nothing to run with (its predicted time is infinite).
        const std::string exposed = !runs                ? "cannot run (NCCL_ALGO leaves none of it an algorithm)"
                                    : a.exposed_s < 0 ? "overlapped"
                                                      : fmt::format("{:.3f}", 1e3 * a.exposed_s);
        const std::string time = runs ? fmt::format("{:>9.3f}", 1e3 * a.time_s) : fmt::format("{:>9}", "-");
        out << fmt::format("    {} {:<32} time {}  exposed {:>10}\n", static_cast<int>(i) == p.chosen ? '*' : ' ',
                           a.plan, time, exposed);
      }
    }
  }
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["model"] = r.model;
  j["topology"] = r.topology;
  j["profile"] = r.profile;
  j["profile_source"] = r.profile_source;
  j["layout"] = r.layout;
  if (!r.nccl.empty()) j["nccl"] = r.nccl;
  j["gpus"] = r.gpus;
  j["simulated_ranks"] = r.simulated_ranks;
  if (!r.notes.empty()) j["notes"] = r.notes;
  j["fidelity"] = r.fidelity;
  if (!r.flow_settings.empty()) j["flow_settings"] = r.flow_settings;
  j["device_memory_bytes"] = r.device_memory_bytes;
  j["peak_flops"] = r.peak_flops;
  if (r.published_tflops_per_gpu) {
    j["published"] = {{"tflops_per_gpu", *r.published_tflops_per_gpu}, {"source", r.published_source}};
  }
  nlohmann::json refused = nlohmann::json::array();
  for (const auto& s : r.strategies)
    if (s.refusal) refused.push_back(s.strategy);
  if (!refused.empty()) j["refused"] = refused;  // the strategies without figures: --max-ops refused them
  j["strategies"] = nlohmann::json::array();
  for (const auto& s : r.strategies) {
    nlohmann::json e;
    e["strategy"] = s.strategy;
    e["out_of_memory"] = s.out_of_memory;
    e["peak_memory_bytes"] = s.peak_memory_bytes;
    if (s.estimated_ops > 0) e["estimated_ops"] = s.estimated_ops;
    if (s.refusal)
      e["refused"] = {{"reason", s.refusal->why},
                      {"ops", s.refusal->ops},
                      {"max_ops", s.refusal->max_ops},
                      {"replays_before", s.refusal->replays}};
    if (!s.notes.empty()) e["notes"] = s.notes;
    if (!s.plan.empty()) {
      e["plan"] = nlohmann::json::array();
      for (const auto& p : s.plan) {
        nlohmann::json alts = nlohmann::json::array();
        for (const auto& a : p.alternatives) {
          nlohmann::json x{{"plan", a.plan}, {"time_s", a.time_s}};
          if (!std::isfinite(a.time_s)) {  // NCCL_ALGO leaves one of its collectives nothing to run
            x["time_s"] = nullptr;
            x["runs"] = false;
          } else if (a.exposed_s >= 0) {
            x["exposed_s"] = a.exposed_s;
          }
          alts.push_back(x);
        }
        e["plan"].push_back({{"op", p.op}, {"kind", p.kind}, {"purpose", p.purpose}, {"group_size", p.group_size},
                             {"bytes", p.bytes}, {"gemm", p.gemm}, {"instances", p.instances},
                             {"chosen", p.alternatives[p.chosen].plan}, {"alternatives", alts}});
      }
    }
    if (!s.communication.empty()) {
      e["communication"] = {{"micro_batches_replayed", s.communication_micro_batches}, {"ops", nlohmann::json::array()}};
      for (const CommOpSummary& c : s.communication) {
        nlohmann::json x{{"op", c.op},         {"kind", c.kind},           {"type", c.type},  {"purpose", c.purpose},
                         {"group_size", c.group_size}, {"nodes", c.nodes}, {"local_ranks", c.local_ranks},
                         {"bytes", c.bytes},   {"instances", c.instances}, {"plan", c.plan},
                         {"sms", c.sms},       {"mean_s", c.mean_s},       {"max_s", c.max_s}};
        if (c.alone_s >= 0) x["alone_s"] = c.alone_s;
        e["communication"]["ops"].push_back(x);
      }
    }
    if (!s.out_of_memory && !s.refusal) {
      e["iteration_s"] = s.iteration_s;
      e["tflops_per_gpu"] = s.tflops_per_gpu;
      e["model_tflops_per_gpu"] = s.model_tflops_per_gpu;
      e["mfu"] = s.mfu;
      e["compute_s"] = s.compute_s;
      e["exposed_comm_s"] = s.exposed_comm_s;
      e["bubble_s"] = s.bubble_s;
      e["speedup_vs_megatron"] = s.speedup_vs_megatron;
      e["ops"] = s.ops;
      e["activities"] = s.activities;
      if (r.published_tflops_per_gpu)
        e["error_vs_published"] = (s.tflops_per_gpu - *r.published_tflops_per_gpu) / *r.published_tflops_per_gpu;
    }
    j["strategies"].push_back(e);
  }
  return j;
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  write_file_atomically(path, j.dump(2) + "\n", "--json");
}

}  // namespace overlapsim
