// `optimizer-gather-overlap[:K]` — the worked example of docs/extending.md.
//
// With ZeRO ≥ 1 each data-parallel rank updates its shard of the parameters (the optimizer step,
// a memory-bound kernel) and then all-gathers the updated parameters (`dp.param_gather`), which
// nothing overlaps: it is exposed at the end of every iteration. This pass cuts both into K
// chunks along the parameters: update chunk i, then AllGather chunk i on the DP stream, so that
// AllGather chunk i runs while update chunk i+1 does. Each update chunk moves 1/K of the bytes
// and pays the kernel's fixed cost; each AllGather chunk gathers S/K bytes. FLOPs and the bytes
// each rank receives are unchanged.
#include "sim/passes/passes.hpp"

namespace overlapsim {

namespace {

class OptimizerGatherOverlap final : public Pass {
 public:
  explicit OptimizerGatherOverlap(int chunks) : k_(chunks) {}
  std::string name() const override { return "optimizer-gather-overlap"; }
  std::string description() const override {
    return "cut the optimizer step and ZeRO's parameter AllGather into " + std::to_string(k_) +
           " chunks that overlap";
  }

  Schedule run(Schedule s, const PassContext& ctx) const override {
    const int16_t dp_stream = intern_stream(s, "dp-comm");
    std::vector<RankProgram> out;
    OpBudget budget(s, ctx, name());
    for (const RankProgram& p : s.programs) {
      // Sites: an optimizer step, and the AllGather that waits for it and nothing else.
      std::vector<int> gather_of(p.ops.size(), -1);
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        const Op& op = p.ops[i];
        if (op.type == OpType::Collective && op.collective == CollectiveKind::AllGather && op.deps.size() == 1 &&
            p.ops[op.deps[0]].type == OpType::Compute && p.ops[op.deps[0]].compute == ComputeKind::Optimizer)
          gather_of[op.deps[0]] = i;
      }
      ProgramRewriter rw(p);
      std::vector<int> updates;  // new indices of the current site's update chunks
      for (int i = 0; i < static_cast<int>(p.ops.size()); ++i) {
        const Op& op = p.ops[i];
        if (gather_of[i] >= 0) {  // the optimizer step: K update chunks
          const double fixed = ctx.cost.profile().kernel_fixed_overhead_s;
          const std::vector<int> deps(op.deps.begin(), op.deps.end());
          updates.clear();
          for (int c = 0; c < k_; ++c) {
            Op u = op;
            u.name = op.name + "/" + std::to_string(c);
            u.duration_s = fixed + (op.duration_s - fixed) / k_;
            u.flops = c + 1 < k_ ? op.flops / k_ : op.flops - (k_ - 1) * (op.flops / k_);
            updates.push_back(rw.emit(u, i, {}, deps));
          }
          rw.set_terminals(i, updates);
        } else if (op.type == OpType::Collective && !updates.empty() && op.deps.size() == 1 &&
                   gather_of[op.deps[0]] == i) {  // its AllGather: K chunks, chunk c after update c
          std::vector<int> pieces;
          for (int c = 0; c < k_; ++c) {
            Op g = op;
            g.name = op.name + "/" + std::to_string(c);
            g.bytes = op.bytes / k_;
            g.match = derive_collective_match(op.match, name(), c, op.group);
            g.stream = g.overlap_stream = dp_stream;
            pieces.push_back(rw.emit(g, i, {updates[c]}));
          }
          rw.set_terminals(i, pieces);
          updates.clear();
        } else {
          rw.keep(i);
        }
      }
      out.push_back(rw.finish());
      budget.rewritten(p.ops.size(), out.back().ops.size());
    }
    s.programs = std::move(out);
    return s;
  }

 private:
  int k_;
};

}  // namespace

std::unique_ptr<Pass> make_optimizer_gather_overlap(int chunks) {
  return std::make_unique<OptimizerGatherOverlap>(chunks);
}

}  // namespace overlapsim
