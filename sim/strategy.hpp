// Strategies: how a workload's communication is partitioned and scheduled (design §5).
//
// A strategy takes the Schedule the workload builder emitted (every op on the compute stream,
// data dependencies only, each op carrying the stream Megatron-LM would overlap it on) and
// returns the Schedule to replay: it may move ops to other streams, add ordering dependencies,
// and (for partitioning strategies) replace ops by their pieces. It must keep the invariants of
// design §5: FLOPs unchanged unless it documents added work, bytes each rank receives unchanged
// or reduced for a stated reason, the per-rank graph acyclic.
//
// Adding a strategy: write sim/strategies/<name>.cpp defining a class that derives from
// Strategy, and add one line to the table in sim/strategies/registry.cpp.
#pragma once

#include "models/cost_model.hpp"
#include "models/model_config.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <memory>
#include <string>
#include <vector>

namespace overlapsim {

struct CollectiveOptions;  // sim/collective_plan.hpp

/// One alternative a searching strategy considered for a communication op (`--explain`).
struct PlanAlternative {
  std::string plan;          ///< e.g. "chunks:4 · rs-ag", "ring (bidirectional)", "keep"
  double time_s = 0;         ///< predicted contention-free time of the op with the computation it
                             ///< overlaps (a site: collective + GEMM; otherwise the collective), seconds
  double exposed_s = 0;      ///< the part of time_s no computation hides, seconds (−1: not predicted,
                             ///< the op overlaps work outside its site)
};
/// What a searching strategy chose for one communication op, deduplicated over the layers,
/// micro-batches and simulated ranks that share it (same name, kind, group shape, size).
struct OpPlan {
  std::string op;            ///< the workload's name, e.g. "ag.fc1"
  std::string kind;          ///< e.g. "AllGather"
  std::string purpose;       ///< "tp", "dp", ...
  int group_size = 0;
  double bytes = 0;          ///< NCCL buffer size per rank, bytes
  std::string gemm;          ///< the GEMM the op feeds or drains ("" when none)
  long long instances = 0;   ///< how many ops (over simulated ranks) the choice applies to
  int chosen = 0;            ///< index into alternatives
  std::vector<PlanAlternative> alternatives;
};

struct StrategyContext {
  const Topology& topology;
  const CostModel& cost;
  /// The model and layout the workload was built from; null when a schedule is built by hand
  /// (passes then fall back as sim/pass.hpp documents).
  const ModelConfig* model = nullptr;
  const Parallelism* parallelism = nullptr;
  /// Where a strategy says what it did not do and why (e.g. a fallback); may be null.
  std::vector<std::string>* notes = nullptr;
  /// Where a searching strategy lists its choice per communication op; may be null.
  std::vector<OpPlan>* plan = nullptr;
  /// SMs per GPU and the replay's SM-interference coefficient (sim/replay.hpp), so that a
  /// strategy's predictions slow the kernels beside a communication kernel as the replay does;
  /// 0 SMs: no interference predicted.
  int sm_count = 0;
  double sm_interference = 1.0;
  /// Most ops the transformed schedule may hold over all simulated ranks (`--max-ops`, a memory
  /// guard); 0: no limit. Passes that rewrite programs stop early through OpBudget (sim/pass.hpp).
  long long max_ops = 0;
  /// The replay's collective options (the profile's measured costs and rules, the scenario's
  /// NCCL environment), which the strategies' predictions use too; null: the profile's alone.
  const CollectiveOptions* collectives = nullptr;
  void note(const std::string& line) const {
    if (notes != nullptr) notes->push_back(line);
  }
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// Name as used in scenarios and on the command line, e.g. "megatron".
  virtual std::string name() const = 0;
  /// One line for `overlapsim run --help` and the README.
  virtual std::string description() const = 0;
  /// Transforms the workload into the schedule to replay.
  virtual Schedule apply(Schedule workload, const StrategyContext& ctx) const = 0;
  /// Whether it keeps the streams ops are placed on (Op::overlap_stream, a pass's placement);
  /// false: it runs every op on one stream in program order (serial), so a composition's passes
  /// change only its ops and their order (said in the notes, sim/pass.cpp).
  virtual bool keeps_stream_placement() const { return true; }
};

/// The strategy of that name. Throws InputError listing the known names when unknown.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
/// Names of all registered strategies, in the order they are compared.
std::vector<std::string> strategy_names();
/// Whether two names (as make_strategy takes them) are one strategy: the same description, so
/// that megatron+workload-partition:4 and megatron+workload-partition:04 are. Throws what
/// make_strategy throws.
bool same_strategy(const std::string& a, const std::string& b);

}  // namespace overlapsim
