// NCCL's PAT (Parallel Aggregated Trees) AllGather and ReduceScatter plans (collective_plan.hpp, PAT).
#include "sim/collective_plan_detail.hpp"

#include "models/device_catalog.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/nccl_constants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace overlapsim::plan_detail {

std::string pat_unsupported(const Topology& topo, const std::vector<int>& ranks, const CollectiveOptions& opt) {
  // NCCL 2.30.7 src/graph/tuning.cc ncclPatEnable: SM 6.0 or later (CUDA atomics), one GPU per
  // node, no network device offload; Simple only.
  if (opt.textbook) return "the textbook model has no PAT";
  if (!opt.pat_enable) return "NCCL_PAT_ENABLE=0 leaves it out";
  if (ranks.size() < 2) return "PAT needs 2 or more ranks";
  if (!opt.protocol_auto && opt.protocol != Protocol::Simple)
    return std::string("PAT runs Simple only, and ") + to_string(opt.protocol) + " is forced";
  if (device_spec(topo.gpu_model()).compute_capability < 60) return "PAT needs compute capability 6.0 or later";
  const int nodes = node_count(topo, ranks);
  if (nodes != static_cast<int>(ranks.size()))
    return fmt::format("PAT needs every rank on a node of its own, and these {} ranks are on {} node(s)", ranks.size(),
                       nodes);
  return "";
}

CollectivePlan plan_pat(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                        CollectiveKind kind, double bytes, int channels_forced, const NcclTunerInputs& tuner) {
  const int n = static_cast<int>(ranks.size());
  CollectivePlan p;
  p.kind = kind;
  p.algorithm = CollectiveAlgorithm::Pat;
  p.protocol = Protocol::Simple;
  p.members = n;
  // NCCL sets no thread count for PAT before its launch loop (comm->maxThreads[PAT] is 0), so
  // the loop keeps every channel of the communicator (src/enqueue.cc topoGetAlgoInfo).
  p.channels = channels_forced > 0 ? channels_forced : tuner.comm_channels;
  p.sm_blocks = p.channels;
  p.steps = 1;
  p.step_bytes = bytes;
  p.wire_bytes = bytes;
  p.base_latency_s = nccl::pat_latency_s(n);
  if (bytes <= 0) return p;
  // The exchange's flows (header): at distance d = 1, 2, 4, ... < n each member sends min(d, n − d)
  // of the n parts to the member d positions on (AllGather; ReduceScatter d positions back).
  const double part = bytes / n;
  for (int d = 1; d < n; d *= 2)
    for (int i = 0; i < n; ++i) {
      const int to = kind == CollectiveKind::ReduceScatter ? (i - d + n) % n : (i + d) % n;
      p.bulk.push_back({i, to, std::min(d, n - d) * part});
    }
  // The links' time: every flow at once, the busiest directed link's bytes over its bandwidth.
  const double links_s = bulk_links_s(topo, eff, ranks, p.bulk);
  // Past kMaxPatFlows the flow replay moves each member's n − 1 parts as one flow to its next
  // member (AllGather; ReduceScatter its previous): every NIC sends and receives what the
  // exchange's flows give it, and the closed form above, from those flows, stays the floor.
  if (static_cast<long long>(p.bulk.size()) > kMaxPatFlows) {
    p.bulk.clear();
    for (int i = 0; i < n; ++i)
      p.bulk.push_back({i, kind == CollectiveKind::ReduceScatter ? (i - 1 + n) % n : (i + 1) % n, (n - 1) * part});
  }
  // NCCL's ceiling of the PAT kernel: 0.75 of its graph's busBw, as algbw (nccl_model_allgather_s).
  const double kernel_s = bytes / (nccl::kPatBusBwFactor * tuner.graph_busbw_Bps);
  p.bulk_s = std::max(links_s, kernel_s);
  return p;
}

double bulk_links_s(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                    const std::vector<CollectivePlan::BulkFlow>& flows) {
  std::map<int, double> load, capacity;
  for (const CollectivePlan::BulkFlow& f : flows)
    for (const Hop& hop : topo.route(ranks[f.src_pos], ranks[f.dst_pos])) {
      const Link& l = topo.link(hop.link_id);
      const int key = directed_link(hop, l);
      load[key] += f.bytes;
      capacity[key] = l.bandwidth_Bps * eff.of(l.kind);
    }
  double links_s = 0;
  for (const auto& [key, b] : load) links_s = std::max(links_s, b / capacity[key]);
  return links_s;
}

}  // namespace overlapsim::plan_detail
