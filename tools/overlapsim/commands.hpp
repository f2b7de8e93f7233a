// The subcommands of the overlapsim command line.
#pragma once

#include <CLI/CLI.hpp>

#include <limits>
#include <string>
#include <vector>

namespace overlapsim::cli {

/// A flag's check that refuses an empty value, which would otherwise read as "not given" (the
/// default device, profile, log...): `--device "$MODEL"` with MODEL unset fails, naming the flag.
inline CLI::Validator non_empty_value() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("expected a value, found an empty one") : std::string(); },
      "NAME");
}

struct RunArgs {
  std::string scenario;
  std::vector<std::string> strategies;
  std::string fidelity;
  std::string json;
  std::string trace;                  ///< Chrome/Perfetto trace file (sim/trace.hpp)
  std::vector<std::string> settings;  ///< KEY=VALUE
  bool unfold = false;
  bool every_micro_batch = false;  ///< no steady-state extrapolation
  bool explain = false;               ///< print each searching strategy's plan per op
  bool quiet = false;
  bool timings = false;               ///< print where the run's host time went (stderr)
  long long max_ops = 20'000'000;
};
void add_run_command(CLI::App& app, RunArgs& args);
/// Returns the process exit status (0 ok); throws InputError on bad input.
int run_command(const RunArgs& args);

struct TopoArgs {
  std::string file;
  std::vector<std::string> overrides;
  bool dot = false;
};
void add_topo_command(CLI::App& app, TopoArgs& args);
int topo_command(const TopoArgs& args);

/// CollectiveArgs::ranks when --ranks is not given.
inline constexpr int kAllRanks = std::numeric_limits<int>::min();

struct CollectiveArgs {
  std::string op;         ///< "" with --compare: the log's collective
  int ranks = kAllRanks;  ///< kAllRanks (flag not given): every GPU of the topology (--compare: the log's)
  int ranks_per_node = 0; ///< 0 (flag not given): every GPU of a node (--compare: the log's ranks per host)
  std::string topology;
  std::vector<std::string> overrides;
  std::string sizes;      ///< "" (flag not given): 8B:8GiB, or the log's sizes with --compare
  double factor = 0;      ///< 0 (flag not given): 2
  std::string fidelity;
  std::string protocol;   ///< "" (flag not given): auto, or the log's NCCL_PROTO with --compare
  std::string algo;       ///< "" (flag not given): auto, or the log's NCCL_ALGO with --compare
  std::string redop;      ///< "" (flag not given): sum, or the log's redop with --compare
  std::string datatype;   ///< "" (flag not given): float, or the log's type with --compare
  int channels = 0;
  int root = -1;          ///< -1 (flag not given): 0, or the log's root column with --compare
  std::string calibration;
  bool unfold = false;
  bool collnet = false;   ///< --collnet: NCCL_COLLNET_ENABLE=1
  long long tree_slice_flows = -1;  ///< -1 (flag not given): kMaxTreeSliceFlows (FlowSettings)
  std::string compare;      ///< an nccl-tests log to compare with ("" none)
  double tolerance_pct = -1;  ///< with --compare: exit 1 when a size >= compare_from is off by more (< 0: never)
  std::string compare_from;    ///< with --compare: the smallest size counted (empty: 1MiB)
};
void add_collective_command(CLI::App& app, CollectiveArgs& args);
int collective_command(const CollectiveArgs& args);

/// `overlapsim calibrate` and its subcommands import-nccl-tests and compare (calibrate_command.cpp).
struct CalibrateArgs {
  std::string out, harness, device, raw, from_raw;  ///< calibrate [--out ...]; out and device also for import
  bool quick = false;
  int gpu = -1, max_gpus = 0;
  std::vector<std::string> logs;                    ///< import-nccl-tests LOG...
  std::string collective;
  std::string profile_a, profile_b, scenario;       ///< compare A B [--scenario]
  CLI::App* import_cmd = nullptr;
  CLI::App* compare_cmd = nullptr;
};
void add_calibrate_command(CLI::App& app, CalibrateArgs& args);
int calibrate_command(const CalibrateArgs& args);

}  // namespace overlapsim::cli
