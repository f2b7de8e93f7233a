// `centauri`: Centauri (Chen et al., ASPLOS'24) — a search over the partition space per
// communication op, then the three tiers of scheduling (design §5).
//
// Search (operation tier; Centauri §4 and §5.1). For every tensor-parallel site — an AllGather
// feeding a GEMM, or a GEMM whose output is reduced (sim/pass.hpp find_sites) — the candidates
// are the products of
//   workload partitioning: keep; k ∈ {2, 4, 8} chunks of the collective and the GEMM along the
//       tokens; the ring loop of collective matmul (k = n), uni- and bidirectional (not for an
//       AllReduce, which is not a collective matmul);
//   primitive substitution: as is; AllReduce ⇒ ReduceScatter + AllGather; hierarchical AllReduce
//       (NVLink islands);
//   topology-aware group partitioning: by node, by NVLink island, by rail (where one splits the
//       group into equal islands of ≥ 2 members);
// the last two applied to the collective (or each of its chunks). Substituting n − 1 ring permutes
// for a whole collective is not searched: the replay's sends and receives pay no per-message
// latency while NCCL's collectives pay theirs, so the permutes are predicted 5–10% faster than
// the collective and lose in the replay (GPT-3 175B, TP 8 · DP 128: 23.53 s against 23.06 s
// without them) — the ring loop of collective matmul, which overlaps the GEMM, is searched. Each candidate's time is
// predicted contention-free with the cost models the passes document (predict_collective_s,
// predict_substitution_s, predict_group_partition_s, predict_site, the GEMM cost model):
//   keep:      T = max(0, c − w) + g                      (c: the lowered collective, g: the GEMM)
//   k chunks:  T = max(0, c_k − w) + g_k + (k − 1)·max(c_k, g_k + σ·c_k)
// where c_k and g_k are one chunk's times, w the compute-stream work the schedule already runs
// beside the collective (Megatron issues the input-gradient reduction asynchronously beside the
// weight-gradient GEMM: w is the kernels between the collective and its first consumer; 0 for a
// blocking collective), and σ = interference · SMs / SM count the share of its speed a kernel
// loses beside an NCCL kernel in the replay (SMs: those NCCL launches for the chunk's size, as
// the replay plans it: 24 on an A100 node's TP group at large sizes, 32 on H100's). Each period
// the chunk's GEMM runs slowed while the next chunk's collective runs and at full speed after,
// so it takes g_k + σ·c_k where that collective ends first, and then the collective's c_k bounds
// the period; max(c_k, g_k + σ·c_k) is both. The candidate with
// the least T wins if it beats "keep, as is" by more than 1% (predictions ignore contention with
// other traffic: a small margin keeps the identity where the gain is within that error).
// Communication ops outside sites (data-parallel gradient buckets, the embedding's gradient, the
// logits' loss reductions) choose only the substitution and grouping with the least predicted
// time; ZeRO's parameter AllGather after the optimizer step chooses how many chunks to overlap
// with the step (sim/passes/optimizer_gather_overlap.cpp):  T = u_k + (k − 1)·max(u_k, c_k) + c_k.
//
// Tiers. Operation: the chosen partition's pieces, collective chunks on their own stream
// (sim/passes/workload_partition.cpp). Layer: sim/passes/layer_schedule.cpp (tensor-parallel
// collectives off the compute stream; each layer's pass list-scheduled by critical path, so a
// weight-gradient GEMM runs while an input gradient is reduced or the next input gathered).
// Model: data-parallel gradient buckets on their own stream overlapped with the rest of the
// backward pass, pipeline sends on theirs (1F1B), the parameter AllGather overlapped with the
// optimizer step, and the substitution/grouping chosen for every data-parallel collective.
//
// What Centauri does that this does not: its search also weighs contention between concurrent
// collectives (here only through the final replay) and tunes NCCL channels per chunk.
// `overlapsim run --strategy centauri --explain` lists every choice and the alternatives.
#include "sim/collective_plan.hpp"
#include "sim/passes/passes.hpp"
#include "sim/strategies/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

namespace overlapsim {

namespace {

enum class Lowering : uint8_t { AsIs, RsAg, Hierarchical, GroupNode, GroupIsland, GroupRail };

const char* label(Lowering l) {
  switch (l) {
    case Lowering::AsIs: return "as is";
    case Lowering::RsAg: return "rs-ag";
    case Lowering::Hierarchical: return "hierarchical";
    case Lowering::GroupNode: return "group by node";
    case Lowering::GroupIsland: return "group by nvlink";
    case Lowering::GroupRail: return "group by rail";
  }
  return "?";
}

std::string label(const PartitionChoice& c) {
  switch (c.mode) {
    case PartitionMode::Keep: return "keep";
    case PartitionMode::Chunks: return "chunks:" + std::to_string(c.chunks);
    case PartitionMode::Ring: return "ring";
    case PartitionMode::BidirectionalRing: return "ring (bidirectional)";
  }
  return "?";
}

/// Lowering of one collective op (or a chunk of one) by (name, group, bytes); bytes −1 matches
/// any size (the chunks of a site, whose sizes follow the token split).
using LowerKey = std::tuple<std::string, int, double>;

struct SiteDecision {
  PartitionChoice part;
  Lowering low = Lowering::AsIs;
};

class Search {
 public:
  Search(const Schedule& s, const StrategyContext& ctx) : s_(s), ctx_(ctx) {}

  /// Decides every op of every program; fills the maps the passes read.
  void run() {
    for (const RankProgram& p : s_.programs) {
      std::vector<char> in_site(p.ops.size(), 0);
      for (const Site& site : find_sites(s_, p, ctx_)) {
        in_site[site.comm] = 1;
        decide_site(p, site);
      }
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        const Op& op = p.ops[i];
        if (op.type != OpType::Collective || in_site[i] || s_.groups[op.group].ranks.size() < 2) continue;
        if (op.deps.size() == 1 && op.collective == CollectiveKind::AllGather &&
            p.ops[op.deps[0]].type == OpType::Compute && p.ops[op.deps[0]].compute == ComputeKind::Optimizer)
          decide_param_gather(op, p.ops[op.deps[0]]);
        else
          decide_collective(op);
      }
    }
  }

  const SiteDecision* site(const RankProgram& p, const Site& site) const {
    auto it = sites_.find(site_key(p, site));
    return it == sites_.end() ? nullptr : &it->second.first;
  }
  Lowering lowering(const Op& op) const {
    auto it = lower_.find({op.name, op.group, op.bytes});
    if (it == lower_.end()) it = lower_.find({op.name, op.group, -1.0});
    return it == lower_.end() ? Lowering::AsIs : it->second;
  }
  int gather_chunks() const { return gather_chunks_; }
  /// Whether any op was given lowering `l`.
  bool uses(Lowering l) const {
    for (const auto& [key, low] : lower_)
      if (low == l) return true;
    return false;
  }
  /// One row per op name, shape and choice: the groups of the simulated ranks that decided
  /// alike (symmetric groups) are merged, their instances summed. In workload order.
  std::vector<OpPlan> plans() const {
    std::vector<OpPlan> out;
    std::map<std::tuple<std::string, std::string, int, double, std::string, std::string>, size_t> row;
    for (const OpPlan& p : plans_) {
      const auto key = std::make_tuple(p.op, p.kind, p.group_size, p.bytes, p.gemm, p.alternatives[p.chosen].plan);
      auto it = row.find(key);
      if (it == row.end()) {
        row.emplace(key, out.size());
        out.push_back(p);
      } else {
        out[it->second].instances += p.instances;
      }
    }
    return out;
  }

 private:
  using SiteKey = std::tuple<std::string, int, int, double, std::string, int64_t, int64_t, int64_t, int64_t, int, int>;

  SiteKey site_key(const RankProgram& p, const Site& site) const {
    const Op& c = p.ops[site.comm];
    const Op& g = p.ops[site.gemm];
    return {c.name, c.group, static_cast<int>(c.collective), c.bytes, g.name, g.gemm_m, g.gemm_n, g.gemm_k,
            g.gemm_batch, static_cast<int>(site.dim), static_cast<int>(site.kind)};
  }

  std::vector<Lowering> lowerings(const Op& op) const {
    std::vector<Lowering> out{Lowering::AsIs};
    const CollectiveKind k = op.collective;
    const bool ring_kind = k == CollectiveKind::AllReduce || k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter;
    if (!ring_kind) return out;
    if (k == CollectiveKind::AllReduce) out.push_back(Lowering::RsAg);
    const auto& ranks = s_.groups[op.group].ranks;
    const auto islands = split_by_level(ctx_.topology, ranks, TopologyLevel::NvLinkIsland);
    const auto nodes = split_by_level(ctx_.topology, ranks, TopologyLevel::Node);
    const bool by_island = even_islands(islands), by_node = even_islands(nodes);
    if (k == CollectiveKind::AllReduce && by_island) out.push_back(Lowering::Hierarchical);
    if (by_node) out.push_back(Lowering::GroupNode);
    if (by_island && (!by_node || nodes != islands)) out.push_back(Lowering::GroupIsland);
    if (even_islands(split_by_level(ctx_.topology, ranks, TopologyLevel::Rail))) out.push_back(Lowering::GroupRail);
    return out;
  }

  /// Contention-free time of `op` with `bytes` as lowering `l` runs it, seconds.
  double comm_s(const Op& op, double bytes, Lowering l) const {
    Op x = op;
    x.bytes = bytes;
    switch (l) {
      case Lowering::AsIs: return predict_collective_s(s_, x, ctx_);
      case Lowering::RsAg: return predict_substitution_s(s_, x, Substitution::ReduceScatterAllGather, ctx_);
      case Lowering::Hierarchical: return predict_substitution_s(s_, x, Substitution::Hierarchical, ctx_);
      case Lowering::GroupNode: return predict_group_partition_s(s_, x, TopologyLevel::Node, ctx_);
      case Lowering::GroupIsland: return predict_group_partition_s(s_, x, TopologyLevel::NvLinkIsland, ctx_);
      case Lowering::GroupRail: return predict_group_partition_s(s_, x, TopologyLevel::Rail, ctx_);
    }
    return 0;
  }

  /// Compute-stream work the schedule already runs while collective `comm` is in flight: the
  /// kernels issued after it and before its first consumer, when it runs off the compute stream
  /// (Megatron's asynchronous input-gradient reduction beside the weight-gradient GEMM), else 0.
  /// Seconds, stand-alone kernel times.
  double independent_work_s(const RankProgram& p, int comm) const {
    if (p.ops[comm].overlap_stream == 0) return 0;
    double w = 0;
    const int n = static_cast<int>(p.ops.size());
    for (int i = comm + 1; i < n && i < comm + 256; ++i) {
      const Op& op = p.ops[i];
      if (std::find(op.deps.begin(), op.deps.end(), comm) != op.deps.end()) break;
      if (op.type == OpType::Compute && op.overlap_stream == 0) w += op.duration_s;
    }
    return w;
  }

  /// σ: the fraction of its speed a kernel loses beside an NCCL kernel holding `sms` SMs, as the
  /// replay slows it (replay_engine.cpp: interference · SMs held / SM count; the SMs as the
  /// replay's plan of the collective, predict_collective).
  double interference(int sms) const {
    if (ctx_.sm_count <= 0) return 0.0;
    return std::min(1.0 - 1e-3, ctx_.sm_interference * sms / ctx_.sm_count);
  }

  void decide_site(const RankProgram& p, const Site& site) {
    const SiteKey key = site_key(p, site);
    auto found = sites_.find(key);
    if (found != sites_.end()) {
      ++plans_[found->second.second].instances;
      return;
    }
    const Op& c = p.ops[site.comm];
    const Op& g = p.ops[site.gemm];
    const int n = static_cast<int>(s_.groups[c.group].ranks.size());
    const int64_t extent = gemm_extent(g, site.dim);
    const double lo = ctx_.cost.launch_overhead_s();
    OpPlan plan = plan_header(c);
    plan.gemm = g.name;
    plan.instances = 1;
    std::vector<SiteDecision> decisions;
    auto add = [&](SiteDecision d, double t, double gemm_total) {
      std::string name = label(d.part);
      if (d.part.mode == PartitionMode::Keep || d.part.mode == PartitionMode::Chunks) name += std::string(" · ") + label(d.low);
      plan.alternatives.push_back({name, t, std::max(0.0, t - gemm_total)});
      decisions.push_back(d);
    };
    const std::vector<Lowering> lows = lowerings(c);
    const double hidden = independent_work_s(p, site.comm);
    for (int k : {1, 2, 4, 8}) {
      if (k > extent) break;
      PartitionChoice part;
      if (k > 1) {
        part.mode = PartitionMode::Chunks;
        part.chunks = k;
      }
      const double gk = std::max(k == 1 ? g.duration_s : gemm_chunk(g, site.dim, (extent + k - 1) / k, ctx_).duration_s, lo);
      Op chunk = c;
      chunk.bytes = c.bytes / k;
      // The chunk as is: its time and its kernel's SMs, from one plan.
      const CollectivePrediction as_is = predict_collective(s_, chunk, ctx_);
      const double sigma = interference(as_is.sms);
      for (Lowering l : lows) {
        const double ck = l == Lowering::AsIs ? as_is.time_s : comm_s(c, c.bytes / k, l);
        // A lowering NCCL_ALGO leaves nothing to run with (predict_collective_s: +inf) is never chosen.
        const double t = !std::isfinite(ck) ? ck
                                             : std::max(0.0, ck - hidden) + gk + (k - 1) * std::max(ck, gk + sigma * ck);
        add({part, l}, t, k * gk);
      }
    }
    if (c.collective != CollectiveKind::AllReduce && extent % n == 0) {
      for (PartitionMode m : {PartitionMode::Ring, PartitionMode::BidirectionalRing}) {
        if (m == PartitionMode::BidirectionalRing && n % 4 != 0) continue;
        PartitionChoice part;
        part.mode = m;
        const SitePrediction pr = predict_site(s_, p, site, part, ctx_);
        const double gn = std::max(gemm_chunk(g, site.dim, extent / n, ctx_).duration_s, lo);
        add({part, Lowering::AsIs}, pr.time_s, n * gn);
      }
    }
    plan.chosen = choose(plan.alternatives);
    const SiteDecision d = decisions[plan.chosen];
    if (d.low != Lowering::AsIs) {
      lower_[{c.name, c.group, -1.0}] = d.low;
      for (int j = 0; j < d.part.chunks; ++j) lower_[{c.name + "/" + std::to_string(j), c.group, -1.0}] = d.low;
    }
    plans_.push_back(std::move(plan));
    sites_.emplace(key, std::make_pair(d, plans_.size() - 1));
  }

  void decide_collective(const Op& op) {
    const LowerKey key{op.name, op.group, op.bytes};
    auto found = others_.find(key);
    if (found != others_.end()) {
      ++plans_[found->second].instances;
      return;
    }
    OpPlan plan = plan_header(op);
    plan.instances = 1;
    const std::vector<Lowering> lows = lowerings(op);
    for (Lowering l : lows) {
      const double t = comm_s(op, op.bytes, l);
      plan.alternatives.push_back({label(l), t, op.overlap_stream == 0 ? t : -1.0});
    }
    plan.chosen = choose(plan.alternatives);
    if (lows[plan.chosen] != Lowering::AsIs) {
      lower_[key] = lows[plan.chosen];
    }
    plans_.push_back(std::move(plan));
    others_.emplace(key, plans_.size() - 1);
  }

  void decide_param_gather(const Op& op, const Op& update) {
    const LowerKey key{op.name, op.group, op.bytes};
    auto found = others_.find(key);
    if (found != others_.end()) {
      ++plans_[found->second].instances;
      return;
    }
    OpPlan plan = plan_header(op);
    plan.gemm = update.name;
    plan.instances = 1;
    const double fixed = ctx_.cost.profile().kernel_fixed_overhead_s;
    const double lo = ctx_.cost.launch_overhead_s();
    for (int k : {1, 2, 4, 8}) {
      const double u = std::max(k == 1 ? update.duration_s : fixed + (update.duration_s - fixed) / k, lo);
      const double c = comm_s(op, op.bytes / k, Lowering::AsIs);
      const double t = !std::isfinite(c) ? c : u + (k - 1) * std::max(u, c) + c;
      plan.alternatives.push_back({k == 1 ? "keep" : "overlap step:" + std::to_string(k), t, t - k * u});
    }
    plan.chosen = choose(plan.alternatives);
    gather_chunks_ = std::max(gather_chunks_, plan.chosen == 0 ? 1 : 1 << plan.chosen);
    plans_.push_back(std::move(plan));
    others_.emplace(key, plans_.size() - 1);
  }

  /// The least predicted time, if it beats the first alternative (the identity) by over 1%.
  static int choose(const std::vector<PlanAlternative>& alts) {
    int best = 0;
    for (int i = 1; i < static_cast<int>(alts.size()); ++i)
      if (alts[i].time_s < alts[best].time_s) best = i;
    return alts[best].time_s < 0.99 * alts[0].time_s ? best : 0;
  }

  OpPlan plan_header(const Op& op) const {
    OpPlan plan;
    plan.op = op.name;
    plan.kind = to_string(op.collective);
    plan.purpose = to_string(op.purpose);
    plan.group_size = static_cast<int>(s_.groups[op.group].ranks.size());
    plan.bytes = op.bytes;
    return plan;
  }

  const Schedule& s_;
  const StrategyContext& ctx_;
  std::map<SiteKey, std::pair<SiteDecision, size_t>> sites_;
  std::map<LowerKey, size_t> others_;
  std::map<LowerKey, Lowering> lower_;
  std::vector<OpPlan> plans_;
  int gather_chunks_ = 1;
};

Substitution substitution_of(Lowering l) {
  switch (l) {
    case Lowering::RsAg: return Substitution::ReduceScatterAllGather;
    case Lowering::Hierarchical: return Substitution::Hierarchical;
    default: return Substitution::Keep;
  }
}

class Centauri final : public Strategy {
 public:
  std::string name() const override { return "centauri"; }
  std::string description() const override {
    return "Centauri: per-op search over substitution, grouping and chunking; operation, layer and model tiers";
  }

  Schedule apply(Schedule s, const StrategyContext& ctx) const override {
    auto search = std::make_shared<Search>(s, ctx);
    search->run();
    // Operation tier: the chosen partition of every site.
    WorkloadPartitionOptions w;
    w.tag = "centauri";
    w.comm_stream = "centauri-comm";
    w.choose = [search](const Schedule&, const RankProgram& p, const Site& site) {
      const SiteDecision* d = search->site(p, site);
      return d == nullptr ? PartitionChoice{} : d->part;
    };
    s = make_workload_partition(std::move(w))->run(std::move(s), ctx);
    // Model tier: the parameter AllGather beside the optimizer step.
    if (search->gather_chunks() > 1) s = make_optimizer_gather_overlap(search->gather_chunks())->run(std::move(s), ctx);
    // The chosen substitution and grouping of every collective (and chunk).
    // (Passes with nothing to do are skipped: each rewrites every program.)
    PrimitiveSubstitutionOptions sub;
    sub.choose = [search](const Schedule&, const Op& op) { return substitution_of(search->lowering(op)); };
    if (search->uses(Lowering::RsAg) || search->uses(Lowering::Hierarchical))
      s = make_primitive_substitution(std::move(sub))->run(std::move(s), ctx);
    for (auto [level, low] : {std::pair{TopologyLevel::Node, Lowering::GroupNode},
                              std::pair{TopologyLevel::NvLinkIsland, Lowering::GroupIsland},
                              std::pair{TopologyLevel::Rail, Lowering::GroupRail}}) {
      if (!search->uses(low)) continue;
      GroupPartitionOptions g;
      g.level = level;
      g.select = [search, low = low](const Schedule&, const Op& op) { return search->lowering(op) == low; };
      s = make_group_partition(std::move(g))->run(std::move(s), ctx);
    }
    // Layer tier.
    LayerScheduleOptions l;
    l.stats = std::make_shared<LayerScheduleStats>();
    s = make_layer_schedule(l)->run(std::move(s), ctx);

    const std::vector<OpPlan> plans = search->plans();
    std::map<std::string, int> n;
    for (const OpPlan& p : plans) {
      const std::string& c = p.alternatives[p.chosen].plan;
      if (c.rfind("chunks:", 0) == 0) ++n["chunked"];
      else if (c.rfind("ring", 0) == 0) ++n["ring"];
      else if (c == "keep · as is" || c == "as is" || c == "keep") ++n["kept"];
      else if (c.rfind("overlap step", 0) != 0) ++n["lowered"];
    }
    auto count = [&n](const char* k) { return n[k]; };
    ctx.note(fmt::format("centauri: {} communication ops (distinct name, shape and choice) searched: {} chunked, {} as "
                         "collective-matmul rings, {} lowered whole (substitution/grouping), {} kept; parameter gather in {} "
                         "chunk(s); layer tier: {} collectives off the compute stream, {} kernels deferred",
                         plans.size(), count("chunked"), count("ring"), count("lowered"), count("kept"),
                         search->gather_chunks(), l.stats->collectives_moved, l.stats->kernels_moved));
    if (ctx.plan != nullptr) *ctx.plan = plans;
    // Model tier: DP buckets and pipeline sends on their streams (megatron's placement).
    return make_megatron()->apply(std::move(s), ctx);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_centauri() { return std::make_unique<Centauri>(); }

}  // namespace overlapsim
