// `overlapsim collective`: a simulated nccl-tests run, printed in nccl-tests' columns so that a
// simulated curve can sit beside a real all_reduce_perf log.
#include "tools/overlapsim/commands.hpp"

#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iostream>

namespace overlapsim::cli {

namespace {
/// Most ranks `--unfold` simulates (every rank's flows are kept in memory).
constexpr int kMaxUnfoldedRanks = 1024;
/// Most ranks of one collective: design §9's largest machine (16,384 GPUs). A tree's mirrors and
/// the platform's routes grow with the group (measured: 3.3 GB at 16,384 ranks, 13 GB at 32,768).
constexpr int kMaxRanks = 16384;
}  // namespace

void add_collective_command(CLI::App& app, CollectiveArgs& a) {
  CLI::App* c = app.add_subcommand("collective", "time one collective over sizes, in nccl-tests' terms");
  c->add_option("--op", a.op, "allreduce | allgather | reducescatter | alltoall | broadcast | reduce | sendrecv")
      ->required();
  c->add_option("--ranks,-n", a.ranks, "GPUs taking part (2 or more): ranks 0..N-1 of the topology (default: all)");
  c->add_option("--topology,-t", a.topology, "topology YAML file")->required();
  c->add_option("--override", a.overrides, "topology override KEY=VALUE, e.g. node.count=16 (repeatable)");
  c->add_option("--sizes", a.sizes, "FROM:TO with units, e.g. 8B:8GiB (nccl-tests -b/-e)");
  c->add_option("--factor,-f", a.factor, "size multiplication factor (nccl-tests -f)")->check(CLI::Range(2, 1 << 20));
  c->add_option("--fidelity", a.fidelity, "flow | analytic");
  c->add_option("--protocol", a.protocol, "auto | ll | ll128 | simple (NCCL_PROTO)");
  c->add_option("--algo", a.algo, "auto | ring | tree | nvls (NCCL_ALGO; tree and nvls apply to allreduce only; nvls inside one Hopper NVSwitch node, else the ring)");
  c->add_option("--channels", a.channels, "rings per collective (default 8; NCCL_MIN/MAX_NCHANNELS)")
      ->check(CLI::Range(1, 64));
  c->add_option("--calibration", a.calibration, "profile JSON (default: the GPU's datasheet profile)");
  c->add_flag("--unfold", a.unfold, "simulate every rank instead of rank 0 with mirrors");
}

int collective_command(const CollectiveArgs& a) {
  const SourceLocation cli{"<command line>", 0, 0};
  BenchOp op;
  try {
    op = parse_bench_op(a.op);
  } catch (const std::invalid_argument& e) {
    throw InputError(cli, "--op", e.what());
  }
  TopologyOverrides ov;
  for (const auto& kv : a.overrides) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(cli, "--override", "expected KEY=VALUE, found '" + kv + "'");
    ov[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const Topology topo = load_topology(a.topology, ov);
  if (topo.num_gpus() < 2)
    throw InputError(SourceLocation{a.topology, 0, 0}, "node.gpus",
                     fmt::format("the topology has {} GPU; a collective needs at least 2", topo.num_gpus()));
  const int ranks = a.ranks == kAllRanks ? topo.num_gpus() : a.ranks;
  // One rank has nothing to communicate (nccl-tests would time a local copy, which this does
  // not model): refuse it rather than print zeros.
  if (ranks < 2 || ranks > topo.num_gpus())
    throw InputError(cli, "--ranks", fmt::format("expected 2 to {} (the GPUs of {}), found {}", topo.num_gpus(),
                                                 topo.name, ranks));
  if (ranks > kMaxRanks)
    throw InputError(cli, "--ranks", fmt::format("expected at most {} ranks in one collective, found {} (the "
                                                 "topology's GPUs unless --ranks says fewer)",
                                                 kMaxRanks, ranks));
  if (a.unfold && ranks > kMaxUnfoldedRanks)
    throw InputError(cli, "--unfold", fmt::format("simulates every rank; expected at most {} ranks, found {} (drop "
                                                  "--unfold: rank 0 with mirrors times the same collective)",
                                                  kMaxUnfoldedRanks, ranks));
  const auto colon = a.sizes.find(':');
  if (colon == std::string::npos) throw InputError(cli, "--sizes", "expected FROM:TO such as 8B:8GiB, found '" + a.sizes + "'");
  std::vector<double> sizes;
  try {
    const double from = parse_bytes(a.sizes.substr(0, colon)), to = parse_bytes(a.sizes.substr(colon + 1));
    if (from != std::floor(from) || to != std::floor(to) || from < 1)
      throw std::invalid_argument("expected whole numbers of bytes >= 1B");
    sizes = size_range(from, to, a.factor);
    for (double& s : sizes) s = std::floor(s);
  } catch (const std::invalid_argument& e) {
    throw InputError(cli, "--sizes", std::string(e.what()) + " (in '" + a.sizes + "')");
  }

  const DeviceSpec& dev = device_spec(topo.gpu_model());
  const std::string profile_path = a.calibration.empty() ? default_profile_path(dev.model) : a.calibration;
  const Profile profile = load_profile(profile_path);
  if (profile.device != dev.model)
    throw InputError(SourceLocation{profile_path, 0, 0}, "device",
                     fmt::format("profile is for '{}' but the topology's GPUs are '{}'", profile.device, dev.model));
  BenchOptions opt;
  opt.unfold = a.unfold;
  opt.channels = a.channels;
  if (!a.fidelity.empty()) {
    try {
      opt.replay.fidelity = parse_fidelity(a.fidelity);
    } catch (const std::invalid_argument& e) {
      throw InputError(cli, "--fidelity", e.what());
    }
  }
  if (ascii_lower(a.protocol) != "auto") {
    opt.replay.collectives.protocol_auto = false;
    if (!parse_protocol(a.protocol, &opt.replay.collectives.protocol))
      throw InputError(cli, "--protocol", "expected auto, ll, ll128 or simple, found '" + a.protocol + "'");
  }
  if (!parse_algorithm(a.algo, &opt.algorithm))
    throw InputError(cli, "--algo", "expected auto, ring, tree or nvls, found '" + a.algo + "'");
  opt.replay.link_efficiency.nvlink = profile.nvlink_efficiency;
  opt.replay.link_efficiency.network = profile.network_efficiency;
  opt.replay.link_efficiency.pcie = profile.pcie_efficiency;
  opt.replay.collectives.tuning = profile.tuning;
  opt.replay.measured = profile.collectives;  // analytic: measured times where the profile has them
  const std::vector<BenchRow> rows = run_collective_bench(topo, op, ranks, sizes, opt);

  std::cout << fmt::format("# overlapsim collective: {} over {} of {} GPUs of {} ({}), {} fidelity, profile {}\n",
                           to_string(op), ranks, topo.num_gpus(), topo.name, topo.gpu_model(),
                           to_string(opt.replay.fidelity), profile_path);
  std::cout << fmt::format("# {:>12} {:>12} {:>6} {:>6} {:>6} {:>10} {:>8} {:>8}  {}\n", "size", "count", "type",
                           "redop", "root", "time", "algbw", "busbw", "algorithm");
  std::cout << fmt::format("# {:>12} {:>12} {:>6} {:>6} {:>6} {:>10} {:>8} {:>8}  {}\n", "(B)", "(elements)", "", "", "",
                           "(us)", "(GB/s)", "(GB/s)", "(/protocol/channels)");
  const bool rooted = op == BenchOp::Broadcast || op == BenchOp::Reduce;
  const bool reduces = op == BenchOp::AllReduce || op == BenchOp::ReduceScatter || op == BenchOp::Reduce;
  double sum_busbw = 0;
  for (const auto& r : rows) {
    std::cout << fmt::format("  {:>12.0f} {:>12.0f} {:>6} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}  {}\n", r.size_bytes,
                             std::floor(r.size_bytes / 4), "float", reduces ? "sum" : "none", rooted ? "0" : "-1", r.time_s * 1e6,
                             r.algbw_Bps / 1e9, r.busbw_Bps / 1e9, r.plan);
    sum_busbw += r.busbw_Bps;
  }
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n", rows.empty() ? 0.0 : sum_busbw / rows.size() / 1e9);
  return 0;
}

}  // namespace overlapsim::cli
