// The replay engine's AllToAll (NCCL's grouped sends, collective_plan.hpp AllToAll): its
// contention-free closed form over the group's routes, and the end of each member's pieces.
// Semantics are documented in replay.hpp.
#include "sim/replay_engine_state.hpp"

#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"

#include <algorithm>
#include <cmath>

namespace overlapsim::detail {

const P2pCommunicator& Replayer::a2a_comm(int group) {
  if (a2a_comms_.size() != s_.groups.size()) a2a_comms_.assign(s_.groups.size(), P2pCommunicator{0, 0, 0, 0});
  P2pCommunicator& c = a2a_comms_[static_cast<size_t>(group)];
  if (c.ranks == 0) c = group_communicator(topo_, s_.groups[group].ranks, opt_.collectives.p2p_comm.channels);
  return c;
}

const Replayer::AllToAllRoutes& Replayer::all_to_all_routes(int group) {
  auto it = all_to_all_routes_.find(group);
  if (it != all_to_all_routes_.end()) return it->second;
  const auto& g = s_.groups[group].ranks;
  const int n = static_cast<int>(g.size());
  AllToAllRoutes r;
  r.route_s.assign(n, 0.0);
  r.extra_ll_s.assign(n, 0.0);
  r.extra_simple_s.assign(n, 0.0);
  r.capped_from.assign(n, 0);
  std::vector<int> count(2 * static_cast<size_t>(topo_.num_links()), 0);  // directed link → pieces
  const double lo = opt_.launch_overhead_s;
  const bool textbook = opt_.collectives.textbook;
  for (int j = 0; j < n; ++j) topo_.find_routes_to(g[j], g);  // one search per destination, not per pair
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      double route_lat = 0;
      const std::vector<Hop>& route = topo_.route(g[i], g[j]);
      for (const Hop& h : route) {
        const Link& l = topo_.link(h.link_id);
        ++count[static_cast<size_t>(plan_detail::directed_link(h, l))];
        route_lat += l.latency_s;
      }
      const HopKind kind = plan_detail::route_kind(topo_, route);  // as measure_hop reads it
      r.route_s[i] = std::max(r.route_s[i], route_lat);
      r.extra_ll_s[i] = std::max(r.extra_ll_s[i], p2p_extra_latency_s(kind, route_lat, 0, false, lo, textbook));
      r.extra_simple_s[i] =
          std::max(r.extra_simple_s[i], p2p_extra_latency_s(kind, route_lat, 2 * kP2PLLThresholdBytes, false, lo, textbook));
      if (kind == HopKind::NvLink && topo_.node_of(g[i]) == topo_.node_of(g[j])) {
        r.capped.emplace_back(i, j);
        ++r.capped_from[i];
      }
    }
  }
  for (size_t k = 0; k < count.size(); ++k)
    if (count[k] > 0) r.pieces.emplace_back(static_cast<int>(k), count[k]);
  return all_to_all_routes_.emplace(group, std::move(r)).first->second;
}

double Replayer::all_to_all_rounds_s(const Op& op, int n) const {
  if (opt_.collectives.textbook || op.num_sm == 0 || n <= 1) return 0;
  return n * opt_.collectives.p2p_round_s;
}

double Replayer::all_to_all_s(const Op& op) {
  const bool copy_engine = op.num_sm == 0;
  const auto key = std::make_tuple(op.group, op.bytes, copy_engine);
  auto it = all_to_all_s_.find(key);
  if (it != all_to_all_s_.end()) return it->second;
  const auto& g = s_.groups[op.group].ranks;
  const int n = static_cast<int>(g.size());
  const double piece = op.bytes / n;
  // As the flows run it: member i's kernel pays its slowest piece's extra latency once, then its
  // pieces leave at once, each over its route: the last lands at max_i (max_j extra(i, j) +
  // max_j route(i, j)) (regression: max over pairs of extra + route, 9.30 µs against flow's 9.56
  // at 8 B over 4 DGX A100 nodes).
  const AllToAllRoutes& r = all_to_all_routes(op.group);
  const bool ll = piece <= kP2PLLThresholdBytes;
  const bool textbook = opt_.collectives.textbook;
  double lat = 0;
  for (int i = 0; i < n; ++i) {
    const double extra = textbook ? 0.0 : copy_engine ? opt_.launch_overhead_s : ll ? r.extra_ll_s[i] : r.extra_simple_s[i];
    if (n > 1) lat = std::max(lat, extra + r.route_s[i]);
  }
  lat += all_to_all_rounds_s(op, n);
  double capped = 0;
  for (const auto& [from, to] : r.capped)
    capped = std::max(capped, piece / a2a_piece_rate(op.group, from, to, op.bytes, copy_engine));
  double busiest = 0;
  for (const auto& [key2, pieces] : r.pieces) {
    const Link& l = topo_.link(key2 / 2);
    busiest = std::max(busiest, pieces * piece / (l.bandwidth_Bps * opt_.link_efficiency.of(l.kind)));
  }
  return all_to_all_s_[key] = lat + std::max(busiest, capped);
}

double Replayer::a2a_piece_rate(int group, int from, int to, double bytes, bool copy_engine) {
  const auto& g = s_.groups[group].ranks;
  const double piece = bytes / static_cast<double>(g.size());
  const double rate = p2p_rate(g[from], g[to], piece, copy_engine, a2a_comm(group));
  if (!std::isfinite(rate)) return rate;  // no cap binds this piece (another route, copy engine, no figure)
  // The member's capped pieces leave at once and share its kernel's channels.
  const int shared = all_to_all_routes(group).capped_from[static_cast<size_t>(from)];
  const double kernel_Bps = a2a_sms(group, bytes) * opt_.collectives.p2p_channel_nvlink_Bps;
  return std::min(rate, kernel_Bps / std::max(1, shared));
}

void Replayer::a2a_done(const Task& t) {
  CollState& c = colls_.at(t.match);
  --c.in_flight;
  // A flow ends one "out" of its source and one "in" of its destination.
  for (int pos : {t.idx, t.channel}) {
    Member& m = c.members[pos];
    if (m.rank_idx < 0 || --m.a2a_left > 0) continue;
    // A member ends no sooner than the closed form, as NVLS_TREE's and PAT's do. Folded, the
    // mirrors' pieces are not flows, so the links they share with a member's (uplinks a fat
    // tree's routes pile onto where the node count is uneven) look freer than they are, and the
    // closed form loads every link with every member's pieces (regression: 33 DGX H100 nodes,
    // 1 GiB, 23.2 ms folded against 42.0 ms unfolded and analytic). Unfolded, the closed form
    // adds the slowest latency to the busiest link's time where a piece from a member of less
    // latency starts earlier on that link (regression: 2 DGX H100 nodes, 1 MiB, one channel:
    // 106.11 us unfolded against 107.80 us folded and analytic).
    const double left = m.a2a_started_s + all_to_all_s(s_.programs[m.rank_idx].ops[m.op]) - be_.now();
    if (left > 1e-15) {
      ++c.in_flight;
      start_exec(Task::CollTimer, false, left, m.rank_idx, m.op, t.match, -1, pos);
    } else {
      member_finish(c, pos);
    }
  }
  coll_maybe_erase(t.match);
}

}  // namespace overlapsim::detail
