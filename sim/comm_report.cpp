#include "sim/comm_report.hpp"

#include "sim/collective_plan.hpp"
#include "sim/measured_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace overlapsim {

std::vector<CommOpSummary> summarize_communication(const Schedule& s, const ReplayTimes& t, const Topology& topo,
                                                   const ReplayOptions& o) {
  std::vector<CommOpSummary> rows;
  // (name, type, group shape, collective, bytes, channels, algorithm, reduction, num_sm, peer
  // node distance) → row, a group's shape being its purpose, ranks, nodes and ranks on each (the
  // TP groups of every stage alike); a row's durations summed until the end.
  using Key = std::tuple<std::string, int, std::tuple<int, int, int, int>, int, double, int, int, int, int>;
  std::map<Key, size_t> index;
  std::vector<double> total;
  std::vector<std::tuple<int, int, int, int>> shapes(s.groups.size(), {-2, 0, 0, 0});
  const auto shape_of = [&](int group) {
    auto& sh = shapes[static_cast<size_t>(group)];
    if (std::get<0>(sh) == -2) {
      const Group& g = s.groups[static_cast<size_t>(group)];
      sh = {static_cast<int>(g.purpose), static_cast<int>(g.ranks.size()), node_count(topo, g.ranks),
            local_ranks(topo, g.ranks)};
    }
    return sh;
  };
  // When each collective instance (group, match) could begin: the latest start among its
  // simulated members (a mirror starts with its representative). A send's data leaves when it is
  // posted (the replay's sends do not wait for their receive): it is timed from its own start.
  std::map<std::pair<int, int64_t>, double> joined;
  for (size_t pi = 0; pi < s.programs.size(); ++pi)
    for (size_t i = 0; i < s.programs[pi].ops.size(); ++i) {
      const Op& op = s.programs[pi].ops[i];
      const double st = t.start_s[pi][i];
      if (op.type == OpType::Collective) {
        auto [it, fresh] = joined.try_emplace({op.group, op.match}, st);
        if (!fresh) it->second = std::max(it->second, st);
      }
    }
  for (size_t pi = 0; pi < s.programs.size(); ++pi) {
    const RankProgram& p = s.programs[pi];
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      const bool coll = op.type == OpType::Collective;
      if (!coll && op.type != OpType::Send) continue;
      const int hop = coll ? 0 : (topo.node_of(p.rank) == topo.node_of(op.peer) ? 1 : 2);
      std::tuple<int, int, int, int> shape{-1, 2, 0, 0};
      if (op.group >= 0) shape = shape_of(op.group);
      const Key key{op.name.str(), static_cast<int>(op.type), shape, static_cast<int>(op.collective), op.bytes,
                    op.channels, take_op_key(op), op.num_sm, hop};
      auto [it, fresh] = index.try_emplace(key, rows.size());
      const double begin = coll ? joined.at({op.group, op.match}) : t.start_s[pi][i];
      const double d = std::max(0.0, t.end_s[pi][i] - begin);
      if (!fresh) {
        CommOpSummary& r = rows[it->second];
        ++r.instances;
        total[it->second] += d;
        r.max_s = std::max(r.max_s, d);
        continue;
      }
      CommOpSummary r;
      r.op = op.name.str();
      r.bytes = op.bytes;
      r.instances = 1;
      r.max_s = d;
      total.push_back(d);
      if (coll) {
        const std::vector<int>& ranks = s.groups[op.group].ranks;
        r.kind = to_string(op.collective);
        r.type = reduces(op.collective) ? fmt::format("{} {}", to_string(op.datatype), to_string(op.reduce_op))
                         : std::string(to_string(op.datatype));
        r.purpose = to_string(s.groups[op.group].purpose);
        r.group_size = static_cast<int>(ranks.size());
        r.nodes = std::get<2>(shape);
        r.local_ranks = std::get<3>(shape);
        if (op.collective == CollectiveKind::AllToAll) {
          const P2pCommunicator comm = group_communicator(topo, ranks, o.collectives.p2p_comm.channels);
          const int ch = alltoall_kernel_channels(topo, ranks, op.bytes, comm);
          r.plan = fmt::format("p2p/{}", ch);
          r.sms = op.num_sm >= 0 ? op.num_sm : ch;
        } else {
          CollectiveOptions co = o.collectives;
          co.take_op(op);
          const CollectivePlan plan = plan_collective(topo, o.link_efficiency, ranks, op.collective, op.bytes,
                                                      op.channels, co);
          const CollectiveFit* fit =
              o.fidelity == Fidelity::Analytic ? find_measured(o.measured, op, topo, ranks, o.collectives, &plan) : nullptr;
          if (fit) {
            r.plan = "measured";
            r.alone_s = measured_time_s(*fit, op.bytes);
          } else {
            r.plan = fmt::format("{}/{}/{}", plan.chain ? "chain" : to_string(plan.algorithm),
                                 to_string(plan.protocol), plan.channels);
            r.alone_s = plan.closed_form_s();
          }
          r.sms = op.num_sm >= 0 ? op.num_sm : plan.sm_blocks;
        }
      } else {
        const P2pCommunicator comm = op.group >= 0 ? group_communicator(topo, s.groups[op.group].ranks,
                                                                        o.collectives.p2p_comm.channels)
                                                   : o.collectives.p2p_comm;
        r.kind = "Send";
        r.purpose = op.group >= 0 ? to_string(s.groups[op.group].purpose) : "pair";
        r.group_size = op.group >= 0 ? static_cast<int>(s.groups[op.group].ranks.size()) : 2;
        r.nodes = op.group >= 0 ? std::get<2>(shape) : hop;
        r.local_ranks = op.group >= 0 ? std::get<3>(shape) : (hop == 1 ? 2 : 1);
        const int ch = p2p_split(topo, p.rank, op.peer, op.bytes, comm).channels;
        r.plan = op.num_sm == 0 ? "copy engine" : fmt::format("p2p/{}", ch);
        r.sms = op.num_sm >= 0 ? op.num_sm : ch;
        // Alone: the route's latency and NCCL's p2p latency, then the message at the route's
        // bottleneck (after link efficiency) or NCCL's p2p channels' copy rate, the lesser, as the
        // replay times a send that shares nothing.
        const bool copy_engine = op.num_sm == 0;
        double lat = p2p_extra_latency_s(topo, p.rank, op.peer, op.bytes, copy_engine, o.launch_overhead_s,
                                         o.collectives.textbook);
        double bw = std::numeric_limits<double>::infinity();
        for (const Hop& h : topo.route(p.rank, op.peer)) {
          const Link& l = topo.link(h.link_id);
          lat += l.latency_s;
          bw = std::min(bw, l.bandwidth_Bps * o.link_efficiency.of(l.kind));
        }
        if (o.collectives.p2p_channel_nvlink_Bps > 0)
          bw = std::min(bw, p2p_rate_cap_Bps(topo, p.rank, op.peer, op.bytes, copy_engine, comm, o.collectives));
        r.alone_s = lat + (std::isfinite(bw) ? op.bytes / bw : 0.0);
      }
      rows.push_back(std::move(r));
    }
  }
  for (size_t k = 0; k < rows.size(); ++k) rows[k].mean_s = total[k] / static_cast<double>(rows[k].instances);
  return rows;
}

}  // namespace overlapsim
