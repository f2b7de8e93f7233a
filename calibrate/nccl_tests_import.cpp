// nccl-tests importer: logs grouped by (collective, ranks, nodes) and fitted into a profile's
// collectives and tuning table (rules in nccl_tests.hpp; the log reader: nccl_tests.cpp).
#include "calibrate/nccl_tests.hpp"

#include "calibrate/collective_fit.hpp"
#include "calibrate/gpu_names.hpp"
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace overlapsim {

ImportResult import_nccl_tests(const std::vector<std::string>& paths, const ImportOptions& options) {
  ImportResult res;
  if (paths.empty()) throw InputError("expected at least one nccl-tests log, found none");
  for (size_t i = 0; i < paths.size(); ++i) {
    // The same log twice would count each of its points twice in the fit.
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (paths[j] == paths[i] || std::filesystem::equivalent(paths[j], paths[i], ec))
        throw InputError(SourceLocation{paths[i], 0, 0}, "",
                         "expected each log once, found it given twice (as " + paths[j] + ")");
    }
    for (NcclTestsLog& l : read_nccl_tests_logs(paths[i], options.collective))  // a sweep's file gives each run
      res.logs.push_back(std::move(l));
  }

  // The device: --device, else every log's GPU name must map to the same catalog model.
  std::string device = options.device;
  check_device_option(device);
  // --device overrides the GPU name (e.g. H100 collectives for an H200 profile, same NVLink);
  // where the catalog knows the log's GPUs as another model, say so.
  if (!device.empty())
    for (const NcclTestsLog& l : res.logs) {
      const std::string m = device_model_for_gpu_name(l.gpu_name);
      if (!m.empty() && m != device)
        res.warnings.push_back(l.path + ": measured on '" + l.gpu_name + "' (" + m + "), written as " + device +
                               " as --device asks");
    }
  if (device.empty()) {
    for (const NcclTestsLog& l : res.logs) {
      const std::string m = device_model_for_gpu_name(l.gpu_name);
      if (m.empty())
        throw InputError(SourceLocation{l.path, 0, 0}, "",
                         "cannot tell the device model from the GPU name '" + l.gpu_name +
                             "'; expected --device MODEL (one of the models in models/device_catalog.cpp)");
      if (!device.empty() && m != device)
        throw InputError(SourceLocation{l.path, 0, 0}, "",
                         "the logs are from different GPUs (" + device + " and " + m + "); expected one device per profile");
      device = m;
    }
  }

  // Points per (collective, ranks, nodes).
  struct Group {
    std::vector<SizeTime> points;
    std::vector<std::string> files;
    std::string algorithm, protocol, first;
    bool collnet = false;
  };
  std::map<std::tuple<std::string, int, int>, Group> groups;
  for (const NcclTestsLog& l : res.logs) {
    // NCCL before 2.24 let a word it did not know pass in NCCL_ALGO/NCCL_PROTO; the profile
    // would keep it and its loader refuse it.
    for (const auto& [value, is_algo] : {std::pair<const std::string&, bool>{l.algorithm, true}, {l.protocol, false}})
      if (const std::string w = unknown_nccl_word(value, is_algo); !w.empty())
        throw InputError(SourceLocation{l.path, 0, 0}, "",
                         std::string("the log's ") + (is_algo ? "NCCL_ALGO" : "NCCL_PROTO") + " (" + value +
                             ") names '" + w + "', which NCCL has not; expected a log run with " +
                             (is_algo ? "NCCL_ALGO" : "NCCL_PROTO") + " unset or set to names NCCL has");
    // A profile's points are measurements: a row corrupted in its time or its algbw is refused
    // (regression: one such row, its time 10x short, fitted 2920 GB/s where the log ran 360).
    if (!l.inconsistent_rows.empty())
      throw InputError(SourceLocation{l.path, l.inconsistent_rows.front().first, 0}, "",
                       l.inconsistent_rows.front().second +
                           "; expected rows as nccl-tests printed them (algbw = size / time) to fit a profile from: "
                           "drop or re-measure the row");
    // One reduction and one data type per log, as --compare has it: nccl-tests -o all and -d all
    // print every reduction's or type's rows in one table, which the fit would count once per
    // reduction, or average type by type, size by size. A reduction must be one nccl-tests knows.
    const auto one_per_log = [&](std::string NcclTestsRow::*column, const char* key, const char* what,
                                 const char* short_what, const char* flag, const char* example) {
      int first = 0;
      std::string seen;
      for (const NcclTestsRow& r : l.rows) {
        const std::string& v = r.*column;
        if (v.empty() || (column == &NcclTestsRow::redop && v == "none")) continue;
        ReduceOp parsed{};
        if (column == &NcclTestsRow::redop && !parse_reduce_op(v, &parsed))
          throw InputError(SourceLocation{l.path, r.line, 0}, "redop",
                           "expected sum, prod, max, min, avg or mulsum, found '" + v + "'");
        if (seen.empty()) {
          seen = v;
          first = r.line;
        } else if (v != seen) {
          throw InputError(SourceLocation{l.path, r.line, 0}, key,
                           fmt::format("expected one {} per log, as line {} ran ({}), found {} (a run of nccl-tests "
                                       "{} all: import a run of one {}, e.g. {} {})",
                                       what, first, seen, v, flag, short_what, flag, example));
        }
      }
    };
    one_per_log(&NcclTestsRow::redop, "redop", "reduction", "reduction", "-o", "sum");
    one_per_log(&NcclTestsRow::type, "type", "data type", "type", "-d", "float");
    res.warnings.insert(res.warnings.end(), l.warnings.begin(), l.warnings.end());
    // Send/Recv is timed by the point-to-point model (collective_plan.hpp p2p_rate_cap_Bps, fitted
    // to published sendrecv_perf curves), never by a measured fit: kept, and said so.
    if (l.collective == "sendrecv")
      res.warnings.push_back(l.path + ": sendrecv is kept in the profile's measured collectives for reference, but "
                             "no simulation takes Send/Recv times from it (the point-to-point model times them)");
    // NCCL_COLLNET_ENABLE as the log ran: said by its INFO line, else implied by a forced
    // algorithm NCCL runs only with it (CollNet, NVLS across nodes).
    const std::string forced = ascii_lower(l.algorithm);
    // NCCL's TUNING lines choosing CollNet (or NVLS across nodes) say the same.
    bool tuned_collnet = false;
    for (const NcclTuningLine& t : l.tuning)
      tuned_collnet |= t.algorithm == "collnet_direct" || t.algorithm == "collnet_chain" ||
                       (t.algorithm == "nvls" && l.nodes > 1);
    const bool collnet =
        l.collnet_enable == 1 ||
        (l.collnet_enable == -1 && (tuned_collnet || forced == "collnetdirect" || forced == "collnetchain" ||
                                    forced == "collnet_direct" || forced == "collnet_chain" ||
                                    (forced == "nvls" && l.nodes > 1)));
    Group& g = groups[{l.collective, l.ranks, l.nodes}];
    if (g.files.empty()) {
      g.algorithm = l.algorithm;
      g.protocol = l.protocol;
      g.collnet = collnet;
      g.first = l.path;
    } else if (g.collnet != collnet) {
      throw InputError(SourceLocation{l.path, 0, 0}, "",
                       "this log and " + g.first + " both measure " + l.collective + " on " + std::to_string(l.ranks) +
                           " ranks, " + std::to_string(l.nodes) + " node(s), but one with NCCL_COLLNET_ENABLE=1 "
                           "and one without; expected one setting per profile (import them separately)");
    } else if (g.algorithm != l.algorithm || g.protocol != l.protocol) {
      throw InputError(SourceLocation{l.path, 0, 0}, "",
                       "this log and " + g.first + " both measure " + l.collective + " on " + std::to_string(l.ranks) +
                           " ranks, " + std::to_string(l.nodes) + " node(s), but with NCCL algorithm/protocol " +
                           l.algorithm + "/" + l.protocol + " and " + g.algorithm + "/" + g.protocol +
                           "; expected one setting per profile (import them separately)");
    }
    g.files.push_back(std::filesystem::path(l.path).filename().string());
    for (const NcclTestsRow& r : l.rows)
      for (const NcclTestsHalf* h : {&r.out_of_place, &r.in_place})
        if (h->usable) g.points.push_back(SizeTime{static_cast<double>(r.size_bytes), h->time_us * 1e-6});
  }

  Profile p = load_profile(default_profile_path(device));
  const std::string base = "calibrate/profiles/" + device + ".json";
  std::string logs, gpus, versions;
  std::set<std::string> seen_gpu, seen_version;
  for (const NcclTestsLog& l : res.logs) {
    logs += (logs.empty() ? "" : ", ") + l.path;
    if (!l.gpu_name.empty() && seen_gpu.insert(l.gpu_name).second) gpus += (gpus.empty() ? "" : ", ") + l.gpu_name;
    if (!l.nccl_version.empty() && seen_version.insert(l.nccl_version).second)
      versions += (versions.empty() ? "" : ", ") + l.nccl_version;
  }
  for (auto& [key, g] : groups) {
    const auto& [coll, ranks, nodes] = key;
    std::string files;
    for (const auto& f : g.files) files += (files.empty() ? "" : ", ") + f;
    p.collectives.push_back(make_collective_fit(coll, ranks, nodes, g.algorithm, g.protocol, g.points,
                                                "nccl-tests log(s) " + files));
    p.collectives.back().collnet_enable = g.collnet;
  }
  // Tuning rules from NCCL's TUNING lines, per group.
  std::map<std::tuple<std::string, int, int>, std::map<double, std::map<std::pair<std::string, std::string>, int>>> seen;
  std::map<std::tuple<std::string, int, int>, std::string> seen_files;
  for (const NcclTestsLog& l : res.logs) {
    for (const NcclTuningLine& t : l.tuning) ++seen[{l.collective, l.ranks, l.nodes}][t.bytes][{t.algorithm, t.protocol}];
    if (!l.tuning.empty()) {
      std::string& f = seen_files[{l.collective, l.ranks, l.nodes}];
      f += (f.empty() ? "" : ", ") + std::filesystem::path(l.path).filename().string();
    }
  }
  std::string tuning_files;
  for (const auto& [key, sizes] : seen) {
    const auto& [coll, ranks, nodes] = key;
    const CollectiveKind kind = coll == "all_reduce"       ? CollectiveKind::AllReduce
                                : coll == "all_gather"     ? CollectiveKind::AllGather
                                : coll == "reduce_scatter" ? CollectiveKind::ReduceScatter
                                : coll == "broadcast"      ? CollectiveKind::Broadcast
                                                           : CollectiveKind::Reduce;
    if (coll == "alltoall" || coll == "sendrecv") continue;  // point-to-point: no algorithm to choose
    tuning_files += (tuning_files.empty() ? "" : ", ") + seen_files[key];
    bool in_run = false;
    for (const auto& [bytes, choices] : sizes) {
      // The most frequent choice at this size (ties: the first in name order).
      std::pair<std::string, std::string> pick;
      int most = 0;
      for (const auto& [c, k] : choices)
        if (k > most) {
          most = k;
          pick = c;
        }
      // NVLS runs Simple only: a line saying otherwise makes no rule the profile could load.
      const bool simple = pick.second != "LL" && pick.second != "LL128";
      // (CollNet and NVLS across nodes ran with NCCL_COLLNET_ENABLE: a rule naming them where a
      // job runs without it leaves the choice to the model, as any rule that cannot run.)
      const bool gather_kind = kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
      const bool modelled = pick.first == "ring" ||
                            ((pick.first == "tree" || (pick.first == "nvls_tree" && nodes > 1 && simple) ||
                              (pick.first == "collnet_chain" && nodes > 1 && simple)) &&
                             kind == CollectiveKind::AllReduce) ||
                            (pick.first == "nvls" && simple && (kind == CollectiveKind::AllReduce || gather_kind)) ||
                            (pick.first == "collnet_direct" && nodes > 1 && simple &&
                             (kind == CollectiveKind::AllReduce || gather_kind)) ||
                            (pick.first == "pat" && simple && nodes == ranks && gather_kind);
      if (!modelled) {
        res.warnings.push_back(coll + " on " + std::to_string(ranks) + " ranks: NCCL ran " +
                               std::to_string(static_cast<long long>(bytes)) + " B with algorithm " + pick.first +
                               (simple ? "" : " and protocol " + pick.second) +
                               ", which the simulator does not model; no tuning rule for that size");
        in_run = false;
        continue;
      }
      TuningRule r;
      r.kind = kind;
      r.min_ranks = r.max_ranks = ranks;
      r.min_nodes = r.max_nodes = nodes;
      r.max_bytes = bytes;
      r.algorithm = pick.first == "tree"        ? CollectiveAlgorithm::Tree
                    : pick.first == "nvls"      ? CollectiveAlgorithm::Nvls
                    : pick.first == "nvls_tree" ? CollectiveAlgorithm::NvlsTree
                    : pick.first == "pat"       ? CollectiveAlgorithm::Pat
                    : pick.first == "collnet_direct" ? CollectiveAlgorithm::CollnetDirect
                    : pick.first == "collnet_chain"  ? CollectiveAlgorithm::CollnetChain
                                                : CollectiveAlgorithm::Ring;
      r.protocol = pick.second == "LL" ? Protocol::LL : pick.second == "LL128" ? Protocol::LL128 : Protocol::Simple;
      TuningRule* last = in_run ? &p.tuning.back() : nullptr;
      if (last && last->algorithm == r.algorithm && last->protocol == r.protocol) last->max_bytes = bytes;
      else p.tuning.push_back(r);
      in_run = true;
    }
  }
  if (!p.tuning.empty())
    p.tuning_source = "NCCL's TUNING debug lines (NCCL_DEBUG_SUBSYS=TUNING) in nccl-tests log(s) " + tuning_files +
                      ", read by overlapsim calibrate import-nccl-tests";
  p.collectives_source = "fitted by overlapsim calibrate import-nccl-tests from " + logs +
                         " (nccl-tests' size column, out-of-place and in-place times; t = alpha + S*f(n)/busbw, "
                         "least relative squares)";
  p.provenance_kind = "imported";
  p.provenance_source = "collectives imported from nccl-tests logs (" + logs + "); other sections from the datasheet profile " + base;
  p.provenance_date.clear();
  p.provenance_extra.clear();
  p.provenance_extra["logs"] = logs;
  p.provenance_extra["base_profile"] = base;
  if (!gpus.empty()) p.provenance_extra["gpu"] = gpus;
  if (!versions.empty()) p.provenance_extra["nccl"] = versions;
  res.profile = p;
  return res;
}

}  // namespace overlapsim
