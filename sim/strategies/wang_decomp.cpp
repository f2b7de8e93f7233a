// `wang-decomp`: collective matmul (Wang et al., ASPLOS'23; XLA's windowed einsum), design §10.
//
// Every tensor-parallel AllGather → GEMM and GEMM → ReduceScatter of the workload (forward,
// recomputed forward, backward, logits) becomes the ring loop of sim/passes/workload_partition
// (k = n): n−1 collective-permutes to a ring neighbour, each step multiplying the shard in hand
// while the next arrives (a gathered contracting dimension — the weight-gradient GEMMs — sums the
// partials), or computing one destination's partial, adding the accumulator received and passing
// it on. Bidirectional (two directions round the ring, n/2 and n/2−1 steps of full shards) where
// n is divisible by 4, as XLA requires; unidirectional otherwise. The permutes are NCCL
// send/recv kernels (num_sm −1: NCCL's, one SM per p2p channel of the shard in the replay; a
// GEMM chunk runs beside a step's send and
// receive kernel, replay.hpp) on the tensor-parallel group's communicator, as XLA's
// collective-permute runs (PartitionChoice::on_group_comm, Op::group): one kernel for a step's
// send and receive, and NCCL's p2p split over the group's ranks (p2p_split: a 6 MiB shard over 8
// ranks on 4 channels, so 4 SMs, copying at 4 channels' rate, network.p2p_channel_nvlink_Bps;
// PyTorch's two-rank communicators would give 16), which the decline rule's permute times
// (predict_p2p_step_s) use too.
//
// XLA's rule declines the loop where it would not pay:
//     decline when  max(Tcomp, m·Tcomm) + 2·m·Tcomm/n  ≥  Tcomp + Tcomm
// Tcomp: the GEMM's stand-alone time (cost model); Tcomm: the collective's contention-free time
// as the replay plans it (NCCL ring, channels, protocol: predict_collective_s); n: the group size.
// m, the topology multiplier, is our choice, computed rather than fixed: the time the loop's
// permutes take to move the same bytes (steps × one step of every member sending a shard to its
// ring neighbour at once — both neighbours when bidirectional — on the real routes, links shared
// by the flows crossing them: predict_p2p_step_s) over Tcomm. So m·Tcomm is the loop's own
// communication time; m ≈ 1 where a neighbour permute is as fast as a collective's ring step,
// m > 1 where the collective spreads over links (channels on several NICs) that one permute
// does not use, m < 1 where the collective pays per-call latencies the permutes do not.
// XLA's size threshold (on TPU 256 MiB of operand by default) is not applied: the rule decides.
//
// Without sequence parallelism the workload has no AllGather → GEMM or GEMM → ReduceScatter (the
// TP reductions are AllReduces): the strategy is then megatron's schedule and says so.
#include "sim/passes/passes.hpp"
#include "sim/strategies/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <tuple>

namespace overlapsim {

namespace {

struct Stats {
  int uni = 0, bi = 0, declined = 0, indivisible = 0;
  double m_min = std::numeric_limits<double>::infinity(), m_max = 0;
};

enum class Reason { Decomposed, Declined, Indivisible };

using Key = std::tuple<int, int, double, int64_t, int64_t, int64_t, int64_t, int, int>;

class WangDecomp final : public Strategy {
 public:
  std::string name() const override { return "wang-decomp"; }
  std::string description() const override {
    return "collective matmul (Wang et al.; XLA windowed einsum): AG→GEMM and GEMM→RS as ring loops, XLA's decline rule";
  }

  Schedule apply(Schedule s, const StrategyContext& ctx) const override {
    auto megatron = make_megatron();
    auto stats = std::make_shared<Stats>();
    auto cache = std::make_shared<std::map<Key, std::pair<PartitionChoice, Reason>>>();
    WorkloadPartitionOptions w;
    w.tag = "wang-decomp";
    w.choose = [stats, cache, &ctx](const Schedule& sc, const RankProgram& p, const Site& site) {
      const Op& c = p.ops[site.comm];
      const Op& g = p.ops[site.gemm];
      if (c.collective == CollectiveKind::AllReduce) return PartitionChoice{};  // not a collective matmul
      const Key key{c.group, static_cast<int>(c.collective), c.bytes, g.gemm_m, g.gemm_n, g.gemm_k,
                    g.gemm_batch, static_cast<int>(site.dim), static_cast<int>(site.kind)};
      auto it = cache->find(key);
      if (it == cache->end()) it = cache->emplace(key, decide(sc, p, site, ctx, *stats)).first;
      const auto& [ch, why] = it->second;
      if (why == Reason::Declined) ++stats->declined;
      else if (why == Reason::Indivisible) ++stats->indivisible;
      else if (ch.mode == PartitionMode::Ring) ++stats->uni;
      else ++stats->bi;
      return ch;
    };
    s = make_workload_partition(std::move(w))->run(std::move(s), ctx);
    const int done = stats->uni + stats->bi;
    const bool sp = ctx.parallelism != nullptr && ctx.parallelism->sp && ctx.parallelism->tp > 1;
    const bool no_sites = done == 0 && stats->declined == 0 && stats->indivisible == 0;
    if (no_sites && sp) {
      // SP's sites exist in the workload, so a pass before this one (a composition) cut them.
      ctx.note("wang-decomp: no AllGather→GEMM or GEMM→ReduceScatter left whole to decompose (sequence "
               "parallelism is on: a pass before it in the composition partitioned them); this is that "
               "schedule under megatron's placement");
    } else if (no_sites) {
      ctx.note("wang-decomp: no AllGather→GEMM or GEMM→ReduceScatter to decompose (tensor parallelism needs "
               "sequence parallelism for them); this is megatron's schedule");
    } else {
      ctx.note(fmt::format("wang-decomp: {} sites decomposed ({} bidirectional, {} unidirectional) on {} simulated "
                           "rank(s); XLA's rule declined {}{}; topology multiplier m {:.2f}–{:.2f}",
                           done, stats->bi, stats->uni, s.programs.size(), stats->declined,
                           stats->indivisible ? fmt::format(", {} not divisible by n", stats->indivisible) : "",
                           stats->m_min, stats->m_max));
    }
    return megatron->apply(std::move(s), ctx);
  }

 private:
  static std::pair<PartitionChoice, Reason> decide(const Schedule& s, const RankProgram& p, const Site& site, const StrategyContext& ctx,
                                Stats& st) {
    const Op& c = p.ops[site.comm];
    const Op& g = p.ops[site.gemm];
    const auto& grp = s.groups[c.group].ranks;
    const int n = static_cast<int>(grp.size());
    PartitionChoice ch;
    if (gemm_extent(g, site.dim) % n != 0) return {ch, Reason::Indivisible};
    const bool bidir = n % 4 == 0;
    std::vector<std::pair<int, int>> cw, both;
    for (int i = 0; i < n; ++i) {
      cw.emplace_back(grp[i], grp[(i + 1) % n]);
      both.emplace_back(grp[i], grp[(i + 1) % n]);
      both.emplace_back(grp[(i + 1) % n], grp[i]);
    }
    // The permutes run on the group's communicator, as XLA's collective-permute does.
    const P2pCommunicator comm = group_communicator(ctx.topology, grp);
    const double step1 = predict_p2p_step_s(ctx.topology, ctx, cw, c.bytes / n, false, comm);
    // Bidirectional: n/2 − 1 steps both ways, the last clockwise step alone.
    const double t_loop_comm =
        bidir ? (n / 2 - 1) * predict_p2p_step_s(ctx.topology, ctx, both, c.bytes / n, false, comm) + step1
              : (n - 1) * step1;
    const double t_comm = predict_collective_s(s, c, ctx);
    const double t_comp = std::max(g.duration_s, ctx.cost.launch_overhead_s());
    const double m = t_comm > 0 ? t_loop_comm / t_comm : 1.0;
    st.m_min = std::min(st.m_min, m);
    st.m_max = std::max(st.m_max, m);
    if (std::max(t_comp, m * t_comm) + 2 * m * t_comm / n >= t_comp + t_comm) return {ch, Reason::Declined};
    ch.mode = bidir ? PartitionMode::BidirectionalRing : PartitionMode::Ring;
    ch.comm_num_sm = -1;
    ch.on_group_comm = true;
    return {ch, Reason::Decomposed};
  }
};

}  // namespace

std::unique_ptr<Strategy> make_wang_decomp() { return std::make_unique<WangDecomp>(); }

}  // namespace overlapsim
