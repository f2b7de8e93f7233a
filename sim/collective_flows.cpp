// The replay engine's collectives: NCCL rings and chains step by step, trees slice by slice
// (sim/tree_flows.hpp), AllToAll as one flow per pair, analytic collectives as timers.
// Semantics are documented in replay.hpp.
#include "sim/replay_engine_state.hpp"

#include "sim/error.hpp"
#include "sim/measured_collectives.hpp"

namespace overlapsim::detail {

const Replayer::GroupMembers& Replayer::group_members(int group) {
  if (group_members_.size() != s_.groups.size()) group_members_.resize(s_.groups.size());
  GroupMembers& gm = group_members_[static_cast<size_t>(group)];
  if (!gm.pos_of.empty()) return gm;
  const auto& g = s_.groups[group].ranks;
  gm.fresh.resize(g.size());
  gm.pos_of.assign(s_.programs.size(), -1);
  for (size_t pos = 0; pos < g.size(); ++pos) {
    const int ri = rank_idx(g[pos]);
    gm.fresh[pos].rank_idx = ri;
    if (ri < 0) continue;
    gm.simulated_pos.push_back(static_cast<int>(pos));
    gm.through_last_simulated = pos + 1;
    if (gm.pos_of[static_cast<size_t>(ri)] < 0) gm.pos_of[static_cast<size_t>(ri)] = static_cast<int>(pos);
  }
  return gm;
}

void Replayer::solo_collective(int ri, int oi, const Op& op, int pos) {
  const PlannedCollective& pc = plan_of(op);
  int held = hold_sms(ri, op.num_sm >= 0 ? op.num_sm : pc.plan.sm_blocks);
  if (s_.groups[op.group].ranks.size() <= 1 || pc.plan.steps == 0) {
    release_sms(ri, held);
    complete(ri, oi);
    return;
  }
  start_exec(Task::SoloTimer, false, pc.member_ends[static_cast<size_t>(pos)], ri, oi, op.match, held, pos);
}

void Replayer::coll_ready(int ri, int oi) {
  const Op& op = s_.programs[ri].ops[oi];
  const auto& g = s_.groups[op.group].ranks;
  const int n = static_cast<int>(g.size());
  const int64_t match = op.match;
  const GroupMembers& gm = group_members(op.group);
  // A folded group's one simulated member, analytic: timed alone (a TP or DP collective of a
  // folded run, tens of thousands of instances).
  if (opt_.fidelity == Fidelity::Analytic && op.collective != CollectiveKind::AllToAll && opt_.measured.empty() &&
      gm.simulated_pos.size() == 1) {
    solo_collective(ri, oi, op, gm.simulated_pos[0]);
    return;
  }
  auto [it, fresh] = colls_.try_emplace(match);
  CollState& c = it->second;
  if (fresh) {
    c.group = op.group;
    c.all_to_all = op.collective == CollectiveKind::AllToAll;
    if (!c.all_to_all) {
      c.planned = &plan_of(op);
      c.plan = &c.planned->plan;
    }
    if (!spare_members_.empty()) {
      c.members = std::move(spare_members_.back());
      spare_members_.pop_back();
    }
    // An analytic replay times a collective (other than AllToAll) by its plan and reads only its
    // simulated members: the mirrors after the last of them are left out (a folded DP group of
    // 128 has one simulated member, first).
    if (opt_.fidelity == Fidelity::Analytic && !c.all_to_all)
      c.members.assign(gm.fresh.begin(), gm.fresh.begin() + static_cast<long>(gm.through_last_simulated));
    else
      c.members = gm.fresh;
    c.simulated = static_cast<int>(gm.simulated_pos.size());
    c.remaining = c.simulated;
    if (c.all_to_all)
      for (auto& mem : c.members)
        if (mem.rank_idx >= 0) mem.a2a_left = 2 * (n - 1);  // n−1 flows out, n−1 in
    // (A chain whose waves' hop table was too large to keep, ChainWaves::hop_s, has no floors
    // for its flows: its closed form times it too; so is an NVLS_TREE of more than
    // kMaxTreeFlows flows, or of none, and a PAT likewise.)
    // A tree of more than kMaxTreeSliceFlows per-slice flows runs in bulk too (tree_in_bulk).
    c.bulk = !c.all_to_all && opt_.fidelity == Fidelity::Flow && (c.plan->runs_in_bulk() || c.plan->tree_in_bulk()) &&
             !c.plan->bulk.empty() && static_cast<long long>(c.plan->bulk.size()) <= kMaxTreeFlows;
    c.timed = !c.all_to_all && (opt_.fidelity == Fidelity::Analytic || (c.plan->tree_flows() > kMaxTreeFlows && !c.bulk) ||
                                (c.plan->runs_in_bulk() && !c.bulk) ||
                                c.plan->chain_flows() > kMaxTreeFlows ||
                                (c.plan->chain && c.plan->chain_waves.hop_s.empty()));
    // Analytic AllToAll: its closed form (contention at the members' own ports included); in
    // flow too where its simulated members would start more than kMaxTreeFlows flows at once
    // (SimGrid's sharing of 65 k flows over 256 GPUs did not end in 5 minutes).
    if (c.all_to_all && n > 1 &&
        (opt_.fidelity == Fidelity::Analytic || static_cast<long long>(c.simulated) * (n - 1) > kMaxTreeFlows)) {
      c.fixed_s = all_to_all_s(op);
      c.timed = true;
    }
    if (opt_.fidelity == Fidelity::Analytic && !opt_.measured.empty() && n > 1) {
      if (const CollectiveFit* f = find_measured(opt_.measured, op, topo_, g, opt_.collectives, c.plan)) {
        c.fixed_s = measured_time_s(*f, op.bytes);
        c.timed = true;
      }
    }
    if (!c.all_to_all && !c.timed && !c.bulk && c.plan->algorithm == CollectiveAlgorithm::Tree && n > 1 &&
        c.plan->steps > 0)
      c.tree = std::make_unique<TreeRun>(*c.plan);
    if (!c.all_to_all && !c.timed && !c.tree) {
      const bool all_simulated = c.simulated == n;
      c.channels.resize(c.plan->rings.size());
      for (size_t ch = 0; ch < c.plan->rings.size(); ++ch) {
        const ChannelPlan& cp = c.plan->rings[ch];
        ChannelState& cs = c.channels[ch];
        const bool small = n * static_cast<int>(c.plan->rings.size()) <= kMaxMirroredFlowsPerStep;
        // A chain simulates every member's flows (it is timed by its closed form above
        // kMaxTreeFlows flows): its slices' spacing differs by position and its members wait for
        // each other's slices, which representatives paced by a timer did not follow
        // (regression: over 2 DGX A100 nodes, 64 MiB, LL128, a folded Reduce's root ended 16%
        // late, and 2-3x late with every representative on the NIC hop).
        cs.mode = (all_simulated || c.plan->chain || (!cp.even && small)) ? ChannelMode::Mirrors
                  : cp.even                                               ? ChannelMode::Representatives
                                                                          : ChannelMode::Bottleneck;
        if (!c.plan->chain) {
          const bool uniform = c.planned->uniform[ch];
          cs.arrivals = cs.mode == ChannelMode::Mirrors && !uniform;
          cs.ring_s = c.planned->ring_s[ch];
          // Representatives of a ring whose hops differ pay the closed form's time up front
          // like a uniform ring's, unless one of their flows outlasts its mean step (then they
          // are paced, a timer per step, so that their flows may overlap).
          if (cs.mode != ChannelMode::Mirrors && !uniform) {
            double longest = 0;
            for (int i = 0; i < static_cast<int>(cp.hops.size()); ++i) {
              const Hop2& h = cp.hops[cs.mode == ChannelMode::Bottleneck ? cp.bottleneck : i];
              longest = std::max(longest, h.route_latency_s + c.plan->wire_bytes / h.share_Bps);
            }
            cs.paced = longest * c.plan->steps > cs.ring_s;
          }
          // Every flow of a representative on the bottleneck hop: one flow of all its steps.
          if (cs.mode == ChannelMode::Bottleneck) {
            cs.coalesced = true;
            cs.paced = false;
          }
        } else {
          cs.arrivals = true;  // a chain's slice arrives its step latency after its flow
        }
        cs.m.resize(n);
        for (int i = 0; i < n; ++i)
          cs.m[i].active = cs.mode == ChannelMode::Mirrors || c.members[cp.order[i]].rank_idx >= 0;
      }
    }
  }
  const int pos = gm.pos_of[static_cast<size_t>(ri)];
  Member& m = c.members[pos];
  OVERLAPSIM_CHECK(!m.ready, "collective " + op.name + " reached twice by one rank (duplicate match id)");
  m.op = oi;
  m.ready = true;
  ++c.ready_count;
  const int num_sm = op.num_sm >= 0 ? op.num_sm : (c.all_to_all ? a2a_sms(c.group, op.bytes) : c.plan->sm_blocks);
  m.sm_held = hold_sms(ri, num_sm);

  if (n <= 1 || (!c.all_to_all && c.plan->steps == 0)) {
    member_finish(c, pos);
    coll_maybe_erase(match);
    return;
  }
  if (c.all_to_all && !c.timed) {
    m.a2a_started_s = be_.now();
    // One kernel of grouped sends: its latency first (every piece pays the same, concurrently;
    // the slowest hop's), then the flows.
    double lat = 0;
    for (int j = 0; j < n; ++j)
      if (j != pos) lat = std::max(lat, p2p_latency(g[pos], g[j], op.bytes / n, op.num_sm == 0));
    lat += all_to_all_rounds_s(op, n);
    if (lat > 0) {
      ++c.in_flight;
      start_exec(Task::AllToAllDelay, false, lat, ri, oi, match, -1, pos);
      return;
    }
    a2a_send(c, match, pos);
    return;
  }
  if (c.bulk) {
    // NVLS_TREE, PAT and a tree in bulk (collective_plan.hpp): all their flows at once when all
    // members are here.
    if (c.ready_count < c.simulated) return;
    c.bulk_started_s = be_.now();
    const auto& bulk = c.plan->bulk;
    for (size_t f = 0; f < bulk.size(); ++f) {
      ++c.in_flight;
      ++c.bulk_left;
      start_flow(Task::BulkFlow, g[bulk[f].src_pos], g[bulk[f].dst_pos], bulk[f].bytes, -1, -1, match, -1,
                 static_cast<int>(f));
    }
    return;
  }
  if (c.timed) {
    if (c.ready_count < c.simulated) return;
    // A measured time (an AllToAll may have one and no plan), else the plan's member ends.
    for (const int p : gm.simulated_pos) {
      ++c.in_flight;
      start_exec(Task::CollTimer, false, c.fixed_s >= 0 ? c.fixed_s : c.planned->member_ends[p], c.members[p].rank_idx, c.members[p].op, match, -1, p);
    }
    return;
  }
  if (c.tree) {
    // Mirrors reach the collective when every simulated member has.
    std::vector<TreeAction> acts;
    c.tree->set_present(pos, acts);
    if (c.ready_count == c.simulated)
      for (int p = 0; p < n; ++p)
        if (c.members[p].rank_idx < 0) c.tree->set_present(p, acts);
    tree_start(c, match, acts);
    return;
  }
  // Flow fidelity. Mirrors of mirrored channels start when every simulated member is here.
  if (c.ready_count == c.simulated) {
    for (size_t ch = 0; ch < c.channels.size(); ++ch)
      for (int i = 0; i < n; ++i) ring_advance(c, match, static_cast<int>(ch), i);
    return;
  }
  for (size_t ch = 0; ch < c.channels.size(); ++ch) {
    const auto& order = c.plan->rings[ch].order;
    for (int i = 0; i < n; ++i)
      if (order[i] == pos) {
        ring_advance(c, match, static_cast<int>(ch), i);
        ring_advance(c, match, static_cast<int>(ch), (i + n - 1) % n);
      }
  }
}

// Whether the member at order index i of a channel "is here": a simulated member once its op is
// ready, a simulated mirror once every simulated member is.
static bool present(const CollState& c, const ChannelPlan& cp, int i) {
  const Member& mem = c.members[cp.order[i]];
  return mem.rank_idx >= 0 ? mem.ready : c.ready_count == c.simulated;
}

void Replayer::ring_advance(CollState& c, int64_t match, int ch, int i) {
  const ChannelPlan& cp = c.plan->rings[ch];
  ChannelState& cs = c.channels[ch];
  const int n = static_cast<int>(cp.order.size());
  RingMember& rm = cs.m[i];
  // Sends that let the next go: with per-step arrivals or pacing, their slots.
  const int free_after = cs.arrivals || cs.paced ? rm.slots_done : rm.steps_done;
  if (!rm.active || !present(c, cp, i) || rm.steps_started != free_after || rm.steps_started >= c.plan->steps) return;
  if (c.plan->chain && i == n - 1) return;  // the end of a chain only receives
  if (c.members[cp.order[i]].rank_idx < 0 && c.remaining == 0) return;  // nobody waits for this mirror
  const int k = rm.steps_started;
  const int succ = (i + 1) % n, pred = (i + n - 1) % n;
  if (k == 0 && cs.m[succ].active && !present(c, cp, succ)) return;
  const bool has_pred = !(c.plan->chain && i == 0);
  const int need = c.plan->chain ? k + 1 : k;  // predecessor steps that must have arrived
  if (has_pred && cs.m[pred].active && cs.m[pred].steps_arrived < need) return;
  ++rm.steps_started;
  if (cs.coalesced) rm.steps_started = c.plan->steps;
  ++c.in_flight;
  const Hop2& own = cp.hops[cs.mode == ChannelMode::Bottleneck ? cp.bottleneck : i];
  double delay = 0;
  if (c.plan->chain) {
    // NCCL's base latency is paid once per collective, by the head (regression: every member
    // paid it on its first step, and along a chain they add up — 8 B Broadcast over 8 GPUs took
    // 51 µs in flow against 11.5 µs in its closed form). The step latency follows the flow (per-step
    // arrivals), overlapping the sender's next slice.
    delay = k == 0 && i == 0 ? c.plan->base_latency_s : 0.0;
  } else if (k == 0) {
    // A ring pays NCCL's base latency up front; with per-step arrivals that is all, otherwise
    // also what its flows leave out of the channel's closed form (on a uniform ring steps ×
    // the protocol's extra step latency): the same end time without contention, and one timer
    // per member instead of one per step.
    delay = c.plan->base_latency_s;
    const double flow_s = own.route_latency_s + c.plan->wire_bytes / own.share_Bps;
    if (cs.coalesced) delay += std::max(0.0, cs.ring_s - own.route_latency_s - c.plan->steps * c.plan->wire_bytes / own.share_Bps);
    else if (cs.paced) delay += std::max(0.0, cs.ring_s / c.plan->steps - flow_s);
    else if (!cs.arrivals) delay += std::max(0.0, cs.ring_s - c.plan->steps * flow_s);
  }
  const int ri = c.members[cp.order[i]].rank_idx;
  const int oi = c.members[cp.order[i]].op;
  if (delay > 1e-15) {
    start_exec(Task::StepDelay, false, delay, ri, oi, match, ch, i);
    return;
  }
  ring_send(c, match, ch, i);
}

void Replayer::ring_send(CollState& c, int64_t match, int ch, int i) {
  const ChannelPlan& cp = c.plan->rings[ch];
  const auto& g = s_.groups[c.group].ranks;
  const Hop2& h = cp.hops[c.channels[ch].mode == ChannelMode::Bottleneck ? cp.bottleneck : i];
  const Member& mem = c.members[cp.order[i]];
  const ChannelState& cs = c.channels[ch];
  if (cs.arrivals || cs.paced) {
    ++c.in_flight;
    double slot = cs.paced ? cs.ring_s / c.plan->steps : c.plan->wire_bytes / h.share_Bps;
    if (c.plan->chain) {
      // A chain's slice keeps its sender busy for its occupancy in its wave (ChainWaves::hop_s),
      // the last, shorter slice for its part of it.
      const int k = c.channels[ch].m[i].steps_started - 1;  // this slice
      const auto w = static_cast<size_t>(i + k);              // its wave
      slot = h.serial_s + c.plan->chain_waves.wire_s(h, ch, i, static_cast<int>(cp.order.size()), w) *
                              c.plan->wire_fraction_of(k);
    }
    start_exec(Task::StepSlot, false, slot, mem.rank_idx, mem.op, match, ch, i);
  }
  const double bytes = cs.coalesced     ? c.plan->wire_bytes * c.plan->steps
                       : c.plan->chain ? c.plan->wire_bytes_of(c.channels[ch].m[i].steps_started - 1)
                                       : c.plan->wire_bytes;
  start_flow(Task::Step, g[h.src_pos], g[h.dst_pos], bytes, mem.rank_idx, mem.op, match, ch, i);
}

void Replayer::ring_step_done(const Task& t) {
  CollState& c = colls_.at(t.match);
  const ChannelPlan& cp = c.plan->rings[t.channel];
  ChannelState& cs = c.channels[t.channel];
  const int n = static_cast<int>(cp.order.size());
  ++cs.m[t.idx].steps_done;
  if (cs.coalesced) cs.m[t.idx].steps_done = c.plan->steps;  // its one flow carried them all
  --c.in_flight;
  const int succ = (t.idx + 1) % n;
  // With per-step arrivals, the step reaches the successor its protocol step latency after the
  // flow (beyond the route's own, which the flow paid).
  const Hop2& h = cp.hops[t.idx];
  const double after = cs.arrivals ? h.step_latency_s - h.route_latency_s : 0.0;
  const bool delayed = after > 1e-15;
  if (delayed) {
    ++c.in_flight;
    start_exec(Task::StepArrival, false, after, t.rank_idx, t.op, t.match, t.channel, t.idx);
  } else {
    cs.m[t.idx].steps_arrived = cs.m[t.idx].steps_done;
  }
  ring_check_done(c, t.channel, t.idx);
  if (!delayed) ring_check_done(c, t.channel, succ);
  ring_advance(c, t.match, t.channel, t.idx);
  if (!delayed) ring_advance(c, t.match, t.channel, succ);
  coll_maybe_erase(t.match);
}

void Replayer::ring_check_done(CollState& c, int ch, int i) {
  const ChannelPlan& cp = c.plan->rings[ch];
  ChannelState& cs = c.channels[ch];
  const int n = static_cast<int>(cp.order.size());
  RingMember& rm = cs.m[i];
  const int pos = cp.order[i];
  if (c.members[pos].rank_idx < 0 || rm.done) return;
  const bool sends = !(c.plan->chain && i == n - 1);
  const bool has_pred = !(c.plan->chain && i == 0);
  if (sends && rm.steps_done < c.plan->steps) return;
  const RingMember& pred = cs.m[(i + n - 1) % n];
  if (has_pred && pred.active && pred.steps_arrived < c.plan->steps) return;
  rm.done = true;
  member_channel_done(c, pos);
}

void Replayer::member_channel_done(CollState& c, int pos) {
  Member& m = c.members[pos];
  if (m.channels_left == 0) m.channels_left = static_cast<int>(c.channels.size());
  if (--m.channels_left == 0) member_finish(c, pos);
}

void Replayer::member_finish(CollState& c, int pos) {
  Member& m = c.members[pos];
  release_sms(m.rank_idx, m.sm_held);
  --c.remaining;
  complete(m.rank_idx, m.op);
}

void Replayer::coll_maybe_erase(int64_t match) {
  auto it = colls_.find(match);
  if (it != colls_.end() && it->second.remaining == 0 && it->second.in_flight == 0) {
    spare_members_.push_back(std::move(it->second.members));  // its memory for the next collective
    colls_.erase(it);
  }
}


// ---- trees ---------------------------------------------------------------------------------

void Replayer::tree_start(CollState& c, int64_t match, std::vector<TreeAction>& acts) {
  const auto& g = s_.groups[c.group].ranks;
  // Nobody waits for the mirrors once every simulated member is done (as for a ring).
  if (c.remaining == 0) acts.clear();
  for (const TreeAction& a : acts) {
    ++c.in_flight;
    switch (a.kind) {
      case TreeAction::Delay:
        start_exec(Task::TreeDelay, false, a.seconds, -1, -1, match, a.tree, a.hop);
        break;
      case TreeAction::Slot:
        start_exec(Task::TreeSlot, false, a.seconds, -1, -1, match, a.tree, a.hop);
        break;
      case TreeAction::Arrival:
        start_exec(Task::TreeArrival, false, a.seconds, -1, -1, match, a.tree, a.hop);
        break;
      case TreeAction::Flow:
        start_flow(Task::TreeFlow, g[a.src_pos], g[a.dst_pos], a.bytes, -1, -1, match, a.tree, a.hop);
        break;
    }
  }
  acts.clear();
}

void Replayer::tree_done(const Task& t) {
  CollState& c = colls_.at(t.match);
  --c.in_flight;
  std::vector<TreeAction> acts;
  std::vector<int> finished;
  if (t.kind == Task::TreeDelay) c.tree->delay_done(t.channel, t.idx, acts);
  else if (t.kind == Task::TreeSlot) c.tree->slot_done(t.channel, t.idx, acts);
  else if (t.kind == Task::TreeArrival) c.tree->arrival_done(t.channel, t.idx, acts, finished);
  else c.tree->flow_done(t.channel, t.idx, acts, finished);  // TreeFlow, TreeFloor: its flow is done
  tree_start(c, t.match, acts);
  for (int pos : finished)
    if (c.members[pos].rank_idx >= 0) member_finish(c, pos);
  coll_maybe_erase(t.match);
}


void Replayer::bulk_done(const Task& t) {
  CollState& c = colls_.at(t.match);
  --c.in_flight;
  if (--c.bulk_left == 0) {
    // The members end now, or at the closed form if that is later (collective_plan.hpp).
    for (int p = 0; p < static_cast<int>(c.members.size()); ++p) {
      if (c.members[p].rank_idx < 0) continue;
      const double left = c.bulk_started_s + c.planned->member_ends[p] - be_.now();
      if (left > 1e-15) {
        ++c.in_flight;
        start_exec(Task::CollTimer, false, left, c.members[p].rank_idx, c.members[p].op, t.match, -1, p);
      } else {
        member_finish(c, p);
      }
    }
  }
  coll_maybe_erase(t.match);
}

void Replayer::a2a_send(CollState& c, int64_t match, int pos) {
  // Sends to everyone; receives from every mirror (simulated peers send their own).
  const auto& g = s_.groups[c.group].ranks;
  const int n = static_cast<int>(g.size());
  const Member& m = c.members[pos];
  const Op& op = s_.programs[m.rank_idx].ops[m.op];
  const double piece = op.bytes / n;
  const bool copy_engine = op.num_sm == 0;
  for (int j = 0; j < n; ++j) {
    if (j == pos) continue;
    ++c.in_flight;
    start_flow(Task::AllToAllFlow, g[pos], g[j], piece, m.rank_idx, m.op, match, j, pos,
               a2a_piece_rate(c.group, pos, j, op.bytes, copy_engine));
    if (c.members[j].rank_idx < 0) {
      ++c.in_flight;
      start_flow(Task::AllToAllFlow, g[j], g[pos], piece, -1, -1, match, pos, j,
                 a2a_piece_rate(c.group, j, pos, op.bytes, copy_engine));
    }
  }
}

}  // namespace overlapsim::detail
