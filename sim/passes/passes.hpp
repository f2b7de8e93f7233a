// The built-in passes: the partition dimensions of design §5, one file each under sim/passes/,
// and the registry that names them for composition (`--strategy megatron+NAME[:ARG]+...`).
//
// Every pass decides per communication op from the op and its group only (never from the rank),
// so that all members of a collective transform it alike; sim/pass.hpp lists the invariants.
#pragma once

#include "sim/pass.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace overlapsim {

// ---- Dimension 1: primitive substitution (sim/passes/primitive_substitution.cpp) -------------------

enum class Substitution : uint8_t {
  Keep,
  ReduceScatterAllGather,  ///< AllReduce(S) ⇒ ReduceScatter(S) then AllGather(S) over the same group
  RingPermutes,            ///< AllGather ⇒ n−1 ring steps of send/recv of S/n; ReduceScatter ⇒ n−1
                           ///< steps each followed by a local add (a memory-bound kernel over 3·S/n
                           ///< bytes, 0 FLOPs); AllReduce ⇒ both (2(n−1) steps)
  Hierarchical,            ///< AllReduce(S) ⇒ ReduceScatter(S) inside each NVLink island,
                           ///< AllReduce(S/a) across islands (members of equal island index),
                           ///< AllGather(S) inside the island; a = members per island (all equal)
};
const char* to_string(Substitution s);

struct PrimitiveSubstitutionOptions {
  /// The substitution of one collective (from the op and its group only). Kinds a substitution
  /// does not apply to are kept.
  std::function<Substitution(const Schedule&, const Op&)> choose;
  /// SMs of the send/recv kernels of ring permutes: −1 NCCL's (one), 0 copy engine.
  int16_t p2p_num_sm = -1;
  /// Stream of the sends of ring permutes (the receives and adds stay on the collective's
  /// stream, so a blocking collective still blocks the computation after it).
  std::string send_stream = "p2p-send";
};
std::unique_ptr<Pass> make_primitive_substitution(PrimitiveSubstitutionOptions opt);
/// Contention-free time of collective `op` as substitution `sub` runs it, its pieces one after
/// the other: sub-collectives by predict_collective_s, ring permutes by predict_p2p_step_s per
/// step plus the local adds (cost model, at least the launch overhead). A substitution that does
/// not apply (kind, islands) is predicted as the collective itself. For searches (Centauri).
double predict_substitution_s(const Schedule& s, const Op& op, Substitution sub, const PassContext& ctx);

// ---- Dimension 2: topology-aware group partitioning (sim/passes/group_partition.cpp) --------------

enum class TopologyLevel : uint8_t {
  NvLinkIsland,  ///< GPUs joined by routes over NVLink/NVSwitch links only
  Node,          ///< GPUs of one node (template topologies; the explicit form is one node)
  Rail,          ///< GPUs of one rail: the same local index (and NIC) in every node (template
                 ///< topologies; rail-optimised fabrics join a rail's NICs at one leaf). Its
                 ///< sub-collectives run across nodes on the full buffer and inside a node on
                 ///< 1/a of it — the mirror image of the node split
};
const char* to_string(TopologyLevel l);

/// The members of `ranks` split by `level`: islands in order of first appearance, each in ring order.
std::vector<std::vector<int>> split_by_level(const Topology& topo, const std::vector<int>& ranks, TopologyLevel level);

/// Whether `islands` can be split into sub-collectives: two or more islands, of two or more
/// members each, all of one size.
bool even_islands(const std::vector<std::vector<int>>& islands);

/// The two groups a member of a group cut into `islands` joins: its own island (`inside`) and the
/// members at its position in every island (`across`), interned in `s`; `per_island` members
/// each. False (nothing interned) when there are fewer than two islands, islands of fewer than
/// two members, or islands of unequal size.
struct IslandGroups {
  int inside = -1, across = -1, per_island = 0;
};
bool island_groups(Schedule& s, const std::vector<std::vector<int>>& islands, int rank, CommPurpose purpose,
                   IslandGroups& out);

struct GroupPartitionOptions {
  TopologyLevel level = TopologyLevel::Node;
  /// Which collectives to split (from the op and its group only); default: all.
  std::function<bool(const Schedule&, const Op&)> select;
};
/// A collective over a group spanning b ≥ 2 islands of a ≥ 2 members each becomes sub-collectives
/// over the islands and across them: AllGather(S) ⇒ AllGather(S/a) across islands then
/// AllGather(S) inside; ReduceScatter(S) ⇒ inside (S) then across (S/a); AllReduce(S) ⇒ the
/// hierarchical RS/AR/AG. Bytes received per rank are unchanged (they sum to the ring's).
std::unique_ptr<Pass> make_group_partition(GroupPartitionOptions opt);
/// Contention-free time of collective `op` split at `level` (its sub-collectives one after the
/// other); the collective itself where the split does not apply.
double predict_group_partition_s(const Schedule& s, const Op& op, TopologyLevel level, const PassContext& ctx);

// ---- Dimension 3: workload partitioning (sim/passes/workload_partition.cpp) ----------------------------

enum class PartitionMode : uint8_t {
  Keep,
  Chunks,             ///< k chunks: collective chunk i ↔ GEMM chunk i along the tokens
  Ring,               ///< collective matmul (k = n): ring loop of n−1 send/recv steps, one GEMM chunk per step
  BidirectionalRing,  ///< the same, half the steps in each direction (n divisible by 4)
};
const char* to_string(PartitionMode m);

struct PartitionChoice {
  PartitionMode mode = PartitionMode::Keep;
  int chunks = 1;            ///< Chunks: k
  int16_t comm_num_sm = -1;  ///< SMs of the communication kernels (−1 NCCL's, 0 copy engine)
  int16_t channels = 0;      ///< Chunks: NCCL channels of the collective chunks (0: NCCL's choice)
  /// Ring: the sends and receives run on the collective's group communicator (Op::group; XLA's
  /// collective-permute), else on two-rank communicators (PyTorch's send/recv).
  bool on_group_comm = false;
};

struct WorkloadPartitionOptions {
  /// The choice for one site (from the site's ops and group only: every member sees the same).
  std::function<PartitionChoice(const Schedule&, const RankProgram&, const Site&)> choose;
  CommPurpose purpose = CommPurpose::TensorParallel;
  std::string comm_stream = "overlap-comm";   ///< Chunks: the collective chunks
  std::string send_stream = "ring-send";      ///< Ring: sends (clockwise)
  std::string recv_stream = "ring-recv";      ///< Ring: receives and adds (clockwise)
  std::string send_stream_ccw = "ring-send-ccw";
  std::string recv_stream_ccw = "ring-recv-ccw";
  std::string tag = "workload-partition";     ///< names derived match ids
};

/// Chunks (k ≤ extent of the token dimension): GatherGemm — AllGather chunk i (S·e_i/E bytes)
/// then GEMM chunk i (e_i tokens) waiting for it, collective chunks on `comm_stream`; GemmReduce —
/// GEMM chunk i then its reduction chunk. Ring (the GEMM's token extent divisible by n): GatherGemm
/// — each rank multiplies the shard in hand (its own first) while the next arrives from its ring
/// predecessor and forwards it (Wang et al.; XLA's windowed einsum; a chunk along K accumulates);
/// GemmReduce — each step computes the partial for one destination, adds the accumulator received
/// from the predecessor (local add, 3·S/n bytes) and sends it on; the last step's add yields the
/// rank's reduced shard. BidirectionalRing: n/2 steps clockwise and n/2−1 counter-clockwise, full
/// shards each way (XLA's bidirectional windowed einsum); n/2−1 + n/2 = n−1 shards, as the ring.
/// Consumers of the collective wait for all its pieces, consumers of the GEMM for all its chunks.
std::unique_ptr<Pass> make_workload_partition(WorkloadPartitionOptions opt);

/// Predicted time of a site as `choice` partitions it, contention-free: the collective (or the
/// ring's steps, predict_p2p_step_s) and the GEMM chunks (cost model) pipelined —
/// Chunks: c₁ + g₁ + (k−1)·max(c, g); Ring: g + (steps)·max(g_step, c_step) with one GEMM per step
/// (two per bidirectional step), the adds of a reduction counted with the GEMM, every GEMM chunk
/// but the last beside a step's send and receive kernels holding their p2p channels' SMs
/// (replay.hpp: min(g / (1 − σ), g + σ · c_step), σ = interference · SMs / SM count; none for a
/// copy-engine choice or without ctx.sm_count). Keep: c + g.
/// For searches (Centauri) and XLA's decline rule.
struct SitePrediction {
  double time_s = 0;          ///< from the collective's (or first piece's) start to the site's end
  double exposed_comm_s = 0;  ///< time_s − GEMM time
};
SitePrediction predict_site(const Schedule& s, const RankProgram& p, const Site& site, const PartitionChoice& choice,
                            const PassContext& ctx);

// ---- Layer tier: list scheduling inside each layer's pass (sim/passes/layer_schedule.cpp) -----------

struct LayerScheduleStats {
  long long collectives_moved = 0;  ///< collectives taken off the compute stream
  long long kernels_moved = 0;      ///< kernels now issued after an op that used to follow them (deferred)
};
struct LayerScheduleOptions {
  /// Collectives of these purposes that block the compute stream move to `comm_stream`.
  std::vector<CommPurpose> purposes{CommPurpose::TensorParallel};
  /// (its own stream: on the one of the asynchronous TP reductions they would queue behind them)
  std::string comm_stream = "tp-comm (layer tier)";
  /// Where the pass counts what it did (summed over programs); may be null.
  std::shared_ptr<LayerScheduleStats> stats;
};
/// The layer-tier scheduler (Centauri §5.2): collectives off the compute stream, then each
/// segment (one micro-batch's forward, or backward with recomputation, of one layer) is
/// list-scheduled with predicted durations, the ready kernel on the longest path to the
/// segment's end first; the ops are written back in start order. Works on `overlap_stream`
/// (the placement the scheduler after it applies). Keeps FLOPs, bytes and acyclicity; keeps
/// the order of communication ops on every stream.
std::unique_ptr<Pass> make_layer_schedule(LayerScheduleOptions opt = {});

// ---- Worked example of docs/extending.md (sim/passes/optimizer_gather_overlap.cpp) ----------------

/// ZeRO's parameter AllGather after the optimizer step, overlapped with it: the step (memory-bound)
/// and the AllGather are cut into k chunks; AllGather chunk i runs while update chunk i+1 does.
std::unique_ptr<Pass> make_optimizer_gather_overlap(int chunks);

// ---- Registry (sim/passes/registry.cpp) -------------------------------------------------------------------

/// The pass a spec names: "NAME" or "NAME:ARG" (each pass documents its ARG). Throws InputError
/// listing the known names for an unknown one, or explaining a bad ARG.
std::unique_ptr<Pass> make_pass(const std::string& spec);
/// Registered pass names with a one-line usage each, e.g. "workload-partition[:K]".
std::vector<std::string> pass_usages();
/// Throws InputError naming `composition` and the pass when its passes (`specs`, in order, each
/// as make_pass takes it) name a pass twice where the second application is meaningless:
/// workload-partition, optimizer-gather-overlap and layer-schedule (and any pass registered
/// without a rule) at most once, since a second would cut the first's chunks again or reschedule
/// its schedule; primitive-substitution and group-partition again only with another argument
/// (defaults filled in: `group-partition` is `group-partition:node`), since the same one finds
/// nothing left to rewrite.
void check_pass_repeats(const std::string& composition, const std::vector<std::string>& specs);

}  // namespace overlapsim
