#include "sim/measured_collectives.hpp"

#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"

#include <algorithm>

namespace overlapsim {

const char* nccl_tests_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllToAll: return "alltoall";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
  }
  return "?";
}

const CollectiveFit* find_measured(const std::vector<CollectiveFit>& fits, CollectiveKind kind, int ranks, int nodes,
                                   CollectiveAlgorithm algorithm, const std::string& protocol, bool collnet_enable) {
  const std::string name = nccl_tests_name(kind);
  const std::string alg = algorithm == CollectiveAlgorithm::Auto ? "auto" : to_string(algorithm);
  const std::string proto = protocol.empty() ? "auto" : ascii_lower(protocol);
  for (const CollectiveFit& f : fits)
    if (f.collective == name && f.ranks == ranks && f.nodes == nodes && ascii_lower(f.algorithm) == alg &&
        ascii_lower(f.protocol) == proto && f.collnet_enable == collnet_enable && f.busbw_Bps > 0)
      return &f;
  return nullptr;
}

const CollectiveFit* find_measured(const std::vector<CollectiveFit>& fits, const Op& op, const Topology& topo,
                                   const std::vector<int>& group, const CollectiveOptions& options,
                                   const CollectivePlan* plan) {
  // Measured at NCCL's own channels: not the time of a collective whose channels are forced
  // (regression: --channels 1 read the log's 355 GB/s where one ring gives 300).
  if (op.channels > 0) return nullptr;
  if (fits.empty()) return nullptr;
  const CollectiveAlgorithm algorithm = op.algorithm != CollectiveAlgorithm::Auto ? op.algorithm : options.algorithm;
  const CollectiveFit* f =
      find_measured(fits, op.collective, static_cast<int>(group.size()), node_count(topo, group), algorithm,
                    options.protocol_auto ? "" : to_string(options.protocol), options.collnet_enable);
  // A forced algorithm that cannot run here runs the ring (collective_plan.hpp): the fit of the
  // forced one is not its time (an NVLS + SHARP curve on a fabric without SHARP).
  if (f != nullptr && algorithm != CollectiveAlgorithm::Auto && op.collective != CollectiveKind::AllToAll) {
    // The plan of a forced algorithm runs it exactly where algorithm_unavailable_reason finds no
    // reason, and the ring elsewhere (plan_collective).
    if (plan != nullptr) return plan->algorithm == algorithm ? f : nullptr;
    CollectiveOptions o = options;
    o.reduce_op = op.reduce_op;
    o.datatype = op.datatype;
    if (!algorithm_unavailable_reason(topo, group, op.collective, 0, o, algorithm).empty()) return nullptr;
  }
  return f;
}

double measured_time_s(const CollectiveFit& f, double bytes) {
  OVERLAPSIM_CHECK(f.busbw_Bps > 0, "measured collective without bus bandwidth");
  // (size, mean time) per measured size: nccl-tests logs give out-of-place and in-place rows.
  std::vector<std::pair<double, double>> pts;
  for (const CollectivePoint& p : f.points)
    if (p.size_bytes > 0 && p.time_s > 0) pts.emplace_back(p.size_bytes, p.time_s);
  std::sort(pts.begin(), pts.end());
  std::vector<std::pair<double, double>> mean;
  for (size_t i = 0; i < pts.size();) {
    size_t j = i;
    double sum = 0;
    for (; j < pts.size() && pts[j].first == pts[i].first; ++j) sum += pts[j].second;
    mean.emplace_back(pts[i].first, sum / static_cast<double>(j - i));
    i = j;
  }
  if (mean.empty() || bytes < mean.front().first || bytes > mean.back().first) return f.time_s(bytes);
  const auto hi = std::lower_bound(mean.begin(), mean.end(), std::make_pair(bytes, 0.0));
  if (hi->first == bytes || hi == mean.begin()) return hi->second;
  const auto& [s1, t1] = *hi;
  const auto& [s0, t0] = *(hi - 1);
  return t0 + (bytes - s0) / (s1 - s0) * (t1 - t0);
}

}  // namespace overlapsim
