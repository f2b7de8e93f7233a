// `overlapsim run SCENARIO`: simulate each strategy, print the comparison table (and, on request,
// write JSON and a Chrome/Perfetto trace).
#include "tools/overlapsim/commands.hpp"

#include "calibrate/profile.hpp"
#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/output_file.hpp"
#include "sim/report.hpp"
#include "sim/simulate.hpp"
#include "sim/strategy.hpp"
#include "sim/trace.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <set>
#include <iostream>
#include <memory>

namespace overlapsim::cli {

void add_run_command(CLI::App& app, RunArgs& a) {
  std::string names;
  for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* run = app.add_subcommand("run", "simulate one training iteration of a scenario under each strategy");
  run->add_option("scenario", a.scenario, "scenario YAML file")->required();
  run->add_option("--strategy,-s", a.strategies, "strategy to simulate (repeatable; default: the scenario's): " + names +
                      "; all of them (all, as a scenario's strategies: all); or a composition BASE+PASS[:ARG]+... "
                      "such as megatron+workload-partition:4 (docs/extending.md)")
      ->allow_extra_args(false);  // one value per flag: `-s megatron scenario.yaml --json F` leaves the scenario positional
  // An empty value would read as not given (the scenario's): refused, as the other flags' are.
  run->add_option("--fidelity", a.fidelity, "flow | analytic (default: the scenario's)")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("expected flow or analytic, found an empty value") : std::string();
      });
  // An empty path would silently write nothing: refuse it (CLI11 exits 2 naming the flag).
  const auto non_empty = [](const std::string& v) { return v.empty() ? std::string("expected a file path, found ''") : std::string(); };
  run->add_option("--json", a.json, "also write the result as JSON to this file")->check(non_empty);
  run->add_option("--trace", a.trace,
                  "also write a Chrome/Perfetto trace (one track per simulated rank and stream, one per link "
                  "that carried their flows) to this file")
      ->check(non_empty);
  run->add_option("--set", a.settings, "override a scenario setting, e.g. --set parallelism.tp=4 (repeatable)")
      ->allow_extra_args(false);  // one value per flag: `--set K=V scenario.yaml` leaves the scenario positional
  // topo's and collective's --override, given to run, is named with the --set that does it here
  // rather than as CLI11's "arguments were not expected"; hidden from --help. (Thrown from the
  // callback: a hidden option's validator would name no option.)
  const auto refuse_override = [](const std::vector<std::string>& given) {
    const std::string& kv = given.front();
    const std::string set = "--set topology_overrides." + kv + (kv.find('=') == std::string::npos ? "=VALUE" : "");
    throw CLI::ValidationError("--override", "run takes a topology override as --set topology_overrides.KEY=VALUE: "
                                             "expected " + set + ", found --override " + kv);
  };
  run->add_option_function<std::vector<std::string>>("--override", refuse_override)->group("");
  run->add_flag("--explain", a.explain,
               "after the table, how each strategy's replay ran every communication op (NCCL's algorithm, "
               "protocol and channels, SMs, its time alone and as replayed), and each searching strategy's choice "
               "per communication op with the predicted time of every alternative it considered (e.g. --strategy "
               "centauri)");
  run->add_flag("--unfold", a.unfold, "simulate every rank instead of one representative per pipeline stage");
  run->add_flag("--every-micro-batch", a.every_micro_batch,
               "replay every micro-batch instead of extending the steady state of a few "
               "(the default when it is exact: the figures of three replays are collinear)");
  run->add_flag("--quiet,-q", a.quiet, "no progress lines on stderr");
  run->add_flag("--timings", a.timings,
               "after the table, on stderr: the command's host wall time and, per strategy, its replays and the "
               "host time they took (the replay engine alone, the fidelities' difference)");
  // A whole number of ops from 1 to 2^40, written out or as 2e7 (rewritten for CLI11's integer
  // conversion); anything else is named as such, not as out of range.
  run->add_option("--max-ops", a.max_ops,
                  "refuse a strategy whose schedule is estimated, before it is built, above this many ops (a "
                  "memory guard; the other strategies run on, and the run exits 2)")
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            const std::string bad = "expected a whole number of ops from 1 to 1099511627776 (2^40), e.g. 20000000 "
                                    "or 2e7; found '" + text + "'";
            size_t used = 0;
            double v = 0;
            try {
              v = std::stod(text, &used);
            } catch (const std::exception&) {
              return bad;
            }
            if (used != text.size() || !(v >= 1 && v <= 1099511627776.0) || v != std::floor(v)) return bad;
            text = std::to_string(static_cast<long long>(v));
            return {};
          },
          "OPS"));
}

int run_command(const RunArgs& a) {
  const auto began = std::chrono::steady_clock::now();  // (--timings)
  Scenario sc = load_scenario(a.scenario);
  std::set<std::string> set_keys;
  for (const auto& kv : a.settings) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--set", "expected KEY=VALUE, found '" + kv + "'");
    if (!set_keys.insert(kv.substr(0, eq)).second)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--set",
                       "'" + kv.substr(0, eq) + "' is given twice; expected each setting once");
    apply_setting(sc, kv.substr(0, eq), kv.substr(eq + 1));
    if (kv.substr(0, eq) == "fidelity" && !a.fidelity.empty())
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--fidelity",
                       "'" + a.fidelity + "' beside --set " + kv + ": both name the fidelity; expected one of them");
  }
  SimulateOptions opt;
  // Validate every flag before any work. `all`: every built-in strategy, as in a scenario; alone.
  // Any case, as --fidelity and the NCCL names are taken (the registered names are lower case).
  std::vector<std::string> strategies = a.strategies;
  for (std::string& s : strategies) s = ascii_lower(s);
  if (std::find(strategies.begin(), strategies.end(), "all") != strategies.end()) {
    if (strategies.size() > 1)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--strategy",
                       "'all' names every strategy; expected it alone, not beside others");
    strategies = strategy_names();
  }
  for (const auto& s : strategies) {
    try {
      make_strategy(s);
    } catch (const InputError& e) {
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--strategy", e.message());
    }
  }
  for (size_t i = 0; i < strategies.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (same_strategy(strategies[i], strategies[j]))
        throw InputError(SourceLocation{"<command line>", 0, 0}, "--strategy",
                         strategies[i] == strategies[j]
                             ? "'" + strategies[i] + "' is given twice; expected each strategy once"
                             : "'" + strategies[i] + "' is '" + strategies[j] + "' again; expected each strategy once");
  // Outputs: never an input (the scenario, its topology, its profile or any shipped default
  // profile), never each other (regression: --trace over the scenario or the topology file).
  std::vector<std::string> inputs{a.scenario, sc.topology_path};
  if (!sc.calibration_path.empty()) inputs.push_back(sc.calibration_path);
  {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(default_profile_folder(), ec))
      if (e.path().extension() == ".json") inputs.push_back(e.path().string());
  }
  if (!a.json.empty()) check_output_path(a.json, "--json", inputs);
  if (!a.trace.empty()) check_output_path(a.trace, "--trace", inputs);
  if (!a.json.empty() && !a.trace.empty() && resolve_output_path(a.json) == resolve_output_path(a.trace))
    throw InputError(SourceLocation{"<command line>", 0, 0}, "--trace", "is the same file as --json; expected another");
  opt.max_ops = a.max_ops;
  opt.strategies = strategies;
  if (!a.fidelity.empty()) {
    try {
      opt.fidelity = parse_fidelity(a.fidelity);
    } catch (const std::invalid_argument& e) {
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--fidelity", e.what());
    }
  }
  opt.every_micro_batch = a.every_micro_batch;
  opt.communication_report = a.explain;
  opt.folding = a.unfold ? Folding::None : Folding::Representatives;
  if (!a.quiet) opt.progress = [](const std::string& line) { std::cerr << "overlapsim: " << line << "\n"; };
  std::unique_ptr<TraceWriter> trace;
  if (!a.trace.empty()) {
    trace = std::make_unique<TraceWriter>(a.trace, "--trace");
    opt.record_flows = true;
    opt.on_replayed = [&trace](const std::string& name, const Schedule& s, const ReplayTimes& t, const Topology& topo) {
      trace->add(name, s, t, &topo);
    };
  }
  // An input error in a scenario changed by --set names the file and the line of the value it
  // read, or the command line where that value was set: the settings are said with it (a check
  // across keys reads values from both).
  const RunResult r = [&] {
    try {
      return simulate(sc, opt);
    } catch (const InputError& e) {
      if (a.settings.empty() || (e.where().file != sc.path && e.where().file != "<command line>")) throw;
      std::string set;
      for (const auto& kv : a.settings) set += (set.empty() ? "--set " : ", --set ") + kv;
      throw InputError(e.where(), e.key(), e.message() + " (the scenario as changed by " + set + ")");
    }
  }();
  print_table(std::cout, r);
  if (a.explain) print_plans(std::cout, r);
  if (a.timings) {
    std::cout.flush();
    std::cerr << fmt::format("overlapsim: timings: {:.6f} s from the command's start to its result ({} fidelity)\n",
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                             r.fidelity);
    for (const auto& s : r.strategies)
      std::cerr << fmt::format("overlapsim: timings: {}: {} replay(s), {:.6f} s in the replay engine\n", s.strategy,
                               s.replays, s.replay_wall_s);
  }
  // A strategy --max-ops refused leaves the others' figures: the table, the JSON (the whole
  // result, the refusal recorded in it) and the trace (the strategies replayed) are written, and
  // the run exits 2, as for an input error, naming it.
  // The trace first: its write can fail late (a full disk while it streamed), and a failed
  // command must not have replaced the JSON beside it.
  if (trace) trace->commit();
  if (!a.json.empty()) write_json_file(a.json, to_json(r));
  std::string refused;
  int n_refused = 0;
  for (const auto& s : r.strategies)
    if (s.refusal) refused += (n_refused++ == 0 ? "" : ", ") + s.strategy;
  // A layout that does not fit in the GPU's memory simulates nothing: the table and the JSON
  // say so (rows OOM, the note with the memory per GPU), and the run exits 2, so that a sweep or
  // a CI gate does not read it as a result.
  if (!r.strategies.empty() && std::all_of(r.strategies.begin(), r.strategies.end(),
                                           [](const StrategyResult& s) { return s.out_of_memory; })) {
    std::cout.flush();
    std::cerr << "overlapsim: " << a.scenario << ": out of memory: no strategy simulated (why under the table)\n";
    return 2;
  }
  if (n_refused == 0) return 0;
  std::cout.flush();
  std::cerr << "overlapsim: " << a.scenario << ": --max-ops: " << n_refused << " of " << r.strategies.size()
            << " strateg" << (r.strategies.size() == 1 ? "y" : "ies") << " refused (" << refused
            << "; why under the table)" << (n_refused < static_cast<int>(r.strategies.size()) ? ", the others' figures kept" : "")
            << "\n";
  return 2;
}

}  // namespace overlapsim::cli
