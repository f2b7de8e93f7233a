// Dimension 2 of design §5 (Centauri's topology-aware group partitioning): a collective over a
// group that spans several islands of the topology (NVLink islands, or nodes) becomes
// sub-collectives inside the islands and across them. The pieces use different links (NVLink
// inside, the NICs across), so a later pass or scheduler can overlap them with different
// computation; the bytes each rank receives are those of the ring over the whole group:
//   AllGather(S)     ⇒ AllGather(S/a) across, then AllGather(S) inside:
//                      (b−1)/b·S/a + (a−1)/a·S = (n−1)/n·S
//   ReduceScatter(S) ⇒ ReduceScatter(S) inside, then ReduceScatter(S/a) across (the same sum)
//   AllReduce(S)     ⇒ ReduceScatter(S) inside, AllReduce(S/a) across, AllGather(S) inside
// with a members in each of b islands (n = a·b). "Across" groups join the members of equal
// position in their islands (one rail on a rail-optimised fabric). Groups whose islands differ
// in size, or that lie in one island, or have one member per island, are left alone.
#include "sim/passes/passes.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <map>

namespace overlapsim {

const char* to_string(TopologyLevel l) {
  switch (l) {
    case TopologyLevel::NvLinkIsland: return "nvlink";
    case TopologyLevel::Node: return "node";
    case TopologyLevel::Rail: return "rail";
  }
  return "?";
}

namespace {
bool nvlink_only(const Topology& topo, int a, int b) {
  for (const Hop& h : topo.route(a, b)) {
    const LinkKind k = topo.link(h.link_id).kind;
    if (k != LinkKind::NvLink && k != LinkKind::NvSwitch) return false;
  }
  return true;
}
}  // namespace

bool even_islands(const std::vector<std::vector<int>>& islands) {
  if (islands.size() < 2 || islands[0].size() < 2) return false;
  for (const auto& isl : islands)
    if (isl.size() != islands[0].size()) return false;
  return true;
}

bool island_groups(Schedule& s, const std::vector<std::vector<int>>& islands, int rank, CommPurpose purpose,
                   IslandGroups& out) {
  if (!even_islands(islands)) return false;
  const int b = static_cast<int>(islands.size()), a = static_cast<int>(islands[0].size());
  int mine = -1, local = -1;
  for (int x = 0; x < b; ++x)
    for (int y = 0; y < a; ++y)
      if (islands[x][y] == rank) mine = x, local = y;
  OVERLAPSIM_CHECK(mine >= 0, "rank not in the group it is cut from");
  std::vector<int> across;
  for (const auto& isl : islands) across.push_back(isl[local]);
  out.inside = s.intern_group(islands[mine], purpose);
  out.across = s.intern_group(across, purpose);
  out.per_island = a;
  return true;
}

std::vector<std::vector<int>> split_by_level(const Topology& topo, const std::vector<int>& ranks, TopologyLevel level) {
  std::vector<std::vector<int>> islands;
  if (level == TopologyLevel::Rail)
    for (int r : ranks)
      if (topo.gpu(r).local_index < 0) return {ranks};  // no rails: one island
  for (int r : ranks) {
    bool placed = false;
    for (auto& isl : islands) {
      bool same = false;
      switch (level) {
        case TopologyLevel::Node: same = topo.node_of(isl[0]) == topo.node_of(r); break;
        case TopologyLevel::NvLinkIsland: same = nvlink_only(topo, isl[0], r); break;
        case TopologyLevel::Rail: same = topo.gpu(isl[0]).local_index == topo.gpu(r).local_index; break;
      }
      if (same) {
        isl.push_back(r);
        placed = true;
        break;
      }
    }
    if (!placed) islands.push_back({r});
  }
  return islands;
}

namespace {

constexpr const char* kTag = "group-partition";

class GroupPartition final : public Pass {
 public:
  explicit GroupPartition(GroupPartitionOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "group-partition"; }
  std::string description() const override {
    return std::string("split collectives by topology level (") + to_string(o_.level) + ") into sub-collectives";
  }

  Schedule run(Schedule s, const PassContext& ctx) const override {
    std::vector<RankProgram> out;
    out.reserve(s.programs.size());
    std::map<int, std::vector<std::vector<int>>> islands;  // by group
    long long done = 0;
    OpBudget budget(s, ctx, name());
    for (const RankProgram& p : s.programs) {
      ProgramRewriter rw(p);
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        if (split(s, p, i, ctx, islands, rw)) ++done;
        else rw.keep(i);
      }
      out.push_back(rw.finish());
      budget.rewritten(p.ops.size(), out.back().ops.size());
    }
    s.programs = std::move(out);
    if (done == 0)  // say so: a silent no-op reads as "the split does not pay"
      ctx.note(std::string("group-partition:") + to_string(o_.level) + ": no collective's group spans two or more " +
               "equal " + to_string(o_.level) + " islands of two or more members; nothing split");
    return s;
  }

 private:
  bool split(Schedule& s, const RankProgram& p, int i, const PassContext& ctx,
             std::map<int, std::vector<std::vector<int>>>& cache, ProgramRewriter& rw) const {
    const Op op = p.ops[i];
    if (op.type != OpType::Collective) return false;
    const CollectiveKind k = op.collective;
    if (k != CollectiveKind::AllGather && k != CollectiveKind::ReduceScatter && k != CollectiveKind::AllReduce)
      return false;
    if (o_.select && !o_.select(s, op)) return false;
    auto it = cache.find(op.group);
    if (it == cache.end())
      it = cache.emplace(op.group, split_by_level(ctx.topology, s.groups[op.group].ranks, o_.level)).first;
    IslandGroups ig;
    if (!island_groups(s, it->second, p.rank, op.purpose, ig)) return false;
    const int a = ig.per_island, intra = ig.inside, inter = ig.across;
    auto piece = [&](CollectiveKind kind, int group, double bytes, const char* what, int n) {
      Op x = op;
      x.collective = kind;
      x.group = group;
      x.bytes = bytes;
      x.name = op.name + "/" + what;
      x.match = derive_collective_match(op.match, kTag, n, group);
      return x;
    };
    const std::vector<int> deps(op.deps.begin(), op.deps.end());
    if (k == CollectiveKind::AllGather) {
      const int x = rw.emit(piece(k, inter, op.bytes / a, "ag-inter", 0), i, {}, deps);
      rw.emit(piece(k, intra, op.bytes, "ag-intra", 1), i, {x});
    } else if (k == CollectiveKind::ReduceScatter) {
      const int x = rw.emit(piece(k, intra, op.bytes, "rs-intra", 0), i, {}, deps);
      rw.emit(piece(k, inter, op.bytes / a, "rs-inter", 1), i, {x});
    } else {
      const int x = rw.emit(piece(CollectiveKind::ReduceScatter, intra, op.bytes, "rs-intra", 0), i, {}, deps);
      const int y = rw.emit(piece(CollectiveKind::AllReduce, inter, op.bytes / a, "ar-inter", 1), i, {x});
      rw.emit(piece(CollectiveKind::AllGather, intra, op.bytes, "ag-intra", 2), i, {y});
    }
    return true;
  }

  GroupPartitionOptions o_;
};

}  // namespace

std::unique_ptr<Pass> make_group_partition(GroupPartitionOptions opt) {
  return std::make_unique<GroupPartition>(std::move(opt));
}

double predict_group_partition_s(const Schedule& s, const Op& op, TopologyLevel level, const PassContext& ctx) {
  const double whole = predict_collective_s(s, op, ctx);
  const CollectiveKind k = op.collective;
  if (k != CollectiveKind::AllGather && k != CollectiveKind::ReduceScatter && k != CollectiveKind::AllReduce)
    return whole;
  const auto islands = split_by_level(ctx.topology, s.groups.at(op.group).ranks, level);
  if (!even_islands(islands)) return whole;
  const int a = static_cast<int>(islands[0].size());
  std::vector<int> across;
  for (const auto& isl : islands) across.push_back(isl[0]);
  const auto& intra = islands[0];
  const double S = op.bytes;
  // The op's reduction and element type go with each part: a ReduceScatter that averages never
  // runs as PAT, NVLS reduces only some types, fp8 rings over more than 8 ranks are relegated.
  const CollectiveAlgorithm any = CollectiveAlgorithm::Auto;
  const auto part = [&](const std::vector<int>& ranks, CollectiveKind kind, double bytes) {
    return predict_collective_s(ranks, kind, bytes, ctx, 0, any, op.reduce_op, op.datatype);
  };
  if (k == CollectiveKind::AllGather) return part(across, k, S / a) + part(intra, k, S);
  if (k == CollectiveKind::ReduceScatter) return part(intra, k, S) + part(across, k, S / a);
  return part(intra, CollectiveKind::ReduceScatter, S) + part(across, CollectiveKind::AllReduce, S / a) +
         part(intra, CollectiveKind::AllGather, S);
}

}  // namespace overlapsim
