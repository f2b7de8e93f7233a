// `te-overlap`: Megatron-LM with TransformerEngine's comm-GEMM overlap (userbuffers), design §10.
//
// TransformerEngine (transformer_engine/pytorch/module/base.py, initialize_ub; Megatron-LM's TE
// setup) picks one method per GEMM of a transformer layer:
//   ring_exchange — qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad: the AllGather before the GEMM
//                   becomes n−1 point-to-point steps around the TP ring, each step's GEMM chunk
//                   (tokens/n) running on the shard in hand while the next arrives; the copies
//                   run on the copy engine (use_ce), so they take no SM (num_sm 0);
//   pipeline      — proj_fprop, fc2_fprop: the GEMM is cut into num_splits = 4 chunks along the
//                   tokens and each chunk's ReduceScatter runs (SM-based kernels, num_sm 16) while
//                   the next chunk computes; the GEMM runs on the SMs left (set_sm_margin);
//   bulk          — qkv_dgrad, fc1_dgrad: the AllGather of the LayerNorm output (for the wgrad)
//                   beside the dgrad GEMM; qkv_wgrad, fc1_wgrad: the ReduceScatter of the input
//                   gradient beside the wgrad GEMM; SM-based (num_sm 16), GEMM on the SMs left.
// The communication runs on TE's own streams (created at the highest priority). In the
// workload the sites are found by the names the builder gives them (models/transformer.cpp), the
// table below; the rest of the schedule (DP buckets, pipeline sends, logits, embedding) is
// megatron's.
//
// How the replay sees it: a communication op holding num_sm SMs slows the kernels beside it by
// that share of the GPU for as long as it runs (replay.hpp, SM interference) — that is how "the
// GEMM runs on the SMs left" is modelled, while the communication kernel runs (TE's margin also
// holds for the moment no chunk's collective is in flight, e.g. the first chunk; not modelled).
// Stream priority has no effect in the replay: communication ops are flows and SM holds, not
// kernels that queue for SMs.
//
// Sequence parallelism is required (TE's overlap replaces SP's AllGather/ReduceScatter); without
// it the strategy is megatron and says so in the result's notes.
#include "sim/passes/passes.hpp"
#include "sim/strategies/registry.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>

namespace overlapsim {

namespace {

enum class UbMethod { RingExchange, Pipeline, Bulk };

struct UbConfig {
  const char* te_name;  ///< TransformerEngine's userbuffers name
  const char* comm;     ///< the collective in the workload
  const char* gemm;     ///< the GEMM it feeds, drains or runs beside
  UbMethod method;
  int num_sm;           ///< SMs of the communication kernels (0: copy engine)
  int num_splits;       ///< pipeline: GEMM chunks (ring exchange: the TP size)
};

// TransformerEngine's defaults (initialize_ub): num_sm 16 and num_splits 4 for pipeline and
// bulk; ring exchange on the copy engine with num_splits = TP size.
const UbConfig kUb[] = {
    {"qkv_fprop", "ag.qkv", "qkv", UbMethod::RingExchange, 0, 0},
    {"fc1_fprop", "ag.fc1", "fc1", UbMethod::RingExchange, 0, 0},
    {"proj_dgrad", "ag.proj.bwd", "proj.dgrad", UbMethod::RingExchange, 0, 0},
    {"fc2_dgrad", "ag.fc2.bwd", "fc2.dgrad", UbMethod::RingExchange, 0, 0},
    {"proj_fprop", "rs.proj", "proj", UbMethod::Pipeline, 16, 4},
    {"fc2_fprop", "rs.fc2", "fc2", UbMethod::Pipeline, 16, 4},
    {"qkv_dgrad", "ag.qkv.wgrad", "qkv.dgrad", UbMethod::Bulk, 16, 0},
    {"qkv_wgrad", "rs.qkv.dgrad", "qkv.wgrad", UbMethod::Bulk, 16, 0},
    {"fc1_dgrad", "ag.fc1.wgrad", "fc1.dgrad", UbMethod::Bulk, 16, 0},
    {"fc1_wgrad", "rs.fc1.dgrad", "fc1.wgrad", UbMethod::Bulk, 16, 0},
};

const UbConfig* ub_for(const std::string& comm) {
  for (const auto& u : kUb)
    if (comm == u.comm) return &u;
  return nullptr;
}

constexpr const char* kCommStream = "te-comm (high priority)";

/// Whether the workload runs tensor parallelism with sequence parallelism.
bool has_sp(const Schedule& s, const StrategyContext& ctx) {
  if (ctx.parallelism != nullptr) return ctx.parallelism->sp && ctx.parallelism->tp > 1;
  for (const auto& p : s.programs)
    for (const auto& op : p.ops)
      if (op.type == OpType::Collective && op.purpose == CommPurpose::TensorParallel &&
          op.collective == CollectiveKind::AllGather)
        return true;
  return false;
}

/// Bulk overlap: the collective moves to TE's stream with its SM count; it already runs beside
/// the GEMM the workload issues next to it (the builder orders it so).
class TeBulk final : public Pass {
 public:
  explicit TeBulk(std::shared_ptr<int> count) : count_(std::move(count)) {}
  std::string name() const override { return "te-bulk"; }
  std::string description() const override { return "TransformerEngine's bulk overlaps"; }
  Schedule run(Schedule s, const PassContext&) const override {
    const int16_t stream = intern_stream(s, kCommStream);
    for (auto& p : s.programs)
      for (auto& op : p.ops) {
        if (op.type != OpType::Collective || op.purpose != CommPurpose::TensorParallel) continue;
        const UbConfig* u = ub_for(op.name);
        if (u == nullptr || u->method != UbMethod::Bulk) continue;
        op.stream = op.overlap_stream = stream;
        op.num_sm = static_cast<int16_t>(u->num_sm);
        ++*count_;
      }
    return s;
  }

 private:
  std::shared_ptr<int> count_;
};

class TeOverlap final : public Strategy {
 public:
  std::string name() const override { return "te-overlap"; }
  std::string description() const override {
    return "TransformerEngine comm-GEMM overlap: ring-exchange AG→GEMM, pipelined GEMM→RS, bulk dgrad/wgrad overlaps";
  }

  Schedule apply(Schedule s, const StrategyContext& ctx) const override {
    auto megatron = make_megatron();
    if (!has_sp(s, ctx)) {
      ctx.note("te-overlap: needs tensor parallelism (TP > 1) with sequence parallelism (TransformerEngine overlaps "
               "SP's AllGather/ReduceScatter); "
               "without it this is megatron's schedule");
      return megatron->apply(std::move(s), ctx);
    }
    auto counts = std::make_shared<std::map<std::string, int>>();
    WorkloadPartitionOptions w;
    w.comm_stream = kCommStream;
    w.send_stream = "te-send (copy engine)";
    w.recv_stream = "te-recv (copy engine)";
    w.tag = "te-overlap";
    w.choose = [counts](const Schedule& sc, const RankProgram& p, const Site& site) {
      PartitionChoice c;
      const UbConfig* u = ub_for(p.ops[site.comm].name);
      if (u == nullptr || p.ops[site.gemm].name != u->gemm) return c;
      const int n = static_cast<int>(sc.groups[p.ops[site.comm].group].ranks.size());
      if (u->method == UbMethod::RingExchange && site.kind == SiteKind::GatherGemm) {
        c.mode = PartitionMode::Ring;
        c.comm_num_sm = static_cast<int16_t>(u->num_sm);
        if (gemm_extent(p.ops[site.gemm], site.dim) % n != 0) {
          ++(*counts)["not divisible"];
          c.mode = PartitionMode::Keep;
        } else {
          ++(*counts)["ring_exchange"];
        }
      } else if (u->method == UbMethod::Pipeline && site.kind == SiteKind::GemmReduce) {
        c.mode = PartitionMode::Chunks;
        c.chunks = u->num_splits;
        c.comm_num_sm = static_cast<int16_t>(u->num_sm);
        ++(*counts)["pipeline"];
      }
      return c;
    };
    s = make_workload_partition(std::move(w))->run(std::move(s), ctx);
    auto bulk = std::make_shared<int>(0);
    s = TeBulk(bulk).run(std::move(s), ctx);
    std::string kept;
    if ((*counts)["ring_exchange"] + (*counts)["pipeline"] + (*counts)["not divisible"] + *bulk == 0)
      // SP is on (checked above), so the workload had TE's GEMMs and collectives whole: a pass
      // before this one (a composition) cut or renamed them.
      kept = "; no GEMM or collective of TransformerEngine's table left whole (a pass before it in the composition "
             "partitioned them): this is that schedule under megatron's placement";
    if ((*counts)["not divisible"])
      kept = fmt::format("; {} ring exchanges kept (tokens not divisible by the TP size)", (*counts)["not divisible"]);
    ctx.note(fmt::format("te-overlap: {} ring-exchange, {} pipelined and {} bulk overlaps on {} simulated rank(s){}",
                         (*counts)["ring_exchange"], (*counts)["pipeline"], *bulk, s.programs.size(), kept));
    return megatron->apply(std::move(s), ctx);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_te_overlap() { return std::make_unique<TeOverlap>(); }

}  // namespace overlapsim
