// What the replay engine runs its activities on (internal to sim/).
//
// The engine (replay_engine.cpp) decides what starts when; a backend times the activities:
//  - SimGridBackend (flow fidelity): SimGrid executions and flows on the machine's platform,
//    with max-min sharing of GPUs and links (design §4, §7). Runs in a process of its own.
//  - QueueBackend (analytic fidelity): an event queue of its own, no SimGrid: a GPU shares its
//    speed equally among the kernels it runs (processor sharing, like a 1-core SimGrid host),
//    a flow takes its route's latency plus its bytes over the route's bottleneck bandwidth
//    (no contention), a timer takes its time. Deterministic: ties break by start order.
#pragma once

#include "sim/link_efficiency.hpp"
#include "sim/topology.hpp"

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace overlapsim {

class ActivityBackend {
 public:
  static constexpr int kTimer = -1;  ///< start_exec host for a plain timer (never shared)

  virtual ~ActivityBackend() = default;
  /// Creates the GPUs of `ranks` (speeds per power state, work units per second) and whatever the
  /// flows between `pairs` need.
  virtual void build(const Topology& topo, const std::vector<int>& ranks,
                     const std::vector<std::pair<int, int>>& pairs, const LinkEfficiency& eff,
                     const std::vector<double>& speeds) = 0;
  /// Runs `work` units on the GPU of `rank` (or a timer of work / speeds[0] seconds).
  virtual void start_exec(int rank, double work, void* tag) = 0;
  /// Sends `bytes` from the GPU of src to that of dst.
  virtual void start_flow(int src_rank, int dst_rank, double bytes, void* tag) = 0;
  /// Puts the GPU of `rank` in power state k (its speed is speeds[k]).
  virtual void set_state(int rank, int k) = 0;
  virtual double now() const = 0;
  /// Runs until nothing is left; calls on_done(tag) as each activity completes (it may start
  /// more).
  virtual void run(const std::function<void(void*)>& on_done) = 0;
};

/// REQUIRES: a SimGrid Engine exists in this process and has no platform yet.
std::unique_ptr<ActivityBackend> make_simgrid_backend();
std::unique_ptr<ActivityBackend> make_queue_backend();

}  // namespace overlapsim
