// The replay engine's state (internal to sim/replay_engine.cpp, sim/collective_flows.cpp and
// sim/collective_all_to_all.cpp):
// ops become activities only when they are ready (design §7: an activity DAG built up front is
// quadratic in SimGrid 3.32), and successors start from the completion callback. Semantics are
// documented in replay.hpp; the collectives' flows in collective_plan.hpp and tree_flows.hpp.
#pragma once

#include "sim/activity_backend.hpp"
#include "sim/link_trace.hpp"
#include "sim/replay.hpp"
#include "sim/tree_flows.hpp"

#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace overlapsim::detail {


/// Speed of a GPU host: a kernel of t seconds is t · kGpuSpeed units of work.
inline constexpr double kGpuSpeed = 1e9;
/// Most flows per step (members × channels) for which an uneven ring's mirrors are simulated;
/// above, a representative's flows take each channel's bottleneck hop.
inline constexpr int kMaxMirroredFlowsPerStep = 64;

/// What a SimGrid activity stands for.
struct Task {
  enum Kind : uint8_t {
    Kernel, Step, StepDelay, StepArrival, StepSlot, CollTimer, AllToAllFlow, AllToAllDelay, P2PFlow, P2PDelay, TreeDelay, TreeFlow,
    TreeFloor, TreeSlot, TreeArrival, StepFloor, BulkFlow, P2PFloor, AllToAllFloor, SoloTimer
  } kind;
  int rank_idx = -1;  ///< simulated rank owning the op (-1 for a mirror's flow)
  int op = -1;
  int64_t match = -1;
  int channel = -1;   ///< Step/StepFloor/StepDelay/StepArrival/StepSlot: channel; AllToAllFlow: destination group position;
                      ///< TreeDelay/TreeFlow/TreeSlot/TreeArrival: tree; SoloTimer: the SMs its member holds
  int idx = -1;       ///< Step/StepFloor/StepDelay/StepArrival/StepSlot: index in the channel's order; AllToAllFlow: source position;
                      ///< TreeDelay/TreeFlow/TreeSlot/TreeArrival: hop (tree_flows.hpp)
  double started_s = 0;
};

enum class ChannelMode : uint8_t { Representatives, Mirrors, Bottleneck };

struct RingMember {
  bool active = false;
  int steps_started = 0;
  int steps_done = 0;     ///< steps whose flow has ended (its next send may start)
  int steps_arrived = 0;  ///< steps that have arrived at the successor (after the step latency)
  int slots_done = 0;     ///< per-step arrivals or paced: steps whose slot (wire time, or the
                          ///< pace) has passed since their send started (the next may start)
  bool done = false;  ///< its part of this channel is over (simulated members only)
};

struct ChannelState {
  ChannelMode mode = ChannelMode::Representatives;
  /// A ring of simulated hops that are not uniform (uniform_ring): each step arrives its hop's
  /// extra step latency after its flow ends, and the member's next send may start its wire
  /// time (wire / share) after this one started (two timers per step: the closed form's DAG,
  /// collective_plan.hpp). Otherwise each member pays, before
  /// step 0, what its flows do not: the channel's closed form minus steps × its flow's time.
  bool arrivals = false;
  /// A ring that is not uniform, timed by representatives (stand-ins for mirrors, or every flow
  /// on the bottleneck hop), whose flows outlast the closed form's mean step: each member sends
  /// step k at k · ring_s / steps after its first, so that its last flow ends at the closed
  /// form (its flows' own latencies would otherwise pace it, not the ring's).
  bool paced = false;
  /// A ring timed by representatives on its bottleneck hop (sim/replay.hpp): each sends all its
  /// steps as one flow after paying what the closed form has beyond it (the same end alone;
  /// against other traffic it shares the hop for the collective's whole time at its mean rate).
  bool coalesced = false;
  double ring_s = 0;  ///< ring_channel_s of the channel (rings only), seconds
  std::vector<RingMember> m;  ///< by index in the channel's order
};

struct Member {
  int rank_idx = -1;  ///< -1: a mirror
  int op = -1;
  bool ready = false;
  int channels_left = 0;
  int a2a_left = 0;   ///< AllToAll: flows in and out still to finish
  double a2a_started_s = 0;  ///< AllToAll: when it reached the collective (its floor's origin), s
  int sm_held = 0;    ///< SMs its communication kernel holds
};

/// A plan and what every instance of it derives from it, computed once per distinct collective
/// (group, kind, bytes, channels, algorithm): instances repeat by the thousand (one per layer and
/// micro-batch), so none copies or recomputes them.
struct PlannedCollective {
  CollectivePlan plan;
  std::vector<double> member_ends;  ///< plan.member_ends_s(): the analytic end of each member, s
  std::vector<double> ring_s;       ///< per channel: ring_channel_s (0 for a chain), seconds
  std::vector<char> uniform;        ///< per channel: uniform_ring
};

/// Plans shared across replays (ReplayOptions::plan_cache), by (communicator ranks, kind,
/// bytes, channels, algorithm); map nodes do not move, so replays hold pointers into it.
struct PlanCache {
  const Topology* topology = nullptr;  ///< the one topology its plans are of
  std::map<std::tuple<std::vector<int>, int, double, int, int>, PlannedCollective> plans;
  RingMemo rings;  ///< the channel rings its plans were built on (CollectiveOptions::ring_memo)
};

/// The plan of collective `op` over `ranks` under `opt`, from `cache` or planned into it
/// (replay.hpp cached_plan; Replayer::plan_of).
const PlannedCollective& planned(PlanCache& cache, const ReplayOptions& opt, const Topology& topo,
                                 const std::vector<int>& ranks, const Op& op);

struct CollState {
  const CollectivePlan* plan = nullptr;        ///< &planned->plan
  const PlannedCollective* planned = nullptr;  ///< owned by Replayer::plans_
  int group = -1;
  bool all_to_all = false;
  std::vector<Member> members;  ///< by group position
  std::vector<ChannelState> channels;
  std::unique_ptr<TreeRun> tree;  ///< flow fidelity, tree plan of at most kMaxTreeFlows flows
  bool timed = false;             ///< timed by the plan's member_ends_s() (analytic, or a tree too big)
  bool bulk = false;              ///< flow fidelity, NVLS_TREE, PAT, a tree in bulk: its plan's bulk flows at once
  int bulk_left = 0;              ///< bulk flows still running
  double bulk_started_s = 0;      ///< when they started
  double fixed_s = -1;            ///< analytic: every member's time (a measurement, an AllToAll's closed form), s; -1: the plan's member ends
  int simulated = 0, remaining = 0, ready_count = 0, in_flight = 0;
};

struct P2PState {
  bool arrived = false;
  int recv_rank_idx = -1;
  int recv_op = -1;
  bool recv_ready = false;
  bool mirror_sent = false;  ///< the receive is from a mirror whose send has been started
};

class Replayer {
 public:
  Replayer(const Schedule& s, const Topology& topo, const ReplayOptions& opt, ActivityBackend& backend)
      : s_(s), topo_(topo), opt_(opt), be_(backend) {}
  ReplayTimes run();

 private:
  void build();
  /// Pairs each receive from a mirror with the send of this rank that the mirror's send mirrors
  /// (a ring exchange: rank r receives step k from p while it sends step k to q, and p sends
  /// its step k to r as r sends its own, by symmetry): the k-th receive from p with the k-th
  /// send to q, where q is r's only mirror it sends to, or the one of two that is not p (a
  /// bidirectional ring), and both counts agree. Unpaired receives start the mirror's send when
  /// posted.
  void mirror_partners(int ri, const std::vector<int>& comm_ops);  // comm_ops: its ops other than compute, in order
  /// Starts the mirror's send into receive `recv` of simulated rank `ri` (once: its pairing is
  /// dropped and P2PState::mirror_sent set).
  void mirror_send(int ri, int recv);
  const PlannedCollective& plan_of(const Op& op);
  void on_ready(int ri, int oi);
  void complete(int ri, int oi);
  /// The kernel of compute op oi of rank index ri (a run's first op: the whole run) has ended:
  /// its ops' times are set (a run's in proportion to their work) and the last one completes.
  void kernel_done(int ri, int oi);
  /// An op's time on the GPU at full speed: its duration, no less than a launch, seconds.
  double kernel_s(const Op& op) const { return std::max(op.duration_s, opt_.launch_overhead_s); }
  void drain();
  void on_activity_done(Task& t);
  /// An execution of `seconds` (at full speed) on the GPU of rank index ri, or a timer when
  /// on_gpu is false.
  void start_exec(Task::Kind kind, bool on_gpu, double seconds, int ri, int oi, int64_t match, int channel = -1,
                  int idx = -1);
  /// A flow of `bytes` from src to dst. With a finite `rate_Bps` (a point-to-point message's
  /// channel bound, p2p_rate) it ends no sooner than its start + its route's latency + bytes /
  /// rate_Bps (flow_floors_; its links carry it at their own rate meanwhile): SimGrid 3.32 does
  /// not bound a host-to-host Comm's rate (Comm::set_rate refuses a sendto_init Comm, and a
  /// host-to-host start ignores it).
  void start_flow(Task::Kind kind, int src_rank, int dst_rank, double bytes, int ri, int oi, int64_t match,
                  int channel, int idx, double rate_Bps = std::numeric_limits<double>::infinity());
  /// Whether flow task t waits for its floor (flow_floors_): then a timer of kind `floor_kind`
  /// with t's fields runs out the rest and the caller handles t when it ends.
  bool wait_for_floor(const Task& t, Task::Kind floor_kind);
  /// Contention-free time of an AllToAll (analytic), seconds: the largest over members of its
  /// slowest piece's kernel latency (p2p_latency) plus its farthest route's latency (the kernel
  /// pays the first once, then every piece leaves), plus the most loaded directed link's bytes over
  /// its bandwidth, every member sending n−1 pieces of S/n at once (max-min sharing of a link
  /// whose flows all start together ends with its last byte), or, where longer, its slowest
  /// piece at its rate cap (p2p_rate). Cached per (group, bytes).
  double all_to_all_s(const Op& op);
  /// What an AllToAll of n members pays for NCCL's n rounds of its p2p schedule (collective_plan.hpp,
  /// AllToAll as measured), seconds: 0 for a copy-engine one or with textbook collectives.
  double all_to_all_rounds_s(const Op& op, int n) const;
  /// What all_to_all_s needs of a group's routes, whatever the size: every member sending a piece
  /// to every other at once.
  struct AllToAllRoutes {
    std::vector<std::pair<int, int>> pieces;  ///< (directed link, pieces crossing it)
    std::vector<double> route_s;              ///< per member: its farthest route's latency, seconds
    std::vector<double> extra_ll_s, extra_simple_s;  ///< per member: its slowest piece's extra
                                                     ///< latency (p2p_extra_latency_s) under LL, Simple
    std::vector<std::pair<int, int>> capped;  ///< (src, dst) positions a p2p rate cap may bind (one node, NVLink)
    std::vector<int> capped_from;             ///< per member: its pieces in `capped`
  };
  /// Built once per group: its n·(n−1) routes walked once, not once per size (an AllToAll over
  /// 1000 H100s took 2.8 s a size, flow 0.09 s).
  const AllToAllRoutes& all_to_all_routes(int group);
  /// Latency a message from src to dst pays before its flow (collective_plan.hpp p2p_extra_latency_s).
  double p2p_latency(int src, int dst, double bytes, bool copy_engine);
  /// The most a message from src to dst on communicator `comm` moves per second
  /// (collective_plan.hpp p2p_rate_cap_Bps), bytes/s; cached.
  double p2p_rate(int src, int dst, double bytes, bool copy_engine, const P2pCommunicator& comm);
  /// The communicator of an AllToAll over group `group`: its ranks and their nodes, the
  /// options' p2p channels. Computed once per group (a collective matmul's ring sends asked
  /// for it per message: a quarter of an analytic run on the H100 scenario).
  const P2pCommunicator& a2a_comm(int group);
  /// Sum of the latencies of the route from src to dst, seconds; cached.
  double route_latency(int src, int dst);
  /// A send's flow (or, ri < 0, a mirror's send into receive `match`), after its latency.
  void p2p_send(int ri, int oi, int64_t match, bool delayed);
  /// Member `pos`'s AllToAll flows, after the latency.
  void a2a_send(CollState& c, int64_t match, int pos);
  /// Takes num_sm SMs of rank ri's GPU (slowing its kernels); returns how many were taken.
  int hold_sms(int ri, int num_sm);
  /// SMs NCCL's kernel for a send of `bytes` from src to dst on communicator `comm` takes: one
  /// per p2p channel the message runs on (p2p_split); cached.
  int p2p_sms(int src, int dst, double bytes, const P2pCommunicator& comm);
  /// The communicator a Send/Recv runs on: its group's (Op::group), else the options' p2p one.
  const P2pCommunicator& p2p_comm_of(const Op& op);
  /// SMs of one member's kernel for an AllToAll of `bytes` per rank over group `group`
  /// (nccl_alltoall_kernel_channels); cached.
  int a2a_sms(int group, double bytes);
  /// The rate of one piece of an AllToAll of `bytes` over group `group` from member `from` to
  /// member `to` (positions), bytes/s: p2p_rate's per-message cap where it binds (NVLink inside a
  /// node), and at most the member's kernel's channels (a2a_sms, each copying
  /// p2p_channel_nvlink_Bps) over its capped pieces, which they share (regression: with
  /// `--channels 1` a 1 GiB AllToAll inside a DGX A100 ran its 7 pieces on one channel at 7 times
  /// one channel's rate); +inf where nothing caps it.
  double a2a_piece_rate(int group, int from, int to, double bytes, bool copy_engine);
  /// Send/Recv op oi of rank ri starts holding its SMs (its num_sm, else p2p_sms): the ops of one rank on one
  /// communicator (with one peer on a two-rank one, PyTorch's per-pair communicator,
  /// CollectiveOptions::p2p_comm; or on their group's, Op::group) share a kernel, which holds the
  /// most any of them asks for, whatever stream they are issued on — a communicator runs its
  /// kernels one at a time (a batched send and receive with a neighbour: one kernel, one set of
  /// channels, as a send to and a receive from one peer share their channels' base,
  /// nccl_alltoall_kernel_channels). On a group's communicator the ops sharing a channel base
  /// (nccl_p2p_base mod 32: a ring step's send to the next and receive from the previous rank)
  /// share a kernel, and other bases add their own (disjoint channels of one grouped kernel).
  void p2p_hold(int ri, int oi, const Op& op);
  /// Ends op oi's part in its peer kernel's hold (the SMs go back when its last op completes).
  void p2p_release(int ri, int oi);
  void set_gpu_state(int ri);
  void release_sms(int ri, int& held);
  // Collectives.
  void coll_ready(int ri, int oi);
  /// An analytic collective (not an AllToAll, no measured times) of one simulated member: timed
  /// by its plan's end for that member as coll_ready times it, without a CollState (the same
  /// backend calls in the same order: its SMs held, then its timer, Task::SoloTimer).
  void solo_collective(int ri, int oi, const Op& op, int pos);
  void ring_advance(CollState& c, int64_t match, int ch, int i);
  void ring_send(CollState& c, int64_t match, int ch, int i);
  /// A ring step's flow (floored at its channel's share, Task::Step) is done: the sender may go on; the
  /// step arrives at the successor, after its protocol step latency with per-step arrivals.
  void ring_step_done(const Task& t);
  void ring_check_done(CollState& c, int ch, int i);
  void member_channel_done(CollState& c, int pos);
  void tree_start(CollState& c, int64_t match, std::vector<TreeAction>& acts);
  void tree_done(const Task& t);
  /// An AllToAll piece's flow (or its floor) has ended: its source's and destination's members
  /// end when all their pieces have, folded no sooner than the closed form (all_to_all_s).
  void a2a_done(const Task& t);
  void bulk_done(const Task& t);
  void member_finish(CollState& c, int pos);
  void coll_maybe_erase(int64_t match);
  int rank_idx(int rank) const {
    return rank >= 0 && static_cast<size_t>(rank) < rank_index_.size() ? rank_index_[static_cast<size_t>(rank)] : -1;
  }
  /// A task for a new activity (a finished one's memory when there is one), remembered as
  /// last_task_.
  Task* new_task(const Task& t) {
    Task* p;
    if (!free_tasks_.empty()) {
      p = free_tasks_.back();
      free_tasks_.pop_back();
      *p = t;
    } else {
      tasks_.push_back(t);
      p = &tasks_.back();
    }
    last_task_ = p;
    return p;
  }

  const Schedule& s_;
  const Topology& topo_;
  const ReplayOptions& opt_;
  ActivityBackend& be_;
  std::vector<int> rank_index_;  // global rank → simulated rank index, −1: a mirror
  /// The event loop's state of one op: what it reads and writes as the op becomes ready, runs
  /// and completes, side by side (five arrays per rank had each completion touch five cache
  /// lines: on the unfolded default scenario, 4.5 M ops a replay, complete() was the hottest
  /// function, 15% of samples; its simulated D1 read misses went from 42.1 M to 15.9 M).
  /// (Its start and end are written straight into times_, start_of and end_of: an array the
  /// replay fills and then copied out again was 16 more bytes an op of fresh memory, whose first
  /// touch is most of an analytic replay's time on a 373 k-op schedule.)
  /// 16 bytes: its predecessors' count, its type and whether a kernel run goes on after it share
  /// one word (24, 4 and 1 bits; build() refuses an op of 2^24 predecessors or more), and the
  /// run's next op is its first successor, its stream's next (the build lists that first). (40
  /// bytes before: on a 373 k-op replay every byte an op is 0.4 MB of fresh memory, whose first
  /// touch is a third of an analytic replay.)
  struct OpState {
    double run_s = 0;    ///< Compute: kernel_s; a kernel run's first op: the run's summed kernel_s, seconds
    int succ_begin = 0;  ///< its successors (op indices of its rank): succ_[succ_begin, next op's succ_begin)
    uint32_t bits = 0;   ///< pending (low 24 bits) | type << 24 | kRunGoesOn
    static constexpr uint32_t kPendingMask = (1u << 24) - 1, kRunGoesOn = 1u << 28;
    /// Its predecessors (stream order and deps) not yet completed.
    int pending() const { return static_cast<int>(bits & kPendingMask); }
    /// The op's type (its Op is read only past the compute path).
    OpType type() const { return static_cast<OpType>((bits >> 24) & 0xF); }
    /// Whether the kernel run it belongs to goes on after it (ReplayOptions::every_kernel).
    bool run_goes_on() const { return (bits & kRunGoesOn) != 0; }
  };
  /// The next op of the kernel run op k of `st` (its rank's states) belongs to, -1 none.
  int run_next(const OpState* st, int k) const { return st[k].run_goes_on() ? succ_[static_cast<size_t>(st[k].succ_begin)] : -1; }
  std::vector<OpState> ops_;        // every simulated rank's ops, rank by rank, and one past the last
  std::vector<size_t> op_base_;     // per rank index: its first op's index in ops_
  std::vector<int> succ_;           // successors of every op, op by op (OpState::succ_begin)
  std::vector<double*> start_, end_;  // per rank index: times_.start_s[ri].data(), times_.end_s[ri].data()
  /// When op oi of rank index ri started, ended (−1 until then), seconds: its entry in times_.
  double& start_of(int ri, int oi) { return start_[static_cast<size_t>(ri)][oi]; }
  double& end_of(int ri, int oi) { return end_[static_cast<size_t>(ri)][oi]; }
  OpState& state(int ri, int oi) { return ops_[op_base_[static_cast<size_t>(ri)] + static_cast<size_t>(oi)]; }
  const OpState& state(int ri, int oi) const {
    return ops_[op_base_[static_cast<size_t>(ri)] + static_cast<size_t>(oi)];
  }
  std::vector<int> ready_rank_, ready_op_;
  std::deque<Task> tasks_;        // every task's memory (addresses stable: activities' tags)
  std::vector<Task*> free_tasks_;  // tasks whose activity has ended and been handled, for reuse
  Task* last_task_ = nullptr;      // the task new_task gave last
  std::vector<std::vector<Member>> spare_members_;  // erased collectives' member vectors, for reuse
  /// What every collective of one group starts from, computed once per group (DP groups of 128
  /// members: initialising them per instance took a sixth of an analytic run).
  struct GroupMembers {
    std::vector<Member> fresh;        ///< by position: rank_idx set, the rest as a new Member
    std::vector<int> simulated_pos;   ///< positions of the simulated members, in order
    std::vector<int> pos_of;          ///< by simulated rank index: its position, -1 none
    size_t through_last_simulated = 0;  ///< the last simulated member's position + 1
  };
  std::vector<GroupMembers> group_members_;  // by group; pos_of empty: not computed yet
  const GroupMembers& group_members(int group);
  std::unordered_map<int64_t, CollState> colls_;
  std::unordered_map<int64_t, P2PState> p2p_;
  /// [rank index][send op]: the receive from a mirror that the mirror sends when this rank
  /// sends (mirror_partners()), −1 none; [rank index][receive op]: the reverse. Empty for a
  /// rank without pairs.
  std::vector<std::vector<int>> mirror_partner_, mirror_partner_send_;
  struct PeerKernel {
    int ops = 0;  // its Send/Recv ops started and not completed
    int sms = 0;  // SMs it holds
  };
  std::unordered_map<int64_t, int64_t> p2p_holds_;  // (rank index << 32 | op) → its peer kernel's key
  std::unordered_map<int64_t, PeerKernel> p2p_kernels_;  // (rank index << 32 | peer, or 2^31 | group) → kernel
  std::map<std::tuple<int, int, double, int, int, int>, int> p2p_sms_;  // (src, dst, bytes, comm ranks, nodes, local ranks) → SMs
  std::map<std::pair<int, double>, int> a2a_sms_;        // (group, bytes) → SMs
  std::map<std::tuple<int, int, int, bool>, int> p2p_base_;  // (group, self, peer, send) → channel base
  std::map<std::tuple<int, double, bool>, double> all_to_all_s_;  // (group, bytes, copy engine) → seconds
  std::unordered_map<int, AllToAllRoutes> all_to_all_routes_;  // by group
  std::vector<P2pCommunicator> a2a_comms_;  // by group (a2a_comm); ranks == 0: not computed yet
  // (src, dst, bytes, copy engine, communicator ranks, nodes, channels, local ranks) → bytes/s
  std::map<std::tuple<int, int, double, bool, int, int, int, int>, double> p2p_rate_;
  std::unordered_map<int64_t, double> route_latency_;                    // src·W + dst → seconds
  std::unordered_map<const Task*, double> flow_floors_;  // rate-bound flows → earliest end, seconds
  std::unordered_map<int64_t, double> p2p_latency_;  // (src·W + dst)·4 + LL·2 + copy engine → seconds
  std::vector<int> held_sms_;                     // per simulated rank: SMs communication holds
  // (group, kind, bytes, channels, algorithm) → the plan, in opt_.plan_cache or own_plans_
  std::map<std::tuple<int, int, double, int, int>, const PlannedCollective*> plans_;
  PlanCache own_plans_;  // where opt_.plan_cache is null
  FlowRecorder flows_;  // used only when opt_.record_flows (the trace's link tracks)
  ReplayTimes times_;
  long long completed_ = 0;
};

}  // namespace overlapsim::detail
