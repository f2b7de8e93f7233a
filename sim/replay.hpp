// Replay: runs a Schedule on the SimGrid platform of a Topology and times every op.
//
// Semantics (design §4):
//  - An op starts when the previous op of its stream has completed and all its deps have.
//  - Compute op: a SimGrid execution on its GPU's host of stand-alone time
//    max(duration_s, launch_overhead_s) (a GPU fed by one host thread cannot run kernels shorter
//    than their launch cost back to back). Concurrent kernels of one GPU share it (max-min).
//  - Collective, `flow` fidelity: lowered as sim/collective_plan.hpp plans it (NCCL rings over
//    channels, or a pipelined chain; a protocol). Per channel, step k of a member is a flow of
//    the step's wire bytes to its successor; it starts when the member's step k−1 has left and
//    its predecessor's step k−1 has arrived (a chain: the predecessor's step k); step 0 also
//    waits for the successor to have reached the collective (NCCL's receive credit). A member
//    completes when its last flow has ended and its predecessor's last step has arrived, on
//    every channel. On a uniform ring (every hop alike) a step leaves when its flow ends and
//    arrives with it, and each member pays the protocol's extra step latency for all its steps
//    up front: alone on links of bandwidth B and latency α (α above the protocol's step
//    latency, base latency aside), a ring AllReduce takes 2(n−1)/n · S/B + 2(n−1)·α exactly.
//    On a ring whose hops differ (NVLink and NIC), a step leaves its wire time after its send
//    started and arrives its hop's extra step latency after its flow ends: the step DAG whose
//    longest path is the closed form (collective_plan.hpp), so flow equals it without contention.
//    Members that are not simulated are mirrors (schedule.hpp, folding). On a uniform channel a
//    representative's own flows stand for the ring; on an uneven channel of ≤ 64 flows per step
//    the mirrors' flows are simulated too; above that, the representative's flows take the
//    channel's bottleneck hop, all its steps as one flow after paying what the closed form has
//    beyond it (alone it ends at the closed form; against other traffic it shares the hop for
//    the collective's whole time at its mean rate). A representative of a ring whose hops
//    differ in latency only pays the closed form up front, or sends at its mean pace where a
//    flow outlasts it.
//  - Tree AllReduce, `flow` fidelity: every member's flows, mirrors included, slice by slice as
//    sim/tree_flows.hpp says (a tree has no symmetry for a representative to stand for); a tree
//    of more than 16,384 flows is timed by its closed form instead, as in `analytic`.
//  - AllToAll: every member sends S/n to every other one at once (NCCL's grouped send/recv);
//    a representative also receives its mirrors' flows.
//  - Collective, `analytic` fidelity: the plan's contention-free closed form as one timed
//    activity per member (a tree or a chain: that member's own end, CollectivePlan::
//    member_ends_s), started when every simulated member has reached the collective; where
//    ReplayOptions::measured covers the collective (an AllToAll too), its measured time
//    (sim/measured_collectives.hpp) for every member instead.
//    Analytic replays run without SimGrid, on an event queue (sim/activity_backend.hpp): GPUs
//    still share their speed among concurrent kernels; flows take latency + bytes / bandwidth.
//  - SM interference: while a communication op runs (from the moment it can start until it
//    completes, as an NCCL kernel spins), it holds num_sm SMs (−1: the thread blocks NCCL's
//    kernel runs on — for a collective CollectivePlan::sm_blocks, NCCL's count for its size over
//    the communicator's channels, 24 for a large AllReduce in a DGX A100; for a Send/Recv one per
//    p2p channel of its message, p2p_split (16 for 64 MiB between two GPUs of a DGX A100, 2
//    across nodes), the ops of one rank with one peer sharing one kernel that holds the most any
//    of them asks for, on any stream (their two-rank communicator runs its kernels one at a time;
//    a batched send and receive is one kernel on one set of channels); for an AllToAll
//    the channels of its grouped messages, nccl_alltoall_kernel_channels —; 0: copy engine),
//    slowing that GPU's kernels (ReplayOptions).
//  - Send: one flow to the peer, started when the send op starts (eager); the op completes when
//    the flow has arrived. Recv completes when it has started and the matching flow has arrived.
// A flow-fidelity simulation runs in a child process (SimGrid 3.32 allows one Engine per
// process), so a program can replay many schedules. Deterministic: the same inputs give the same times.
#pragma once

#include "calibrate/profile_tables.hpp"
#include "sim/collective_plan.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace overlapsim {

namespace detail {
struct PlanCache;
}

enum class Fidelity { Flow, Analytic };
const char* to_string(Fidelity f);
/// Parses "flow" or "analytic"; throws std::invalid_argument otherwise.
Fidelity parse_fidelity(const std::string& text);

struct ReplayOptions {
  Fidelity fidelity = Fidelity::Flow;
  LinkEfficiency link_efficiency;
  CollectiveOptions collectives;   ///< channels, algorithm and protocol choice
  double launch_overhead_s = 0;    ///< seconds; minimum duration of a compute kernel
  int sm_count = 0;                ///< SMs per GPU; 0 disables SM interference
  /// Compute slowdown per occupied SM fraction: while communication kernels hold k of the GPU's
  /// SMs, kernels beside them run at (1 − min(1, interference · k / sm_count)) of the GPU's
  /// speed. 1.0: they lose exactly the SMs taken (from the calibration profile when measured).
  double sm_interference = 1.0;
  /// Record every flow in ReplayTimes::flows (for the trace's link tracks, sim/link_trace.hpp).
  /// Off, the replay records nothing and pays nothing for it.
  bool record_flows = false;
  /// Run every compute kernel as its own activity, so that each op's start and end are its own
  /// (a trace's kernel boundaries). Off (the default), a run of compute ops on one stream in
  /// which each op is the only successor of the one before and has no other dependency is one
  /// activity of their summed work; its members' times are split in proportion to their work,
  /// which is exact where the GPU's speed and the number of kernels beside them hold over the
  /// run, and in every figure built from the run's union (ReplayTimes' makespan, the breakdown's
  /// compute, exposed communication and idle time). Kernels on one GPU share its speed equally
  /// (both backends), so the run ends when its last member would have. Measured on
  /// scenarios/default.yaml, megatron, analytic, every micro-batch: 207,866 activities for its
  /// 372,786 ops, against 372,786 with every kernel apart (the JSON's `activities`, without and
  /// with --trace); tests/kernel_run_test.cpp checks the figures are unchanged.
  bool every_kernel = false;
  /// `analytic` only: measured collective times (a profile's `collectives` section); a
  /// collective one of them covers is timed by it (sim/measured_collectives.hpp) instead of by
  /// its plan's closed form.
  std::vector<CollectiveFit> measured;
  /// Collective plans shared by the replays given these options (sim/replay_engine_state.hpp):
  /// a plan depends on the topology, the communicator's ranks, the collective, its bytes, channels
  /// and algorithm, link_efficiency and collectives, so replays of one topology with options
  /// equal in those may share one (simulate() does: the steady state's samples and every
  /// strategy plan the same collectives; on the default scenario 3 replays planned 87 where 29
  /// are distinct). Null: each replay plans its own. Throws std::logic_error when shared by two
  /// topologies.
  std::shared_ptr<detail::PlanCache> plan_cache;
  /// `flow` only: while the parent waits for the replay's process, called with the seconds
  /// waited so far (host time) each time another heartbeat_interval_s of them has passed (a
  /// progress line for a replay of minutes); null: none.
  std::function<void(double waited_s)> heartbeat;
  double heartbeat_interval_s = 30;  ///< seconds
};

/// A new, empty plan cache for ReplayOptions::plan_cache.
std::shared_ptr<detail::PlanCache> make_plan_cache();

/// The plan a replay under `opt` runs collective op `op` over `ranks` (its group's members) by:
/// plan_collective with opt's link efficiency and collective options and the op's algorithm,
/// channels and reduction. Taken from opt.plan_cache where it holds it, else planned and kept
/// there, so that a caller who looks at a plan before replaying it (`overlapsim collective`
/// names its row by it) plans it once (a 1 GiB ring over 1024 GPUs: 40 M instructions a plan).
/// REQUIRES: opt.plan_cache set, op a collective other than an AllToAll. Throws
/// std::logic_error when the cache holds another topology's plans.
const CollectivePlan& cached_plan(const ReplayOptions& opt, const Topology& topo, const std::vector<int>& ranks,
                                  const Op& op);

/// One flow the replay issued: a ring or chain step, an AllToAll piece or a send.
struct FlowRecord {
  double start_s = 0, end_s = 0;  ///< started; arrived (seconds of simulated time)
  double bytes = 0;
  int src_rank = -1, dst_rank = -1;  ///< GPUs it went between (its links: Topology::route)
  int rank = -1;       ///< global rank whose op it belongs to (a mirror's flow: the mirror)
  int op = -1;         ///< index of that op in the rank's program; -1 for a mirror's flow
  int64_t match = -1;  ///< the op's match id (names a mirror's op)
};

/// Start and end (seconds of simulated time) of every op of every simulated rank, in the
/// order of Schedule::programs and their ops.
struct ReplayTimes {
  std::vector<std::vector<double>> start_s;
  std::vector<std::vector<double>> end_s;
  double makespan_s = 0;       ///< latest end over all ops
  long long activities = 0;    ///< activities created: kernels (or runs of them), flows and timers (SimGrid's in flow)
  std::vector<FlowRecord> flows;  ///< in start order; only with ReplayOptions::record_flows
};

/// What the binary and the flow module (liboverlapsim_flow.so) must agree on to share these
/// types: a stale module beside a newer binary would read them laid out otherwise. Both compile
/// it; the loader refuses a module whose value differs. Bump the first term when a shared
/// type's meaning changes without its size changing.
constexpr unsigned long long kFlowModuleAbi =
    1ull * 1000003 + sizeof(ReplayOptions) * 10007 + sizeof(CollectiveOptions) * 101 + sizeof(Schedule) * 7 +
    sizeof(Op) * 1009 + sizeof(Topology) * 13 + sizeof(ReplayTimes) * 3 + sizeof(FlowRecord) * 17;

/// Replays the schedule. Throws std::runtime_error if the simulation fails or deadlocks (an op
/// that never became ready — a schedule bug, reported with the rank and op).
ReplayTimes replay(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

/// The same, in the calling process (the process must not have created a SimGrid Engine
/// before, and cannot create one after). replay() calls this in a child process. Flow fidelity
/// runs in the flow module (liboverlapsim_flow.so, sim/flow_replay.cpp), loaded on first use
/// from beside the running binary or the build folder; throws std::runtime_error naming the
/// paths tried when it cannot be loaded.
ReplayTimes replay_in_process(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

}  // namespace overlapsim
