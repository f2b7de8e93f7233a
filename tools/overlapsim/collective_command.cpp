// `overlapsim collective`: a simulated nccl-tests run, printed in nccl-tests' columns so that a
// simulated curve can sit beside a real all_reduce_perf log; with --compare LOG, beside it on
// each line (the log's collective, rank count and sizes; error = (simulated − measured) / measured
// busbw).
#include "tools/overlapsim/commands.hpp"
#include "tools/overlapsim/collective_inputs.hpp"
#include "tools/overlapsim/collective_table.hpp"

#include "calibrate/gpu_names.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

namespace overlapsim::cli {

namespace {
/// Most ranks `--unfold` simulates (every rank's flows are kept in memory). The most ranks of
/// one collective are the most GPUs of a machine, which load_topology refuses before building
/// (kMaxTopologyGpus, sim/topology.hpp).
constexpr int kMaxUnfoldedRanks = 1024;
/// Most flows per size `--unfold` lets a ring of every rank issue in flow fidelity (members ×
/// channels × steps): SimGrid re-shares every flow at each end, 25-100 µs a flow here (an
/// unfolded AllGather over 520 H100s, 2.2 M flows: 204 s and 376 MB for one size; a 1 GiB ring
/// AllReduce over 128 A100s unfolded, 260 k flows: 8.9 s).
constexpr double kMaxUnfoldedRingFlows = 1 << 20;
/// Most ranks of an AllToAll: its pieces, one per ordered pair of ranks, are routed and timed one
/// by one, so time and memory grow with the square of the ranks (4,096 ranks, 16.8 M pieces: 34 s
/// and 1.8 GB; 16,384 ran past 12 GB and was killed).
constexpr int kMaxAllToAllRanks = 4096;

/// The run of `runs` (the runs of log `path`, read_nccl_tests_logs) to compare: the only one, or
/// the one of --op's collective (`op`), with a note of which it is. Throws InputError naming the
/// runs where --op is missing or names none of them or several.
NcclTestsLog pick_run(const std::vector<NcclTestsLog>& runs, const std::string& path, const std::string& op,
                      std::string* note) {
  if (runs.size() == 1) return runs.front();
  // (read_nccl_tests_logs refuses an empty file: regression, it asked for --op to pick one of "0 runs: ")
  std::string listed;
  for (const NcclTestsLog& r : runs)
    listed += fmt::format("{}{} (rows from line {})", listed.empty() ? "" : ", ", r.collective, r.rows.front().line);
  const SourceLocation where{path, 0, 0};
  if (op.empty())
    throw InputError(where, "", fmt::format("expected --op to pick one of the log's {} runs: {}", runs.size(), listed));
  const std::string want = nccl_tests_collective(op);
  std::vector<size_t> hits;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].collective == want) hits.push_back(i);
  if (hits.empty())
    throw InputError(where, "", fmt::format("expected --op to name one of the log's runs ({}), found '{}'", listed, op));
  if (hits.size() > 1)
    throw InputError(where, "", fmt::format("expected one run of {} in the log, found {} ({}): split the file", want,
                                            hits.size(), listed));
  const NcclTestsLog& r = runs[hits.front()];
  *note = fmt::format("run {} of the log's {} ({}, rows from line {})", hits.front() + 1, runs.size(), r.collective,
                      r.rows.front().line);
  return r;
}

}  // namespace

int collective_command(const CollectiveArgs& a) {
  const SourceLocation cli{"<command line>", 0, 0};
  // --compare: the log says what to run; flags that would say otherwise are refused.
  const bool comparing = !a.compare.empty();
  NcclTestsLog log;
  std::string run_note;  // which of several runs in the log
  if (comparing) {
    // The log's own name for its collective (its "Collective test starting" line or file name)
    // first; --op names it only for a log that does not.
    std::vector<NcclTestsLog> runs;
    try {
      runs = read_nccl_tests_logs(a.compare);
    } catch (const InputError&) {
      if (a.op.empty()) throw;
      runs = read_nccl_tests_logs(a.compare, nccl_tests_collective(a.op));
    }
    log = pick_run(runs, a.compare, a.op, &run_note);
    if (!a.sizes.empty() || a.factor != 0)
      throw InputError(cli, a.sizes.empty() ? "--factor" : "--sizes",
                       "not with --compare: the sizes are the log's (" + a.compare + ")");
  } else if (a.tolerance_pct >= 0) {  // (its check refuses nan: a percentage from 0 to 10^6)
    throw InputError(cli, "--tolerance", "only with --compare LOG (the measurements to hold the simulation to)");
  } else if (!a.compare_from.empty()) {
    throw InputError(cli, "--compare-from", "only with --compare LOG");
  }
  const std::string from_text = a.compare_from.empty() ? "1MiB" : a.compare_from;
  if (a.op.empty() && !comparing) throw InputError(cli, "--op", "expected a collective (or --compare LOG), found none");
  BenchOp op;
  try {
    op = parse_bench_op(comparing && a.op.empty() ? log.collective : a.op);
  } catch (const std::invalid_argument& e) {
    throw InputError(cli, "--op", e.what());
  }
  if (comparing && !a.op.empty() && nccl_tests_collective(a.op) != log.collective)
    throw InputError(cli, "--op", "expected the log's collective (" + log.collective + ", " + a.compare + "), found '" +
                                      a.op + "'");
  TopologyOverrides ov;
  for (const auto& kv : a.overrides) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(cli, "--override", "expected KEY=VALUE, found '" + kv + "'");
    if (!ov.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
      throw InputError(cli, "--override",
                       "'" + kv.substr(0, eq) + "' is given twice; expected each key once");
  }
  // K: the flag's, else (--compare) the log's ranks per host over several hosts.
  const int k = a.ranks_per_node > 0                                        ? a.ranks_per_node
                : comparing && log.nodes > 1 && log.ranks_per_host > 0 ? log.ranks_per_host
                                                                          : 0;
  std::string trimmed_note;
  const Topology topo = load_collective_topology(a.topology, &ov, k, &trimmed_note);
  if (topo.num_gpus() < 2)
    throw InputError(SourceLocation{a.topology, 0, 0}, "node.gpus",
                     fmt::format("the topology has {} GPU; a collective needs at least 2", topo.num_gpus()));
  if (comparing && a.ranks != kAllRanks && a.ranks != log.ranks)
    throw InputError(cli, "--ranks", fmt::format("expected the log's {} ranks ({}), found {}", log.ranks, a.compare, a.ranks));
  // A template topology with a fabric grows by its node count: the node.count that gives
  // `want` GPUs and the GPUs it gives, or {0, 0} where none does (an explicit topology).
  const auto grown = [&](int want) -> std::pair<int, int> {
    if (topo.gpus_per_node <= 0) return {0, 0};
    const int nodes = (want + topo.gpus_per_node - 1) / topo.gpus_per_node;
    TopologyOverrides bigger = ov;
    bigger["node.count"] = std::to_string(nodes);
    try {
      const int gpus = load_topology(a.topology, bigger).num_gpus();
      if (gpus >= want) return {nodes, gpus};
    } catch (const std::exception&) {  // no fabric for more nodes
    }
    return {0, 0};
  };
  std::vector<std::string> notes;
  if (!trimmed_note.empty()) notes.push_back(trimmed_note);
  // Ranks per node: the flag's, else the log's (its rank lines' hosts), else every GPU of a node.
  int rpn = a.ranks_per_node;
  if (comparing && log.ranks_per_host == 0)
    notes.push_back(fmt::format("the log's {} hosts hold different numbers of its {} ranks; simulated on whole nodes "
                                "of the topology, in rank order",
                                log.nodes, log.ranks));
  if (comparing && log.ranks_per_host > 0) {
    const int from_log = log.ranks_per_host;
    if (rpn > 0 && rpn != from_log)
      throw InputError(cli, "--ranks-per-node",
                       fmt::format("expected the log's {} ranks per host ({} ranks on {} host(s), {}), found {}",
                                   from_log, log.ranks, log.nodes, a.compare, rpn));
    if (log.nodes > 1 && topo.gpus_per_node > 0 && from_log > topo.gpus_per_node)
      throw InputError(cli, "--topology",
                       fmt::format("the log ran {} ranks on each of its {} hosts but a node of {} has {} GPU(s): "
                                   "expected nodes of {} or more GPUs",
                                   from_log, log.nodes, topo.name, topo.gpus_per_node, from_log));
    if (log.nodes > 1 && topo.gpus_per_node > 0 && from_log < topo.gpus_per_node) rpn = from_log;
  }
  if (rpn > 0 && topo.gpus_per_node > 0 && rpn > topo.gpus_per_node)
    throw InputError(cli, "--ranks-per-node",
                     fmt::format("expected at most {} (the GPUs of a node of {}), found {}", topo.gpus_per_node,
                                 topo.name, rpn));
  if (rpn > 0 && topo.gpus_per_node > 0 && rpn == topo.gpus_per_node) rpn = 0;
  if (rpn > 0) {
    const int want = comparing ? log.ranks : a.ranks == kAllRanks ? rpn * topo.num_nodes : a.ranks;
    const int nodes = (want + rpn - 1) / rpn;
    if (want >= 2 && nodes > topo.num_nodes) {
      const int fit = grown(nodes * topo.gpus_per_node).first;
      const std::string hint = fit > 0 ? fmt::format("; --override node.count={} gives them", nodes) : std::string();
      throw InputError(comparing ? SourceLocation{a.compare, 0, 0} : cli, "--ranks-per-node",
                       fmt::format("{} ranks at {} per node need {} nodes, {} has {}{}", want, rpn, nodes, topo.name,
                                   topo.num_nodes, hint));
    }
  }
  if (comparing && rpn == 0 && log.ranks > topo.num_gpus()) {
    const int nodes = grown(log.ranks).first;
    const std::string hint = nodes > 0 ? fmt::format("give it more nodes, e.g. --override node.count={}", nodes)
                                       : std::string("a topology of that many GPUs");
    throw InputError(cli, "--topology",
                     fmt::format("the log ran {} ranks but {} has {} GPUs ({})", log.ranks, topo.name, topo.num_gpus(), hint));
  }
  const int capacity = rpn > 0 ? rpn * topo.num_nodes : topo.num_gpus();
  const int ranks = comparing ? log.ranks : a.ranks == kAllRanks ? capacity : a.ranks;
  // One rank has nothing to communicate (nccl-tests would time a local copy, which this does
  // not model): refuse it rather than print zeros.
  if (rpn > 0 && ranks < 2)
    throw InputError(comparing ? SourceLocation{a.compare, 0, 0} : cli, a.ranks == kAllRanks ? "--ranks-per-node" : "--ranks",
                     a.ranks == kAllRanks
                         ? fmt::format("{} per node on the {} node(s) of {} gives {} rank; expected 2 or more (more "
                                       "nodes, or more ranks per node)",
                                       rpn, topo.num_nodes, topo.name, ranks)
                         : fmt::format("expected 2 or more, found {}", ranks));
  if (rpn == 0 && (ranks < 2 || ranks > topo.num_gpus())) {
    // Name the override that fits, where the topology grows by its node count.
    std::string more;
    if (ranks > topo.num_gpus()) {
      const auto [nodes, gpus] = grown(ranks);
      if (nodes > 0) more = fmt::format("; --override node.count={} gives {} GPUs", nodes, gpus);
    }
    throw InputError(comparing ? SourceLocation{a.compare, 0, 0} : cli, "--ranks",
                     fmt::format("expected 2 to {} (the GPUs of {}), found {}{}", topo.num_gpus(), topo.name, ranks, more));
  }
  if (op == BenchOp::AllToAll && ranks > kMaxAllToAllRanks)
    throw InputError(comparing ? SourceLocation{a.compare, 0, 0} : cli, comparing ? "--compare" : "--ranks",
                     fmt::format("an AllToAll over {} ranks is {} point-to-point pieces, each routed and timed; "
                                 "expected at most {} ranks ({} M pieces, about 34 s and 1.8 GB)",
                                 ranks, static_cast<long long>(ranks) * (ranks - 1), kMaxAllToAllRanks,
                                 (static_cast<long long>(kMaxAllToAllRanks) * (kMaxAllToAllRanks - 1) + 500000) / 1000000));
  if (a.unfold && ranks > kMaxUnfoldedRanks)
    throw InputError(cli, "--unfold", fmt::format("simulates every rank; expected at most {} ranks, found {} (drop "
                                                  "--unfold: rank 0 with mirrors times the same collective)",
                                                  kMaxUnfoldedRanks, ranks));
  const DeviceSpec& dev = device_spec(topo.gpu_model());
  const DataType datatype = collective_datatype(a.datatype, comparing ? &log : nullptr, op, ranks, dev, &notes);
  std::vector<double> sizes;
  if (comparing) {
    // A row above the memory of all the log's ranks together could not have run (the same bound
    // as --sizes, collective_sizes): a corrupted size, refused at its line (regression: a row of
    // 2^62 B was simulated and compared, error -100%).
    for (const NcclTestsRow& r : log.rows) {
      if (dev.hbm_bytes > 0 && static_cast<double>(r.size_bytes) > all_ranks_memory_bytes(dev, ranks))
        throw InputError(SourceLocation{a.compare, r.line, 0}, "size",
                         fmt::format("expected at most {}, found {} B: a size no run of the log's ranks could hold",
                                     all_ranks_memory_text(dev, ranks), r.size_bytes));
      sizes.push_back(static_cast<double>(r.size_bytes));
    }
  } else {
    sizes = collective_sizes(a.sizes.empty() ? "8B:8GiB" : a.sizes, a.factor == 0 ? 2.0 : a.factor, op, ranks,
                             datatype, dev, &notes);
  }
  double compare_from = 0;
  try {
    compare_from = parse_bytes(from_text);
  } catch (const std::invalid_argument& e) {
    throw InputError(cli, "--compare-from", e.what());
  }

  const std::string profile_path = a.calibration.empty() ? default_profile_path(dev.model) : a.calibration;
  const Profile profile = load_profile(profile_path);
  if (profile.device != dev.model)
    throw InputError(SourceLocation{profile_path, 0, 0}, "device",
                     fmt::format("profile is for '{}' but the topology's GPUs are '{}'", profile.device, dev.model));
  BenchOptions opt;
  opt.unfold = a.unfold;
  opt.ranks_per_node = rpn;
  const std::vector<int> members = bench_members(topo, ranks, rpn);
  opt.channels = a.channels;
  // The root (Broadcast, Reduce): --root, else the log's root column (one per comparison), else 0.
  const bool rooted = op == BenchOp::Broadcast || op == BenchOp::Reduce;
  // (As --redop for a collective that reduces nothing: said beside the result, not applied.)
  if (a.root >= 0 && !rooted)
    notes.push_back(fmt::format("--root {} leaves {} alone: it has no root", a.root, to_string(op)));
  int logged_root = -1, root_line = 0;
  if (comparing)
    for (const NcclTestsRow& r : log.rows) {
      // nccl-tests prints -1 where the collective has no root, the root rank where it has one.
      if (!rooted && r.root >= 0)
        throw InputError(SourceLocation{a.compare, r.line, 0}, "root",
                         fmt::format("expected -1 ({} has no root), found {}: a log of a rooted collective?",
                                     to_string(op), r.root));
      if (!rooted || r.root == -2) continue;  // (-2: no root column)
      if (r.root < 0)
        throw InputError(SourceLocation{a.compare, r.line, 0}, "root",
                         fmt::format("expected the root rank of the {} (0 or more), found {}", to_string(op), r.root));
      if (logged_root < 0) {
        logged_root = r.root;
        root_line = r.line;
      } else if (r.root != logged_root) {
        throw InputError(SourceLocation{a.compare, r.line, 0}, "root",
                         fmt::format("expected one root per comparison, as line {} ran ({}), found {}", root_line,
                                     logged_root, r.root));
      }
    }
  if (a.root >= 0 && logged_root >= 0 && a.root != logged_root)
    throw InputError(cli, "--root",
                     fmt::format("expected the log's root {} ({}:{}), found {}", logged_root, a.compare, root_line, a.root));
  opt.root = !rooted ? 0 : a.root >= 0 ? a.root : std::max(0, logged_root);  // (noted, not applied, where none)
  if (rooted && opt.root >= ranks)
    throw InputError(a.root >= 0 ? cli : SourceLocation{a.compare, root_line, 0}, a.root >= 0 ? "--root" : "root",
                     fmt::format("expected a rank from 0 to {} (the group's), found {}", ranks - 1, opt.root));
  opt.replay.collectives.datatype = datatype;
  opt.replay.collectives.collnet_enable = a.collnet;
  if (a.collnet && topo.sharp_version == 0)
    notes.push_back("--collnet: the topology's fabric does not reduce in its switches (no fabric.sharp), so CollNet "
                    "cannot run here");
  if (!a.fidelity.empty()) {
    try {
      opt.replay.fidelity = parse_fidelity(a.fidelity);
    } catch (const std::invalid_argument& e) {
      throw InputError(cli, "--fidelity", e.what());
    }
  }
  // The log's NCCL_PROTO / NCCL_ALGO (from NCCL's INFO lines) where the flags do not say, one name
  // or a list as NCCL reads it (sim/nccl_selection.hpp); one algorithm the simulator does not
  // model for the collective (CollNet, Tree for an AllGather) is noted and left automatic.
  if (!run_note.empty()) notes.push_back(run_note);
  std::string protocol = a.protocol.empty() ? "auto" : a.protocol;
  std::string algo = a.algo.empty() ? "auto" : a.algo;
  const auto list_reads = [](const std::string& text, bool algorithms) {
    NcclSelection probe;
    try {
      if (algorithms) parse_nccl_algo_list(text, probe);
      else parse_nccl_proto_list(text, probe);
    } catch (const NcclListError&) {
      return false;
    }
    return true;
  };
  if (comparing && a.protocol.empty() && log.protocol != "auto") {
    Protocol probe;
    if (is_single_nccl_name(log.protocol) ? parse_protocol(log.protocol, &probe) : list_reads(log.protocol, false)) {
      protocol = log.protocol;
      notes.push_back("NCCL_PROTO=" + log.protocol + " as the log ran it");
    } else {
      notes.push_back("the log ran NCCL_PROTO=" + log.protocol + ", which NCCL_PROTO does not read: chosen automatically here");
    }
  }
  // The log's NCCL_ALGO and NCCL_COLLNET_ENABLE where the flags do not say (collective_inputs.hpp).
  unsigned left_out = 0;  // algorithms the log's NCCL did not have
  if (comparing) {
    const ComparedAlgorithm c = compared_algorithm(log, op, a.algo, a.collnet, topo.sharp_version,
                                                   dev.compute_capability, &opt.replay.collectives.collnet_enable,
                                                   &notes);
    algo = c.algo;
    left_out = c.left_out;
  }
  const bool log_algo_list = comparing && a.algo.empty() && !is_single_nccl_name(log.algorithm);
  if (comparing && !a.protocol.empty() && log.protocol != "auto")
    notes.push_back("--protocol " + a.protocol + " in place of the log's NCCL_PROTO=" + log.protocol);
  // A list (NCCL_ALGO=ring,tree; NCCL_PROTO=^LL128): the automatic choice among what it enables.
  const auto list_error = [&](const char* flag, const std::string& value, const NcclListError& e) {
    return InputError(cli, flag, fmt::format("{} (in '{}', at character {})", e.what(), value, e.offset() + 1));
  };
  const bool algo_is_list = !is_single_nccl_name(algo);
  if (algo_is_list) {
    try {
      parse_nccl_algo_list(algo, opt.replay.collectives.allowed);
    } catch (const NcclListError& e) {
      throw list_error("--algo", algo, e);
    }
  }
  if (left_out != 0)
    opt.replay.collectives.allowed.kinds[static_cast<size_t>(bench_collective_kind(op))].algorithms &= ~left_out;
  if (!is_single_nccl_name(protocol)) {
    try {
      parse_nccl_proto_list(protocol, opt.replay.collectives.allowed);
    } catch (const NcclListError& e) {
      throw list_error("--protocol", protocol, e);
    }
    if (op == BenchOp::AllToAll || op == BenchOp::SendRecv)
      notes.push_back("--protocol " + protocol + " leaves " + to_string(op) +
                      " alone: point-to-point messages take LL up to 16 KiB and Simple above (NCCL_P2P_LL_THRESHOLD)");
    protocol = "auto";
  }
  if (ascii_lower(protocol) != "auto") {
    opt.replay.collectives.protocol_auto = false;
    if (!parse_protocol(protocol, &opt.replay.collectives.protocol))
      throw InputError(cli, "--protocol", "expected auto, ll, ll128 or simple, found '" + protocol + "'");
    if (op == BenchOp::AllToAll || op == BenchOp::SendRecv)
      notes.push_back("--protocol " + protocol + " leaves " + to_string(op) +
                      " alone: point-to-point messages take LL up to 16 KiB and Simple above (NCCL_P2P_LL_THRESHOLD)");
  }
  // The reduction: given, or the log's (every row prints the one it ran), else sum.
  const bool reduces = op != BenchOp::SendRecv && overlapsim::reduces(bench_collective_kind(op));
  const char* const redop_names = "sum, prod, max, min, avg or mulsum";
  if (!a.redop.empty() && !parse_reduce_op(a.redop, &opt.replay.collectives.reduce_op))
    throw InputError(cli, "--redop", std::string("expected ") + redop_names + ", found '" + a.redop + "'");

  int logged_line = 0;  // the first row naming its reduction
  if (comparing)
    for (const NcclTestsRow& r : log.rows)
      if (!r.redop.empty() && r.redop != "none") {
        ReduceOp logged = ReduceOp::Sum;
        if (!parse_reduce_op(r.redop, &logged))
          throw InputError(SourceLocation{a.compare, r.line, 0}, "redop",
                           std::string("expected ") + redop_names + ", found '" + r.redop + "'");
        // As for --op: a flag that contradicts the log is refused, not silently applied.
        if (!a.redop.empty() && logged != opt.replay.collectives.reduce_op)
          throw InputError(cli, "--redop",
                           fmt::format("expected the log's {} ({}:{}), found {}", r.redop, a.compare, r.line, a.redop));
        // nccl-tests -o all prints every reduction's rows in one table: one curve per comparison.
        if (logged_line > 0 && logged != opt.replay.collectives.reduce_op)
          throw InputError(SourceLocation{a.compare, r.line, 0}, "redop",
                           fmt::format("expected one reduction per comparison, as line {} ran, found {} (a run of "
                                       "nccl-tests -o all: compare a run of one reduction, e.g. -o sum)",
                                       logged_line, r.redop));
        opt.replay.collectives.reduce_op = logged;
        logged_line = r.line;
      }
  if (!a.redop.empty() && !reduces)
    notes.push_back("--redop " + a.redop + " leaves " + to_string(op) + " alone: it reduces nothing");
  if (!algo_is_list && !parse_algorithm(algo, &opt.algorithm))
    throw InputError(cli, "--algo", "expected auto, ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain, found '" +
                                        algo + "' (or a list as NCCL_ALGO takes it: ring,tree; ^nvls; allreduce:tree;allgather:ring)");
  // Every rank's ring flows: refused where they would take minutes a size (kMaxUnfoldedRingFlows).
  // A forced algorithm other than the ring that can run here runs no ring (the tree, NVLS,
  // NVLS_TREE, PAT, CollNet: their flows are bounded, collective_plan.hpp; regressions: --algo
  // tree over 64 H100 nodes, and --algo nvls with --collnet over 128, were refused for the ring's
  // millions of flows).
  const bool no_ring =
      !algo_is_list && opt.algorithm != CollectiveAlgorithm::Auto && opt.algorithm != CollectiveAlgorithm::Ring &&
      (op == BenchOp::AllReduce || op == BenchOp::AllGather || op == BenchOp::ReduceScatter) &&
      [&] {
        CollectiveOptions o = opt.replay.collectives;
        o.algorithm = opt.algorithm;
        return algorithm_unavailable_reason(topo, members, bench_collective_kind(op), a.channels, o, opt.algorithm)
            .empty();
      }();
  if (a.unfold && opt.replay.fidelity == Fidelity::Flow && !no_ring &&
      (op == BenchOp::AllReduce || op == BenchOp::AllGather || op == BenchOp::ReduceScatter)) {
    const double steps = op == BenchOp::AllReduce ? 2.0 * (ranks - 1) : ranks - 1.0;
    const int channels = a.channels > 0 ? a.channels : 8;
    const double flows = ranks * channels * steps;
    // An AllReduce left to auto or a list may run the tree at some sizes: said, and the tree offered.
    const bool tree_possible = op == BenchOp::AllReduce && opt.algorithm != CollectiveAlgorithm::Ring;
    if (flows > kMaxUnfoldedRingFlows)
      throw InputError(
          cli, "--unfold",
          fmt::format("a ring of every rank{} would simulate about {:.1f} M flows a size ({} ranks x {} "
                      "channels x {:.0f} steps); expected at most {:.1f} M (drop --unfold: rank 0 with "
                      "mirrors times the same collective; or --fidelity analytic{})",
                      tree_possible ? ", which --algo " + (algo_is_list ? algo : std::string(to_string(opt.algorithm))) +
                                          " may run at some of these sizes,"
                                    : "",
                      flows / 1e6, ranks, channels, steps, kMaxUnfoldedRingFlows / 1e6,
                      tree_possible ? "; or --algo tree, which runs no ring" : ""));
  }
  if (comparing) {
    const std::string m = device_model_for_gpu_name(log.gpu_name);
    if (!m.empty() && m != dev.model)
      throw InputError(SourceLocation{a.compare, 0, 0}, "",
                       "expected GPUs of the topology's model (" + dev.model + "), found a log of " + log.gpu_name +
                           " (" + m + "): compare it on a topology of those GPUs (a copy of " +
                           a.topology + " with node.gpus.model: " + m + ")");
    // Not in the catalog but plainly another GPU family (a V100 log on an H100 topology): refused
    // as a catalogued model is; a name of no known family (or none) is compared, with a note.
    const std::string family = gpu_family(log.gpu_name), ours = gpu_family(dev.model);
    if (m.empty() && !family.empty() && !ours.empty() && family != ours)
      throw InputError(SourceLocation{a.compare, 0, 0}, "",
                       "expected GPUs of the topology's model (" + dev.model + ", " + ours + "), found a log of " +
                           log.gpu_name + " (" + family + "): compare it on a topology of those GPUs");
    if (m.empty() && !log.gpu_name.empty())
      notes.push_back("the log's GPUs (" + log.gpu_name + ") are not in the device catalog; compared with " + dev.model);
    if (log.gpu_name.empty())
      notes.push_back("the log names no GPU; compared with " + dev.model);
    const int nodes = topo.node_of(members.back()) + 1;
    if (nodes != log.nodes)
      notes.push_back(fmt::format("the log's ranks ran on {} node(s), here on {}", log.nodes, nodes));
  }
  opt.replay.link_efficiency = LinkEfficiency::of_profile(profile);
  opt.replay.collectives.read_profile(profile);
  if (a.tree_slice_flows >= 0) {
    opt.replay.collectives.tree_slice_flows = a.tree_slice_flows;
    if (opt.replay.fidelity != Fidelity::Flow)
      notes.push_back("--tree-slice-flows leaves analytic fidelity alone");
    else if (op != BenchOp::AllReduce)
      notes.push_back("--tree-slice-flows leaves " + std::string(to_string(op)) + " alone: only an AllReduce runs as a tree");
    else if (a.tree_slice_flows != kMaxTreeSliceFlows)
      notes.push_back(fmt::format("--tree-slice-flows {}: a tree of more per-slice flows runs in bulk (default {})",
                                  a.tree_slice_flows, kMaxTreeSliceFlows));
  }
  opt.replay.measured = profile.collectives;  // analytic: measured times where the profile has them
  if (!sizes.empty() && dev.hbm_bytes > 0 && sizes.back() > dev.hbm_bytes)
    notes.push_back(fmt::format("sizes above {:.0f} B do not fit in one {}'s {:g} GiB of memory: simulated all the same",
                                dev.hbm_bytes, dev.model, dev.hbm_bytes / (1024.0 * 1024 * 1024)));
  const std::string algo_shown = algo_is_list ? opt.replay.collectives.allowed.algo_text : to_string(opt.algorithm);
  const bool algo_forced = opt.algorithm != CollectiveAlgorithm::Auto || algo_is_list;
  const bool p2p = op == BenchOp::AllToAll || op == BenchOp::SendRecv;
  if (algo_forced && p2p) notes.push_back("--algo " + algo_shown + " leaves " + to_string(op) + " alone: point-to-point messages");

  // Per node where not every GPU of a node is a member, or where the nodes were trimmed to K
  // GPUs (then K per node, their full size).
  const int per_node = rpn > 0 ? rpn : trimmed_note.empty() ? 0 : topo.gpus_per_node;
  const CollectiveTable table{op,           ranks,    topo,      topo.node_of(members.back()) + 1,
                              per_node,     opt,      profile_path, comparing ? &log : nullptr,
                              notes,        compare_from, from_text, reduces};
  CollectiveTablePrinter printer(a, table);
  // The rows come as each size is done, as nccl-tests prints them; but for an --algo list, which
  // is refused where it leaves some size nothing that can run (below): its table comes whole
  // once every size has run, so that a refusal is not printed after rows.
  const bool stream = !(algo_is_list && !log_algo_list);
  if (stream) {
    printer.head();
    opt.on_row = [&printer](size_t i, const BenchRow& r) { printer.row(i, r); };
  }
  // A run of minutes (a long sweep over many ranks, or a size of it: a flow replay, or a
  // Broadcast's chain over thousands of GPUs) says every 30 s on stderr that it is still
  // running and how many sizes are done, as `run` does. A watch beside the bench, in both
  // fidelities (a flow sweep of many short sizes, each a replay of seconds, printed nothing for
  // minutes where the replay's own heartbeat counted a size's time alone).
  const std::string running =
      fmt::format("{} over {} ranks, {} size(s) from {:.0f} B to {:.0f} B ({} fidelity)", to_string(op), ranks,
                  sizes.size(), sizes.empty() ? 0.0 : sizes.front(), sizes.empty() ? 0.0 : sizes.back(),
                  to_string(opt.replay.fidelity));
  std::atomic<long long> sizes_done{0};
  opt.sizes_done = &sizes_done;
  std::vector<BenchRow> rows;
  {
    // (Joined however the bench ends, thrown or not.)
    struct Watch {
      std::mutex m;
      std::condition_variable cv;
      bool done = false;
      std::thread thread;
      ~Watch() {
        if (!thread.joinable()) return;
        {
          std::lock_guard<std::mutex> lock(m);
          done = true;
        }
        cv.notify_all();
        thread.join();
      }
    } watch;
    const size_t total = sizes.size();
    watch.thread = std::thread([&watch, &running, &sizes_done, total] {
      const auto began = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(watch.m);
      while (!watch.cv.wait_for(lock, std::chrono::seconds(30), [&watch] { return watch.done; }))
        std::cerr << fmt::format(
            "overlapsim: still simulating {}: running for {:.0f} s, {} of {} size(s) done\n", running,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), sizes_done.load(), total);
    });
    rows = run_collective_bench(topo, op, ranks, sizes, opt);
  }
  // A forced algorithm that cannot run here gives what NCCL would run instead (the last column
  // says which); say so once rather than let the column alone tell. A list that leaves a size
  // nothing that can run is refused, as NCCL 2.24 and later fail the call; one from a log (NCCL
  // ran something there: CollNet, which is not modelled) is noted.
  if (algo_forced && !p2p) {
    int other = 0;
    std::string ran;
    const BenchRow* first = nullptr;
    for (const BenchRow& r : rows)
      if (r.fallback) {
        ++other;
        if (ran.empty()) ran = r.plan.substr(0, r.plan.find('/'));
        if (first == nullptr) first = &r;
      }
    if (other > 0 && algo_is_list && !log_algo_list)
      throw InputError(cli, "--algo",
                       fmt::format("expected a list that leaves {} over {} ranks an algorithm that can run here, found "
                                   "'{}' (NCCL_ALGO={}), which leaves none at {} of {} size(s), from {:.0f} B ({})",
                                   to_string(op), ranks, algo, algo_shown, other, rows.size(), first->size_bytes,
                                   forced_algorithm_reason(algo_shown)));
    // One forced algorithm: the condition that failed (the same for every size), else every condition.
    std::string why;
    if (!algo_is_list)
      why = algorithm_unavailable_reason(topo, members, bench_collective_kind(op), opt.channels, opt.replay.collectives,
                                         opt.algorithm);
    if (other > 0)
      notes.push_back(
          why.empty()
              ? fmt::format("{} did not run at {} of {} size(s), {} ran instead ({})",
                            (log_algo_list ? "NCCL_ALGO=" : "--algo ") + algo_shown, other, rows.size(), ran,
                            forced_algorithm_reason(algo_shown))
              : fmt::format("{} did not run at {} of {} size(s), {} ran instead: {} (NCCL 2.24 and later, given "
                            "NCCL_ALGO={} where it cannot run, fail the call)",
                            // The log's NCCL_ALGO, where --algo did not name one.
                            (comparing && a.algo.empty() ? "the log's NCCL_ALGO=" : "--algo ") + algo_shown, other,
                            rows.size(), ran, why, algo_shown));
  }

  // NVLS inside one node and NVLS_TREE run on NCCL's NVLS channels (NCCL_NVLS_NCHANNELS, bounded
  // by the CTA settings), which NCCL_MIN/MAX_NCHANNELS do not set (src/transport/nvls.cc):
  // --channels leaves their rows as they are, said once (NVLS across nodes takes the fewer of
  // those and the communicator's, which --channels sets).
  if (a.channels > 1) {
    const bool one_node = node_count(topo, members) <= 1;
    int nvls_rows = 0;
    for (const BenchRow& r : rows)
      if ((one_node && r.plan.rfind("nvls/", 0) == 0) || r.plan.rfind("nvlstree/", 0) == 0) ++nvls_rows;
    if (nvls_rows > 0)
      notes.push_back(fmt::format("--channels {}: the {} size(s) run on NVLS or NVLSTree use NCCL's NVLS channels, "
                                  "which NCCL_MIN/MAX_NCHANNELS do not set",
                                  a.channels, nvls_rows));
  }

  if (!stream) {
    printer.head();
    for (size_t i = 0; i < rows.size(); ++i) printer.row(i, rows[i]);
  }
  return printer.tail();
}

}  // namespace overlapsim::cli
