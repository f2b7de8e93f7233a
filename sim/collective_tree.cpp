// NCCL's double binary tree (collective_plan.hpp): which member sends to which, and the
// pipeline's contention-free end times.
#include "sim/collective_plan.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <map>

namespace overlapsim {

namespace {

/// Parent of i in the binary tree of n indices rooted at 0 that alternates leaves and interior
/// indices (NCCL src/graph/trees.cc ncclGetBtree): the odd indices are leaves; an index whose
/// lowest set bit is b hangs under (i xor b) | 2b, or under i xor b when that is out of range.
int btree_parent(int n, int i) {
  if (i == 0) return -1;
  int bit = 1;
  while (!(i & bit)) bit <<= 1;
  const int up = (i ^ bit) | (bit << 1);
  return up < n ? up : (i ^ bit);
}

/// Index of node i in tree t's own numbering, and back (tree 1: mirrored or shifted).
int to_tree(int n, int t, int i) { return t == 0 ? i : n % 2 == 0 ? n - 1 - i : (i - 1 + n) % n; }
int from_tree(int n, int t, int x) { return t == 0 ? x : n % 2 == 0 ? n - 1 - x : (x + 1) % n; }

}  // namespace

int dtree_parent(int n, int t, int i) {
  OVERLAPSIM_CHECK(n >= 1 && i >= 0 && i < n && (t == 0 || t == 1), "dtree_parent out of range");
  const int up = btree_parent(n, to_tree(n, t, i));
  return up < 0 ? -1 : from_tree(n, t, up);
}

bool dtree_first_child(int n, int t, int i) {
  const int x = to_tree(n, t, i);
  const int up = btree_parent(n, x);
  OVERLAPSIM_CHECK(up >= 0, "the root has no parent");
  return x < up;
}

TreePlan build_tree(const Topology& topo, const std::vector<int>& ranks, int channel) {
  // Members by node, nodes in order of first appearance.
  std::vector<int> node_order;
  std::map<int, std::vector<int>> by_node;
  for (int pos = 0; pos < static_cast<int>(ranks.size()); ++pos) {
    const int node = topo.node_of(ranks[pos]);
    if (!by_node.count(node)) node_order.push_back(node);
    by_node[node].push_back(pos);
  }
  const int nn = static_cast<int>(node_order.size());
  const int t = channel % 2;
  TreePlan tp;
  tp.parent.assign(ranks.size(), -1);
  tp.children.assign(ranks.size(), {});
  // intra[k][j]: node k's chain, rotated by the channel.
  std::vector<std::vector<int>> intra(nn);
  for (int k = 0; k < nn; ++k) {
    const auto& m = by_node[node_order[k]];
    const int sz = static_cast<int>(m.size());
    for (int j = 0; j < sz; ++j) intra[k].push_back(m[(channel + j) % sz]);
  }
  auto link = [&](int child, int parent) {
    tp.parent[child] = parent;
    tp.children[parent].push_back(child);
  };
  // Chains first, so that a member's first child is its chain successor (NCCL's down[0]).
  for (int k = 0; k < nn; ++k)
    for (size_t j = 1; j < intra[k].size(); ++j) link(intra[k][j], intra[k][j - 1]);
  for (int k = 0; k < nn; ++k) {
    const int up = dtree_parent(nn, t, k);
    if (up < 0) {
      tp.root = intra[k][0];
      continue;
    }
    // Balanced tree: the first child node hangs under the parent's intra[1], the second under
    // its intra[0] (NCCL src/graph/connect.cc, NCCL_TOPO_PATTERN_BALANCED_TREE).
    const auto& pc = intra[up];
    const int at = dtree_first_child(nn, t, k) && pc.size() > 1 ? pc[1] : pc[0];
    link(intra[k][0], at);
  }
  return tp;
}

std::vector<double> TreePlan::end_times(int slices, double wire_bytes) const {
  // Recurrences (collective_plan.hpp): a hop h with predecessors P(h) (the up hops of its
  // sender's children; for a down hop, its sender's own down hop, or every up hop into the root)
  // delivers its last slice at
  //   E(h) = e_h + max( max over P(h) of E(p), S(h) + (K − 1) · d_h ),
  // S(h) the longest chain of first-slice arrivals before h (no waiting): the last slice either
  // follows its predecessor's last slice, or queued behind K − 1 sends of h itself, each keeping
  // the sender busy d_h (the step latency beyond it overlaps the next send).
  const int n = static_cast<int>(parent.size());
  std::vector<double> end(n, 0.0);
  if (n <= 1 || slices <= 0) return end;
  const double waits = slices - 1;
  // Breadth-first order from the root: parents before children.
  std::vector<int> order{root};
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : children[order[i]]) order.push_back(c);
  OVERLAPSIM_CHECK(static_cast<int>(order.size()) == n, "tree does not span the group");
  std::vector<double> up_first(n, 0.0), up_last(n, 0.0);  // into pos: first slice ready / last up
  std::vector<double> eu(n, 0.0);                          // E(up hop of pos)
  for (int i = n - 1; i >= 0; --i) {
    const int v = order[i];
    double first = 0, last = 0;  // longest first-slice chain into v; latest last slice into v
    for (int c : children[v]) {
      first = std::max(first, up_first[c]);
      last = std::max(last, eu[c]);
    }
    if (v == root) {
      up_first[v] = first;
      up_last[v] = last;
      continue;
    }
    const double t = hop_s(up[v], wire_bytes);
    eu[v] = t + std::max(last, first + waits * occupancy_s(up[v], wire_bytes));
    up_first[v] = first + t;
  }
  // Down hops: the root forwards slice k once every child's slice k has arrived.
  std::vector<double> dn_first(n, 0.0), ed(n, 0.0);  // into pos: first slice arrival; E(down hop)
  dn_first[root] = up_first[root];
  ed[root] = up_last[root];
  for (int i = 1; i < n; ++i) {
    const int v = order[i], p = parent[v];
    const double t = hop_s(down[v], wire_bytes);
    ed[v] = t + std::max(ed[p], dn_first[p] + waits * occupancy_s(down[v], wire_bytes));
    dn_first[v] = dn_first[p] + t;
  }
  // A member is done when it has received its last slice and sent all of its own.
  for (int v = 0; v < n; ++v) {
    double e = v == root ? 0.0 : std::max(ed[v], eu[v]);
    for (int c : children[v]) e = std::max(e, ed[c]);
    end[v] = e;
  }
  return end;
}

double TreePlan::pipeline_s(int slices, double wire_bytes) const {
  const std::vector<double> e = end_times(slices, wire_bytes);
  return e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
}

}  // namespace overlapsim
