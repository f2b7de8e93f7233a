// What `overlapsim collective` takes from its flags before it simulates (collective_inputs.hpp).
#include "tools/overlapsim/collective_inputs.hpp"

#include "calibrate/nccl_tests_rows.hpp"
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/nccl_constants.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

namespace overlapsim::cli {

namespace {
const SourceLocation kCommandLine{"<command line>", 0, 0};

/// Whether NCCL version `version` ("2.18.5") is before `major`.`minor`; false where it does not
/// read as MAJOR.MINOR (unknown: "").
bool nccl_version_before(const std::string& version, int major, int minor) {
  int v_major = 0, v_minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &v_major, &v_minor) != 2) return false;
  return v_major < major || (v_major == major && v_minor < minor);
}

/// Whether NCCL_ALGO's list `text` enables algorithm `a` for `kind` (false where it does not read).
bool nccl_algo_list_enables(const std::string& text, CollectiveKind kind, CollectiveAlgorithm a) {
  NcclSelection sel;
  try {
    parse_nccl_algo_list(text, sel);
  } catch (const NcclListError&) {
    return false;
  }
  return sel.of(kind).has(a);
}

/// An algorithm a log's NCCL did not have for its collective: what it is called there and the
/// first NCCL that has it, and whether it runs only with CollNet.
struct Missing {
  CollectiveAlgorithm alg;
  std::string what;  // "NVLS across nodes"
  const char* since;
  bool collnet;
};

/// The algorithms NCCL `version` ("" or unreadable: none) lacks for `op` over `nodes` nodes, by
/// the NCCL release that brought each (the first NCCL that has it, as collective_plan.hpp gives
/// it): NVLS, an AllReduce in one node, 2.17; NVLS_TREE and NVLS across nodes with CollNet (an
/// AllReduce) 2.18; NVLS AllGather and ReduceScatter in one node 2.19; CollNet's AllGather and
/// ReduceScatter, CollNetDirect's and NVLS's across nodes, 2.20; PAT 2.23.
std::vector<Missing> missing_algorithms(const std::string& version, BenchOp op, int nodes) {
  const bool gather = op == BenchOp::AllGather || op == BenchOp::ReduceScatter;
  const bool across = nodes > 1;
  std::vector<Missing> out;
  const auto before = [&](int minor) { return nccl_version_before(version, 2, minor); };
  using A = CollectiveAlgorithm;
  if (op == BenchOp::AllReduce) {
    if (across ? before(18) : before(17))
      out.push_back({A::Nvls, across ? "NVLS across nodes" : "NVLS", across ? "2.18" : "2.17", across});
    if (across && before(18)) out.push_back({A::NvlsTree, "NVLSTree", "2.18", false});
  } else if (gather) {
    if (across ? before(20) : before(19))
      out.push_back({A::Nvls, across ? "NVLS across nodes" : "NVLS", across ? "2.20" : "2.19", across});
    if (across && before(20)) out.push_back({A::CollnetDirect, "CollNetDirect", "2.20", true});
    if (across && before(23)) out.push_back({A::Pat, "PAT", "2.23", false});
  }
  return out;
}
}  // namespace

double counted_bytes(BenchOp op, int ranks, DataType type) {
  return static_cast<double>(datatype_bytes(type)) * nccl_tests_count_ranks(op, ranks);
}

DataType collective_datatype(const std::string& flag, const NcclTestsLog* log, BenchOp op, int ranks,
                             const DeviceSpec& dev, std::vector<std::string>* notes) {
  const char* const names = "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3 or "
                            "f8e5m2 (nccl-tests -d; also fp16, bf16, fp32, fp64, fp8e4m3, fp8e5m2)";
  DataType type = DataType::Float32;
  if (!flag.empty() && !parse_datatype(flag, &type))
    throw InputError(kCommandLine, "--datatype", fmt::format("expected {}, found '{}'", names, flag));
  // The log's type column: every row prints its type; one per comparison.
  int logged_line = 0;  // the first row naming its type
  std::string logged_name;
  if (log)
    for (const NcclTestsRow& r : log->rows) {
      if (r.type.empty()) continue;
      // The names nccl-tests prints (the reader's rule, type_bytes), as printed: "half", not "HALF".
      DataType logged = DataType::Float32;
      if (type_bytes(r.type) == 0 || !parse_datatype(r.type, &logged))
        throw InputError(SourceLocation{log->path, r.line, 0}, "type",
                         fmt::format("expected a type nccl-tests prints (int8, uint8, int32, uint32, int64, uint64, "
                                     "half, float, double, bfloat16, f8e4m3, f8e5m2; before NCCL 2 char, int), "
                                     "found '{}'",
                                     r.type));
      // As for --redop: a flag that contradicts the log is refused, not silently applied.
      if (!flag.empty() && logged != type)
        throw InputError(kCommandLine, "--datatype",
                         fmt::format("expected the log's {} ({}:{}), found {}", r.type, log->path, r.line, flag));
      if (logged_line > 0 && logged != type)
        throw InputError(SourceLocation{log->path, r.line, 0}, "type",
                         fmt::format("expected one type per comparison, as line {} ran ({}), found {} (a run of "
                                     "nccl-tests -d all: compare a run of one type, e.g. -d float)",
                                     logged_line, logged_name, r.type));
      type = logged;
      if (logged_line == 0) logged_line = r.line, logged_name = r.type;
    }
  if (logged_line > 0 && flag.empty() && type != DataType::Float32)
    notes->push_back(fmt::format("{} elements, as the log ran them", to_string(type)));
  // (A SendRecv reduces nothing, as an AllGather.)
  const CollectiveKind kind = op == BenchOp::SendRecv ? CollectiveKind::AllGather : bench_collective_kind(op);
  if (!nccl_has_kernel(kind, type, dev.compute_capability))
    throw InputError(logged_line > 0 && flag.empty() ? SourceLocation{log->path, logged_line, 0} : kCommandLine,
                     logged_line > 0 && flag.empty() ? "type" : "--datatype",
                     fmt::format("expected a type NCCL reduces on {} (compute capability {}.{}), found {}: NCCL builds "
                                 "its fp8 reductions for compute capability 9.0 and later only (src/device/generate.py)",
                                 dev.model, dev.compute_capability / 10, dev.compute_capability % 10, to_string(type)));
  if (is_fp8(type) && reduces(kind) && ranks > nccl::kFp8RingMaxRanks)
    notes->push_back(fmt::format("{} reductions over more than {} ranks: NCCL's tuner weighs the ring's time x{} "
                                 "(src/enqueue.cc), so an automatic choice takes another algorithm wherever one "
                                 "can run (the algorithm column says which ran)",
                                 to_string(type), nccl::kFp8RingMaxRanks, nccl::kFp8RingRelegation));
  return type;
}

ComparedAlgorithm compared_algorithm(const NcclTestsLog& log, BenchOp op, const std::string& flag_algo,
                                     bool flag_collnet, int sharp_version, int compute_capability,
                                     bool* collnet_enable, std::vector<std::string>* notes) {
  ComparedAlgorithm r;
  std::string& algo = r.algo;
  algo = flag_algo.empty() ? "auto" : flag_algo;
  // What the log's NCCL did not have for its collective (missing_algorithms; unknown version:
  // nothing) runs in no comparison: a forced one runs the ring, and the automatic choice or a
  // list goes without it (below).
  const bool gather = op == BenchOp::AllGather || op == BenchOp::ReduceScatter;
  const std::vector<Missing> missing = missing_algorithms(log.nccl_version, op, log.nodes);
  unsigned missing_bits = 0;
  for (const Missing& x : missing) missing_bits |= algorithm_bit(x.alg);
  const auto missing_why = [&](const Missing& x) {
    return "NCCL " + log.nccl_version + " (the log's) cannot run " + x.what + " for " + log.collective + " (it came in NCCL " +
           x.since + ")";
  };
  // A log that set NCCL_COLLNET_ENABLE (its NCCL INFO line) runs with it; one that set it to 0
  // keeps CollNet off even where its NCCL_ALGO names an algorithm that needs it (below).
  const char* no_sharp = sharp_version == 0 ? " (the topology's fabric does not reduce in its switches, no "
                                              "fabric.sharp: CollNet cannot run here)"
                                            : "";
  if (log.collnet_enable == 1 && !flag_collnet) {
    *collnet_enable = true;
    notes->push_back(std::string("NCCL_COLLNET_ENABLE=1 as the log ran it") + no_sharp);
  }
  const bool log_algo_list = flag_algo.empty() && !is_single_nccl_name(log.algorithm);
  if (flag_algo.empty() && log.algorithm != "auto") {
    CollectiveAlgorithm probe = CollectiveAlgorithm::Auto;
    const auto list_reads = [](const std::string& text) {
      NcclSelection sel;
      try {
        parse_nccl_algo_list(text, sel);
      } catch (const NcclListError&) {
        return false;
      }
      return true;
    };
    if (log_algo_list ? list_reads(log.algorithm)
                      : parse_algorithm(log.algorithm, &probe) &&
                            (probe == CollectiveAlgorithm::Ring ||
                             (probe == CollectiveAlgorithm::Pat ? gather
                              : probe == CollectiveAlgorithm::CollnetDirect || probe == CollectiveAlgorithm::Nvls
                                  ? gather || op == BenchOp::AllReduce
                                  : op == BenchOp::AllReduce))) {
      algo = log.algorithm;
      const auto lacks = std::find_if(missing.begin(), missing.end(), [&](const Missing& x) { return x.alg == probe; });
      if (!log_algo_list && lacks != missing.end()) {
        algo = "ring";
        notes->push_back("the log ran NCCL_ALGO=" + log.algorithm + ", which " + missing_why(*lacks) +
                         ": the ring here (NCCL before 2.24 ran the ring where NCCL_ALGO left nothing that can run)");
      } else {
        notes->push_back("NCCL_ALGO=" + log.algorithm + " as the log ran it");
      }
      // NCCL runs CollNet, and NVLS across nodes, only with NCCL_COLLNET_ENABLE=1. A log whose
      // NCCL_ALGO names one for its collective (one name, or a list that lists it:
      // "CollNetDirect,Ring") and does not say how NCCL_COLLNET_ENABLE was set had it on; one that
      // set it to 0 could not run it. A list that excludes ("^ring") enables CollNet without
      // naming it: NCCL ran CollNet there only where the job set NCCL_COLLNET_ENABLE=1 too, which
      // such a log does not say, so CollNet stays as the log left it.
      unsigned collnet_bits = algorithm_bit(CollectiveAlgorithm::CollnetDirect) |
                              algorithm_bit(CollectiveAlgorithm::CollnetChain);
      if ((op == BenchOp::AllReduce || gather) && log.nodes > 1) collnet_bits |= algorithm_bit(CollectiveAlgorithm::Nvls);
      collnet_bits &= ~missing_bits;  // (which the log's NCCL did not run)
      const unsigned needs =
          collnet_bits & (!log_algo_list ? algorithm_bit(probe)
                          : op == BenchOp::SendRecv ? 0u
                                                    : nccl_algo_list_named(log.algorithm, bench_collective_kind(op)));
      // Of a list, what needs it: "the CollNetChain and NVLS across nodes of NCCL_ALGO=collnetchain,nvls".
      std::string listed;
      int named = 0;
      for (CollectiveAlgorithm x : {CollectiveAlgorithm::CollnetDirect, CollectiveAlgorithm::CollnetChain,
                                    CollectiveAlgorithm::Nvls})
        if ((needs & algorithm_bit(x)) != 0)
          listed += std::string(named++ == 0 ? "the " : " and ") + nccl_algo_name(x) +
                    (x == CollectiveAlgorithm::Nvls ? " across nodes" : "");
      listed += " of NCCL_ALGO=" + log.algorithm;
      const char* across = probe == CollectiveAlgorithm::Nvls ? " across nodes" : "";
      if (needs != 0 && !*collnet_enable && log.collnet_enable == -1) {
        *collnet_enable = true;
        notes->push_back("NCCL_COLLNET_ENABLE=1, which " +
                         (log_algo_list ? listed + (named > 1 ? " need" : " needs")
                                        : "NCCL_ALGO=" + log.algorithm + " needs" + across) +
                         no_sharp);
      } else if (needs != 0 && !*collnet_enable) {
        notes->push_back("the log set NCCL_COLLNET_ENABLE=0, with which NCCL cannot run " +
                         (log_algo_list ? listed : "NCCL_ALGO=" + log.algorithm + across));
      }
    } else {
      notes->push_back("the log ran NCCL_ALGO=" + log.algorithm + ", which is not " +
                       (log_algo_list ? "a list NCCL_ALGO reads" : "one algorithm modelled for " + log.collective) +
                       ": chosen automatically here");
    }
  }
  // A flag that overrides what the log ran is the user's question, said beside the result.
  if (!flag_algo.empty() && log.algorithm != "auto")
    notes->push_back("--algo " + flag_algo + " in place of the log's NCCL_ALGO=" + log.algorithm);
  // A forced name the log's NCCL did not have runs as NCCL_ALGO=that name ran there: the ring
  // (regression: --algo nvls on an NCCL 2.18 AllGather log ran NVLS, which came in 2.19).
  if (!flag_algo.empty() && is_single_nccl_name(flag_algo)) {
    CollectiveAlgorithm forced = CollectiveAlgorithm::Auto;
    if (parse_algorithm(flag_algo, &forced)) {
      const auto lacks = std::find_if(missing.begin(), missing.end(), [&](const Missing& x) { return x.alg == forced; });
      if (lacks != missing.end()) {
        algo = "ring";
        notes->push_back("--algo " + flag_algo + ": " + missing_why(*lacks) +
                         ": the ring here, as that NCCL ran NCCL_ALGO=" + flag_algo);
      }
    }
  }
  if (flag_collnet && log.collnet_enable == 0)
    notes->push_back("--collnet in place of the log's NCCL_COLLNET_ENABLE=0");
  // The automatic choice (no --algo, or --algo auto), or the log's list: without what the log's
  // NCCL did not have among what it would take (what runs only with CollNet where CollNet is on);
  // collective_command.cpp leaves them out.
  const bool automatic = ascii_lower(algo) == "auto";
  if ((flag_algo.empty() || automatic || !is_single_nccl_name(algo)) && op != BenchOp::SendRecv &&
      op != BenchOp::AllToAll) {
    std::vector<std::string> said;
    for (const Missing& x : missing) {
      const bool enabled =
          automatic || (!is_single_nccl_name(algo) && nccl_algo_list_enables(algo, bench_collective_kind(op), x.alg));
      // (Said only where it could run here: NVLS on Hopper or later, PAT over one rank a node.)
      const bool could_run = x.alg == CollectiveAlgorithm::Pat ? log.ranks == log.nodes
                             : x.alg == CollectiveAlgorithm::Nvls || x.alg == CollectiveAlgorithm::NvlsTree
                                 ? compute_capability >= 90
                                 : true;
      if (!enabled || !could_run || (x.collnet && !*collnet_enable)) continue;
      r.left_out |= algorithm_bit(x.alg);
      said.push_back(missing_why(x));
    }
    for (const std::string& why : said) notes->push_back(why + ": left out here");
  }
  return r;
}

Topology load_collective_topology(const std::string& path, TopologyOverrides* ov, int k, std::string* trimmed_note) {
  // K ranks a node on more nodes than the machine limit allows at the nodes' full GPU count
  // (4096 nodes of 8 GPUs at one a node): the nodes are loaded with their first K GPUs, which
  // are the GPUs the collective takes, with their NICs (one per GPU, attach: per-gpu) and their
  // places in the rails; a test holds one GPU of each of 10 DGX H100 nodes to 10 one-GPU nodes.
  try {
    return load_topology(path, *ov);
  } catch (const InputError& e) {
    if (e.key() != "node.count" || k <= 0 || ov->count("node.gpus.count") > 0) throw;
    // K at the nodes' full size trims nothing (the error as it is); above it, K's own error.
    TopologyOverrides one_node = *ov;
    one_node["node.count"] = "1";
    std::optional<Topology> node;
    try {
      node.emplace(load_topology(path, one_node));
    } catch (const InputError&) {
      throw e;  // (one node does not load either)
    }
    if (k > node->gpus_per_node)  // its own error, as where the nodes load (collective_command.cpp)
      throw InputError(kCommandLine, "--ranks-per-node",
                       fmt::format("expected at most {} (the GPUs of a node of {}), found {}", node->gpus_per_node,
                                   node->name, k));
    if (k == node->gpus_per_node) throw;
    TopologyOverrides trimmed = *ov;
    trimmed["node.gpus.count"] = std::to_string(k);
    try {
      Topology t = load_topology(path, trimmed);
      *trimmed_note = fmt::format("the nodes loaded with their first {} GPU(s) and NIC(s) only (node.gpus.count={}): "
                                  "at their full size they pass the machine limit ({})",
                                  k, k, e.message());
      *ov = trimmed;  // what every later load (the command's node-count hints) grows from
      return t;
    } catch (const InputError& trimmed_error) {
      // Past the limit even so: its own count, which says why no trimming helped. (The same
      // message: node.count itself is wrong, which no trimming changes.)
      if (trimmed_error.key() != "node.count" || trimmed_error.message() == e.message()) throw e;
      throw InputError(trimmed_error.where(), trimmed_error.key(),
                       fmt::format("{}; that is with the nodes loaded with only the {} GPU(s) a node the "
                                   "collective takes", trimmed_error.message(), k));
    }
  }
}

double all_ranks_memory_bytes(const DeviceSpec& dev, int ranks) { return dev.hbm_bytes * ranks; }

std::string all_ranks_memory_text(const DeviceSpec& dev, int ranks) {
  return fmt::format("{:.0f} B, the memory of all {} ranks together ({} x {:g} GiB of {})",
                     all_ranks_memory_bytes(dev, ranks), ranks, ranks, dev.hbm_bytes / (1024.0 * 1024 * 1024),
                     dev.model);
}

std::vector<double> collective_sizes(const std::string& range, double factor, BenchOp op, int ranks,
                                     DataType type, const DeviceSpec& dev, std::vector<std::string>* notes) {
  const SourceLocation& cli = kCommandLine;
  std::vector<double> sizes;
  const auto colon = range.find(':');
  if (colon == std::string::npos) throw InputError(cli, "--sizes", "expected FROM:TO such as 8B:8GiB, found '" + range + "'");
  try {
    const double from = parse_bytes(range.substr(0, colon)), to = parse_bytes(range.substr(colon + 1));
    // nccl-tests counts elements: below one the count is 0 and nothing moves; a size between
    // whole elements moves count · element bytes, which is the size it reports (5B of floats
    // reads 4).
    const int element = datatype_bytes(type);
    if (from != std::floor(from) || to != std::floor(to) || from < element)
      throw std::invalid_argument(fmt::format("expected whole numbers of bytes >= {}B (one {}, the element counted)",
                                              element, to_string(type)));
    if (from > to)
      throw std::invalid_argument(fmt::format("expected the first size at most the last, found {} B > {} B", from, to));
    // A size is nccl-tests' size: the per-rank buffer, the largest buffer each rank holds (send
    // and receive buffer alike for AllReduce, Broadcast, Reduce, AllToAll and SendRecv, the
    // gathered output for AllGather, the input for ReduceScatter). So one above one GPU's
    // memory (the device catalog's HBM) would fail to allocate on a real machine; but nothing is
    // allocated here, and the model's time for it (where the bandwidth curve goes) can still be
    // asked for, so that is only noted, below. One above the memory of all the ranks together
    // would not fit even spread over every rank, so it is no machine's (16384PiB written for
    // 16384GiB, say): refused; and below that limit every size and element count is exact in
    // a double (16,384 ranks of 141 GiB < 2^53 B).
    if (dev.hbm_bytes > 0 && to > all_ranks_memory_bytes(dev, ranks))
      throw std::invalid_argument(
          fmt::format("expected sizes of at most {}, found {:.0f} B", all_ranks_memory_text(dev, ranks), to));
    sizes = size_range(from, to, factor);
    // The size nccl-tests runs and prints for each: what its element count makes (src/common.cu
    // setupArgs: count = size / element bytes, 4 for floats; AllGather, ReduceScatter and
    // AllToAll take count / ranks elements a rank, GetCollByteCount), element bytes · count,
    // times the ranks for those three (100 B of float AllGather over 8 ranks runs and reads
    // 96 B). A size that holds no element a rank is a call of 0 elements there, nothing to time:
    // left out, with a note.
    const double unit = counted_bytes(op, ranks, type);
    // (Said where a size asked for is not what runs: 5B of floats is 4B, as nccl-tests prints it.)
    std::string rounded;
    int rounded_count = 0;
    for (double& s : sizes) {
      const double runs = unit * std::floor(s / unit);
      if (runs != s && runs > 0 && ++rounded_count <= 3)
        rounded += fmt::format("{}{:.0f} B runs as {:.0f} B", rounded.empty() ? "" : ", ", s, runs);
      s = runs;
    }
    if (rounded_count > 0)
      notes->push_back(fmt::format("{}{}: nccl-tests runs and prints whole multiples of {:.0f} B for {} of {} over "
                                   "{} ranks (whole elements{})",
                                   rounded, rounded_count > 3 ? fmt::format(" and {} more", rounded_count - 3) : "",
                                   unit, to_string(op), to_string(type), ranks,
                                   unit > datatype_bytes(type) ? " a rank" : ""));
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (!sizes.empty() && sizes.front() == 0) {
      sizes.erase(sizes.begin());
      if (sizes.empty())
        throw std::invalid_argument(fmt::format(
            "expected a size of at least {:.0f} B for {} over {} ranks (one {} a rank), found at most {:.0f} B",
            unit, to_string(op), ranks, to_string(type), to));
      notes->push_back(fmt::format("sizes below {:.0f} B hold no {} a rank for {} over {} ranks (nccl-tests runs "
                                  "them as 0 elements): left out",
                                  unit, to_string(type), to_string(op), ranks));
    }
  } catch (const std::invalid_argument& e) {
    throw InputError(cli, "--sizes", std::string(e.what()) + " (in '" + range + "')");
  }
  return sizes;
}

}  // namespace overlapsim::cli
