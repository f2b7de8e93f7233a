// The Schedule IR: what each simulated GPU runs in one training iteration.
//
// A Schedule holds one RankProgram per *simulated* rank. Each program is a list of ops (compute
// kernels, collectives, point-to-point sends and receives); each op runs on one stream of its
// rank, and a stream runs its ops one after the other in list order, like a CUDA stream. An op
// also waits for the ops listed in `deps` (same rank). Ops on different streams run
// concurrently and share the GPU (design §4).
//
// Across ranks: the ops of one collective carry the same `match` id on every member of its
// group; a send and its receive carry the same `match` id (and name each other in `peer`).
//
// Folding (design §9): on a symmetric machine every rank of a TP group and every DP replica
// behaves alike, so a Schedule may simulate only representatives. A collective whose group has
// members that are not simulated treats them as mirrors of the simulated ones: the data a mirror
// would send arrives when the representative's own send completes. The links the flows use are
// the real ones, so a representative's flows still meet the traffic they would meet.
//
// The same Schedule is read by the replay (sim/replay.hpp) and, later, by the executor.
#pragma once

// GCC 12 reports a false -Wstringop-overread inside small_vector's copy (its inline buffer
// seen as 8 bytes); the code is Boost's own.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <boost/container/small_vector.hpp>
#pragma GCC diagnostic pop

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim {

enum class OpType : uint8_t { Compute, Collective, Send, Recv };
enum class CollectiveKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce };
/// NCCL algorithm of a collective (NCCL_ALGO): Auto lets the replay pick as NCCL's tuner would.
/// Nvls: NVLink SHARP, the reduction (or an AllGather's broadcast) done in a Hopper-or-later
/// NVSwitch (AllReduce, AllGather, ReduceScatter inside one node); NvlsTree: NVLink SHARP inside each node and a tree between the nodes (AllReduce across
/// nodes); Pat: NCCL's Parallel Aggregated Trees (AllGather and ReduceScatter over one GPU per
/// node, NCCL >= 2.23); CollnetDirect and CollnetChain: NCCL's CollNet, the reduction across
/// nodes done in the network's switches (InfiniBand SHARP), AllReduce across nodes where the
/// fabric has it and NCCL_COLLNET_ENABLE is set (collective_plan.hpp). The values 1 ... 7 are the
/// bits of NCCL_ALGO's lists (nccl_selection.hpp algorithm_bit).
enum class CollectiveAlgorithm : uint8_t { Auto, Ring, Tree, Nvls, NvlsTree, Pat, CollnetDirect, CollnetChain };
/// A reduction's operator (ncclRedOp_t; nccl-tests' `-o`): what a collective's time depends
/// on is only whether NCCL scales it (Avg, as ncclDevPreMulSum or ncclDevSumPostDiv), which
/// NCCL's PAT ReduceScatter does not support (src/enqueue.cc: "Tree reduceScatter doesn't
/// support scaling yet").
/// PreMulSum (nccl-tests' "mulsum", ncclRedOpCreatePreMulSum) scales too.
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, Avg, PreMulSum };
/// Whether NCCL scales the reduction (Avg, PreMulSum), which its PAT ReduceScatter cannot.
inline bool scales(ReduceOp r) { return r == ReduceOp::Avg || r == ReduceOp::PreMulSum; }
/// A collective's element type (ncclDataType_t; nccl-tests' `-d`). What a collective's time
/// depends on is its bytes, except where NCCL's choice of algorithm reads the type:
/// - NVLS reduces only some (src/include/device.h ncclNvlsSupported, NCCL 2.30): a sum of
///   float, double, half, bfloat16 or 32/64-bit integers, a max or min of all those but float
///   and double; never 8-bit integers or fp8 (nvls_reduces);
/// - fp8 (NCCL >= 2.24, f8e4m3 and f8e5m2): its reductions need compute capability 9.0
///   (src/device/generate.py required_cuda: no fp8 reduction kernel before sm_90), and NCCL's
///   tuner multiplies the ring's modelled time by 1024 for more than 8 ranks so that a tree,
///   PAT or NVLS runs where one can (src/enqueue.cc topoGetAlgoInfo's caller: "Relegate fp8
///   reduction trees of sufficient depth that they incur precision loss").
enum class DataType : uint8_t {
  Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, Bfloat16, Float8e4m3, Float8e5m2
};
/// Bytes of one element: 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 (ncclTypeSize).
int datatype_bytes(DataType t);
/// Whether `t` is one of NCCL's two fp8 types.
inline bool is_fp8(DataType t) { return t == DataType::Float8e4m3 || t == DataType::Float8e5m2; }
/// Whether `k` reduces its elements (AllReduce, ReduceScatter, Reduce): where Op::reduce_op and
/// the reduction rules of its element type apply.
inline bool reduces(CollectiveKind k) {
  return k == CollectiveKind::AllReduce || k == CollectiveKind::ReduceScatter || k == CollectiveKind::Reduce;
}
/// Whether NCCL's NVLS kernels can reduce `t` by `r` (src/include/device.h ncclNvlsSupported on
/// the device operator src/enqueue.cc hostToDevRedOp makes of it: Sum stays Sum, Max and Min
/// become MinMax, Prod stays Prod, Avg becomes PreMulSum for floating types and SumPostDiv for
/// integers, PreMulSum stays so): Sum for int32, uint32, int64, uint64, half, bfloat16, float
/// and double; MinMax for the same but float and double; nothing else.
bool nvls_reduces(ReduceOp r, DataType t);
/// Which part of the iteration an op belongs to (for the breakdown in Result).
enum class Phase : uint8_t { Forward, Backward, Recompute, GradSync, Optimizer };
/// What a compute kernel does (for the breakdown and for strategies that pick GEMMs).
enum class ComputeKind : uint8_t { Gemm, Attention, MemoryBound, Optimizer };
/// Why a communication op exists (strategies transform TP collectives; the result splits time).
enum class CommPurpose : uint8_t { TensorParallel, DataParallel, Pipeline, Embedding };

const char* to_string(OpType t);
const char* to_string(CollectiveKind k);
const char* to_string(Phase p);
const char* to_string(CommPurpose p);
/// "auto", "ring", "tree", "nvls", "nvlstree" or "pat" (NCCL_ALGO's names, lower case).
const char* to_string(CollectiveAlgorithm a);
/// "sum", "prod", "max", "min", "avg" or "mulsum" (nccl-tests' names; parse_reduce_op reads them).
const char* to_string(ReduceOp r);
/// nccl-tests' type names (its `-d` and its type column): "int8", "uint8", "int32", "uint32",
/// "int64", "uint64", "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"
/// (parse_datatype reads them).
const char* to_string(DataType t);

/// An op's name, interned: one copy of each distinct name for the whole process (a schedule has
/// 10^5–10^7 ops and a few hundred distinct names), so an op holds a pointer, not a string.
/// Converts to and from std::string; compares and concatenates like one.
class OpName {
 public:
  OpName() : s_(&empty_name()) {}
  OpName(const std::string& text) : s_(&intern(text)) {}  // NOLINT: implicit, like a string
  OpName(const char* text) : s_(&intern(text)) {}         // NOLINT
  operator const std::string&() const { return *s_; }     // NOLINT
  const std::string& str() const { return *s_; }
  const char* c_str() const { return s_->c_str(); }
  size_t size() const { return s_->size(); }
  bool empty() const { return s_->empty(); }
  size_t find(const std::string& t, size_t pos = 0) const { return s_->find(t, pos); }
  size_t rfind(const std::string& t, size_t pos = std::string::npos) const { return s_->rfind(t, pos); }
  friend bool operator==(const OpName& a, const OpName& b) { return a.s_ == b.s_; }
  friend bool operator==(const OpName& a, const std::string& b) { return *a.s_ == b; }
  friend bool operator==(const OpName& a, const char* b) { return *a.s_ == b; }
  friend bool operator!=(const OpName& a, const OpName& b) { return a.s_ != b.s_; }
  friend bool operator!=(const OpName& a, const std::string& b) { return *a.s_ != b; }
  friend bool operator!=(const OpName& a, const char* b) { return *a.s_ != b; }
  friend bool operator<(const OpName& a, const OpName& b) { return *a.s_ < *b.s_; }
  friend std::string operator+(const OpName& a, const std::string& b) { return *a.s_ + b; }
  friend std::string operator+(const OpName& a, const char* b) { return *a.s_ + b; }
  friend std::string operator+(const std::string& a, const OpName& b) { return a + *b.s_; }
  friend std::string operator+(const char* a, const OpName& b) { return a + *b.s_; }

 private:
  /// The process-wide copy of `text` (never freed; stable address).
  static const std::string& intern(const std::string& text);
  static const std::string& empty_name() {
    static const std::string& e = intern({});
    return e;
  }
  const std::string* s_;
};

/// An op's dependencies: most ops have at most two, kept inline (no heap allocation per op, so
/// copying a schedule of 10^5–10^6 ops is a few memcpy-like moves).
using OpDeps = boost::container::small_vector<int32_t, 2>;

/// (Fields in order of size, the one-byte kinds first: 136 bytes, no padding.)
struct Op {
  OpType type = OpType::Compute;
  Phase phase = Phase::Forward;
  ComputeKind compute = ComputeKind::Gemm;      ///< Compute only
  CollectiveKind collective = CollectiveKind::AllReduce;  ///< Collective only
  CommPurpose purpose = CommPurpose::TensorParallel;      ///< Collective/Send/Recv
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;  ///< Collective only
  ReduceOp reduce_op = ReduceOp::Sum;  ///< AllReduce, ReduceScatter, Reduce: the reduction
  DataType datatype = DataType::Float32;  ///< Collective: its elements' type (nccl-tests' default
                                          ///< float; a training job's: the model's, TransformerBuilder)
  int16_t stream = 0;
  int16_t overlap_stream = 0; ///< stream Megatron-LM issues this op on when it overlaps it with
                              ///< computation (0: it blocks the compute stream); strategies read it
  int16_t channels = 0;      ///< Collective: parallel rings/trees (NCCL channels); 0: NCCL's choice
  int16_t num_sm = -1;       ///< Collective/Send/Recv: SMs the communication kernel occupies while it
                             ///< runs (slowing compute on that GPU); -1: NCCL's, one per channel its
                             ///< kernel launches (a Send/Recv: per p2p channel of the message,
                             ///< collective_plan.hpp p2p_split; replay.hpp);
                             ///< 0: a copy-engine transfer that takes no SM
  int32_t layer = -1;        ///< transformer layer (global index), -1 for none
  int32_t micro_batch = -1;  ///< -1 for per-iteration ops
  int32_t group = -1;        ///< Collective: index into Schedule::groups. Send/Recv: the group whose
                             ///< NCCL communicator the message runs on (XLA's collective-permute
                             ///< over its replica group), −1: the pair's own two-rank communicator
                             ///< (PyTorch's; ReplayOptions' collectives.p2p_comm)
  int32_t peer = -1;         ///< Send/Recv: global rank of the other side
  int64_t match = -1;        ///< Collective instance id, or send/recv pair id
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0, gemm_batch = 0;  ///< Compute GEMMs: C[m×n] = A[m×k]·B[k×n],
                                                              ///< batch times (0 for other kernels)
  double duration_s = 0;     ///< Compute: stand-alone kernel time, seconds
  double flops = 0;          ///< Compute: floating-point operations performed
  double bytes = 0;          ///< Collective: NCCL buffer size per rank (AllReduce: the buffer;
                             ///< AllGather: the gathered output; ReduceScatter: the input), bytes.
                             ///< Send/Recv: bytes transferred.
  OpName name;               ///< e.g. "fc1.fwd"; short, for traces and explanations
  OpDeps deps;               ///< indices of ops of the same rank that must complete first
};

struct RankProgram {
  int rank = -1;             ///< global rank
  int num_streams = 1;
  std::vector<Op> ops;
};

struct Group {
  std::vector<int> ranks;    ///< global ranks in ring order
  CommPurpose purpose = CommPurpose::TensorParallel;
};

struct Schedule {
  int world_size = 0;
  std::vector<RankProgram> programs;  ///< simulated ranks only
  std::vector<Group> groups;
  std::vector<std::string> stream_names;  ///< index = stream id, e.g. "compute", "tp-comm"

  /// Index of an existing group with these ranks and purpose, or a new one.
  int intern_group(const std::vector<int>& ranks, CommPurpose purpose);
  /// Total FLOPs of all compute ops of all simulated ranks.
  double total_flops() const;
};

/// Checks the structural invariants: deps point backwards-or-anywhere inside the program and the
/// per-rank graph (deps + stream order) is acyclic; streams in range; collective ops name valid
/// groups containing their rank; every send's peer exists. Aborts (OVERLAPSIM_CHECK) on a
/// violation: a malformed Schedule is a bug in a builder or a pass, not a user error.
void validate(const Schedule& s);

}  // namespace overlapsim

/// fmt prints an OpName as its text.
template <>
struct fmt::formatter<overlapsim::OpName> : fmt::formatter<fmt::string_view> {
  template <typename Context>
  auto format(const overlapsim::OpName& n, Context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(n.str()), ctx);
  }
};
