// Peak memory per GPU (formulas and sources in memory_model.hpp).
//
// Parameters per GPU follow Megatron-LM's tensor-parallel sharding exactly: the QKV and fc1
// weights and biases (column-parallel), the projection and fc2 weights (row-parallel) and the
// word embedding (vocabulary-parallel) are divided by TP; the row-parallel biases, the layernorms
// and the position embedding are replicated on every TP rank. The first pipeline stage holds the
// word and position embeddings, the last one a copy of the word embedding for the tied output
// layer (when PP > 1) and the final layernorm.
//
// Bytes per parameter (ZeRO, SC'20 §3.1, mixed-precision Adam): 2 weights + 2 gradients + 12
// optimizer (fp32 master weights, momentum, variance) for fp16/bf16, and for fp8 as well
// (Transformer-Engine keeps bf16 weights and casts to fp8 per GEMM; an approximation). For
// fp32/tf32 training: 4 weights (they are the master copy) + 4 gradients + 8 (momentum, variance).
//
// Activations: Korthikanti et al. (MLSys'23) Table 2, which assumes 16-bit activations; only the
// transformer layers are counted (the embedding's dropout mask and the output layer's logits,
// §4.3, are left out). In flight under 1F1B: min(pp − stage, m) micro-batches (Narayanan et al.
// SC'21 §2.2); under GPipe all m micro-batches.
//
// Buffers: a fixed budget of 1 GiB per GPU for the CUDA context, cuBLAS workspaces and NCCL
// buffers. It is a documented estimate, not a measurement: cuBLAS recommends a 4 MiB workspace
// per handle and stream (32 MiB on Hopper) (cuBLAS API reference, cublasSetWorkspace,
// https://docs.nvidia.com/cuda/cublas/index.html#cublassetworkspace); NCCL allocates
// NCCL_BUFFSIZE (default 4 MiB) per channel, peer and protocol for every communicator
// (NCCL environment variables, NCCL_BUFFSIZE,
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-buffsize), which with
// tens of channels and separate TP, DP and PP communicators reaches hundreds of MiB; the CUDA
// context itself takes a few hundred MiB more.
#include "models/memory_model.hpp"

#include "sim/error.hpp"

#include <algorithm>

namespace overlapsim {

namespace {

constexpr double kBuffersBytes = 1024.0 * 1024.0 * 1024.0;  // 1 GiB, see above

void validate(const ModelConfig& m, const Parallelism& p) {
  if (p.tp < 1 || p.pp < 1 || p.dp < 1)
    throw InputError(SourceLocation{}, "parallelism",
                     "expected tp, pp and dp >= 1, found tp " + std::to_string(p.tp) + ", pp " +
                         std::to_string(p.pp) + ", dp " + std::to_string(p.dp));
  if (m.layers < 1 || m.layers % p.pp != 0)
    throw InputError(SourceLocation{}, "parallelism.pp",
                     "expected a divisor of the model's " + std::to_string(m.layers) + " layers, found " +
                         std::to_string(p.pp));
  if (p.zero_stage < 0 || p.zero_stage > 3)
    throw InputError(SourceLocation{}, "parallelism.zero_stage",
                     "expected 0, 1, 2 or 3, found " + std::to_string(p.zero_stage));
  if (p.micro_batch < 1 || p.num_micro_batches() < 1)
    throw InputError(SourceLocation{}, "parallelism.global_batch",
                     "expected at least dp · micro_batch = " + std::to_string(p.sequences_per_step()) +
                         " sequences (micro_batch >= 1), found " + std::to_string(p.global_batch));
}

/// Activation bytes of one transformer layer for one micro-batch, without recomputation.
/// (With flash attention the attention core's a·s² terms are replaced by its logsumexp, header.)
double layer_activations_no_recompute(double s, double b, double h, double a, double t, bool sp, bool flash) {
  const double sbh = s * b * h;
  const double core = flash ? 4.0 * s * b * a / t : sbh * 5.0 * a * s / (h * t);
  if (sp) return sbh / t * 34.0 + core;
  return sbh * (10.0 + 24.0 / t) + core;
}

}  // namespace

double parameters_per_gpu(const ModelConfig& m, const Parallelism& p, int stage) {
  validate(m, p);
  OVERLAPSIM_CHECK(stage >= 0 && stage < p.pp, "pipeline stage out of range");
  const double h = m.hidden, f = m.ffn_hidden, t = p.tp;
  // Sharded over TP: QKV (3h² + 3h), projection weight (h²), fc1 (h·f + f), fc2 weight (f·h).
  const double sharded = 4 * h * h + 3 * h + 2 * h * f + f;
  // Replicated: projection bias (h), fc2 bias (h), two layernorms (4h).
  const double replicated = 6 * h;
  const double layers_per_stage = static_cast<double>(m.layers / p.pp);
  double n = layers_per_stage * (sharded / t + replicated);
  const double word_embedding = static_cast<double>(m.vocab) * h / t;
  if (stage == 0) n += word_embedding + static_cast<double>(m.seq_len) * h;
  if (stage == p.pp - 1) {
    if (p.pp > 1) n += word_embedding;  // tied output layer keeps its own copy on the last stage
    n += 2 * h;                         // final layernorm
  }
  return n;
}

MemoryEstimate estimate_memory(const ModelConfig& m, const Parallelism& p, int stage) {
  validate(m, p);
  OVERLAPSIM_CHECK(stage >= 0 && stage < p.pp, "pipeline stage out of range");
  MemoryEstimate e;

  // Model states.
  const double n = parameters_per_gpu(m, p, stage);
  const bool full_precision = m.dtype == DType::FP32 || m.dtype == DType::TF32;
  const double weight_b = full_precision ? 4 : 2;
  const double grad_b = full_precision ? 4 : 2;
  const double optim_b = full_precision ? 8 : 12;
  const double dp = p.dp;
  e.weights_bytes = n * weight_b / (p.zero_stage >= 3 ? dp : 1.0);
  e.gradients_bytes = n * grad_b / (p.zero_stage >= 2 ? dp : 1.0);
  e.optimizer_bytes = n * optim_b / (p.zero_stage >= 1 ? dp : 1.0);

  // Activations.
  const double s = m.seq_len, b = p.micro_batch, h = m.hidden, a = m.heads, t = p.tp;
  const double layers_per_stage = static_cast<double>(m.layers / p.pp);
  const int micro_batches = p.num_micro_batches();
  const double in_flight = p.pipeline_schedule == PipelineSchedule::OneFOneB
                               ? static_cast<double>(std::min(p.pp - stage, micro_batches))
                               : static_cast<double>(micro_batches);
  const double full_layer = layer_activations_no_recompute(s, b, h, a, t, p.sp, p.flash_attention);
  switch (p.recompute) {
    case Recompute::None:
      e.activations_bytes = layers_per_stage * full_layer * in_flight;
      break;
    case Recompute::Selective: {
      const double per_layer = p.sp ? s * b * h / t * 34.0 : s * b * h * (10.0 + 24.0 / t);
      e.activations_bytes = layers_per_stage * per_layer * in_flight;
      break;
    }
    case Recompute::Full: {
      // Each layer's input is kept (2·s·b·h bytes, sharded over TP under SP); while one layer is
      // recomputed for its backward pass its full activations live as well.
      const double per_layer = p.sp ? 2.0 * s * b * h / t : 2.0 * s * b * h;
      e.activations_bytes = layers_per_stage * per_layer * in_flight + full_layer;
      break;
    }
  }

  e.buffers_bytes = kBuffersBytes;
  if (p.zero_stage >= 3 && p.dp > 1) {
    // ZeRO-3 gathers a layer's parameters before each use, prefetching the next layer
    // (models/transformer.cpp): two layers' full TP shards are resident at a time.
    const double f = m.ffn_hidden;
    const double layer_params = (4.0 * h * h + 2.0 * h * f) / t + (9.0 * h + f) / t + 4.0 * h;
    e.buffers_bytes += 2.0 * layer_params * weight_b;
  }
  return e;
}

}  // namespace overlapsim
