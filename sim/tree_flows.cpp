#include "sim/tree_flows.hpp"

#include "sim/error.hpp"

#include <algorithm>

namespace overlapsim {

TreeRun::TreeRun(const CollectivePlan& plan) : plan_(plan) {
  OVERLAPSIM_CHECK(plan.algorithm == CollectiveAlgorithm::Tree && plan.members >= 2 && plan.steps >= 1,
                   "TreeRun needs a tree plan of two or more members");
  const int n = plan.members;
  st_.resize(plan.trees.size());
  for (State& s : st_) {
    for (auto* v : {&s.up_started, &s.up_free, &s.up_done, &s.dn_started, &s.dn_free, &s.dn_done, &s.up_flows_done,
                    &s.dn_flows_done})
      v->assign(n, 0);
    s.over.assign(n, 0);
  }
  present_.assign(n, 0);
  trees_left_.assign(n, static_cast<int>(plan.trees.size()));
}

const Hop2& TreeRun::hop_of(int t, int hop) const {
  const TreePlan& tp = plan_.trees[t];
  return hop % 2 == 0 ? tp.up[hop / 2] : tp.down[hop / 2];
}

void TreeRun::set_present(int pos, std::vector<TreeAction>& out) {
  if (present_[pos]) return;
  present_[pos] = 1;
  for (int t = 0; t < static_cast<int>(st_.size()); ++t) {
    try_up(t, pos, out);
    try_down(t, pos, out);
    for (int c : plan_.trees[t].children[pos]) {
      try_up(t, c, out);
      try_down(t, c, out);
    }
  }
}

void TreeRun::try_up(int t, int v, std::vector<TreeAction>& out) {
  const TreePlan& tp = plan_.trees[t];
  State& s = st_[t];
  if (v == tp.root || s.up_started[v] != s.up_free[v] || s.up_started[v] >= plan_.steps) return;
  const int k = s.up_started[v];
  if (!present_[v] || (k == 0 && !present_[tp.parent[v]])) return;
  for (int c : tp.children[v])
    if (s.up_done[c] <= k) return;
  ++s.up_started[v];
  issue(t, 2 * v, k == 0 && tp.children[v].empty(), out);
}

void TreeRun::try_down(int t, int v, std::vector<TreeAction>& out) {
  const TreePlan& tp = plan_.trees[t];
  State& s = st_[t];
  if (v == tp.root || s.dn_started[v] != s.dn_free[v] || s.dn_started[v] >= plan_.steps) return;
  const int k = s.dn_started[v], p = tp.parent[v];
  if (!present_[p] || (k == 0 && !present_[v])) return;
  if (p == tp.root) {
    for (int c : tp.children[p])
      if (s.up_done[c] <= k) return;
  } else if (s.dn_done[p] <= k) {
    return;
  }
  ++s.dn_started[v];
  issue(t, 2 * v + 1, false, out);
}

void TreeRun::issue(int t, int hop, bool first_of_leaf, std::vector<TreeAction>& out) {
  if (first_of_leaf && plan_.base_latency_s > 1e-15) {
    TreeAction a;
    a.kind = TreeAction::Delay;
    a.tree = t;
    a.hop = hop;
    a.seconds = plan_.base_latency_s;
    out.push_back(a);
    return;
  }
  send(t, hop, out);
}

void TreeRun::send(int t, int hop, std::vector<TreeAction>& out) {
  const Hop2& h = hop_of(t, hop);
  const State& s = st_[t];
  const int v = hop / 2;
  const double wire = plan_.wire_bytes_of((hop % 2 == 0 ? s.up_started[v] : s.dn_started[v]) - 1);  // this slice's
  TreeAction a;
  a.kind = TreeAction::Flow;
  a.tree = t;
  a.hop = hop;
  a.src_pos = h.src_pos;
  a.dst_pos = h.dst_pos;
  a.bytes = wire * plan_.trees[t].multiplicity;
  out.push_back(a);
  TreeAction slot;
  slot.kind = TreeAction::Slot;
  slot.tree = t;
  slot.hop = hop;
  slot.seconds = TreePlan::occupancy_s(h, wire);
  out.push_back(slot);
}

void TreeRun::delay_done(int tree, int hop, std::vector<TreeAction>& out) { send(tree, hop, out); }

void TreeRun::slot_done(int tree, int hop, std::vector<TreeAction>& out) {
  State& s = st_[tree];
  const int v = hop / 2;
  if (hop % 2 == 0) {
    ++s.up_free[v];
    try_up(tree, v, out);
  } else {
    ++s.dn_free[v];
    try_down(tree, v, out);
  }
}

double TreeRun::flow_wire_bytes(int tree, int hop) const {
  const State& s = st_[tree];
  return plan_.wire_bytes_of((hop % 2 == 0 ? s.up_flows_done : s.dn_flows_done)[hop / 2]);
}

void TreeRun::flow_done(int tree, int hop, std::vector<TreeAction>& out, std::vector<int>& finished) {
  const Hop2& h = hop_of(tree, hop);
  State& s = st_[tree];
  ++(hop % 2 == 0 ? s.up_flows_done : s.dn_flows_done)[hop / 2];
  // The step latency the flow's route did not pay itself.
  const double after = std::max(0.0, h.step_latency_s - h.route_latency_s);
  if (after > 1e-15) {
    TreeAction a;
    a.kind = TreeAction::Arrival;
    a.tree = tree;
    a.hop = hop;
    a.seconds = after;
    out.push_back(a);
    return;
  }
  arrived(tree, hop, out, finished);
}

void TreeRun::arrival_done(int tree, int hop, std::vector<TreeAction>& out, std::vector<int>& finished) {
  arrived(tree, hop, out, finished);
}

void TreeRun::arrived(int tree, int hop, std::vector<TreeAction>& out, std::vector<int>& finished) {
  const TreePlan& tp = plan_.trees[tree];
  State& s = st_[tree];
  const int v = hop / 2, p = tp.parent[v];
  if (hop % 2 == 0) {
    ++s.up_done[v];
    try_up(tree, p, out);
    if (p == tp.root)
      for (int c : tp.children[p]) try_down(tree, c, out);
  } else {
    ++s.dn_done[v];
    for (int c : tp.children[v]) try_down(tree, c, out);
  }
  check_over(tree, v, finished);
  check_over(tree, p, finished);
}

void TreeRun::check_over(int t, int v, std::vector<int>& finished) {
  const TreePlan& tp = plan_.trees[t];
  State& s = st_[t];
  const int K = plan_.steps;
  if (s.over[v]) return;
  if (v != tp.root && (s.up_done[v] < K || s.dn_done[v] < K)) return;
  for (int c : tp.children[v])
    if (s.dn_done[c] < K) return;
  s.over[v] = 1;
  if (--trees_left_[v] == 0) finished.push_back(v);
}

}  // namespace overlapsim
