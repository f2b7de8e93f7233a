// The flows of a tree AllReduce (sim/collective_plan.hpp, "Tree"), as a state machine that the
// replay engine drives (internal to sim/). It knows nothing of time: it says which delay or flow
// to start next, and is told when one has ended.
//
// Per tree (a channel, or identical channels merged) and slice k = 0..K−1:
//  - the up hop of member v (v → parent: reduce) sends slice k once v's sender is free of slice
//    k−1 and every child's slice k has arrived at v;
//  - the down hop into v (parent → v: broadcast) sends slice k once its sender is free of slice
//    k−1 and slice k has reached the parent (from the parent's own down hop; at the root, once
//    every child's slice k has arrived);
//  - a hop's first slice waits for both ends to have reached the collective (NCCL's receive
//    credit);
//  - a send is a Flow of its slice's wire bytes (CollectivePlan::wire_bytes_of) · multiplicity
//    and, beside it, a Slot timer of the hop's
//    occupancy (TreePlan::occupancy_s) after which the sender is free; once the flow has ended,
//    an Arrival timer of the protocol's step latency beyond the route's own, after which the
//    slice has arrived (NCCL_STEPS-deep buffers let a sender run ahead of the latency, as a
//    ring's step does). A leaf's first slice is preceded by a Delay of the base latency.
// Member v's part is over when it has received its last slice from its parent and its last
// slices have arrived at its parent and children, on every tree. With flows that take exactly
// their hop's time, the members end at CollectivePlan::member_ends_s() (the same recurrences).
#pragma once

#include "sim/collective_plan.hpp"

#include <cstdint>
#include <vector>

namespace overlapsim {

struct TreeAction {
  /// Delay: the base latency before a leaf's first slice; Slot: the sender's occupancy;
  /// Arrival: the step latency after a flow; Flow: the slice's bytes.
  enum Kind : uint8_t { Delay, Slot, Arrival, Flow } kind = Flow;
  int tree = 0;          ///< index in plan.trees
  int hop = 0;           ///< 2·v (up hop of v) or 2·v + 1 (down hop into v)
  double seconds = 0;    ///< Delay, Slot, Arrival: how long
  int src_pos = -1, dst_pos = -1;  ///< Flow: group positions
  double bytes = 0;      ///< Flow: wire bytes
};

class TreeRun {
 public:
  /// REQUIRES: plan.algorithm == Tree, plan.members >= 2, plan.steps >= 1; `plan` outlives this.
  explicit TreeRun(const CollectivePlan& plan);
  /// Member `pos` has reached the collective.
  void set_present(int pos, std::vector<TreeAction>& out);
  /// A Delay ended: its Flow and Slot start.
  void delay_done(int tree, int hop, std::vector<TreeAction>& out);
  /// A Slot ended: the hop's sender may send its next slice.
  void slot_done(int tree, int hop, std::vector<TreeAction>& out);
  /// A Flow ended: its Arrival starts, or (no step latency beyond the route's) it has arrived.
  /// Members whose part is now over (on every tree) are appended to `finished`.
  void flow_done(int tree, int hop, std::vector<TreeAction>& out, std::vector<int>& finished);
  /// The wire bytes of the next flow of hop `hop` of tree `tree` to end (a hop's flows end in
  /// the order they started: one slice after another; the last may be shorter), bytes.
  double flow_wire_bytes(int tree, int hop) const;
  /// An Arrival ended: the slice has arrived; members now over are appended to `finished`.
  void arrival_done(int tree, int hop, std::vector<TreeAction>& out, std::vector<int>& finished);

 private:
  struct State {
    std::vector<int> up_started, up_free, up_done, dn_started, dn_free, dn_done;  ///< slices, by member
    std::vector<int> up_flows_done, dn_flows_done;  ///< flows ended (before their arrival), by member
    std::vector<char> over;
  };
  const Hop2& hop_of(int t, int hop) const;
  void try_up(int t, int v, std::vector<TreeAction>& out);
  void try_down(int t, int v, std::vector<TreeAction>& out);
  void issue(int t, int hop, bool first_of_leaf, std::vector<TreeAction>& out);
  void send(int t, int hop, std::vector<TreeAction>& out);
  void arrived(int t, int hop, std::vector<TreeAction>& out, std::vector<int>& finished);
  void check_over(int t, int v, std::vector<int>& finished);

  const CollectivePlan& plan_;
  std::vector<State> st_;
  std::vector<char> present_;
  std::vector<int> trees_left_;
};

}  // namespace overlapsim
