// `megatron`: Megatron-LM's defaults (Narayanan et al. SC'21; Megatron-core's DDP):
//  - TP collectives of the forward pass, and those entering a row-parallel GEMM's backward,
//    block the compute stream;
//  - the input-gradient reduction of a column-parallel GEMM (and, with SP, the AllGather of its
//    input for the wgrad) run asynchronously beside the wgrad GEMM (async TP all-reduce);
//  - DP gradient reduction in buckets on its own stream, overlapped with the rest of backward
//    (--overlap-grad-reduce);
//  - pipeline sends on their own stream (the compute stream waits only on receives), 1F1B.
// Everything the builder marked with an overlap stream goes there; the rest stays on stream 0.
#include "sim/strategies/registry.hpp"

namespace overlapsim {

namespace {
class Megatron final : public Strategy {
 public:
  std::string name() const override { return "megatron"; }
  std::string description() const override {
    return "Megatron-LM: blocking TP collectives, async dgrad reduction, bucketed DP overlap, 1F1B";
  }
  Schedule apply(Schedule s, const StrategyContext&) const override {
    for (auto& p : s.programs)
      for (auto& op : p.ops) op.stream = op.overlap_stream;
    return s;
  }
};
}  // namespace

std::unique_ptr<Strategy> make_megatron() { return std::make_unique<Megatron>(); }

}  // namespace overlapsim
