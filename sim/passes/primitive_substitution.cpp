// Dimension 1 of design §5 (Centauri's primitive substitution): a collective is replaced by other
// primitives that move the same bytes into each rank.
//
//  - AllReduce ⇒ ReduceScatter + AllGather (same group, same buffer size S): 2·(n−1)/n·S received,
//    as the AllReduce's ring. The two halves can then be moved apart by later passes (the
//    AllGather next to the op that needs the result).
//  - AllGather ⇒ n−1 ring permutes: step j sends the shard received in step j−1 (its own in step 0)
//    to the ring successor and receives one from the predecessor.
//  - ReduceScatter ⇒ n−1 ring permutes with local adds: step j sends the accumulator, receives the
//    predecessor's and adds the local partial to it (a memory-bound kernel reading two S/n buffers
//    and writing one, 0 FLOPs — added work, time from the cost model); the last add leaves the
//    reduced shard.
//  - AllReduce ⇒ permutes: the ReduceScatter's then the AllGather's.
//  - Hierarchical AllReduce ⇒ ReduceScatter(S) inside each NVLink island, AllReduce(S/a) across
//    islands among members of equal position, AllGather(S) inside: 2(a−1)/a·S + 2(b−1)/b·S/a =
//    2(n−1)/n·S received. Islands must all have a ≥ 2 members and there must be b ≥ 2 of them;
//    otherwise the AllReduce is kept.
//
// Streams: a receive's step waits for what its send waits for, so that a receive from a mirror
// (a rank that is not simulated) starts the mirror's flow when the mirror would send it; sends go
// on their own stream and receives (and adds) stay on the collective's stream, so a collective
// that blocked the computation still does, and one that overlapped still does.
#include "sim/passes/passes.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <map>

namespace overlapsim {

const char* to_string(Substitution s) {
  switch (s) {
    case Substitution::Keep: return "keep";
    case Substitution::ReduceScatterAllGather: return "rs-ag";
    case Substitution::RingPermutes: return "ring";
    case Substitution::Hierarchical: return "hierarchical";
  }
  return "?";
}

namespace {

constexpr const char* kTag = "primitive-substitution";

int position(const std::vector<int>& ranks, int rank) {
  const auto it = std::find(ranks.begin(), ranks.end(), rank);
  OVERLAPSIM_CHECK(it != ranks.end(), "rank not in its group");
  return static_cast<int>(it - ranks.begin());
}

class PrimitiveSubstitution final : public Pass {
 public:
  explicit PrimitiveSubstitution(PrimitiveSubstitutionOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "primitive-substitution"; }
  std::string description() const override {
    return "replace collectives by other primitives (RS+AG, ring permutes, hierarchical)";
  }

  Schedule run(Schedule s, const PassContext& ctx) const override {
    const int16_t send_stream = intern_stream(s, o_.send_stream);
    islands_.clear();
    std::vector<RankProgram> out;
    out.reserve(s.programs.size());
    long long asked = 0, done = 0;
    OpBudget budget(s, ctx, name());
    for (const RankProgram& p : s.programs) {
      ProgramRewriter rw(p);
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        const Op& op = p.ops[i];
        const Substitution sub = op.type == OpType::Collective && o_.choose ? o_.choose(s, op) : Substitution::Keep;
        if (sub != Substitution::Keep) ++asked;
        const int size_before = rw.size();
        const int n = op.type == OpType::Collective ? static_cast<int>(s.groups[op.group].ranks.size()) : 0;
        if (sub == Substitution::Keep || n < 2) {
          rw.keep(i);
          continue;
        }
        const CollectiveKind k = op.collective;
        if (sub == Substitution::ReduceScatterAllGather && k == CollectiveKind::AllReduce) {
          Op rs = op, ag = op;
          rs.collective = CollectiveKind::ReduceScatter;
          rs.name = op.name + "/rs";
          rs.match = derive_collective_match(op.match, kTag, 0, op.group);
          ag.collective = CollectiveKind::AllGather;
          ag.name = op.name + "/ag";
          ag.match = derive_collective_match(op.match, kTag, 1, op.group);
          const int r = rw.emit(rs, i, {}, std::vector<int>(op.deps.begin(), op.deps.end()));
          rw.emit(ag, i, {r});
        } else if (sub == Substitution::RingPermutes &&
                   (k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter ||
                    k == CollectiveKind::AllReduce)) {
          ring(s, p, i, send_stream, ctx, rw);
        } else if (sub == Substitution::Hierarchical && k == CollectiveKind::AllReduce) {
          if (!hierarchical(s, p, i, ctx, rw)) rw.keep(i);
        } else {
          rw.keep(i);
        }
        if (sub != Substitution::Keep && rw.size() > size_before + 1) ++done;
      }
      out.push_back(rw.finish());
      budget.rewritten(p.ops.size(), out.back().ops.size());
    }
    s.programs = std::move(out);
    if (asked > 0 && done == 0)  // say so: a silent no-op reads as "the substitution does not pay"
      ctx.note("primitive-substitution: none of the " + std::to_string(asked) + " collectives it was asked to " +
               "replace could be (kind, group size or NVLink islands do not fit); nothing replaced");
    return s;
  }

 private:
  /// Ring permutes of collective op i (AllReduce: its ReduceScatter's steps, then its AllGather's).
  void ring(const Schedule& s, const RankProgram& p, int i, int16_t send_stream, const PassContext& ctx,
            ProgramRewriter& rw) const {
    const Op& op = p.ops[i];
    const auto& g = s.groups[op.group].ranks;
    const int n = static_cast<int>(g.size());
    const int pos = position(g, p.rank);
    const int succ = g[(pos + 1) % n], pred = g[(pos + n - 1) % n];
    const double chunk = op.bytes / n;
    auto piece = [&](OpType type, int peer, int64_t match, const std::string& name) {
      Op x;
      x.type = type;
      x.phase = op.phase;
      x.purpose = op.purpose;
      x.layer = op.layer;
      x.micro_batch = op.micro_batch;
      x.peer = peer;
      x.bytes = chunk;
      x.match = match;
      x.num_sm = o_.p2p_num_sm;
      x.name = name;
      x.stream = x.overlap_stream = type == OpType::Send ? send_stream : op.overlap_stream;
      return x;
    };
    const std::vector<int> first_old(op.deps.begin(), op.deps.end());
    std::vector<int> ready;      // new ops the next send waits for (empty: the collective's deps)
    int prev_send = -1;
    auto step = [&](const char* tag, int j) {
      std::vector<int> recv_deps = ready;
      if (prev_send >= 0) recv_deps.push_back(prev_send);
      const auto& old = ready.empty() ? first_old : std::vector<int>{};
      const std::string base = op.name + "/" + tag;
      prev_send = rw.emit(piece(OpType::Send, succ, derive_p2p_match(op.match, tag, j, p.rank, succ),
                                base + "-send" + std::to_string(j)),
                          i, ready, old);
      const int recv = rw.emit(piece(OpType::Recv, pred, derive_p2p_match(op.match, tag, j, pred, p.rank),
                                     base + "-recv" + std::to_string(j)),
                               i, recv_deps, old);
      return recv;
    };
    const bool reduce = op.collective != CollectiveKind::AllGather;
    const bool gather = op.collective != CollectiveKind::ReduceScatter;
    int last = -1;
    if (reduce)
      for (int j = 0; j < n - 1; ++j) {
        const int recv = step("rs", j);
        Op add = memory_kernel(op.name + "/add" + std::to_string(j), 3 * chunk, ctx);
        add.phase = op.phase;
        add.layer = op.layer;
        add.micro_batch = op.micro_batch;
        add.stream = add.overlap_stream = op.overlap_stream;
        last = rw.emit(add, i, {recv});
        ready = {last};
      }
    if (gather)
      for (int j = 0; j < n - 1; ++j) {
        last = step("ag", j);
        ready = {last};
      }
    rw.set_terminals(i, {last, prev_send});
  }

  bool hierarchical(Schedule& s, const RankProgram& p, int i, const PassContext& ctx, ProgramRewriter& rw) const {
    const Op op = p.ops[i];
    auto it = islands_.find(op.group);
    if (it == islands_.end())
      it = islands_.emplace(op.group, split_by_level(ctx.topology, s.groups[op.group].ranks, TopologyLevel::NvLinkIsland))
               .first;
    IslandGroups ig;
    if (!island_groups(s, it->second, p.rank, op.purpose, ig)) return false;
    const int a = ig.per_island, intra = ig.inside, inter = ig.across;
    Op rs = op, ar = op, ag = op;
    rs.collective = CollectiveKind::ReduceScatter;
    rs.group = intra;
    rs.name = op.name + "/rs-intra";
    rs.match = derive_collective_match(op.match, kTag, 10, intra);
    ar.group = inter;
    ar.bytes = op.bytes / a;
    ar.name = op.name + "/ar-inter";
    ar.match = derive_collective_match(op.match, kTag, 11, inter);
    ag.collective = CollectiveKind::AllGather;
    ag.group = intra;
    ag.name = op.name + "/ag-intra";
    ag.match = derive_collective_match(op.match, kTag, 12, intra);
    const int r = rw.emit(rs, i, {}, std::vector<int>(op.deps.begin(), op.deps.end()));
    const int x = rw.emit(ar, i, {r});
    rw.emit(ag, i, {x});
    return true;
  }

  PrimitiveSubstitutionOptions o_;
  mutable std::map<int, std::vector<std::vector<int>>> islands_;  // by group, during run()
};

}  // namespace

std::unique_ptr<Pass> make_primitive_substitution(PrimitiveSubstitutionOptions opt) {
  return std::make_unique<PrimitiveSubstitution>(std::move(opt));
}

double predict_substitution_s(const Schedule& s, const Op& op, Substitution sub, const PassContext& ctx) {
  const double whole = predict_collective_s(s, op, ctx);
  const auto& g = s.groups.at(op.group).ranks;
  const int n = static_cast<int>(g.size());
  const CollectiveKind k = op.collective;
  if (n < 2) return whole;
  switch (sub) {
    case Substitution::Keep:
      return whole;
    case Substitution::ReduceScatterAllGather:
      if (k != CollectiveKind::AllReduce) return whole;
      return predict_collective_s(g, CollectiveKind::ReduceScatter, op.bytes, ctx, op.channels, CollectiveAlgorithm::Auto,
                                  op.reduce_op, op.datatype) +
             predict_collective_s(g, CollectiveKind::AllGather, op.bytes, ctx, op.channels, CollectiveAlgorithm::Auto,
                                  op.reduce_op, op.datatype);
    case Substitution::RingPermutes: {
      if (k != CollectiveKind::AllGather && k != CollectiveKind::ReduceScatter && k != CollectiveKind::AllReduce)
        return whole;
      std::vector<std::pair<int, int>> flows;
      for (int i = 0; i < n; ++i) flows.emplace_back(g[i], g[(i + 1) % n]);
      const double step = predict_p2p_step_s(ctx.topology, ctx, flows, op.bytes / n);
      const double add = std::max(ctx.cost.memory_bound_time_s(3 * op.bytes / n), ctx.cost.launch_overhead_s());
      const int reduce_steps = k == CollectiveKind::AllGather ? 0 : n - 1;
      const int gather_steps = k == CollectiveKind::ReduceScatter ? 0 : n - 1;
      return (reduce_steps + gather_steps) * step + reduce_steps * add;
    }
    case Substitution::Hierarchical: {
      if (k != CollectiveKind::AllReduce) return whole;
      const auto islands = split_by_level(ctx.topology, g, TopologyLevel::NvLinkIsland);
      if (!even_islands(islands)) return whole;
      const int a = static_cast<int>(islands[0].size());
      std::vector<int> across;
      for (const auto& isl : islands) across.push_back(isl[0]);
      const auto part = [&](const std::vector<int>& ranks, CollectiveKind kind, double bytes) {
        return predict_collective_s(ranks, kind, bytes, ctx, 0, CollectiveAlgorithm::Auto, op.reduce_op, op.datatype);
      };
      return part(islands[0], CollectiveKind::ReduceScatter, op.bytes) +
             part(across, CollectiveKind::AllReduce, op.bytes / a) + part(islands[0], CollectiveKind::AllGather, op.bytes);
    }
  }
  return whole;
}

}  // namespace overlapsim
