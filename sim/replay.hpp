// Replay: runs a Schedule on the SimGrid platform of a Topology and times every op.
//
// Semantics (design §4):
//  - An op starts when the previous op of its stream has completed and all its deps have.
//  - Compute op: a SimGrid execution on its GPU's host of stand-alone time
//    max(duration_s, launch_overhead_s) (a GPU fed by one host thread cannot run kernels shorter
//    than their launch cost back to back). Concurrent kernels of one GPU share it (max-min).
//  - Collective, `flow` fidelity: lowered to NCCL's ring algorithm. With n ranks and buffer size
//    S, AllReduce is 2(n−1) steps, AllGather and ReduceScatter n−1 steps; in each step every rank
//    sends S/n bytes to its ring successor over the real route. Step k of a rank starts when its
//    step k−1 is done and its predecessor's step k−1 has arrived; step 0 also waits for the
//    successor to have reached the collective (NCCL's receive credit). A rank's collective
//    completes when its last step is done and the predecessor's last step has arrived. Alone on
//    uniform links of bandwidth B and latency α, a ring AllReduce thus takes
//    2(n−1)/n · S/B + 2(n−1)·α exactly.
//    Group members that are not simulated are mirrors (schedule.hpp, folding).
//  - Collective, `analytic` fidelity: the same ring closed form with the bottleneck bandwidth and
//    latency of the rank's route to its successor, as one timed activity; no contention.
//  - Send: one flow to the peer, started when the send op starts (eager); the op completes when
//    the flow has arrived. Recv completes when it has started and the matching flow has arrived.
// The simulation runs in a child process (SimGrid 3.32 allows one Engine per process), so a
// program can replay many schedules. Deterministic: the same inputs give the same times.
#pragma once

#include "sim/platform.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim {

enum class Fidelity { Flow, Analytic };
const char* to_string(Fidelity f);
/// Parses "flow" or "analytic"; throws std::invalid_argument otherwise.
Fidelity parse_fidelity(const std::string& text);

struct ReplayOptions {
  Fidelity fidelity = Fidelity::Flow;
  LinkEfficiency link_efficiency;
  double launch_overhead_s = 0;  ///< seconds; minimum duration of a compute kernel
};

/// Start and end (seconds of simulated time) of every op of every simulated rank, in the
/// order of Schedule::programs and their ops.
struct ReplayTimes {
  std::vector<std::vector<double>> start_s;
  std::vector<std::vector<double>> end_s;
  double makespan_s = 0;       ///< latest end over all ops
  long long activities = 0;    ///< SimGrid activities created (execs + flows)
};

/// Replays the schedule. Throws std::runtime_error if the simulation fails or deadlocks (an op
/// that never became ready — a schedule bug, reported with the rank and op).
ReplayTimes replay(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

/// The same, in the calling process (the process must not have created a SimGrid Engine
/// before, and cannot create one after). replay() calls this in a child process.
ReplayTimes replay_in_process(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

}  // namespace overlapsim
