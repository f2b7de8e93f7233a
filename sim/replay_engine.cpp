// The replay engine: ops become activities only when they are ready (design §7: an activity
// DAG built up front is quadratic in SimGrid 3.32), and successors start from the completion
// callback. Semantics are documented in replay.hpp; the state is in replay_engine_state.hpp,
// its build (dependency lists, kernel runs, mirror partners) in replay_engine_build.cpp, the
// collectives' part in collective_flows.cpp and collective_all_to_all.cpp.
#include "sim/replay_engine.hpp"

#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"
#include "sim/error.hpp"
#include "sim/replay_engine_state.hpp"

#include <algorithm>
#include <stdexcept>

namespace overlapsim {

std::shared_ptr<detail::PlanCache> make_plan_cache() { return std::make_shared<detail::PlanCache>(); }

const CollectivePlan& cached_plan(const ReplayOptions& opt, const Topology& topo, const std::vector<int>& ranks,
                                  const Op& op) {
  OVERLAPSIM_CHECK(opt.plan_cache != nullptr, "cached_plan: no plan cache in the options");
  OVERLAPSIM_CHECK(op.type == OpType::Collective && op.collective != CollectiveKind::AllToAll,
                   "cached_plan: not a planned collective: " + op.name);
  return detail::planned(*opt.plan_cache, opt, topo, ranks, op).plan;
}

namespace detail {

const PlannedCollective& Replayer::plan_of(const Op& op) {
  const int alg_key = take_op_key(op);
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes, static_cast<int>(op.channels),
                                   alg_key);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  PlanCache& cache = opt_.plan_cache ? *opt_.plan_cache : own_plans_;
  const PlannedCollective& pc = planned(cache, opt_, topo_, s_.groups[op.group].ranks, op);
  plans_.emplace(key, &pc);
  return pc;
}

const PlannedCollective& planned(PlanCache& cache, const ReplayOptions& opt, const Topology& topo,
                                 const std::vector<int>& ranks, const Op& op) {
  if (cache.topology == nullptr) cache.topology = &topo;
  if (cache.topology != &topo) throw std::logic_error("replay: a plan cache shared by two topologies");
  const int alg_key = take_op_key(op);
  auto [at, fresh] = cache.plans.try_emplace(
      std::make_tuple(ranks, static_cast<int>(op.collective), op.bytes, static_cast<int>(op.channels), alg_key));
  PlannedCollective& pc = at->second;
  if (fresh) {
    CollectiveOptions o = opt.collectives;
    o.take_op(op);
    o.ring_memo = &cache.rings;  // one topology and link efficiency, as the cache's plans
    pc.plan = plan_collective(topo, opt.link_efficiency, ranks, op.collective, op.bytes, op.channels, o);
    pc.member_ends = pc.plan.member_ends_s();
    for (const ChannelPlan& cp : pc.plan.rings) {
      const bool ring = !pc.plan.chain && pc.plan.steps > 0 && cp.hops.size() > 1;
      pc.ring_s.push_back(ring ? ring_channel_s(cp, pc.plan.wire_bytes, pc.plan.steps) : 0.0);
      pc.uniform.push_back(ring && uniform_ring(cp));
    }
  }
  return pc;
}

void Replayer::drain() {
  while (!ready_rank_.empty()) {
    const int ri = ready_rank_.back(), oi = ready_op_.back();
    ready_rank_.pop_back();
    ready_op_.pop_back();
    on_ready(ri, oi);
  }
}

void Replayer::complete(int ri, int oi) {
  OpState* st = &ops_[op_base_[static_cast<size_t>(ri)]];
  end_of(ri, oi) = be_.now();
  // Only a Send or Recv holds a peer kernel's SMs (p2p_hold): no lookup for the other ops.
  if (!p2p_holds_.empty() && (st[oi].type() == OpType::Send || st[oi].type() == OpType::Recv)) p2p_release(ri, oi);
  ++completed_;
  // (The next op's succ_begin ends the list: the last op's is the next rank's first, or the
  // sentinel past every rank.)
  for (int k = st[oi].succ_begin, end = st[oi + 1].succ_begin; k < end; ++k) {
    const int j = succ_[k];
    if ((--st[j].bits & OpState::kPendingMask) == 0) {
      ready_rank_.push_back(ri);
      ready_op_.push_back(j);
    }
  }
}

void Replayer::start_exec(Task::Kind kind, bool on_gpu, double seconds, int ri, int oi, int64_t match, int channel,
                          int idx) {
  Task* t = new_task(Task{kind, ri, oi, match, channel, idx, be_.now()});
  ++times_.activities;
  be_.start_exec(on_gpu ? s_.programs[ri].rank : ActivityBackend::kTimer, seconds * kGpuSpeed, t);
}

void Replayer::start_flow(Task::Kind kind, int src_rank, int dst_rank, double bytes, int ri, int oi, int64_t match,
                          int channel, int idx, double rate_Bps) {
  Task* t = new_task(Task{kind, ri, oi, match, channel, idx, be_.now()});
  ++times_.activities;
  if (std::isfinite(rate_Bps))
    flow_floors_[t] = be_.now() + route_latency(src_rank, dst_rank) + bytes / rate_Bps;
  if (opt_.record_flows)
    flows_.started(t, FlowRecord{be_.now(), -1, bytes, src_rank, dst_rank,
                                 ri >= 0 ? s_.programs[ri].rank : src_rank, oi, match});
  be_.start_flow(src_rank, dst_rank, bytes, t);
}

int Replayer::hold_sms(int ri, int num_sm) {
  if (opt_.sm_count <= 0 || num_sm <= 0) return 0;
  held_sms_[ri] += num_sm;
  set_gpu_state(ri);
  return num_sm;
}

int Replayer::p2p_sms(int src, int dst, double bytes, const P2pCommunicator& comm) {
  const auto key = std::make_tuple(src, dst, bytes, comm.ranks, comm.nodes, comm.local_ranks);
  auto it = p2p_sms_.find(key);
  if (it == p2p_sms_.end()) it = p2p_sms_.emplace(key, p2p_split(topo_, src, dst, bytes, comm).channels).first;
  return it->second;
}

const P2pCommunicator& Replayer::p2p_comm_of(const Op& op) {
  return op.group >= 0 ? a2a_comm(op.group) : opt_.collectives.p2p_comm;
}

int Replayer::a2a_sms(int group, double bytes) {
  const auto key = std::make_pair(group, bytes);
  auto it = a2a_sms_.find(key);
  if (it != a2a_sms_.end()) return it->second;
  return a2a_sms_[key] = alltoall_kernel_channels(topo_, s_.groups[group].ranks, bytes, a2a_comm(group));
}

void Replayer::p2p_hold(int ri, int oi, const Op& op) {
  if (opt_.sm_count <= 0) return;
  const int self = s_.programs[ri].rank;
  const bool send = op.type == OpType::Send;
  const int num_sm = op.num_sm >= 0 ? op.num_sm
                                    : p2p_sms(send ? self : op.peer, send ? op.peer : self, op.bytes, p2p_comm_of(op));
  // One kernel per communicator: the pair's; on the op's group's one per channel base (a ring
  // step's send to the next and receive from the previous share one, the other direction's
  // messages have another: disjoint channels, which the kernel holds together).
  uint32_t comm = static_cast<uint32_t>(op.peer);
  if (op.group >= 0) {
    const auto bkey = std::make_tuple(op.group, self, op.peer, send);
    auto b = p2p_base_.find(bkey);
    if (b == p2p_base_.end())
      b = p2p_base_.emplace(bkey, nccl_p2p_base(topo_, s_.groups[op.group].ranks, self, op.peer, send)).first;
    const int base = b->second;
    comm = (uint32_t{1} << 31) | (static_cast<uint32_t>(op.group) << 6) | static_cast<uint32_t>(base % 32);
  }
  const int64_t key = (int64_t{ri} << 32) | comm;
  PeerKernel& k = p2p_kernels_[key];
  ++k.ops;
  p2p_holds_[(int64_t{ri} << 32) | oi] = key;
  // Recorded before the hold: the GPU's new speed may end kernels, whose ops complete here.
  const int extra = num_sm - k.sms;
  if (extra > 0) {
    k.sms = num_sm;
    hold_sms(ri, extra);
  }
}

void Replayer::p2p_release(int ri, int oi) {
  auto it = p2p_holds_.find((int64_t{ri} << 32) | oi);
  if (it == p2p_holds_.end()) return;
  auto k = p2p_kernels_.find(it->second);
  p2p_holds_.erase(it);
  OVERLAPSIM_CHECK(k != p2p_kernels_.end(), "point-to-point op without its kernel's SM hold");
  if (--k->second.ops > 0) return;
  // Erased before the release: the GPU's new speed may end kernels, whose ops complete here.
  int sms = k->second.sms;
  p2p_kernels_.erase(k);
  release_sms(ri, sms);
}

void Replayer::release_sms(int ri, int& held) {
  if (held <= 0) return;
  held_sms_[ri] -= held;
  held = 0;
  set_gpu_state(ri);
}

void Replayer::set_gpu_state(int ri) {
  // The GPU runs at the speed of its power state "k SMs held" (build()).
  be_.set_state(s_.programs[ri].rank, std::min(held_sms_[ri], opt_.sm_count));
}

void Replayer::on_ready(int ri, int oi) {
  OpState& st = state(ri, oi);
  start_of(ri, oi) = be_.now();
  switch (st.type()) {
    case OpType::Compute: {
      // A kernel, or the first of a run for the run's summed time (its Op is not read).
      if (st.run_s <= 0) {
        kernel_done(ri, oi);
        return;
      }
      start_exec(Task::Kernel, true, st.run_s, ri, oi, -1);
      return;
    }
    case OpType::Collective:
      coll_ready(ri, oi);
      return;
    case OpType::Send: {
      const Op& op = s_.programs[ri].ops[oi];
      p2p_hold(ri, oi, op);
      p2p_send(ri, oi, op.match, false);
      // The mirror that sends to this rank does so now too (mirror_partners).
      if (!mirror_partner_[ri].empty() && mirror_partner_[ri][oi] >= 0) mirror_send(ri, mirror_partner_[ri][oi]);
      return;
    }
    case OpType::Recv: {
      const Op& op = s_.programs[ri].ops[oi];
      p2p_hold(ri, oi, op);
      P2PState& st = p2p_[op.match];
      st.recv_rank_idx = ri;
      st.recv_op = oi;
      st.recv_ready = true;
      if (st.arrived) {
        p2p_.erase(op.match);
        complete(ri, oi);
      } else if (rank_idx(op.peer) < 0 && !st.mirror_sent) {
        // The sender is a mirror whose paired send of this rank has not been posted yet (or that
        // has none): its data leaves when this receive is posted.
        mirror_send(ri, oi);
      }
      return;
    }
  }
}

void Replayer::mirror_send(int ri, int recv) {
  if (!mirror_partner_send_[ri].empty() && mirror_partner_send_[ri][recv] >= 0) {
    mirror_partner_[ri][mirror_partner_send_[ri][recv]] = -1;  // its pair no longer sends it
    mirror_partner_send_[ri][recv] = -1;
  }
  const int64_t m = s_.programs[ri].ops[recv].match;
  P2PState& st = p2p_[m];
  st.recv_rank_idx = ri;
  st.recv_op = recv;
  st.mirror_sent = true;
  p2p_send(-1, -1, m, false);
}

double Replayer::p2p_latency(int src, int dst, double bytes, bool copy_engine) {
  const int64_t key =
      (int64_t{src} * s_.world_size + dst) * 4 + (bytes <= kP2PLLThresholdBytes ? 2 : 0) + (copy_engine ? 1 : 0);
  auto it = p2p_latency_.find(key);
  if (it == p2p_latency_.end())
    it = p2p_latency_
             .emplace(key, p2p_extra_latency_s(topo_, src, dst, bytes, copy_engine, opt_.launch_overhead_s,
                                               opt_.collectives.textbook))
             .first;
  return it->second;
}

double Replayer::p2p_rate(int src, int dst, double bytes, bool copy_engine, const P2pCommunicator& comm) {
  if (!(opt_.collectives.p2p_channel_nvlink_Bps > 0)) return std::numeric_limits<double>::infinity();
  const auto key = std::make_tuple(src, dst, bytes, copy_engine, comm.ranks, comm.nodes, comm.channels,
                                   comm.local_ranks);
  auto it = p2p_rate_.find(key);
  if (it == p2p_rate_.end())
    it = p2p_rate_.emplace(key, p2p_rate_cap_Bps(topo_, src, dst, bytes, copy_engine, comm, opt_.collectives)).first;
  return it->second;
}

double Replayer::route_latency(int src, int dst) {
  const int64_t key = int64_t{src} * s_.world_size + dst;
  auto it = route_latency_.find(key);
  if (it != route_latency_.end()) return it->second;
  double lat = 0;
  for (const Hop& h : topo_.route(src, dst)) lat += topo_.link(h.link_id).latency_s;
  return route_latency_[key] = lat;
}

bool Replayer::wait_for_floor(const Task& t, Task::Kind floor_kind) {
  if (flow_floors_.empty()) return false;
  auto it = flow_floors_.find(&t);
  if (it == flow_floors_.end()) return false;
  const double early = it->second - be_.now();
  flow_floors_.erase(it);
  if (!(early > 1e-15)) return false;
  start_exec(floor_kind, false, early, t.rank_idx, t.op, t.match, t.channel, t.idx);
  last_task_->started_s = t.started_s;
  return true;
}

void Replayer::p2p_send(int ri, int oi, int64_t match, bool delayed) {
  // The send op, or (ri < 0) the receive a mirror sends into.
  const P2PState* st = ri < 0 ? &p2p_.at(match) : nullptr;
  const Op& op = ri >= 0 ? s_.programs[ri].ops[oi] : s_.programs[st->recv_rank_idx].ops[st->recv_op];
  const int src = ri >= 0 ? s_.programs[ri].rank : op.peer;
  const int dst = ri >= 0 ? op.peer : s_.programs[st->recv_rank_idx].rank;
  if (!delayed) {
    const double lat = p2p_latency(src, dst, op.bytes, op.num_sm == 0);
    if (lat > 0) {
      start_exec(Task::P2PDelay, false, lat, ri, oi, match);
      return;
    }
  }
  start_flow(Task::P2PFlow, src, dst, op.bytes, ri, oi, match, -1, -1,
             p2p_rate(src, dst, op.bytes, op.num_sm == 0, p2p_comm_of(op)));
}

void Replayer::on_activity_done(Task& t) {
  if (opt_.record_flows) flows_.ended(&t, be_.now());
  switch (t.kind) {
    case Task::Kernel:
      kernel_done(t.rank_idx, t.op);
      break;
    case Task::BulkFlow:
      bulk_done(t);
      break;
    case Task::SoloTimer: {
      int held = t.channel;
      release_sms(t.rank_idx, held);
      complete(t.rank_idx, t.op);
      break;
    }
    case Task::CollTimer: {
      CollState& c = colls_.at(t.match);
      --c.in_flight;
      member_finish(c, t.idx);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::StepDelay:
      ring_send(colls_.at(t.match), t.match, t.channel, t.idx);
      break;
    case Task::TreeDelay:
    case Task::TreeSlot:
    case Task::TreeArrival:
    case Task::TreeFloor:
      tree_done(t);
      break;
    case Task::TreeFlow: {
      // As a ring step (Task::Step): a channel moves a slice no faster than its share of the
      // hop's links, however fast the flow went while the channel's other hops waited.
      const CollState& c = colls_.at(t.match);
      const TreePlan& tp = c.plan->trees[t.channel];
      const Hop2& h = (t.idx % 2 == 0 ? tp.up : tp.down)[t.idx / 2];
      // (A merged flow carries `multiplicity` channels' slices at their summed rate: the floor
      // is one channel's slice at one channel's share, TreePlan::hop_s.)
      const double early = t.started_s + h.route_latency_s + c.tree->flow_wire_bytes(t.channel, t.idx) / h.share_Bps - be_.now();
      if (early > 1e-15) start_exec(Task::TreeFloor, false, early, t.rank_idx, t.op, t.match, t.channel, t.idx);
      else tree_done(t);
      break;
    }
    case Task::Step: {
      // A channel is one thread block, which copies at its share of the hop's links (NCCL gives
      // each channel its part of a link's bandwidth, src/graph/search.cc): a step (a coalesced
      // representative: all its steps) is done no sooner than at that share, however fast its
      // flow went while the channel's other hops on those links waited out their step latency,
      // or while the ranks that share them were not simulated (a folded ring's representative on
      // its bottleneck hop: regression, 16 channels over a box of NVLink pairs and PCIe ran 2×
      // fast folded). A chain's slice k at position p moves at its share among the hops of its
      // wave p + k (collective_chain.cpp), as its closed form has it (regression: over 5 GPUs of
      // one node on 8 channels, LL128, 1 GiB took 4377 µs in flow against 4852 µs analytic).
      const CollState& c = colls_.at(t.match);
      const ChannelPlan& cp = c.plan->rings[t.channel];
      const ChannelState& cs = c.channels[t.channel];
      const Hop2& h = cp.hops[cs.mode == ChannelMode::Bottleneck ? cp.bottleneck : t.idx];
      const double bytes = cs.coalesced ? c.plan->wire_bytes * c.plan->steps : c.plan->wire_bytes;
      double early = 0;
      if (!c.plan->chain) {
        early = t.started_s + h.route_latency_s + bytes / h.share_Bps - be_.now();
      } else if (!c.plan->chain_waves.hop_s.empty()) {  // a chain (every member simulated)
        const ChainWaves& cw = c.plan->chain_waves;
        const int k = cs.m[t.idx].steps_done;       // this slice
        const auto w = static_cast<size_t>(t.idx + k);  // its wave
        if (w < cw.wave_id.size())
          early = t.started_s + h.route_latency_s +
                  cw.wire_s(h, t.channel, t.idx, static_cast<int>(cp.order.size()), w) *
                      c.plan->wire_fraction_of(k) -
                  be_.now();
      }
      if (early > 1e-15) start_exec(Task::StepFloor, false, early, t.rank_idx, t.op, t.match, t.channel, t.idx);
      else ring_step_done(t);
      break;
    }
    case Task::StepFloor:
      ring_step_done(t);
      break;
    case Task::StepSlot: {
      CollState& c = colls_.at(t.match);
      ++c.channels[t.channel].m[t.idx].slots_done;
      --c.in_flight;
      ring_advance(c, t.match, t.channel, t.idx);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::StepArrival: {
      CollState& c = colls_.at(t.match);
      const int n = static_cast<int>(c.plan->rings[t.channel].order.size());
      ++c.channels[t.channel].m[t.idx].steps_arrived;
      --c.in_flight;
      const int succ = (t.idx + 1) % n;
      ring_check_done(c, t.channel, succ);
      ring_advance(c, t.match, t.channel, succ);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::AllToAllFlow:
    case Task::AllToAllFloor:
      if (t.kind == Task::AllToAllFlow && wait_for_floor(t, Task::AllToAllFloor)) break;
      a2a_done(t);
      break;
    case Task::P2PDelay: {
      const double issued = t.started_s;
      p2p_send(t.rank_idx, t.op, t.match, true);
      last_task_->started_s = issued;  // the receive's communication began with the latency
      break;
    }
    case Task::AllToAllDelay: {
      CollState& c = colls_.at(t.match);
      --c.in_flight;
      a2a_send(c, t.match, t.idx);
      break;
    }
    case Task::P2PFlow:
    case Task::P2PFloor: {
      if (t.kind == Task::P2PFlow && wait_for_floor(t, Task::P2PFloor)) break;
      if (t.rank_idx >= 0) {
        // The send op. Into a mirror nobody posts the receive: keep no state for it (regression:
        // TP 16 te-overlap kept millions, a fifth of an analytic run in hash lookups).
        const bool to_mirror = rank_idx(s_.programs[t.rank_idx].ops[t.op].peer) < 0;
        complete(t.rank_idx, t.op);
        if (to_mirror) break;
      }
      P2PState& st = p2p_[t.match];
      st.arrived = true;
      if (st.recv_ready) {
        const int ri = st.recv_rank_idx, oi = st.recv_op;
        // Waiting for the sender to start is idle time (a pipeline bubble), not communication.
        double& start = start_of(ri, oi);
        start = std::max(start, t.started_s);
        p2p_.erase(t.match);
        complete(ri, oi);
      }
      break;
    }
  }
}

ReplayTimes Replayer::run() {
  build();
  drain();
  be_.run([this](void* tag) {
    Task* t = static_cast<Task*>(tag);
    on_activity_done(*t);
    free_tasks_.push_back(t);  // nothing holds it any more: the next activity may reuse it
    drain();
  });
  if (completed_ != static_cast<long long>(ops_.size()) - 1) {
    for (size_t ri = 0; ri < s_.programs.size(); ++ri)
      for (size_t oi = 0; oi < s_.programs[ri].ops.size(); ++oi)
        if (end_of(static_cast<int>(ri), static_cast<int>(oi)) < 0)
          throw std::runtime_error("replay deadlock: rank " + std::to_string(s_.programs[ri].rank) + " op " +
                                   std::to_string(oi) + " (" + s_.programs[ri].ops[oi].name + ") never completed");
  }
  // Every message was received, or sent into a mirror (which keeps no state).
  OVERLAPSIM_CHECK(p2p_.empty(), std::to_string(p2p_.size()) + " point-to-point messages left pending");
  OVERLAPSIM_CHECK(colls_.empty(), std::to_string(colls_.size()) + " collectives left pending");
  OVERLAPSIM_CHECK(p2p_holds_.empty() && p2p_kernels_.empty(),
                   std::to_string(p2p_holds_.size()) + " point-to-point SM holds left");
  OVERLAPSIM_CHECK(flow_floors_.empty(), std::to_string(flow_floors_.size()) + " rate-bound flows never ended");
  for (const auto& end : times_.end_s)
    for (const double e : end) times_.makespan_s = std::max(times_.makespan_s, e);
  if (opt_.record_flows) times_.flows = flows_.take();
  return std::move(times_);  // (a copy would touch as much fresh memory again)
}

}  // namespace detail

ReplayTimes run_replay_engine(const Schedule& schedule, const Topology& topo, const ReplayOptions& options,
                              ActivityBackend& backend) {
  detail::Replayer r(schedule, topo, options, backend);
  return r.run();
}

}  // namespace overlapsim
