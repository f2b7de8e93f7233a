#include "models/transformer.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

namespace overlapsim {

namespace {

/// Emits the ops of one rank's program, keeping the per-group collective counters that make
/// match ids agree across ranks (every member emits a group's collectives in the same order).
class ProgramBuilder {
 public:
  /// `tensor_type`: the element type of the activations the collectives move (Op::datatype).
  ProgramBuilder(Schedule& s, RankProgram& p, DataType tensor_type) : s_(s), p_(p), tensor_type_(tensor_type) {}

  int compute(const char* name, ComputeKind kind, double seconds, double flops, Phase phase, int layer, int mb,
              const OpDeps& deps) {
    Op& op = push(name, phase, layer, mb, deps);
    op.type = OpType::Compute;
    op.compute = kind;
    op.duration_s = seconds;
    op.flops = flops;
    return static_cast<int>(p_.ops.size()) - 1;
  }

  int collective(const char* name, CollectiveKind kind, int group, double bytes, CommPurpose purpose,
                 int16_t overlap_stream, Phase phase, int layer, int mb, const OpDeps& deps) {
    Op& op = push(name, phase, layer, mb, deps);
    op.type = OpType::Collective;
    op.collective = kind;
    op.datatype = tensor_type_;
    op.group = group;
    op.bytes = bytes;
    op.purpose = purpose;
    op.overlap_stream = overlap_stream;
    op.match = (static_cast<int64_t>(group) << 32) | counters_[group]++;
    return static_cast<int>(p_.ops.size()) - 1;
  }

  Op& last_op() { return p_.ops.back(); }

  int p2p(const char* name, bool send, int peer, double bytes, Phase phase, int mb, const OpDeps& deps) {
    Op& op = push(name, phase, -1, mb, deps);
    op.type = send ? OpType::Send : OpType::Recv;
    op.peer = peer;
    op.bytes = bytes;
    op.purpose = CommPurpose::Pipeline;
    op.overlap_stream = send ? kP2PStream : 0;
    const int src = send ? p_.rank : peer, dst = send ? peer : p_.rank;
    const int64_t pair = static_cast<int64_t>(src) * s_.world_size + dst;
    // Negative ids: a separate namespace from collectives. Both sides count the pair's messages.
    op.match = -2 - ((pair << 20) | p2p_counters_[pair]++);
    return static_cast<int>(p_.ops.size()) - 1;
  }

 private:
  /// A new op at the end of the program, with its name, phase, layer, micro-batch and deps
  /// (-1 entries dropped); built in place (no temporary Op moved in).
  Op& push(const char* name, Phase phase, int layer, int mb, const OpDeps& deps) {
    Op& op = p_.ops.emplace_back();
    op.name = intern(name);
    op.phase = phase;
    op.layer = layer;
    op.micro_batch = mb;
    for (int32_t d : deps)
      if (d != -1) op.deps.push_back(d);
    return op;
  }

  /// The interned name of a literal: looked up once per distinct pointer (every name the builder
  /// passes is a string literal or points to one), not hashed as a string per op.
  OpName intern(const char* name) {
    auto it = names_.find(name);
    if (it == names_.end()) it = names_.emplace(name, OpName(name)).first;
    return it->second;
  }

  Schedule& s_;
  RankProgram& p_;
  std::map<int, int64_t> counters_;
  std::map<int64_t, int64_t> p2p_counters_;
  DataType tensor_type_;
  std::unordered_map<const char*, OpName> names_;
};

struct Dims {
  int64_t T;      // tokens per micro-batch
  int64_t Tsp;    // tokens a rank holds outside the TP region (T/t with SP, else T)
  int64_t h, f, V, s, b, heads_local, head_dim;
  int t;
  double e;       // bytes per element of activations (and parameters, gradients unless FP8)
  DType dtype;
  DataType tensor_type;  // the collectives' element type for activations (size e)
  double param_e;        // bytes per element of parameters and their gradients
  DataType param_type;   // their element type (size param_e)
};

/// The element type a model dtype's tensors travel in: FP32 and TF32 (an FP32 storage format)
/// as float, FP16 as half, BF16 as bfloat16, FP8 as e4m3 (the forward format of
/// TransformerEngine's HYBRID recipe; sizes per ncclTypeSize).
DataType tensor_datatype(DType d) {
  switch (d) {
    case DType::FP32:
    case DType::TF32: return DataType::Float32;
    case DType::FP16: return DataType::Float16;
    case DType::BF16: return DataType::Bfloat16;
    case DType::FP8: return DataType::Float8e4m3;
  }
  return DataType::Float32;
}

/// Everything that differs per rank.
struct RankContext {
  int rank, tp_i, dp_i, pp_i;
  int tp_group, dp_group, emb_group;
  int layers_per_stage;
  bool first, last;
};

class IterationBuilder {
 public:
  IterationBuilder(const ModelConfig& m, const Parallelism& par, const CostModel& cost, Schedule& s)
      : m_(m), par_(par), cost_(cost), s_(s) {
    d_.b = par.micro_batch;
    d_.s = m.seq_len;
    d_.T = d_.b * d_.s;
    d_.t = par.tp;
    d_.Tsp = par.sp ? d_.T / par.tp : d_.T;
    d_.h = m.hidden;
    d_.f = m.ffn_hidden;
    d_.V = m.vocab;
    d_.heads_local = m.heads / par.tp;
    d_.head_dim = m.hidden / m.heads;
    d_.e = dtype_bytes(m.dtype);
    d_.dtype = m.dtype;
    d_.tensor_type = tensor_datatype(m.dtype);
    // FP8 training keeps parameters and their gradients in BF16 and casts only the GEMM inputs
    // to FP8 (Micikevicius et al., "FP8 Formats for Deep Learning", 2022, §4; TransformerEngine
    // and Megatron-LM's --fp8-format), so the DP gradient reductions and the ZeRO parameter
    // gathers move BF16; every other dtype keeps its parameters in its own type.
    d_.param_type = m.dtype == DType::FP8 ? DataType::Bfloat16 : d_.tensor_type;
    d_.param_e = datatype_bytes(d_.param_type);
  }

  void build_rank(int rank);

 private:
  // One pass over a layer; `last` is the op the pass continues from; returns the new last op.
  int layer_forward(ProgramBuilder& pb, const RankContext& c, int layer, int mb, Phase phase, int last);
  int layer_backward(ProgramBuilder& pb, const RankContext& c, int layer, int mb, int last);
  int attention_forward(ProgramBuilder& pb, int layer, int mb, Phase ph, int last);
  int attention_backward(ProgramBuilder& pb, int layer, int mb, int last);
  int tp_in(ProgramBuilder& pb, const RankContext& c, const char* name, Phase ph, int layer, int mb, int last,
            int16_t overlap);
  int tp_out(ProgramBuilder& pb, const RankContext& c, const char* name, Phase ph, int layer, int mb, int last,
             int16_t overlap);
  int16_t tp_async_stream() const { return par_.async_tp_reduce ? kTpCommStream : kComputeStream; }
  /// A GEMM kernel C[M×N] = A[M×K]·B[K×N] (batch times): its time from the cost model, its
  /// FLOPs 2·M·N·K·batch, its shape recorded for passes that split it.
  int gemm_op(ProgramBuilder& pb, const char* name, int64_t M, int64_t N, int64_t K, Phase ph, int layer, int mb,
              const OpDeps& deps) {
    return gemm_op(pb, name, M, N, K, 1, ph, layer, mb, deps);
  }
  int gemm_op(ProgramBuilder& pb, const char* name, int64_t M, int64_t N, int64_t K, int64_t batch, Phase ph,
              int layer, int mb, const OpDeps& deps) {
    const int i = pb.compute(name, ComputeKind::Gemm, cost_.gemm_time_s(M, N, K, d_.dtype, batch),
                             gflops(M, N, K) * static_cast<double>(batch), ph, layer, mb, deps);
    Op& op = pb.last_op();
    op.gemm_m = M;
    op.gemm_n = N;
    op.gemm_k = K;
    op.gemm_batch = batch;
    return i;
  }
  double mem(double bytes) const { return cost_.memory_bound_time_s(bytes); }
  static double gflops(int64_t M, int64_t N, int64_t K) { return 2.0 * M * N * K; }

  const ModelConfig& m_;
  const Parallelism& par_;
  const CostModel& cost_;
  Schedule& s_;
  Dims d_;
};

// "f" of Megatron (entering a TP region): identity forward / AllReduce backward; with SP an
// AllGather forward / ReduceScatter backward. Returns the op after which the gathered tensor exists.
int IterationBuilder::tp_in(ProgramBuilder& pb, const RankContext& c, const char* name, Phase ph, int layer, int mb,
                            int last, int16_t overlap) {
  if (par_.tp == 1 || !par_.sp) return last;
  return pb.collective(name, CollectiveKind::AllGather, c.tp_group, d_.T * d_.h * d_.e, CommPurpose::TensorParallel,
                       overlap, ph, layer, mb, {last});
}

// "g" of Megatron (leaving a TP region): AllReduce forward (ReduceScatter with SP).
int IterationBuilder::tp_out(ProgramBuilder& pb, const RankContext& c, const char* name, Phase ph, int layer, int mb,
                             int last, int16_t overlap) {
  if (par_.tp == 1) return last;
  return pb.collective(name, par_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce, c.tp_group,
                       d_.T * d_.h * d_.e, CommPurpose::TensorParallel, overlap, ph, layer, mb, {last});
}

// The attention core, softmax(Q·Kᵀ/√d)·V over b·a/t heads of s×s scores. Fused (FlashAttention-2,
// Dao 2023): one kernel, 4·b·(a/t)·s²·d FLOPs forward, 2× that backward. Unfused (Megatron-LM's
// CoreAttention): baddbmm scores GEMM, fused scale-mask-softmax, dropout (p > 0 in GPT-3 and the
// SC'21 runs), bmm context GEMM — the s² score tensor goes through HBM between them.
int IterationBuilder::attention_forward(ProgramBuilder& pb, int L, int mb, Phase ph, int last) {
  const auto& d = d_;
  const int64_t heads = d.b * d.heads_local;
  if (par_.flash_attention)
    return pb.compute("attn", ComputeKind::Attention,
                      cost_.attention_time_s(d.b, d.heads_local, d.s, d.head_dim, d.dtype, false),
                      4.0 * heads * d.s * d.s * d.head_dim, ph, L, mb, {last});
  const double scores = static_cast<double>(heads) * d.s * d.s;  // elements
  int x = gemm_op(pb, "attn.scores", d.s, d.s, d.head_dim, heads, ph, L, mb, {last});
  x = pb.compute("attn.softmax", ComputeKind::MemoryBound, mem(2 * scores * d.e), 0, ph, L, mb, {x});
  x = pb.compute("attn.dropout", ComputeKind::MemoryBound, mem(scores * (2 * d.e + 1)), 0, ph, L, mb, {x});
  return gemm_op(pb, "attn.context", d.s, d.head_dim, d.s, heads, ph, L, mb, {x});
}

int IterationBuilder::attention_backward(ProgramBuilder& pb, int L, int mb, int last) {
  const auto& d = d_;
  const Phase ph = Phase::Backward;
  const int64_t heads = d.b * d.heads_local;
  if (par_.flash_attention)
    return pb.compute("attn.bwd", ComputeKind::Attention,
                      cost_.attention_time_s(d.b, d.heads_local, d.s, d.head_dim, d.dtype, true),
                      8.0 * heads * d.s * d.s * d.head_dim, ph, L, mb, {last});
  const double scores = static_cast<double>(heads) * d.s * d.s;
  int x = gemm_op(pb, "attn.context.dgrad", d.s, d.s, d.head_dim, heads, ph, L, mb, {last});  // dP = dC·Vᵀ
  const int dv = gemm_op(pb, "attn.context.wgrad", d.s, d.head_dim, d.s, heads, ph, L, mb, {last});  // dV = Pᵀ·dC
  x = pb.compute("attn.dropout.bwd", ComputeKind::MemoryBound, mem(scores * (2 * d.e + 1)), 0, ph, L, mb, {x});
  x = pb.compute("attn.softmax.bwd", ComputeKind::MemoryBound, mem(3 * scores * d.e), 0, ph, L, mb, {x});
  x = gemm_op(pb, "attn.scores.dgrad", d.s, d.head_dim, d.s, heads,
                 ph, L, mb, {x});  // dQ = dS·K
  return gemm_op(pb, "attn.scores.wgrad", d.s, d.head_dim, d.s, heads, ph, L, mb, {x, dv});  // dK = dSᵀ·Q
}

int IterationBuilder::layer_forward(ProgramBuilder& pb, const RankContext& c, int L, int mb, Phase ph, int last) {
  const auto& d = d_;
  const double act = static_cast<double>(d.Tsp) * d.h * d.e;  // bytes of one hidden-state tensor a rank holds
  int x = pb.compute("ln1", ComputeKind::MemoryBound, mem(2 * act), 0, ph, L, mb, {last});
  x = tp_in(pb, c, "ag.qkv", ph, L, mb, x, 0);
  x = gemm_op(pb, "qkv", d.T, 3 * d.h / d.t, d.h, ph, L, mb,
                 {x});
  x = attention_forward(pb, L, mb, ph, x);
  x = gemm_op(pb, "proj", d.T, d.h, d.h / d.t, ph, L, mb, {x});
  x = tp_out(pb, c, "rs.proj", ph, L, mb, x, 0);
  x = pb.compute("residual1", ComputeKind::MemoryBound, mem(4 * act), 0, ph, L, mb, {x});
  x = pb.compute("ln2", ComputeKind::MemoryBound, mem(2 * act), 0, ph, L, mb, {x});
  x = tp_in(pb, c, "ag.fc1", ph, L, mb, x, 0);
  x = gemm_op(pb, "fc1", d.T, d.f / d.t, d.h, ph, L, mb, {x});
  x = pb.compute("gelu", ComputeKind::MemoryBound, mem(2.0 * d.T * (d.f / d.t) * d.e), 0, ph, L, mb, {x});
  x = gemm_op(pb, "fc2", d.T, d.h, d.f / d.t, ph, L, mb, {x});
  x = tp_out(pb, c, "rs.fc2", ph, L, mb, x, 0);
  x = pb.compute("residual2", ComputeKind::MemoryBound, mem(4 * act), 0, ph, L, mb, {x});
  return x;
}

int IterationBuilder::layer_backward(ProgramBuilder& pb, const RankContext& c, int L, int mb, int last) {
  const auto& d = d_;
  const Phase ph = Phase::Backward;
  const double act = static_cast<double>(d.Tsp) * d.h * d.e;
  const bool tp = par_.tp > 1;
  int x = pb.compute("residual2.bwd", ComputeKind::MemoryBound, mem(3 * act), 0, ph, L, mb, {last});
  // FC2 (row-parallel): its output gradient enters the TP region.
  x = tp_in(pb, c, "ag.fc2.bwd", ph, L, mb, x, 0);
  const int fc2_dgrad = gemm_op(pb, "fc2.dgrad", d.T, d.f / d.t, d.h, ph, L, mb, {x});
  gemm_op(pb, "fc2.wgrad", d.f / d.t, d.h, d.T, ph, L, mb, {x});
  x = pb.compute("gelu.bwd", ComputeKind::MemoryBound, mem(3.0 * d.T * (d.f / d.t) * d.e), 0, ph, L, mb,
                 {fc2_dgrad});
  // FC1 (column-parallel): with SP, re-gather LN2's output for the wgrad, then dgrad, then
  // reduce the input gradient while the wgrad runs.
  const int ag_fc1 = (tp && par_.sp) ? pb.collective("ag.fc1.wgrad", CollectiveKind::AllGather, c.tp_group,
                                                     d.T * d.h * d.e, CommPurpose::TensorParallel, tp_async_stream(), ph,
                                                     L, mb, {last})
                                     : -1;
  const int fc1_dgrad =
      gemm_op(pb, "fc1.dgrad", d.T, d.h, d.f / d.t, ph, L, mb, {x});
  const int rs_fc1 = tp ? pb.collective("rs.fc1.dgrad", par_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                        c.tp_group, d.T * d.h * d.e, CommPurpose::TensorParallel, tp_async_stream(), ph, L,
                                        mb, {fc1_dgrad})
                        : fc1_dgrad;
  gemm_op(pb, "fc1.wgrad", d.h, d.f / d.t, d.T, ph, L, mb,
             {x, ag_fc1});
  x = pb.compute("ln2.bwd", ComputeKind::MemoryBound, mem(4 * act), 0, ph, L, mb, {rs_fc1});
  x = pb.compute("residual1.bwd", ComputeKind::MemoryBound, mem(3 * act), 0, ph, L, mb, {x});
  // Proj (row-parallel).
  x = tp_in(pb, c, "ag.proj.bwd", ph, L, mb, x, 0);
  const int proj_dgrad = gemm_op(pb, "proj.dgrad", d.T, d.h / d.t, d.h, ph, L, mb, {x});
  gemm_op(pb, "proj.wgrad", d.h / d.t, d.h, d.T, ph, L, mb, {x});
  x = attention_backward(pb, L, mb, proj_dgrad);
  // QKV (column-parallel).
  const int ag_qkv = (tp && par_.sp) ? pb.collective("ag.qkv.wgrad", CollectiveKind::AllGather, c.tp_group,
                                                     d.T * d.h * d.e, CommPurpose::TensorParallel, tp_async_stream(), ph,
                                                     L, mb, {x})
                                     : -1;
  const int qkv_dgrad = gemm_op(pb, "qkv.dgrad", d.T, d.h, 3 * d.h / d.t, ph, L, mb, {x});
  const int rs_qkv = tp ? pb.collective("rs.qkv.dgrad", par_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                        c.tp_group, d.T * d.h * d.e, CommPurpose::TensorParallel, tp_async_stream(), ph, L,
                                        mb, {qkv_dgrad})
                        : qkv_dgrad;
  const int qkv_wgrad = gemm_op(pb, "qkv.wgrad", d.h, 3 * d.h / d.t, d.T, ph, L, mb, {x, ag_qkv});
  x = pb.compute("ln1.bwd", ComputeKind::MemoryBound, mem(4 * act), 0, ph, L, mb, {rs_qkv});
  // The layer's gradients are complete when its wgrads are; the last wgrad stands for them.
  (void)qkv_wgrad;
  return x;
}

void IterationBuilder::build_rank(int rank) {
  RankContext c{};
  c.rank = rank;
  c.tp_i = par_.tp_index(rank);
  c.dp_i = par_.dp_index(rank);
  c.pp_i = par_.pp_index(rank);
  c.first = c.pp_i == 0;
  c.last = c.pp_i == par_.pp - 1;
  c.layers_per_stage = m_.layers / par_.pp;
  std::vector<int> g;
  for (int t = 0; t < par_.tp; ++t) g.push_back(par_.rank_of(t, c.dp_i, c.pp_i));
  c.tp_group = s_.intern_group(g, CommPurpose::TensorParallel);
  g.clear();
  for (int r = 0; r < par_.dp; ++r) g.push_back(par_.rank_of(c.tp_i, r, c.pp_i));
  c.dp_group = s_.intern_group(g, CommPurpose::DataParallel);
  c.emb_group = -1;
  if (par_.pp > 1 && (c.first || c.last))
    c.emb_group = s_.intern_group({par_.rank_of(c.tp_i, c.dp_i, 0), par_.rank_of(c.tp_i, c.dp_i, par_.pp - 1)},
                                  CommPurpose::Embedding);

  s_.programs.push_back(RankProgram{rank, kNumStreams, {}});
  RankProgram& prog = s_.programs.back();
  ProgramBuilder pb(s_, prog, d_.tensor_type);
  const auto& d = d_;
  const int M = par_.num_micro_batches();
  // Room for the ops up front (growing a vector of 10^5 ops copies it ~twice over): as many as
  // the program built before this one, or for the first about 70 per layer and micro-batch
  // (pages not written are never touched).
  const size_t nprog = s_.programs.size();
  prog.ops.reserve(nprog > 1 ? s_.programs[nprog - 2].ops.size() + 64
                             : static_cast<size_t>(M) * static_cast<size_t>(c.layers_per_stage) * 70 + 64);
  const int layer0 = c.pp_i * c.layers_per_stage;
  // A pipeline send carries one TP rank's share of the [s, b, h] activation: [s/t, b, h] with SP
  // (Megatron-Core get_tensor_shapes: seq_length // tp_size), and without SP the scatter-gather
  // optimisation's 1/t chunk (Narayanan et al. SC'21 §4.1) — /t in both cases.
  const double p2p_bytes = static_cast<double>(d.T) * d.h * d.e / d.t;
  const int prev = c.first ? -1 : par_.rank_of(c.tp_i, c.dp_i, c.pp_i - 1);
  const int next = c.last ? -1 : par_.rank_of(c.tp_i, c.dp_i, c.pp_i + 1);
  const double full_act = static_cast<double>(d.Tsp) * d.h * d.e;
  std::vector<int> fwd_end(M, -1);
  std::vector<int> last_wgrad_of_layer(c.layers_per_stage, -1);
  // Parameters of one layer on one rank (its TP shard): (12h² + 13h)/t, LayerNorms replicated.
  const double layer_params = (4.0 * d.h * d.h + 2.0 * d.h * d.f) / d.t + (9.0 * d.h + d.f) / d.t + 4.0 * d.h;
  // ZeRO-3 (Rajbhandari et al. SC'20 §5.3; DeepSpeed stage 3, FSDP FULL_SHARD): each layer's
  // parameters are all-gathered over DP before its forward and again before its backward (they
  // are freed after each use) and its gradients reduce-scattered after its backward, every
  // micro-batch. The gathers are prefetched one layer ahead on the DP stream (DeepSpeed's
  // prefetch, FSDP's forward/backward prefetch): layer l's gather may start once layer l−1's
  // pass has begun, so at most two layers are gathered at a time. The embedding's parameters
  // stay resident (their gradient is reduced with the last bucket, as below).
  const bool zero3 = par_.zero_stage >= 3 && par_.dp > 1;
  // The DP gradient reductions' operator (Parallelism::average_in_collective).
  const ReduceOp grad_reduce_op = par_.average_in_collective ? ReduceOp::Avg : ReduceOp::Sum;
  const double layer_bytes = layer_params * d.param_e;
  int prev_layer_first = -1;  // first op of the layer pass before (prefetch distance 1)
  auto gather_params = [&](int L, int mb, Phase ph) {
    OpDeps deps;
    if (prev_layer_first >= 0) deps.push_back(prev_layer_first);
    const int gather = pb.collective("zero3.param_gather", CollectiveKind::AllGather, c.dp_group, layer_bytes,
                                     CommPurpose::DataParallel, kDpCommStream, ph, L, mb, deps);
    pb.last_op().datatype = d.param_type;
    return gather;
  };
  /// Emits one layer pass with its ZeRO-3 gather; `pass` emits the layer and returns its last op.
  auto with_params = [&](int L, int mb, Phase ph, const std::function<int()>& pass) {
    if (!zero3) return pass();
    const int gather = gather_params(L, mb, ph);
    const int first = static_cast<int>(prog.ops.size());
    const int out = pass();
    prog.ops[first].deps.push_back(gather);
    prev_layer_first = first;
    return out;
  };

  auto forward = [&](int mb) {
    int x = -1;
    if (c.first) {
      x = pb.compute("embedding", ComputeKind::MemoryBound, mem(3.0 * d.T * d.h * d.e), 0,
                     Phase::Forward, -1, mb, {});
      x = tp_out(pb, c, "rs.embedding", Phase::Forward, -1, mb, x, 0);
    } else {
      x = pb.p2p("recv.act", false, prev, p2p_bytes, Phase::Forward, mb, {});
    }
    prev_layer_first = -1;
    for (int l = 0; l < c.layers_per_stage; ++l)
      x = with_params(layer0 + l, mb, Phase::Forward,
                      [&] { return layer_forward(pb, c, layer0 + l, mb, Phase::Forward, x); });
    if (c.last) {
      x = pb.compute("ln.final", ComputeKind::MemoryBound, mem(2 * full_act), 0, Phase::Forward, -1, mb, {x});
      x = tp_in(pb, c, "ag.logits", Phase::Forward, -1, mb, x, 0);
      x = gemm_op(pb, "logits", d.T, d.V / d.t, d.h,
                     Phase::Forward, -1, mb, {x});
      x = pb.compute("cross_entropy", ComputeKind::MemoryBound, mem(3.0 * d.T * (d.V / d.t) * d.e), 0, Phase::Forward,
                     -1, mb, {x});
      if (par_.tp > 1)
        // Megatron's vocab-parallel cross entropy: the per-token logit max (a Max), then the
        // sum of exponentials and the target logit (Sums), each one fp32 a token.
        for (auto [n, op] : {std::pair{"ar.ce.max", ReduceOp::Max}, std::pair{"ar.ce.sum", ReduceOp::Sum},
                             std::pair{"ar.ce.target", ReduceOp::Sum}}) {
          x = pb.collective(n, CollectiveKind::AllReduce, c.tp_group, d.T * 4.0, CommPurpose::TensorParallel, 0,
                            Phase::Forward, -1, mb, {x});
          pb.last_op().datatype = DataType::Float32;
          pb.last_op().reduce_op = op;
        }
    } else {
      x = pb.p2p("send.act", true, next, p2p_bytes, Phase::Forward, mb, {x});
    }
    fwd_end[mb] = x;
  };

  auto backward = [&](int mb) {
    int x = fwd_end[mb];
    if (c.last) {
      x = pb.compute("cross_entropy.bwd", ComputeKind::MemoryBound, mem(2.0 * d.T * (d.V / d.t) * d.e), 0,
                     Phase::Backward, -1, mb, {x});
      const int dgrad = gemm_op(pb, "logits.dgrad", d.T, d.h, d.V / d.t, Phase::Backward, -1, mb, {x});
      const int red = par_.tp > 1 ? pb.collective("rs.logits.dgrad",
                                                  par_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                                  c.tp_group, d.T * d.h * d.e, CommPurpose::TensorParallel,
                                                  tp_async_stream(), Phase::Backward, -1, mb, {dgrad})
                                  : dgrad;
      gemm_op(pb, "logits.wgrad", d.V / d.t, d.h, d.T,
                 Phase::Backward, -1, mb, {x});
      x = pb.compute("ln.final.bwd", ComputeKind::MemoryBound, mem(4 * full_act), 0, Phase::Backward, -1, mb, {red});
    } else {
      const int r = pb.p2p("recv.grad", false, next, p2p_bytes, Phase::Backward, mb, {});
      x = r;
      // The backward pass also needs this micro-batch's forward to have run.
      prog.ops[r].deps.push_back(fwd_end[mb]);
    }
    prev_layer_first = -1;
    for (int l = c.layers_per_stage - 1; l >= 0; --l) {
      const int L = layer0 + l;
      x = with_params(L, mb, Phase::Backward, [&] {
        int y = x;
        if (par_.recompute == Recompute::Full) {
          y = layer_forward(pb, c, L, mb, Phase::Recompute, y);
        } else if (par_.recompute == Recompute::Selective) {
          y = attention_forward(pb, L, mb, Phase::Recompute, y);
        }
        y = layer_backward(pb, c, L, mb, y);
        last_wgrad_of_layer[l] = static_cast<int>(prog.ops.size()) - 2;  // qkv.wgrad precedes ln1.bwd
        return y;
      });
      if (zero3) {
        pb.collective("zero3.grad_reduce", CollectiveKind::ReduceScatter, c.dp_group, layer_bytes,
                      CommPurpose::DataParallel, kDpCommStream, Phase::Backward, L, mb, {last_wgrad_of_layer[l]});
        pb.last_op().reduce_op = grad_reduce_op;
        pb.last_op().datatype = d.param_type;
      }
    }
    if (c.first) {
      x = pb.compute("embedding.bwd", ComputeKind::MemoryBound, mem(3.0 * d.T * d.h * d.e), 0,
                     Phase::Backward, -1, mb, {x});
    } else {
      x = pb.p2p("send.grad", true, prev, p2p_bytes, Phase::Backward, mb, {x});
    }
    return x;
  };

  // Pipeline order (Narayanan et al. SC'21 §2.2): 1F1B warm-up of p−i−1 forwards, steady 1F1B,
  // cool-down; GPipe: all forwards, then all backwards.
  int last_bwd = -1;
  if (par_.pipeline_schedule == PipelineSchedule::GPipe) {
    for (int mb = 0; mb < M; ++mb) forward(mb);
    for (int mb = 0; mb < M; ++mb) last_bwd = backward(mb);
  } else {
    const int warmup = std::min(par_.pp - c.pp_i - 1, M);
    int f = 0, b = 0;
    for (; f < warmup; ++f) forward(f);
    while (f < M) {
      forward(f++);
      last_bwd = backward(b++);
    }
    while (b < M) last_bwd = backward(b++);
  }

  // Gradient reduction over DP in buckets of >= max(4e7, 1e6·dp) parameters, in the order the
  // gradients become ready (last layer first). Layer parameters per rank: (12h² + 13h)/t.
  OpDeps sync_ops;
  const double grad_bytes = d.param_e;
  if (zero3 && (c.first || c.last)) {  // the layers' gradients were reduced per micro-batch
    sync_ops.push_back(pb.collective("dp.grad_sync", CollectiveKind::ReduceScatter, c.dp_group,
                                     static_cast<double>(d.V) * d.h / d.t * grad_bytes, CommPurpose::DataParallel,
                                     par_.overlap_grad_reduce ? kDpCommStream : kComputeStream, Phase::GradSync, -1,
                                     -1, {last_bwd}));
    pb.last_op().reduce_op = grad_reduce_op;
    pb.last_op().datatype = d.param_type;
  } else if (par_.dp > 1 && !zero3) {
    const double bucket_min = std::max(4e7, 1e6 * par_.dp);
    double acc = 0;
    int waiting_on = -1;
    OpDeps deps;
    const CollectiveKind kind = par_.zero_stage >= 1 ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    for (int l = c.layers_per_stage - 1; l >= 0; --l) {
      acc += layer_params;
      waiting_on = last_wgrad_of_layer[l];
      if (acc >= bucket_min || l == 0) {
        deps = {waiting_on};
        double bytes = acc * grad_bytes;
        if (l == 0 && (c.first || c.last)) bytes += static_cast<double>(d.V) * d.h / d.t * grad_bytes;
        if (l == 0) deps.push_back(last_bwd);
        sync_ops.push_back(pb.collective("dp.grad_sync", kind, c.dp_group, bytes, CommPurpose::DataParallel,
                                         par_.overlap_grad_reduce ? kDpCommStream : kComputeStream, Phase::GradSync, -1, -1, deps));
        pb.last_op().reduce_op = grad_reduce_op;
        pb.last_op().datatype = d.param_type;
        acc = 0;
      }
    }
  }
  if (c.emb_group >= 0) {
    OpDeps deps = sync_ops;
    deps.push_back(last_bwd);
    sync_ops.push_back(pb.collective("embedding.grad_sync", CollectiveKind::AllReduce, c.emb_group,
                                     static_cast<double>(d.V) * d.h / d.t * grad_bytes, CommPurpose::Embedding, 0,
                                     Phase::GradSync, -1, -1, deps));
    pb.last_op().datatype = d.param_type;
  }
  // Adam step over the local (ZeRO-sharded) parameters: 28 bytes of HBM traffic per parameter
  // (fp32 master, momentum, variance read and written; gradient read; fp16 weight written).
  double params = layer_params * c.layers_per_stage;
  if (c.first || c.last) params += static_cast<double>(d.V) * d.h / d.t;
  const double shard = par_.zero_stage >= 1 ? params / par_.dp : params;
  OpDeps deps = sync_ops;
  deps.push_back(last_bwd);
  const int opt = pb.compute("optimizer", ComputeKind::Optimizer, mem(28.0 * shard), 0, Phase::Optimizer, -1, -1, deps);
  if (par_.zero_stage >= 1 && par_.zero_stage < 3 && par_.dp > 1) {
    pb.collective("dp.param_gather", CollectiveKind::AllGather, c.dp_group, params * d.param_e,
                  CommPurpose::DataParallel, 0, Phase::Optimizer, -1, -1, {opt});
    pb.last_op().datatype = d.param_type;
  }
}

}  // namespace

void check_layout(const ModelConfig& m, const Parallelism& p) {
  auto bad = [](const std::string& key, const std::string& msg) { throw InputError(SourceLocation{}, key, msg); };
  if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.micro_batch < 1 || p.global_batch < 1)
    bad("parallelism", "tp, pp, dp, micro_batch and global_batch must be >= 1");
  if (m.heads % p.tp) bad("parallelism.tp", "must divide the " + std::to_string(m.heads) + " attention heads");
  if (m.hidden % p.tp) bad("parallelism.tp", "must divide hidden = " + std::to_string(m.hidden));
  if (m.ffn_hidden % p.tp) bad("parallelism.tp", "must divide ffn_hidden = " + std::to_string(m.ffn_hidden));
  if (m.vocab % p.tp) bad("parallelism.tp", "must divide vocab = " + std::to_string(m.vocab));
  if (m.layers % p.pp) bad("parallelism.pp", "must divide the " + std::to_string(m.layers) + " layers");
  if (p.sp && (static_cast<int64_t>(p.micro_batch) * m.seq_len) % p.tp)
    bad("parallelism.sp", "micro_batch · seq_len must be divisible by tp");
  if (p.micro_batch > p.global_batch)
    bad("parallelism.micro_batch", std::to_string(p.micro_batch) + " is larger than global_batch = " +
                                       std::to_string(p.global_batch));
  if (p.global_batch % p.sequences_per_step())
    bad("parallelism.global_batch", std::to_string(p.global_batch) + " is not divisible by dp · micro_batch = " +
                                        std::to_string(p.sequences_per_step()));
  if (p.zero_stage < 0 || p.zero_stage > 3) bad("parallelism.zero_stage", "expected 0, 1, 2 or 3");
}

std::vector<int> representative_ranks(const Parallelism& par) {
  std::vector<int> r;
  for (int s = 0; s < par.pp; ++s) r.push_back(par.rank_of(0, 0, s));
  return r;
}

Schedule build_iteration(const ModelConfig& model, const Parallelism& par, const CostModel& cost, Folding folding) {
  check_layout(model, par);
  Schedule s;
  s.world_size = par.world();
  s.stream_names = {"compute", "tp-comm", "dp-comm", "p2p"};
  IterationBuilder b(model, par, cost, s);
  if (folding == Folding::Representatives) {
    for (int r : representative_ranks(par)) b.build_rank(r);
  } else {
    for (int r = 0; r < par.world(); ++r) b.build_rank(r);
  }
  return s;
}

}  // namespace overlapsim
