// `overlapsim calibrate`: measure this machine's GPU into a profile (runs the CUDA harness, then
// fits), import nccl-tests logs, or compare two profiles (calibrate/README.md).
//
//   overlapsim calibrate --out PROFILE [--quick] [--harness PATH] [--device MODEL] [--gpu N]
//                        [--max-gpus N] [--raw RAW]
//   overlapsim calibrate --from-raw RAW --out PROFILE [--device MODEL]   # fit only, no GPU needed
//   overlapsim calibrate import-nccl-tests LOG... --out PROFILE [--device MODEL] [--collective NAME]
//   overlapsim calibrate compare PROFILE_A PROFILE_B [--scenario FILE]
//
// Exit status: 0 done; 2 bad input (flags, files, logs: one line naming the file, line, key);
// 1 the machine cannot measure (no GPU: the harness exits 3 and nothing is written; the harness
// binary not built) or the harness failed — not an input error, so not 2.
#include "tools/overlapsim/commands.hpp"

#include "calibrate/compare.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/raw_measurements.hpp"
#include "sim/error.hpp"
#include "sim/output_file.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace overlapsim::cli {

namespace {

/// The shipped profiles (calibrate/profiles/*.json): inputs no command may write over.
std::vector<std::string> default_profile_paths() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(default_profile_folder(), ec))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  return out;
}

/// Refuses `out` (the value of `flag`) where it is one of the shipped profiles, saying so (where
/// check_output_path would call it "also an input"), before any work.
void refuse_shipped_profile(const std::string& out, const char* flag) {
  std::error_code ec;
  const std::filesystem::path target = resolve_output_path(out);
  for (const std::string& p : default_profile_paths())
    if (std::filesystem::exists(target, ec) && std::filesystem::equivalent(target, p, ec))
      throw InputError(SourceLocation{"<command line>", 0, 0}, flag,
                       "is a shipped profile (" + p + "), which no command writes over; expected a path of your own "
                       "(e.g. my-profile.json), to pass as --calibration");
}

/// A failure of the machine or the harness (exit status 1), not of the user's input.
struct MachineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string harness_path(const CalibrateArgs& a) {
  if (!a.harness.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(a.harness, ec) || ::access(a.harness.c_str(), X_OK) != 0)
      throw InputError(SourceLocation{"<command line>", 0, 0}, "--harness",
                       "expected the path of an executable overlapsim-calibrate-harness, found '" + a.harness + "'");
    return a.harness;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path next = self.parent_path() / "overlapsim-calibrate-harness";
  if (!ec && std::filesystem::is_regular_file(next, ec)) return next.string();
  throw MachineError("the calibration harness is not built: no overlapsim-calibrate-harness next to " +
                     (self.empty() ? std::string("this overlapsim") : self.parent_path().string()) +
                     " (the build makes it when nvcc, cuBLASLt and NCCL are found, option OVERLAPSIM_CUDA); "
                     "pass --harness PATH (tools/gpu-check.sh builds one standalone)");
}

/// Runs the harness; returns normally only when it wrote `raw`.
void run_harness(const std::string& exe, const CalibrateArgs& a, const std::string& raw) {
  std::vector<std::string> args = {exe, "--out", raw};
  if (a.quick) args.push_back("--quick");
  if (a.gpu >= 0) args.insert(args.end(), {"--device", std::to_string(a.gpu)});
  if (a.max_gpus > 0) args.insert(args.end(), {"--max-gpus", std::to_string(a.max_gpus)});
  std::cerr << "overlapsim: running";
  for (const auto& s : args) std::cerr << " " << s;
  std::cerr << "\n" << std::flush;
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw MachineError("cannot start the harness (fork failed)");
  if (pid == 0) {
    ::execv(exe.c_str(), argv.data());
    std::perror(("overlapsim: cannot run " + exe).c_str());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw MachineError("lost the harness process (waitpid failed)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    throw MachineError("no GPU: the harness found no usable CUDA device on this machine, so nothing was measured "
                       "and no profile was written (import nccl-tests logs with `overlapsim calibrate "
                       "import-nccl-tests`, or run on a GPU machine)");
  if (WIFEXITED(status))
    throw MachineError("the harness failed (exit status " + std::to_string(WEXITSTATUS(status)) +
                       "; its messages are above); no profile was written");
  throw MachineError("the harness was killed (signal " + std::to_string(WTERMSIG(status)) + "); no profile was written");
}

void print_profile_summary(std::ostream& out, const Profile& p) {
  out << fmt::format("  gemm       max_efficiency {:.3f}; tables: {}\n", p.gemm_max_efficiency,
                     p.gemm_tables.empty() ? std::string("none") : [&] {
                       std::string s;
                       for (const auto& t : p.gemm_tables)
                         s += fmt::format("{}{} ({}x{}x{})", s.empty() ? "" : ", ", t.dtype, t.m.size(), t.n.size(), t.k.size());
                       return s;
                     }());
  for (const auto& k : p.gemm_key_shapes) {
    const GemmEfficiencyTable* t = p.gemm_table(k.dtype);
    out << fmt::format("             {:<28} {:>5}x{:>5}x{:>5} {:>6.1f} TFLOP/s = {:.1f}% of peak (table: {:.1f}%)\n",
                       k.label + " " + k.dtype, k.m, k.n, k.k, t ? k.efficiency * t->peak_flops / 1e12 : 0.0,
                       100 * k.efficiency, 100 * k.interpolated);
  }
  out << fmt::format("  memory     efficiency {:.3f}{}\n", p.memory_efficiency,
                     p.hbm_bandwidth_Bps > 0 ? fmt::format(", copy {:.0f} GB/s", p.hbm_bandwidth_Bps / 1e9) : "");
  out << fmt::format("  attention  efficiency {:.3f}\n", p.attention_efficiency);
  out << fmt::format("  kernel     launch {:.2f} us (host), {:.2f} us per kernel (GPU)\n", p.launch_overhead_s * 1e6,
                     p.kernel_fixed_overhead_s * 1e6);
  for (const auto& f : p.collectives)
    out << fmt::format("  collective {:<15} {:>3} ranks {} node(s) {}/{}: alpha {:.2f} us, busbw {:.1f} GB/s "
                       "({} points, max error {:.0f}%)\n",
                       f.collective, f.ranks, f.nodes, f.algorithm, f.protocol, f.alpha_s * 1e6, f.busbw_Bps / 1e9,
                       f.points.size(), 100 * f.max_relative_error);
  for (const auto& i : p.interference)
    out << fmt::format("  interference {:<16} {:>3} SMs: compute slowdown {:.3f}\n", i.companion, i.num_sm, i.compute_slowdown);
  if (p.sm_interference > 0)
    out << fmt::format("  interference coefficient {:.3f} (sim/replay.hpp: speed = 1 - I * k / SMs)\n", p.sm_interference);
}

int measure(const CalibrateArgs& a) {
  if (a.out.empty())
    throw InputError(SourceLocation{"<command line>", 0, 0}, "--out",
                     "expected the profile file to write (overlapsim calibrate --out PROFILE [--quick]), found none");
  std::string raw = a.from_raw;
  {
    // Before the harness runs (minutes of GPU time): never over the raw file it fits or a
    // shipped profile (refuse_shipped_profile), and in a folder that exists.
    std::vector<std::string> inputs;
    if (!a.from_raw.empty()) inputs.push_back(a.from_raw);
    refuse_shipped_profile(a.out, "--out");
    check_output_path(a.out, "--out", inputs);
    const std::string raw_out = a.raw.empty() ? a.out + ".raw.json" : a.raw;
    if (a.from_raw.empty()) {
      refuse_shipped_profile(raw_out, "--raw");
      check_output_path(raw_out, "--raw", inputs);
      if (resolve_output_path(raw_out) == resolve_output_path(a.out))
        throw InputError(SourceLocation{"<command line>", 0, 0}, "--raw", "is the same file as --out; expected another");
    }
  }
  if (raw.empty()) {
    raw = a.raw.empty() ? a.out + ".raw.json" : a.raw;
    run_harness(harness_path(a), a, raw);
  }
  FitOptions fo;
  fo.device = a.device;
  const FitResult fit = fit_profile(load_raw_measurements(raw), fo);
  write_profile(fit.profile, a.out);
  std::cout << fmt::format("overlapsim: wrote {} ({}, {}; raw measurements: {})\n", a.out, fit.profile.provenance_kind,
                           fit.profile.device, raw);
  print_profile_summary(std::cout, fit.profile);
  for (const auto& n : fit.notes) std::cout << "  note: " << n << "\n";
  return 0;
}

int import_logs(const CalibrateArgs& a) {
  if (a.out.empty())
    throw InputError(SourceLocation{"<command line>", 0, 0}, "--out", "expected the profile file to write, found none");
  ImportOptions io;
  io.device = a.device;
  io.collective = a.collective;
  // Before any work; never over a shipped profile (the import's base is one) or a log.
  refuse_shipped_profile(a.out, "--out");
  check_output_path(a.out, "--out", a.logs);
  const ImportResult r = import_nccl_tests(a.logs, io);
  std::cout << fmt::format("overlapsim: read {} nccl-tests log(s) for {}\n", r.logs.size(), r.profile.device);
  std::cout << fmt::format("  {:<44} {:<15} {:>5} {:>5} {:>5} {:>11} {:>10}  {}\n", "log", "collective", "ranks", "nodes",
                           "rows", "algo/proto", "avg busbw", "GPU, NCCL");
  for (const NcclTestsLog& l : r.logs) {
    std::string name = l.path.size() > 44 ? "..." + l.path.substr(l.path.size() - 41) : l.path;
    std::cout << fmt::format("  {:<44} {:<15} {:>5} {:>5} {:>5} {:>11} {:>10}  {}, NCCL {}\n", name, l.collective, l.ranks,
                             l.nodes, l.rows.size(), l.algorithm + "/" + l.protocol,
                             l.avg_busbw_GBps >= 0 ? fmt::format("{:.2f}", l.avg_busbw_GBps) : std::string("-"),
                             l.gpu_name.empty() ? std::string("GPU ?") : l.gpu_name,
                             l.nccl_version.empty() ? std::string("?") : l.nccl_version);
  }
  std::cout << fmt::format("  fits (t = alpha + S*f(n)/busbw):\n  {:<15} {:>5} {:>5} {:>6} {:>10} {:>11} {:>16} {:>11}\n",
                           "collective", "ranks", "nodes", "points", "alpha us", "busbw GB/s", "max busbw",
                           "max error");
  for (const CollectiveFit& f : r.profile.collectives) {
    double peak = 0;
    for (const auto& p : f.points) peak = std::max(peak, p.busbw_Bps);
    std::cout << fmt::format("  {:<15} {:>5} {:>5} {:>6} {:>10.2f} {:>11.1f} {:>16.1f} {:>10.0f}%\n", f.collective, f.ranks,
                             f.nodes, f.points.size(), f.alpha_s * 1e6, f.busbw_Bps / 1e9, peak / 1e9,
                             100 * f.max_relative_error);
  }
  for (const auto& w : r.warnings) std::cout << "  warning: " << w << "\n";
  write_profile(r.profile, a.out);
  std::cout << fmt::format("overlapsim: wrote {} (imported; other sections from {})\n", a.out,
                           r.profile.provenance_extra.at("base_profile"));
  return 0;
}

int compare(const CalibrateArgs& a) {
  const Profile pa = load_profile(a.profile_a);
  const Profile pb = load_profile(a.profile_b);
  const std::vector<GemmQuery> shapes = a.scenario.empty() ? standard_gemm_shapes() : scenario_gemm_shapes(a.scenario);
  print_profile_comparison(std::cout, pa, pb, shapes,
                           a.scenario.empty() ? "standard transformer shapes, bf16" : "GEMMs of " + a.scenario);
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, CalibrateArgs& a) {
  CLI::App* c = app.add_subcommand(
      "calibrate", "measure this machine's GPU into a calibration profile (needs a GPU and the CUDA harness); "
                   "or import nccl-tests logs; or compare two profiles");
  c->require_subcommand(0, 1);
  const CLI::Validator non_empty = non_empty_value();
  c->add_option("--out", a.out, "profile file to write (JSON)")->check(non_empty);
  c->add_flag("--quick", a.quick, "short grids (< 5 minutes on one H200)");
  c->add_option("--harness", a.harness, "overlapsim-calibrate-harness to run (default: the one next to overlapsim)")
      ->check(non_empty);
  c->add_option("--device", a.device, "device-catalog model to fit against (default: from the GPU's name)")
      ->check(non_empty);
  // Ranges a machine can have (CLI11's NonNegativeNumber/PositiveNumber printed a 300-digit bound).
  c->add_option("--gpu", a.gpu, "CUDA device index to measure (default 0)")->check(CLI::Range(0, 1023));
  c->add_option("--max-gpus", a.max_gpus, "use at most this many GPUs for the collectives")->check(CLI::Range(1, 1024));
  c->add_option("--raw", a.raw, "where to keep the raw measurements (default: PROFILE.raw.json)")->check(non_empty);
  c->add_option("--from-raw", a.from_raw, "fit an existing raw-measurement file instead of measuring")
      ->check(non_empty);

  a.import_cmd = c->add_subcommand("import-nccl-tests", "fit collectives from nccl-tests logs (stdout of *_perf)");
  a.import_cmd->add_option("logs", a.logs, "nccl-tests output files")->required();
  a.import_cmd->add_option("--out", a.out, "profile file to write (JSON)")->required()->check(non_empty);
  a.import_cmd->add_option("--device", a.device, "device-catalog model (default: from the GPU name in the logs)")
      ->check(non_empty);
  a.import_cmd->add_option("--collective", a.collective,
                           "collective of logs that do not name theirs (all_reduce, all_gather, reduce_scatter, "
                           "alltoall, sendrecv, broadcast, reduce)")
      ->check(non_empty);

  a.compare_cmd = c->add_subcommand("compare", "show where two profiles differ and by how much");
  a.compare_cmd->add_option("profile_a", a.profile_a, "first profile (A)")->required();
  a.compare_cmd->add_option("profile_b", a.profile_b, "second profile (B)")->required();
  a.compare_cmd->add_option("--scenario", a.scenario, "compare on the GEMMs this scenario runs")->check(non_empty);
}

int calibrate_command(const CalibrateArgs& a) {
  try {
    if (a.import_cmd && a.import_cmd->parsed()) return import_logs(a);
    if (a.compare_cmd && a.compare_cmd->parsed()) return compare(a);
    return measure(a);
  } catch (const MachineError& e) {
    std::cerr << "overlapsim: calibrate: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace overlapsim::cli
