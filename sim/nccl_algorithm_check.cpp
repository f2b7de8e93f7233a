#include "sim/nccl_algorithm_check.hpp"

#include "sim/collective_plan.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <utility>

namespace overlapsim {

namespace {

std::string size_text(double bytes) {
  const double mib = 1024.0 * 1024;
  if (bytes >= mib) return fmt::format("{:.4g} MiB", bytes / mib);
  if (bytes >= 1024) return fmt::format("{:.4g} KiB", bytes / 1024);
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace

NcclAlgorithmCheck::NcclAlgorithmCheck(const NcclEnvironment& env, std::string scenario_path)
    : env_(env),
      path_(std::move(scenario_path)),
      active_(env.algorithm != CollectiveAlgorithm::Auto || !env.lists.algo_text.empty()) {}

void NcclAlgorithmCheck::check(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  if (!active_) return;
  for (const RankProgram& program : schedule.programs)
    for (const Op& op : program.ops) {
      if (op.type != OpType::Collective || op.collective == CollectiveKind::AllToAll) continue;
      if (op.algorithm != CollectiveAlgorithm::Auto) continue;  // the strategy's own choice
      const Group& group = schedule.groups[op.group];
      if (!planned_.emplace(group.ranks, static_cast<int>(op.collective), op.bytes, op.channels, take_op_key(op)).second)
        continue;
      CollectiveOptions co = options.collectives;
      co.take_op(op);
      const CollectivePlan plan =
          plan_collective(topo, options.link_efficiency, group.ranks, op.collective, op.bytes, op.channels, co);
      if (!plan.fallback) continue;
      const int ranks = static_cast<int>(group.ranks.size());
      const int nodes = node_count(topo, group.ranks);
      if (env_.algorithm == CollectiveAlgorithm::Auto) {
        // A list that leaves this collective nothing that can run: NCCL 2.24 and later fail the call.
        SourceLocation at = env_.algo_at;
        if (at.file.empty()) at.file = path_;
        const std::string proto = env_.protocol_auto ? (env_.lists.proto_text.empty() ? "" : " NCCL_PROTO=" + env_.lists.proto_text)
                                                     : std::string(" NCCL_PROTO=") + to_string(env_.protocol);
        throw InputError(
            at, "nccl.algo",
            fmt::format("expected a list that leaves every collective of the iteration an algorithm that can run "
                        "here, found NCCL_ALGO={}{}, which leaves none for {} over {} ranks on {} node(s) ({} group, "
                        "op {}, {}{}) ({})",
                        env_.lists.algo_text, proto, nccl_function_name(op.collective), ranks, nodes,
                        to_string(group.purpose), op.name.str(), size_text(op.bytes),
                        reduces(op.collective)
                            ? fmt::format(", {} of {}", to_string(op.reduce_op), to_string(op.datatype))
                            : fmt::format(", {}", to_string(op.datatype)),
                        forced_algorithm_reason(env_.lists.algo_text)));
      }
      auto& entry = fell_back_[{static_cast<int>(op.collective), static_cast<int>(group.purpose), ranks, nodes}];
      entry.first.insert(op.name.str());
      if (entry.second.empty())
        entry.second = algorithm_unavailable_reason(topo, group.ranks, op.collective, op.channels, co, env_.algorithm);
    }
}

std::string NcclAlgorithmCheck::note() const {
  if (fell_back_.empty()) return "";
  std::string which;
  for (const auto& [key, entry] : fell_back_) {
    const auto& [ops, why] = entry;
    const auto [kind, purpose, ranks, nodes] = key;
    std::string names;
    size_t shown = 0;
    for (const std::string& n : ops) {
      if (shown == 3) {
        names += fmt::format(" and {} more", ops.size() - shown);
        break;
      }
      names += (shown++ == 0 ? "" : ", ") + n;
    }
    which += fmt::format("{}{} of {} groups ({} ranks on {} node(s): {}{})", which.empty() ? "" : ", ",
                         nccl_function_name(static_cast<CollectiveKind>(kind)),
                         to_string(static_cast<CommPurpose>(purpose)), ranks, nodes, names,
                         why.empty() ? "" : "; " + why);
  }
  const std::string name = nccl_algo_name(env_.algorithm);
  // A switch of the same job that leaves the forced algorithm out everywhere says so first.
  const bool nvls = env_.algorithm == CollectiveAlgorithm::Nvls || env_.algorithm == CollectiveAlgorithm::NvlsTree;
  const std::string off =
      nvls && !env_.nvls_enable ? "; NCCL_NVLS_ENABLE=0 leaves NVLS and NVLSTree out everywhere"
      : env_.algorithm == CollectiveAlgorithm::Pat && !env_.pat_enable ? "; NCCL_PAT_ENABLE=0 leaves PAT out everywhere"
      : (env_.algorithm == CollectiveAlgorithm::CollnetDirect || env_.algorithm == CollectiveAlgorithm::CollnetChain) &&
              !env_.collnet_enable
          ? "; CollNet needs NCCL_COLLNET_ENABLE=1 (nccl.collnet_enable: true)"
          : "";
  return fmt::format("NCCL_ALGO={} did not run for {}: the ring ran instead{} (NCCL 2.24 and later, given NCCL_ALGO={} "
                     "where it cannot run, fail the call: \"No algorithm/protocol available for function ...\")",
                     name, which, off, name);
}

}  // namespace overlapsim
