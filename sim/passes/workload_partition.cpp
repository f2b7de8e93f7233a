// Dimension 3 of design §5 (Centauri's workload partitioning; Compass's InterDecom; Wang et al.'s
// collective matmul, XLA's windowed einsum): a collective and the GEMM it feeds (AllGather →
// GEMM) or drains (GEMM → ReduceScatter/AllReduce) are cut into pieces along the tokens, so that
// the communication of one piece overlaps the computation of another. Modes and invariants:
// sim/passes/passes.hpp. Chunk GEMMs are timed by the cost model on their own shape — a smaller
// GEMM is less efficient and each chunk pays the kernel's fixed cost (and the replay's launch
// overhead), which is what makes the best degree finite (design §4).
//
// Piece placement: collective pieces stand where the collective stood in the program, GEMM
// chunks where the GEMM stood, so every dependency still points backwards. Collective chunks go
// on `comm_stream`; ring sends and receives on their own streams (one pair per direction), the
// adds of a reduction ring on the receive stream, GEMM chunks on the GEMM's stream. A receive
// waits for what the matching send of its predecessor waits for (the same step's readiness), so
// a receive from a mirror (folding) starts the mirror's flow when the mirror would send it.
#include "sim/passes/passes.hpp"

#include "sim/collective_plan.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace overlapsim {

const char* to_string(PartitionMode m) {
  switch (m) {
    case PartitionMode::Keep: return "keep";
    case PartitionMode::Chunks: return "chunks";
    case PartitionMode::Ring: return "ring";
    case PartitionMode::BidirectionalRing: return "bidirectional-ring";
  }
  return "?";
}

namespace {

std::vector<int> without(const OpDeps& v, int x) {
  std::vector<int> out;
  for (int d : v)
    if (d != x) out.push_back(d);
  return out;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Whether `choice` can be applied to the site (else the site is kept).
bool feasible(const Schedule& s, const RankProgram& p, const Site& site, const PartitionChoice& c) {
  const Op& g = p.ops[site.gemm];
  const int64_t e = gemm_extent(g, site.dim);
  const int n = static_cast<int>(s.groups[p.ops[site.comm].group].ranks.size());
  switch (c.mode) {
    case PartitionMode::Keep: return false;
    case PartitionMode::Chunks: return c.chunks >= 2 && c.chunks <= e;
    case PartitionMode::Ring:
      return p.ops[site.comm].collective != CollectiveKind::AllReduce && n >= 2 && e % n == 0;
    case PartitionMode::BidirectionalRing:
      return p.ops[site.comm].collective != CollectiveKind::AllReduce && n >= 4 && n % 4 == 0 && e % n == 0;
  }
  return false;
}

struct Streams {
  int16_t comm, send, recv, send_ccw, recv_ccw;
};

class WorkloadPartition final : public Pass {
 public:
  explicit WorkloadPartition(WorkloadPartitionOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "workload-partition"; }
  std::string description() const override {
    return "cut collectives and their GEMMs into pieces along the tokens (chunks, or the ring of collective matmul)";
  }

  Schedule run(Schedule s, const PassContext& ctx) const override {
    Streams st{};
    st.comm = intern_stream(s, o_.comm_stream);
    st.send = intern_stream(s, o_.send_stream);
    st.recv = intern_stream(s, o_.recv_stream);
    st.send_ccw = intern_stream(s, o_.send_stream_ccw);
    st.recv_ccw = intern_stream(s, o_.recv_stream_ccw);
    std::vector<RankProgram> out;
    out.reserve(s.programs.size());
    int sites = 0, kept = 0;
    OpBudget budget(s, ctx, name());
    for (const RankProgram& p : s.programs) {
      out.push_back(rewrite(s, p, st, ctx, sites, kept));
      budget.rewritten(p.ops.size(), out.back().ops.size());
    }
    s.programs = std::move(out);
    // Say so when a choice could not be applied (regression: workload-partition:4096 left every
    // site as it was without a word).
    if (kept > 0)
      ctx.note(name() + ": " + std::to_string(kept) + " of " + std::to_string(sites) +
               " sites kept whole (the chunk count or ring does not fit their token extent or group)");
    return s;
  }

 private:
  struct Active {
    Site site;
    PartitionChoice choice;
    std::vector<int> waits;   ///< GatherGemm: per GEMM chunk, the new op it waits for (-1: none)
    std::vector<int> chunks;  ///< GemmReduce: new indices of the GEMM chunks
  };

  RankProgram rewrite(const Schedule& s, const RankProgram& p, const Streams& st, const PassContext& ctx, int& sites,
                      int& kept) const {
    std::vector<Active> act;
    for (const Site& site : find_sites(s, p, ctx, o_.purpose)) {
      PartitionChoice c = o_.choose ? o_.choose(s, p, site) : PartitionChoice{};
      ++sites;
      if (feasible(s, p, site, c)) act.push_back(Active{site, c, {}, {}});
      else if (c.mode != PartitionMode::Keep) ++kept;
    }
    std::map<int, int> at_comm, at_gemm;  // old index → entry of act
    for (int a = 0; a < static_cast<int>(act.size()); ++a) {
      at_comm[act[a].site.comm] = a;
      at_gemm[act[a].site.gemm] = a;
    }
    ProgramRewriter rw(p);
    for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
      if (auto it = at_comm.find(i); it != at_comm.end()) {
        Active& a = act[it->second];
        if (a.choice.mode == PartitionMode::Chunks) chunked_comm(s, p, a, st, rw);
        else ring_comm(s, p, a, st, ctx, rw);
      } else if (auto jt = at_gemm.find(i); jt != at_gemm.end()) {
        gemm_chunks(s, p, act[jt->second], ctx, rw);
      } else {
        rw.keep(i);
      }
    }
    return rw.finish();
  }

  /// The extents of the GEMM chunks, in the order they are emitted.
  static std::vector<int64_t> extents(const Schedule& s, const RankProgram& p, const Active& a) {
    const Op& g = p.ops[a.site.gemm];
    const int64_t e = gemm_extent(g, a.site.dim);
    if (a.choice.mode == PartitionMode::Chunks) return split_extent(e, a.choice.chunks);
    const int n = static_cast<int>(s.groups[p.ops[a.site.comm].group].ranks.size());
    return std::vector<int64_t>(n, e / n);
  }

  void gemm_chunks(const Schedule& s, const RankProgram& p, Active& a, const PassContext& ctx,
                   ProgramRewriter& rw) const {
    const int gi = a.site.gemm;
    const Op& g = p.ops[gi];
    const Op& c = p.ops[a.site.comm];
    const auto ext = extents(s, p, a);
    std::vector<int> old = without(g.deps, a.site.comm);
    // The local shard of a gathering ring needs what the AllGather needed.
    if (a.site.kind == SiteKind::GatherGemm && a.choice.mode != PartitionMode::Chunks)
      old = concat(old, std::vector<int>(c.deps.begin(), c.deps.end()));
    std::vector<int> made;
    for (size_t j = 0; j < ext.size(); ++j) {
      Op x = gemm_chunk(g, a.site.dim, ext[j], ctx);
      x.name = g.name + "/" + std::to_string(j);
      std::vector<int> deps;
      if (a.site.kind == SiteKind::GatherGemm && a.waits[j] >= 0) deps.push_back(a.waits[j]);
      made.push_back(rw.emit(x, gi, deps, old));
    }
    rw.set_terminals(gi, made);
    a.chunks = made;
  }

  void chunked_comm(const Schedule&, const RankProgram& p, Active& a, const Streams& st, ProgramRewriter& rw) const {
    const int ci = a.site.comm;
    const Op& c = p.ops[ci];
    const Op& g = p.ops[a.site.gemm];
    const int64_t e = gemm_extent(g, a.site.dim);
    const auto ext = split_extent(e, a.choice.chunks);
    std::vector<int> made;
    const bool gather = a.site.kind == SiteKind::GatherGemm;
    const std::vector<int> old = gather ? std::vector<int>(c.deps.begin(), c.deps.end()) : without(c.deps, a.site.gemm);
    for (size_t j = 0; j < ext.size(); ++j) {
      Op x = c;
      x.bytes = c.bytes * static_cast<double>(ext[j]) / static_cast<double>(e);
      x.match = derive_collective_match(c.match, o_.tag, static_cast<int64_t>(j), c.group);
      x.name = c.name + "/" + std::to_string(j);
      x.stream = x.overlap_stream = st.comm;
      x.num_sm = a.choice.comm_num_sm;
      x.channels = a.choice.channels;
      std::vector<int> deps;
      if (!gather) deps.push_back(a.chunks.at(j));
      made.push_back(rw.emit(x, ci, deps, old));
    }
    rw.set_terminals(ci, made);
    if (gather) a.waits = made;
  }

  void ring_comm(const Schedule& s, const RankProgram& p, Active& a, const Streams& st, const PassContext& ctx,
                 ProgramRewriter& rw) const {
    const int ci = a.site.comm;
    const Op& c = p.ops[ci];
    const auto& grp = s.groups[c.group].ranks;
    const int n = static_cast<int>(grp.size());
    const int pos = static_cast<int>(std::find(grp.begin(), grp.end(), p.rank) - grp.begin());
    OVERLAPSIM_CHECK(pos < n, "rank not in its group: " + c.name);
    const int succ = grp[(pos + 1) % n], pred = grp[(pos + n - 1) % n];
    const double shard = c.bytes / n;
    const bool bidir = a.choice.mode == PartitionMode::BidirectionalRing;
    const bool gather = a.site.kind == SiteKind::GatherGemm;
    const std::vector<int> first_old = gather ? std::vector<int>(c.deps.begin(), c.deps.end()) : without(c.deps, a.site.gemm);

    auto p2p = [&](OpType type, int peer, int64_t match, const std::string& name, int16_t stream) {
      Op x;
      x.type = type;
      x.phase = c.phase;
      x.purpose = c.purpose;
      x.layer = c.layer;
      x.micro_batch = c.micro_batch;
      x.peer = peer;
      x.bytes = shard;
      x.match = match;
      x.num_sm = a.choice.comm_num_sm;
      x.group = a.choice.on_group_comm ? c.group : -1;
      x.name = name;
      x.stream = x.overlap_stream = stream;
      return x;
    };
    auto add = [&](const std::string& name, double bytes, int16_t stream, const std::vector<int>& deps) {
      Op x = memory_kernel(name, bytes, ctx);
      x.phase = c.phase;
      x.layer = c.layer;
      x.micro_batch = c.micro_batch;
      x.stream = x.overlap_stream = stream;
      return rw.emit(x, ci, deps);
    };

    /// One direction of the ring: `steps` sends to `to` and receives from `from`.
    struct Dir {
      const char* tag;
      int to, from, steps;
      int16_t send_stream, recv_stream;
      int prev_send = -1, prev_recv = -1;
      std::vector<int> gemm;  // GemmReduce: the GEMM chunk each step sends (or adds)
    };
    std::vector<Dir> dirs;
    const int half = n / 2;
    if (!bidir) {
      dirs.push_back(Dir{"cw", succ, pred, n - 1, st.send, st.recv, -1, -1, {}});
    } else {
      dirs.push_back(Dir{"cw", succ, pred, half, st.send, st.recv, -1, -1, {}});
      dirs.push_back(Dir{"ccw", pred, succ, half - 1, st.send_ccw, st.recv_ccw, -1, -1, {}});
    }
    // GEMM chunks in the order gemm_chunks emitted them: unidirectional — chunk j is step j's;
    // bidirectional — cw_0, ccw_0, cw_1, ccw_1, …, cw_{h−1}, then the rank's own.
    if (!gather) {
      if (!bidir) {
        for (int j = 0; j < n; ++j) dirs[0].gemm.push_back(a.chunks[j]);
      } else {
        int k = 0;
        for (int j = 0; j < half; ++j) {
          dirs[0].gemm.push_back(a.chunks[k++]);
          if (j < half - 1) dirs[1].gemm.push_back(a.chunks[k++]);
        }
      }
    }
    std::vector<int> waits(1, -1);  // GatherGemm: the GEMM chunks' receives, in GEMM order
    std::vector<int> terminals;
    const int max_steps = dirs[0].steps;
    for (int j = 0; j < max_steps; ++j) {
      for (Dir& d : dirs) {
        if (j >= d.steps) continue;
        std::vector<int> ready;
        if (gather) {
          if (j > 0) ready.push_back(d.prev_recv);
        } else if (j == 0) {
          ready.push_back(d.gemm[0]);
        } else {
          ready.push_back(add(c.name + "/" + d.tag + "-add" + std::to_string(j), 3 * shard, d.recv_stream,
                              {d.gemm[j], d.prev_recv}));
        }
        const std::vector<int> old = j == 0 ? first_old : std::vector<int>{};
        std::vector<int> recv_deps = ready;
        if (d.prev_send >= 0) recv_deps.push_back(d.prev_send);
        const std::string base = c.name + "/" + d.tag;
        const std::string tag = o_.tag + "/" + d.tag;
        d.prev_send = rw.emit(p2p(OpType::Send, d.to, derive_p2p_match(c.match, tag, j, p.rank, d.to),
                                  base + "-send" + std::to_string(j), d.send_stream),
                              ci, ready, old);
        d.prev_recv = rw.emit(p2p(OpType::Recv, d.from, derive_p2p_match(c.match, tag, j, d.from, p.rank),
                                  base + "-recv" + std::to_string(j), d.recv_stream),
                              ci, recv_deps, old);
        if (gather) waits.push_back(d.prev_recv);
      }
    }
    for (const Dir& d : dirs) terminals.push_back(d.prev_send);
    if (gather) {
      for (const Dir& d : dirs) terminals.push_back(d.prev_recv);
      a.waits = waits;
    } else {
      // The last add: the rank's own partial plus what arrived from each direction.
      std::vector<int> deps{a.chunks.back()};
      for (const Dir& d : dirs) deps.push_back(d.prev_recv);
      terminals.push_back(add(c.name + "/add-final", (1.0 + static_cast<double>(dirs.size()) + 1.0) * shard,
                              dirs[0].recv_stream, deps));
    }
    rw.set_terminals(ci, terminals);
  }

  WorkloadPartitionOptions o_;
};

}  // namespace

std::unique_ptr<Pass> make_workload_partition(WorkloadPartitionOptions opt) {
  return std::make_unique<WorkloadPartition>(std::move(opt));
}

// ---- Prediction -----------------------------------------------------------------------------------

namespace {
/// Finish time of GEMM chunks of `g` seconds each run in order, chunk i not before ready[i].
/// Chunk j starts at max(ready[j], the previous chunk's end) and takes g (the last one g_last).
/// `slow`: while communication kernels hold SMs, computation runs at 1 − σ: (until, σ) pairs in
/// increasing `until` (seconds from the site's start), full speed after the last. A chunk's work
/// is spread over them: g seconds of work started at t ends at t + g / (1 − σ) if the slow span
/// lasts that long, else at its end plus the work left (replay.hpp, SM interference).
double pipeline(const std::vector<double>& ready, double g, double g_last,
                const std::vector<std::pair<double, double>>& slow = {}) {
  double t = 0;
  for (size_t j = 0; j < ready.size(); ++j) {
    t = std::max(t, ready[j]);
    double work = j + 1 < ready.size() ? g : g_last;
    for (const auto& [until, sigma] : slow) {
      if (work <= 0) break;
      if (until <= t) continue;
      const double rate = 1 - sigma;
      const double span = (until - t) * rate;  // work the slow span can do
      if (work <= span) {
        t += work / rate;
        work = 0;
      } else {
        work -= span;
        t = until;
      }
    }
    t += work;
  }
  return t;
}
}  // namespace

SitePrediction predict_site(const Schedule& s, const RankProgram& p, const Site& site, const PartitionChoice& choice,
                            const PassContext& ctx) {
  const Op& c = p.ops[site.comm];
  const Op& g = p.ops[site.gemm];
  const double lo = ctx.cost.launch_overhead_s();
  const auto& grp = s.groups[c.group].ranks;
  const int n = static_cast<int>(grp.size());
  SitePrediction r;
  if (!feasible(s, p, site, choice)) {
    const double gt = std::max(g.duration_s, lo);
    r.time_s = predict_collective_s(s, c, ctx) + gt;
    r.exposed_comm_s = r.time_s - gt;
    return r;
  }
  const int64_t e = gemm_extent(g, site.dim);
  if (choice.mode == PartitionMode::Chunks) {
    const int k = choice.chunks;
    Op piece = c;
    piece.bytes = c.bytes / k;
    piece.channels = choice.channels;
    const double ct = predict_collective_s(s, piece, ctx);
    const double gt = std::max(gemm_chunk(g, site.dim, (e + k - 1) / k, ctx).duration_s, lo);
    r.time_s = ct + gt + (k - 1) * std::max(ct, gt);
    r.exposed_comm_s = r.time_s - k * gt;
    return r;
  }
  const bool bidir = choice.mode == PartitionMode::BidirectionalRing;
  const double gt = std::max(gemm_chunk(g, site.dim, e / n, ctx).duration_s, lo);
  // One step of every member sending a shard clockwise (and, bidirectional, counter-clockwise:
  // both directions share the links they have in common; the last clockwise step runs alone).
  std::vector<std::pair<int, int>> cw, both;
  for (int i = 0; i < n; ++i) {
    cw.emplace_back(grp[i], grp[(i + 1) % n]);
    both.emplace_back(grp[i], grp[(i + 1) % n]);
    both.emplace_back(grp[(i + 1) % n], grp[i]);
  }
  // The permutes' communicator: the group's (XLA) or two-rank ones (PyTorch).
  const P2pCommunicator comm =
      choice.on_group_comm ? group_communicator(ctx.topology, grp) : P2pCommunicator{};
  const double step1 = predict_p2p_step_s(ctx.topology, ctx, cw, c.bytes / n, choice.comm_num_sm == 0, comm);
  // Arrival of the shard each GEMM chunk waits for (the reduction ring is the same loop run
  // backwards: its adds are counted with the GEMM chunks).
  std::vector<double> ready{0.0};
  if (!bidir) {
    for (int j = 1; j < n; ++j) ready.push_back(j * step1);
  } else {
    const double step2 = predict_p2p_step_s(ctx.topology, ctx, both, c.bytes / n, choice.comm_num_sm == 0, comm);
    for (int j = 1; j < n / 2; ++j) {
      ready.push_back(j * step2);
      ready.push_back(j * step2);
    }
    ready.push_back((n / 2 - 1) * step2 + step1);
  }
  double per_chunk = gt;
  if (site.kind == SiteKind::GemmReduce) per_chunk += std::max(ctx.cost.memory_bound_time_s(3 * c.bytes / n), lo);
  // The ring's steps run back to back until the last shard arrives, NCCL's send and receive
  // kernels holding their message's p2p channels' SMs throughout, as the replay holds them
  // (replay.hpp, SM interference): computation beside them runs at 1 − σ, σ = interference · SMs
  // / SM count, and a step's time is shared by the chunks that run beside it (two per step on a
  // bidirectional ring), not charged to each.
  std::vector<std::pair<double, double>> slow;
  if (ctx.sm_count > 0 && choice.comm_num_sm != 0) {
    const int per_kernel = choice.comm_num_sm > 0 ? choice.comm_num_sm
                                                  : p2p_split(ctx.topology, grp[0], grp[1], c.bytes / n, comm).channels;
    // Kernels: two-rank communicators, one per neighbour (one for a ring of 2); the group's, one
    // per direction (a direction's send and receive share a channel base, nccl_p2p_base).
    const auto sigma = [&](int kernels) {
      return std::min(0.999, ctx.sm_interference * kernels * per_kernel / ctx.sm_count);
    };
    const int pair_kernels = n == 2 ? 1 : 2;
    if (!bidir) {
      slow.emplace_back(ready.back(), sigma(choice.on_group_comm ? 1 : pair_kernels));
    } else {
      // Both directions' steps, then the last clockwise step alone.
      slow.emplace_back(ready[ready.size() - 2], sigma(choice.on_group_comm ? 2 : pair_kernels));
      slow.emplace_back(ready.back(), sigma(choice.on_group_comm ? 1 : pair_kernels));
    }
  }
  r.time_s = pipeline(ready, per_chunk, per_chunk, slow);
  r.exposed_comm_s = std::max(0.0, r.time_s - n * gt);
  return r;
}

}  // namespace overlapsim
