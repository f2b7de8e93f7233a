// The replay engine: ops become SimGrid activities only when they are ready (design §7: an
// activity DAG built up front is quadratic in SimGrid 3.32), and successors start from the
// completion callback. Semantics are documented in replay.hpp.
#include "sim/replay_engine.hpp"

#include "sim/activity_backend.hpp"
#include "sim/error.hpp"
#include "sim/link_trace.hpp"


#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <tuple>
#include <stdexcept>
#include <unordered_map>


namespace overlapsim {

namespace {

/// Speed of a GPU host: a kernel of t seconds is t · kGpuSpeed units of work.
constexpr double kGpuSpeed = 1e9;
/// Most flows per step (members × channels) for which an uneven ring's mirrors are simulated;
/// above, a representative's flows take each channel's bottleneck hop.
constexpr int kMaxMirroredFlowsPerStep = 64;

/// What a SimGrid activity stands for.
struct Task {
  enum Kind : uint8_t { Kernel, Step, StepDelay, CollTimer, ChannelTimer, AllToAllFlow, P2PFlow } kind;
  int rank_idx = -1;  ///< simulated rank owning the op (-1 for a mirror's flow)
  int op = -1;
  int64_t match = -1;
  int channel = -1;   ///< Step/StepDelay: channel; AllToAllFlow: destination group position
  int idx = -1;       ///< Step/StepDelay: index in the channel's order; AllToAllFlow: source position
  double started_s = 0;
};

enum class ChannelMode : uint8_t { Representatives, Mirrors, Bottleneck };

struct RingMember {
  bool active = false;
  int steps_started = 0;
  int steps_done = 0;
  bool done = false;  ///< its part of this channel is over (simulated members only)
};

struct ChannelState {
  ChannelMode mode = ChannelMode::Representatives;
  std::vector<RingMember> m;  ///< by index in the channel's order
};

struct Member {
  int rank_idx = -1;  ///< -1: a mirror
  int op = -1;
  bool ready = false;
  int channels_left = 0;
  int a2a_left = 0;   ///< AllToAll: flows in and out still to finish
  int sm_held = 0;    ///< SMs its communication kernel holds
};

struct CollState {
  CollectivePlan plan;
  int group = -1;
  bool all_to_all = false;
  std::vector<Member> members;  ///< by group position
  std::vector<ChannelState> channels;
  int simulated = 0, remaining = 0, ready_count = 0, in_flight = 0;
};

struct P2PState {
  bool arrived = false;
  int recv_rank_idx = -1;
  int recv_op = -1;
  bool recv_ready = false;
};

class Replayer {
 public:
  Replayer(const Schedule& s, const Topology& topo, const ReplayOptions& opt, ActivityBackend& backend)
      : s_(s), topo_(topo), opt_(opt), be_(backend) {}
  ReplayTimes run();

 private:
  void build();
  const CollectivePlan& plan_of(const Op& op);
  void on_ready(int ri, int oi);
  void complete(int ri, int oi);
  void drain();
  void on_activity_done(Task& t);
  /// An execution of `seconds` (at full speed) on the GPU of rank index ri, or a timer when
  /// on_gpu is false.
  void start_exec(Task::Kind kind, bool on_gpu, double seconds, int ri, int oi, int64_t match, int channel = -1,
                  int idx = -1);
  void start_flow(Task::Kind kind, int src_rank, int dst_rank, double bytes, int ri, int oi, int64_t match,
                  int channel, int idx);
  /// Takes num_sm SMs of rank ri's GPU (slowing its kernels); returns how many were taken.
  int hold_sms(int ri, int num_sm);
  void set_gpu_state(int ri);
  void release_sms(int ri, int& held);
  // Collectives.
  void coll_ready(int ri, int oi);
  void ring_advance(CollState& c, int64_t match, int ch, int i);
  void ring_send(CollState& c, int64_t match, int ch, int i);
  void ring_check_done(CollState& c, int ch, int i);
  void chain_ends(CollState& c, int64_t match, int pos);
  void member_channel_done(CollState& c, int pos);
  void member_finish(CollState& c, int pos);
  void coll_maybe_erase(int64_t match);
  int rank_idx(int rank) const {
    auto it = rank_index_.find(rank);
    return it == rank_index_.end() ? -1 : it->second;
  }

  const Schedule& s_;
  const Topology& topo_;
  const ReplayOptions& opt_;
  ActivityBackend& be_;
  std::unordered_map<int, int> rank_index_;
  std::vector<std::vector<int>> pending_, succ_begin_, succ_;
  std::vector<int> ready_rank_, ready_op_;
  std::deque<Task> tasks_;
  std::unordered_map<int64_t, CollState> colls_;
  std::unordered_map<int64_t, P2PState> p2p_;
  std::unordered_map<int64_t, int> p2p_holds_;  // (rank index << 32 | op) → SMs held
  std::vector<int> held_sms_;                     // per simulated rank: SMs communication holds
  std::map<std::tuple<int, int, double, int>, CollectivePlan> plans_;  // (group, kind, bytes, channels)
  FlowRecorder flows_;  // used only when opt_.record_flows (the trace's link tracks)
  ReplayTimes times_;
  long long completed_ = 0, total_ops_ = 0;
};

const CollectivePlan& Replayer::plan_of(const Op& op) {
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes, static_cast<int>(op.channels));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  CollectiveOptions o = opt_.collectives;
  if (op.algorithm != CollectiveAlgorithm::Auto) o.algorithm = op.algorithm;
  return plans_[key] = plan_collective(topo_, opt_.link_efficiency, s_.groups[op.group].ranks, op.collective, op.bytes,
                                       op.channels, o);
}

void Replayer::build() {
  const int nr = static_cast<int>(s_.programs.size());
  std::vector<int> ranks;
  for (int i = 0; i < nr; ++i) {
    rank_index_[s_.programs[i].rank] = i;
    ranks.push_back(s_.programs[i].rank);
  }
  // Every (src, dst) pair a flow may use.
  std::vector<std::pair<int, int>> pairs;
  for (const auto& p : s_.programs)
    for (const auto& op : p.ops) {
      if (op.type == OpType::Collective) {
        const auto& g = s_.groups[op.group].ranks;
        const int n = static_cast<int>(g.size());
        if (n <= 1) continue;
        if (op.collective == CollectiveKind::AllToAll) {
          for (int j = 0; j < n; ++j)
            if (g[j] != p.rank) {
              pairs.emplace_back(p.rank, g[j]);
              if (rank_idx(g[j]) < 0) pairs.emplace_back(g[j], p.rank);
            }
          continue;
        }
        if (opt_.fidelity == Fidelity::Analytic) continue;
        for (const auto& ch : plan_of(op).rings)
          for (const Hop2& h : ch.hops) pairs.emplace_back(g[h.src_pos], g[h.dst_pos]);
      } else if (op.type == OpType::Send) {
        pairs.emplace_back(p.rank, op.peer);
      } else if (op.type == OpType::Recv && rank_idx(op.peer) < 0) {
        pairs.emplace_back(op.peer, p.rank);
      }
    }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  // Power state k of a GPU: its speed while communication kernels hold k of its SMs.
  std::vector<double> speeds{kGpuSpeed};
  for (int k = 1; k <= opt_.sm_count; ++k)
    speeds.push_back(kGpuSpeed * std::max(1e-3, 1.0 - std::min(1.0, opt_.sm_interference * k / opt_.sm_count)));
  be_.build(topo_, ranks, pairs, opt_.link_efficiency, speeds);
  held_sms_.assign(nr, 0);

  pending_.resize(nr);
  succ_begin_.resize(nr);
  succ_.resize(nr);
  times_.start_s.resize(nr);
  times_.end_s.resize(nr);
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    const int n = static_cast<int>(p.ops.size());
    total_ops_ += n;
    times_.start_s[ri].assign(n, -1.0);
    times_.end_s[ri].assign(n, -1.0);
    std::vector<int> count(n + 1, 0), last(p.num_streams, -1), next_in_stream(n, -1);
    pending_[ri].assign(n, 0);
    for (int i = 0; i < n; ++i) {
      int& prev = last[p.ops[i].stream];
      if (prev >= 0) {
        next_in_stream[prev] = i;
        ++count[prev];
        ++pending_[ri][i];
      }
      prev = i;
      for (int d : p.ops[i].deps) {
        ++count[d];
        ++pending_[ri][i];
      }
    }
    auto& begin = succ_begin_[ri];
    begin.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) begin[i + 1] = begin[i] + count[i];
    auto& list = succ_[ri];
    list.assign(begin[n], 0);
    std::vector<int> fill(begin.begin(), begin.end() - 1);
    for (int i = 0; i < n; ++i) {
      if (next_in_stream[i] >= 0) list[fill[i]++] = next_in_stream[i];
      for (int d : p.ops[i].deps) list[fill[d]++] = i;
    }
    for (int i = 0; i < n; ++i)
      if (pending_[ri][i] == 0) {
        ready_rank_.push_back(ri);
        ready_op_.push_back(i);
      }
  }
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
  times_.end_s[ri][oi] = be_.now();
  if (!p2p_holds_.empty()) {
    auto it = p2p_holds_.find((int64_t{ri} << 32) | oi);
    if (it != p2p_holds_.end()) {
      release_sms(ri, it->second);
      p2p_holds_.erase(it);
    }
  }
  ++completed_;
  const auto& begin = succ_begin_[ri];
  for (int k = begin[oi]; k < begin[oi + 1]; ++k) {
    const int j = succ_[ri][k];
    if (--pending_[ri][j] == 0) {
      ready_rank_.push_back(ri);
      ready_op_.push_back(j);
    }
  }
}

void Replayer::start_exec(Task::Kind kind, bool on_gpu, double seconds, int ri, int oi, int64_t match, int channel,
                          int idx) {
  tasks_.push_back(Task{kind, ri, oi, match, channel, idx, be_.now()});
  ++times_.activities;
  be_.start_exec(on_gpu ? s_.programs[ri].rank : ActivityBackend::kTimer, seconds * kGpuSpeed, &tasks_.back());
}

void Replayer::start_flow(Task::Kind kind, int src_rank, int dst_rank, double bytes, int ri, int oi, int64_t match,
                          int channel, int idx) {
  tasks_.push_back(Task{kind, ri, oi, match, channel, idx, be_.now()});
  ++times_.activities;
  if (opt_.record_flows)
    flows_.started(&tasks_.back(), FlowRecord{be_.now(), -1, bytes, src_rank, dst_rank,
                                              ri >= 0 ? s_.programs[ri].rank : src_rank, oi, match});
  be_.start_flow(src_rank, dst_rank, bytes, &tasks_.back());
}

int Replayer::hold_sms(int ri, int num_sm) {
  if (opt_.sm_count <= 0 || num_sm <= 0) return 0;
  held_sms_[ri] += num_sm;
  set_gpu_state(ri);
  return num_sm;
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
  const Op& op = s_.programs[ri].ops[oi];
  times_.start_s[ri][oi] = be_.now();
  switch (op.type) {
    case OpType::Compute: {
      const double seconds = std::max(op.duration_s, opt_.launch_overhead_s);
      if (seconds <= 0) {
        complete(ri, oi);
        return;
      }
      start_exec(Task::Kernel, true, seconds, ri, oi, -1);
      return;
    }
    case OpType::Collective:
      coll_ready(ri, oi);
      return;
    case OpType::Send:
      if (int h = hold_sms(ri, op.num_sm >= 0 ? op.num_sm : 1)) p2p_holds_[(int64_t{ri} << 32) | oi] = h;
      start_flow(Task::P2PFlow, s_.programs[ri].rank, op.peer, op.bytes, ri, oi, op.match, -1, -1);
      return;
    case OpType::Recv: {
      if (int h = hold_sms(ri, op.num_sm >= 0 ? op.num_sm : 1)) p2p_holds_[(int64_t{ri} << 32) | oi] = h;
      P2PState& st = p2p_[op.match];
      st.recv_rank_idx = ri;
      st.recv_op = oi;
      st.recv_ready = true;
      if (st.arrived) {
        p2p_.erase(op.match);
        complete(ri, oi);
      } else if (rank_idx(op.peer) < 0) {
        // The sender is a mirror: its data leaves when this receive is posted.
        start_flow(Task::P2PFlow, op.peer, s_.programs[ri].rank, op.bytes, -1, -1, op.match, -1, -1);
      }
      return;
    }
  }
}

// ---- collectives ---------------------------------------------------------------------------

void Replayer::coll_ready(int ri, int oi) {
  const Op& op = s_.programs[ri].ops[oi];
  const auto& g = s_.groups[op.group].ranks;
  const int n = static_cast<int>(g.size());
  const int64_t match = op.match;
  auto [it, fresh] = colls_.try_emplace(match);
  CollState& c = it->second;
  if (fresh) {
    c.group = op.group;
    c.all_to_all = op.collective == CollectiveKind::AllToAll;
    if (!c.all_to_all) c.plan = plan_of(op);
    c.members.resize(n);
    for (int pos = 0; pos < n; ++pos) {
      c.members[pos].rank_idx = rank_idx(g[pos]);
      if (c.members[pos].rank_idx >= 0) ++c.simulated;
    }
    c.remaining = c.simulated;
    if (c.all_to_all)
      for (auto& mem : c.members)
        if (mem.rank_idx >= 0) mem.a2a_left = 2 * (n - 1);  // n−1 flows out, n−1 in
    if (!c.all_to_all && opt_.fidelity == Fidelity::Flow) {
      const bool all_simulated = c.simulated == n;
      c.channels.resize(c.plan.rings.size());
      for (size_t ch = 0; ch < c.plan.rings.size(); ++ch) {
        const ChannelPlan& cp = c.plan.rings[ch];
        ChannelState& cs = c.channels[ch];
        const bool small = n * static_cast<int>(c.plan.rings.size()) <= kMaxMirroredFlowsPerStep;
        cs.mode = (all_simulated || (!cp.even && small)) ? ChannelMode::Mirrors
                  : cp.even                                               ? ChannelMode::Representatives
                                                                          : ChannelMode::Bottleneck;
        cs.m.resize(n);
        for (int i = 0; i < n; ++i)
          cs.m[i].active = cs.mode == ChannelMode::Mirrors || c.members[cp.order[i]].rank_idx >= 0;
      }
    }
  }
  int pos = 0;
  while (g[pos] != s_.programs[ri].rank) ++pos;
  Member& m = c.members[pos];
  OVERLAPSIM_CHECK(!m.ready, "collective " + op.name + " reached twice by one rank (duplicate match id)");
  m.op = oi;
  m.ready = true;
  ++c.ready_count;
  const int num_sm = op.num_sm >= 0 ? op.num_sm : (c.all_to_all ? 1 : c.plan.channels);
  m.sm_held = hold_sms(ri, num_sm);

  if (n <= 1 || (!c.all_to_all && c.plan.steps == 0)) {
    member_finish(c, pos);
    coll_maybe_erase(match);
    return;
  }
  if (c.all_to_all) {
    // Sends to everyone; receives from every mirror (simulated peers send their own).
    const double piece = op.bytes / n;
    for (int j = 0; j < n; ++j) {
      if (j == pos) continue;
      ++c.in_flight;
      start_flow(Task::AllToAllFlow, g[pos], g[j], piece, ri, oi, match, j, pos);
      if (c.members[j].rank_idx < 0) {
        ++c.in_flight;
        start_flow(Task::AllToAllFlow, g[j], g[pos], piece, -1, -1, match, pos, j);
      }
    }
    return;
  }
  if (opt_.fidelity == Fidelity::Analytic) {
    if (c.ready_count < c.simulated) return;
    const double t = c.plan.closed_form_s();
    for (int p = 0; p < n; ++p)
      if (c.members[p].rank_idx >= 0) {
        ++c.in_flight;
        start_exec(Task::CollTimer, false, t, c.members[p].rank_idx, c.members[p].op, match, -1, p);
      }
    return;
  }
  // Flow fidelity. Mirrors of mirrored channels start when every simulated member is here.
  chain_ends(c, match, pos);
  if (c.ready_count == c.simulated) {
    for (size_t ch = 0; ch < c.channels.size(); ++ch)
      for (int i = 0; i < n; ++i) ring_advance(c, match, static_cast<int>(ch), i);
    return;
  }
  for (size_t ch = 0; ch < c.channels.size(); ++ch) {
    const auto& order = c.plan.rings[ch].order;
    for (int i = 0; i < n; ++i)
      if (order[i] == pos) {
        ring_advance(c, match, static_cast<int>(ch), i);
        ring_advance(c, match, static_cast<int>(ch), (i + n - 1) % n);
      }
  }
}

void Replayer::chain_ends(CollState& c, int64_t match, int pos) {
  // The end of a chain behind a mirror has no flow of its own to time it: the closed form does.
  const int n = static_cast<int>(c.members.size());
  for (size_t ch = 0; ch < c.channels.size(); ++ch) {
    const ChannelState& cs = c.channels[ch];
    if (c.plan.chain && c.plan.rings[ch].order[n - 1] == pos && !cs.m[n - 2].active) {
      ++c.in_flight;
      start_exec(Task::ChannelTimer, false, c.plan.closed_form_s(), c.members[pos].rank_idx, c.members[pos].op,
                 match, static_cast<int>(ch), n - 1);
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
  const ChannelPlan& cp = c.plan.rings[ch];
  ChannelState& cs = c.channels[ch];
  const int n = static_cast<int>(cp.order.size());
  RingMember& rm = cs.m[i];
  if (!rm.active || !present(c, cp, i) || rm.steps_started != rm.steps_done || rm.steps_started >= c.plan.steps) return;
  if (c.plan.chain && i == n - 1) return;  // the end of a chain only receives
  if (c.members[cp.order[i]].rank_idx < 0 && c.remaining == 0) return;  // nobody waits for this mirror
  const int k = rm.steps_started;
  const int succ = (i + 1) % n, pred = (i + n - 1) % n;
  if (k == 0 && cs.m[succ].active && !present(c, cp, succ)) return;
  const bool has_pred = !(c.plan.chain && i == 0);
  const int need = c.plan.chain ? k + 1 : k;  // predecessor steps that must have arrived
  if (has_pred && cs.m[pred].active && cs.m[pred].steps_done < need) return;
  ++rm.steps_started;
  ++c.in_flight;
  // Latency the flow's route does not pay itself: the protocol's step latency, or — when the
  // predecessor is a mirror whose hop is not simulated — the slowest hop's.
  const bool stand_in = has_pred && !cs.m[pred].active;
  const Hop2& own = cp.hops[cs.mode == ChannelMode::Bottleneck ? cp.bottleneck : i];
  // A stand-in pays the ring's mean step latency (collective_plan.hpp); a ring of simulated
  // members paces itself hop by hop.
  const double stand_in_latency = c.plan.chain ? cp.max_step_latency_s : cp.mean_step_latency_s;
  const double extra = std::max(0.0, (stand_in ? stand_in_latency : own.step_latency_s) - own.route_latency_s);
  // A ring pays all its steps' extra latency, and NCCL's base latency, up front: the same end
  // time without contention, and one timer per member instead of one per step. A chain's
  // latencies add up along it, so it pays them step by step.
  double delay = 0;
  if (c.plan.chain) delay = extra + (k == 0 ? c.plan.base_latency_s : 0.0);
  else if (k == 0) delay = c.plan.base_latency_s + c.plan.steps * extra;
  const int ri = c.members[cp.order[i]].rank_idx;
  const int oi = c.members[cp.order[i]].op;
  if (delay > 1e-15) {
    start_exec(Task::StepDelay, false, delay, ri, oi, match, ch, i);
    return;
  }
  ring_send(c, match, ch, i);
}

void Replayer::ring_send(CollState& c, int64_t match, int ch, int i) {
  const ChannelPlan& cp = c.plan.rings[ch];
  const auto& g = s_.groups[c.group].ranks;
  const Hop2& h = cp.hops[c.channels[ch].mode == ChannelMode::Bottleneck ? cp.bottleneck : i];
  const Member& mem = c.members[cp.order[i]];
  start_flow(Task::Step, g[h.src_pos], g[h.dst_pos], c.plan.wire_bytes, mem.rank_idx, mem.op, match, ch, i);
}

void Replayer::ring_check_done(CollState& c, int ch, int i) {
  const ChannelPlan& cp = c.plan.rings[ch];
  ChannelState& cs = c.channels[ch];
  const int n = static_cast<int>(cp.order.size());
  RingMember& rm = cs.m[i];
  const int pos = cp.order[i];
  if (c.members[pos].rank_idx < 0 || rm.done) return;
  const bool sends = !(c.plan.chain && i == n - 1);
  const bool has_pred = !(c.plan.chain && i == 0);
  if (sends && rm.steps_done < c.plan.steps) return;
  const RingMember& pred = cs.m[(i + n - 1) % n];
  if (has_pred && pred.active && pred.steps_done < c.plan.steps) return;
  if (!sends && has_pred && !pred.active) return;  // timed by chain_ends()
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
  if (it != colls_.end() && it->second.remaining == 0 && it->second.in_flight == 0) colls_.erase(it);
}

void Replayer::on_activity_done(Task& t) {
  if (opt_.record_flows) flows_.ended(&t, be_.now());
  switch (t.kind) {
    case Task::Kernel:
      complete(t.rank_idx, t.op);
      break;
    case Task::CollTimer: {
      CollState& c = colls_.at(t.match);
      --c.in_flight;
      member_finish(c, t.idx);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::ChannelTimer: {
      CollState& c = colls_.at(t.match);
      --c.in_flight;
      c.channels[t.channel].m[t.idx].done = true;
      member_channel_done(c, c.plan.rings[t.channel].order[t.idx]);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::StepDelay:
      ring_send(colls_.at(t.match), t.match, t.channel, t.idx);
      break;
    case Task::Step: {
      CollState& c = colls_.at(t.match);
      const int n = static_cast<int>(c.plan.rings[t.channel].order.size());
      ++c.channels[t.channel].m[t.idx].steps_done;
      --c.in_flight;
      const int succ = (t.idx + 1) % n;
      ring_check_done(c, t.channel, t.idx);
      ring_check_done(c, t.channel, succ);
      ring_advance(c, t.match, t.channel, t.idx);
      ring_advance(c, t.match, t.channel, succ);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::AllToAllFlow: {
      CollState& c = colls_.at(t.match);
      --c.in_flight;
      // A flow ends one "out" of its source and one "in" of its destination.
      for (int pos : {t.idx, t.channel}) {
        Member& m = c.members[pos];
        if (m.rank_idx >= 0 && --m.a2a_left == 0) member_finish(c, pos);
      }
      coll_maybe_erase(t.match);
      break;
    }
    case Task::P2PFlow: {
      if (t.rank_idx >= 0) complete(t.rank_idx, t.op);  // the send op
      P2PState& st = p2p_[t.match];
      st.arrived = true;
      if (st.recv_ready) {
        const int ri = st.recv_rank_idx, oi = st.recv_op;
        // Waiting for the sender to start is idle time (a pipeline bubble), not communication.
        times_.start_s[ri][oi] = std::max(times_.start_s[ri][oi], t.started_s);
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
    on_activity_done(*static_cast<Task*>(tag));
    drain();
  });
  if (completed_ != total_ops_) {
    for (size_t ri = 0; ri < s_.programs.size(); ++ri)
      for (size_t oi = 0; oi < s_.programs[ri].ops.size(); ++oi)
        if (times_.end_s[ri][oi] < 0)
          throw std::runtime_error("replay deadlock: rank " + std::to_string(s_.programs[ri].rank) + " op " +
                                   std::to_string(oi) + " (" + s_.programs[ri].ops[oi].name + ") never completed");
  }
  for (const auto& v : times_.end_s)
    for (double e : v) times_.makespan_s = std::max(times_.makespan_s, e);
  if (opt_.record_flows) times_.flows = flows_.take();
  return times_;
}

}  // namespace

ReplayTimes run_replay_engine(const Schedule& schedule, const Topology& topo, const ReplayOptions& options,
                              ActivityBackend& backend) {
  Replayer r(schedule, topo, options, backend);
  return r.run();
}

}  // namespace overlapsim
