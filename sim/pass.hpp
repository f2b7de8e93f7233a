// The pass API: a partition dimension (design §5) is one pass over the Schedule.
//
// A Pass takes the workload Schedule (sim/schedule.hpp: per simulated rank, ops with their data
// dependencies, every op still on the stream the workload builder left it on, each carrying the
// stream it may overlap on in `overlap_stream`) and a PassContext (topology, cost model, model and
// parallel layout), and returns the transformed Schedule. A strategy (sim/strategy.hpp) is a named
// composition: passes in order, then a scheduler that puts every op on its stream
// (`assign_overlap_streams`, Megatron-LM's placement). `make_composed_strategy` builds one; on the
// command line `--strategy megatron+primitive-substitution:rs-ag+workload-partition:4` composes
// registered passes (sim/passes/registry.cpp) on top of a base strategy.
//
// What a pass must keep (design §5; `check_pass_invariants` tests all of it):
//  - FLOPs: a GEMM split into chunks keeps their sum (chunk FLOPs are 2·m·n·k·batch of integer
//    shapes, so the sum is exact); added work (the local adds of a ring ReduceScatter) is
//    memory-bound and carries 0 FLOPs, as every memory-bound kernel of the workload does;
//  - the bytes each rank receives, per purpose (`received_bytes`): a collective receives what
//    NCCL's ring moves into a member (AllReduce 2(n−1)/n·S, AllGather and ReduceScatter (n−1)/n·S),
//    a Recv its bytes;
//  - the per-rank graph acyclic (validate()), and every dependency pointing to an earlier op, so
//    that any assignment of ops to in-order streams stays acyclic;
//  - match ids consistent across ranks. Every member of a collective applies the same
//    transformation to it (a pass decides from the op and its group, never from the rank), and a
//    piece's id is derived from the parent's id, a tag naming the pass and the piece
//    (`derive_collective_match`, `derive_p2p_match`): no counter that depends on the rank.
//
// Writing a pass: copy one of sim/passes/*.cpp; docs/extending.md walks through a whole example.
// The ProgramRewriter below does the bookkeeping of replacing ops by pieces.
#pragma once

#include "models/cost_model.hpp"
#include "models/model_config.hpp"
#include "sim/collective_plan.hpp"
#include "sim/schedule.hpp"
#include "sim/strategy.hpp"
#include "sim/topology.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim {

/// What a pass sees besides the Schedule: topology, cost model, model and layout (may be null
/// for hand-built schedules), and a sink for notes. The same struct a strategy receives.
using PassContext = StrategyContext;

class Pass {
 public:
  virtual ~Pass() = default;
  /// Name as registered, e.g. "workload-partition".
  virtual std::string name() const = 0;
  /// One line: what the pass does with its current options.
  virtual std::string description() const = 0;
  /// The transformed schedule. Must keep the invariants above.
  virtual Schedule run(Schedule s, const PassContext& ctx) const = 0;
};

// ---- Rewriting a program -------------------------------------------------------------------

/// Builds a rank's new program from its old one. Walk the old ops in order and, for each, either
/// keep() it or emit() its pieces. A piece's dependencies are given as new indices (pieces already
/// emitted) and/or old indices (resolved at finish() to the *terminals* of that old op: by default
/// the last piece emitted for it, or the op itself when kept; set_terminals() overrides, e.g. to
/// make a consumer wait for every chunk). Dependencies of kept ops are translated the same way.
class ProgramRewriter {
 public:
  explicit ProgramRewriter(const RankProgram& old);

  /// Copies old op `old_index` (its deps are translated at finish()).
  int keep(int old_index);
  /// Emits a piece standing (in part) for old op `of`; returns its new index.
  int emit(Op op, int of, const std::vector<int>& deps_new, const std::vector<int>& deps_old = {});
  /// The new ops a dependency on old op `old_index` waits for.
  void set_terminals(int old_index, std::vector<int> new_indices);
  /// New index of the last piece emitted for (or the copy of) an old op; -1 if none yet.
  int last_of(int old_index) const { return last_[old_index]; }
  /// The new op at `new_index` (valid until the next keep/emit).
  Op& at(int new_index) { return ops_[new_index]; }
  int size() const { return static_cast<int>(ops_.size()); }
  /// Resolves dependencies and returns the new program (same rank and stream count).
  RankProgram finish();

 private:
  const RankProgram& old_;
  std::vector<Op> ops_;
  std::vector<std::vector<int>> old_deps_;  // per new op: old indices still to resolve
  std::vector<int> last_;                   // per old op
  std::vector<std::vector<int>> terminals_; // per old op, when overridden
};

/// Thrown by OpBudget: a pass would grow the schedule past the context's max_ops. what(): why,
/// without the strategy's name (the caller adds it: sim/simulate.cpp).
class OpBudgetExceeded : public std::runtime_error {
 public:
  /// `growth`: what the pass would have made ("its pass 'x' would turn the iteration into about N
  /// ops ..."); `limit`: the limit it stopped at; `projected_ops`: N. what() says both.
  OpBudgetExceeded(const std::string& growth, long long limit, long long projected_ops)
      : std::runtime_error(growth + "; the limit is " + std::to_string(limit) + " (--max-ops)"),
        growth_(growth),
        projected_ops_(projected_ops) {}
  /// What the pass would have made, without the limit.
  const std::string& growth() const { return growth_; }
  /// The ops the pass projected the schedule to hold when it stopped.
  long long projected_ops() const { return projected_ops_; }

 private:
  std::string growth_;
  long long projected_ops_;
};

/// The memory guard of a pass that rewrites the programs of a schedule one after the other: after
/// each program, the ops the new schedule will hold are projected (those built, plus the programs
/// not yet rewritten grown by the ratio seen so far) and the pass stops, before it builds the rest,
/// when that exceeds ctx.max_ops (0: never). A 1024-rank schedule cut by wang-decomp into 36 M ops
/// was built in full (6 GB, 27 s) before the count after the strategy refused it.
class OpBudget {
 public:
  /// `s`: the schedule the pass reads; `pass`: its name, for the message.
  OpBudget(const Schedule& s, const PassContext& ctx, std::string pass);
  /// After a program of `old_ops` ops was rewritten into `new_ops`. Throws OpBudgetExceeded.
  void rewritten(size_t old_ops, size_t new_ops);

 private:
  long long limit_, old_total_ = 0, old_seen_ = 0, new_seen_ = 0;
  int programs_ = 0, seen_ = 0;
  std::string pass_;
};

// ---- Ids, streams ---------------------------------------------------------------------------

/// Match id of piece `piece` of collective `parent` as pass `tag` splits it, running over group
/// `group` (the group is part of the id so that sub-collectives of different subgroups never
/// share one). Every member derives the same id. In [2^62, 2^63): apart from the workload's ids.
int64_t derive_collective_match(int64_t parent, std::string_view tag, int64_t piece, int group);
/// Match id of the point-to-point message of step `step` from global rank `src` to `dst` that
/// pass `tag` derives from `parent`. Both sides derive the same id. In (−2^63, −2^62].
int64_t derive_p2p_match(int64_t parent, std::string_view tag, int64_t step, int src, int dst);

/// Index of the stream named `name`, adding it (and raising every program's num_streams) if new.
int16_t intern_stream(Schedule& s, const std::string& name);

/// The scheduler of Megatron-LM's placement: every op goes on its `overlap_stream`.
void assign_overlap_streams(Schedule& s);

// ---- Invariants ------------------------------------------------------------------------------

/// Bytes a member receives from one communication op: ring payloads for collectives (AllReduce
/// 2(n−1)/n·S; AllGather, ReduceScatter, AllToAll (n−1)/n·S; Broadcast and Reduce (n−1)/n·S, the
/// average over members), `bytes` for a Recv, 0 for a Send or a kernel.
double received_bytes(const Schedule& s, const Op& op);
/// Bytes rank programs[program_index] receives over the iteration, per purpose.
std::map<CommPurpose, double> received_bytes_by_purpose(const Schedule& s, int program_index);

struct InvariantOptions {
  double rel_tolerance = 1e-9;
  /// Allowed change of the received bytes per purpose (e.g. a pass that documents a reduction).
  bool bytes_may_decrease = false;
};
/// Checks that `after` keeps what design §5 asks of `before`: validate(); the same simulated
/// ranks; total FLOPs per rank; received bytes per rank and purpose; every dependency pointing
/// backwards; collective match ids unique per rank and, across ranks, used with one group, kind
/// and size; point-to-point ids unique per rank and direction. Returns an empty string when all
/// hold, else the first violation in one line.
std::string check_pass_invariants(const Schedule& before, const Schedule& after, const InvariantOptions& opt = {});

// ---- GEMMs -----------------------------------------------------------------------------------

/// A dimension of a GEMM C[m×n] = A[m×k]·B[k×n].
enum class GemmDim : uint8_t { None, M, N, K };
const char* to_string(GemmDim d);

/// Tokens of one micro-batch (micro_batch · seq_len) when the context knows the model, else 0.
int64_t tokens_per_micro_batch(const PassContext& ctx);
/// The dimension of a GEMM op that runs over the micro-batch's tokens: the one equal to
/// tokens_per_micro_batch (M preferred; when M and K both match, K for a weight-gradient GEMM,
/// whose name ends in "wgrad" in the workload builder). `output_side`: only M or N qualify (the
/// tokens of the output, for a GEMM whose output is reduced). Without a model in the context: M.
GemmDim token_dim(const Op& gemm, const PassContext& ctx, bool output_side = false);
/// Extent of `dim` in a GEMM op.
int64_t gemm_extent(const Op& gemm, GemmDim dim);

/// The dtype of the workload: the model's, or (hand-built schedules) the one whose GEMM time
/// reproduces this op's duration, else fp16.
DType gemm_dtype(const Op& gemm, const PassContext& ctx);
/// A copy of GEMM op `gemm` restricted to `extent` of dimension `dim`: shape, FLOPs
/// (2·m·n·k·batch) and stand-alone time from the cost model (a small chunk is less efficient,
/// and every chunk pays the kernel's fixed cost). Name, deps and streams copied; the caller sets them.
Op gemm_chunk(const Op& gemm, GemmDim dim, int64_t extent, const PassContext& ctx);
/// Splits `total` into `k` near-equal positive parts (the first total % k get one more).
std::vector<int64_t> split_extent(int64_t total, int k);

/// A memory-bound kernel (0 FLOPs) moving `bytes` through HBM, timed by the cost model.
Op memory_kernel(const std::string& name, double bytes, const PassContext& ctx);

// ---- Predictions (for decisions and searches) --------------------------------------------------

/// Contention-free time of a collective op over its group as the replay would plan it
/// (sim/collective_plan.hpp's closed form: NCCL ring, channels, protocol). +infinity where the
/// job's NCCL_ALGO list leaves it nothing that can run (NCCL 2.24 and later fail such a call;
/// the run is refused if a schedule keeps one), so that a search never chooses such a lowering.
double predict_collective_s(const Schedule& s, const Op& op, const PassContext& ctx);
/// The same for a collective described by its members (ring order), kind, buffer size,
/// reduction and element type (an averaging ReduceScatter never runs as PAT; NVLS reduces only
/// some types, nvls_reduces; NCCL's tuner relegates an fp8 ring over more than 8 ranks).
double predict_collective_s(const std::vector<int>& ranks, CollectiveKind kind, double bytes, const PassContext& ctx,
                            int channels = 0, CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto,
                            ReduceOp reduce_op = ReduceOp::Sum, DataType datatype = DataType::Float32);
/// SMs the replay's communication kernel of collective `op` holds while it runs: the op's
/// num_sm where it sets one, else the channels NCCL launches for its size (the plan's
/// sm_blocks, collective_plan.hpp); 0 for an AllToAll (point to point: its own per-size count,
/// not predicted here) or a group of one.
int predict_collective_sms(const Schedule& s, const Op& op, const PassContext& ctx);
/// Both of the above from one plan of the collective (a search that needs both plans it once).
struct CollectivePrediction {
  double time_s = 0;  ///< predict_collective_s, seconds
  int sms = 0;        ///< predict_collective_sms
};
CollectivePrediction predict_collective(const Schedule& s, const Op& op, const PassContext& ctx);
/// Time of one step in which every (src, dst) pair sends `bytes` at once: each flow takes its
/// route's latency plus bytes over the least bandwidth left to it on its links, a link's bandwidth
/// (after the profile's efficiency) being shared by the step's flows crossing it in the same
/// direction, and no faster than NCCL's p2p channels for the message copy it over NVLink
/// (p2p_rate_cap_Bps on communicator `comm`, by default a two-rank one as the replay's; the
/// profile's network.p2p_channel_nvlink_Bps);
/// the step ends with its slowest flow. Each message also pays NCCL's per-message
/// latency (or, `copy_engine`, the launch overhead): sim/collective_plan.hpp p2p_extra_latency_s.
double predict_p2p_step_s(const Topology& topo, const PassContext& ctx, const std::vector<std::pair<int, int>>& flows,
                          double bytes, bool copy_engine = false, const P2pCommunicator& comm = P2pCommunicator{});

// ---- Sites: a communication op and the GEMM it feeds or drains -------------------------------------

enum class SiteKind : uint8_t {
  GatherGemm,   ///< AllGather → GEMM (the gathered tensor is an operand; split along its tokens)
  GemmReduce,   ///< GEMM → ReduceScatter or AllReduce (the GEMM's output is reduced)
};

struct Site {
  SiteKind kind = SiteKind::GatherGemm;
  int comm = -1;              ///< index of the collective in the rank's program
  int gemm = -1;              ///< index of the GEMM
  GemmDim dim = GemmDim::M;   ///< the GEMM's token dimension
};

/// The sites of a program: every tensor-parallel AllGather whose first GEMM consumer has a token
/// dimension (GatherGemm), and every tensor-parallel ReduceScatter/AllReduce whose one dependency
/// is a GEMM with tokens on its output side (GemmReduce). A GEMM belongs to one site at most
/// (the first found). Sorted by collective index. Identical in every member of a group.
std::vector<Site> find_sites(const Schedule& s, const RankProgram& p, const PassContext& ctx,
                             CommPurpose purpose = CommPurpose::TensorParallel);

// ---- Composition --------------------------------------------------------------------------------

/// A strategy that runs `passes` in order on the workload, then `scheduler` (another strategy,
/// e.g. megatron, whose apply() places ops on streams).
std::unique_ptr<Strategy> make_composed_strategy(std::string name, std::string description,
                                                 std::vector<std::unique_ptr<Pass>> passes,
                                                 std::unique_ptr<Strategy> scheduler);

}  // namespace overlapsim
