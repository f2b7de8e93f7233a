// `serial`: no overlap at all. Every op — kernels, TP/DP collectives, pipeline sends and
// receives — runs on the one compute stream in program order, so every collective blocks
// computation. This is the lower bound every overlapping strategy is measured against.
#include "sim/strategies/registry.hpp"

namespace overlapsim {

namespace {
class Serial final : public Strategy {
 public:
  std::string name() const override { return "serial"; }
  std::string description() const override { return "no overlap: every collective and transfer blocks computation"; }
  bool keeps_stream_placement() const override { return false; }
  Schedule apply(Schedule s, const StrategyContext&) const override {
    for (auto& p : s.programs)
      for (auto& op : p.ops) op.stream = 0;
    return s;
  }
};
}  // namespace

std::unique_ptr<Strategy> make_serial() { return std::make_unique<Serial>(); }

}  // namespace overlapsim
