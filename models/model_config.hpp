// What is trained: a GPT-style decoder-only transformer, and how it is laid out over GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim {

enum class DType { FP32, TF32, FP16, BF16, FP8 };
const char* to_string(DType d);
/// Bytes per element: 4, 4, 2, 2, 1.
int dtype_bytes(DType d);

/// Hyper-parameters of a decoder-only transformer (GPT-3 / Megatron-LM style).
struct ModelConfig {
  std::string name;
  int layers = 0;
  int hidden = 0;      ///< h
  int heads = 0;       ///< a (attention heads); head_dim = hidden / heads
  int ffn_hidden = 0;  ///< usually 4h
  int seq_len = 0;     ///< s, tokens
  int vocab = 0;       ///< V (padded as the source states)
  DType dtype = DType::FP16;
  /// Exact parameter count of a GPT decoder with learned positional embeddings, biases
  /// everywhere and the output layer tied to the word embedding (f = ffn_hidden):
  ///   per layer  4h² + 4h        attention QKV + output projection, weights and biases
  ///            + 2·h·f + f + h   MLP fc1 (h×f + f) and fc2 (f×h + h)
  ///            + 4h              two layernorms (scale and shift)
  ///   total      l·(4h² + 2·h·f + f + 9h) + V·h + s·h + 2h   (word and position embeddings,
  ///              final layernorm).
  /// With f = 4h this is 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)) + 2h, the count of Narayanan
  /// et al. (SC'21, §5.1) plus the final layernorm they leave out.
  double parameters() const;
};

/// A preset by name ("gpt3-175b", "megatron-1.7b", "megatron-18.4b", "megatron-145.6b", ...).
/// Throws InputError listing the known names when the name is unknown.
const ModelConfig& model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

enum class Recompute { None, Selective, Full };
enum class PipelineSchedule { OneFOneB, GPipe };
const char* to_string(Recompute r);

/// The parallel layout (Megatron-LM terms). world = tp · pp · dp.
/// Rank order is Megatron's: TP innermost, then DP, then PP:
///   rank = tp_index + tp · (dp_index + dp · pp_index).
struct Parallelism {
  int tp = 1, pp = 1, dp = 1;
  bool sp = false;           ///< sequence parallelism (TP AllReduce ⇒ AllGather + ReduceScatter)
  int micro_batch = 1;       ///< sequences per micro-batch
  int global_batch = 1;      ///< sequences per iteration, over all DP replicas
  PipelineSchedule pipeline_schedule = PipelineSchedule::OneFOneB;
  int zero_stage = 0;        ///< 0, 1, 2 or 3 (ZeRO, Rajbhandari et al. SC'20)
  Recompute recompute = Recompute::None;
  // Training-loop choices of Megatron-LM that decide what the `megatron` baseline overlaps and
  // which kernels it runs. Defaults are today's; the SC'21 code (Megatron-LM v2, 2021) had none
  // of the three: it all-reduced gradients after the last micro-batch's backward, reduced TP
  // input gradients synchronously, and ran attention unfused (baddbmm, fused scale-mask-softmax,
  // dropout, bmm).
  bool overlap_grad_reduce = true;  ///< Megatron-LM --overlap-grad-reduce: DP buckets overlap backward
  /// Megatron-LM's DistributedDataParallelConfig.average_in_collective (default false: gradients
  /// are scaled before a summing collective): the DP gradient reductions average in NCCL
  /// (ReduceOp::Avg), so NCCL's PAT does not run their ReduceScatter (collective_plan.hpp, PAT).
  bool average_in_collective = false;
  bool async_tp_reduce = true;      ///< --async-tensor-model-parallel-allreduce: dgrad reduction beside wgrad
  bool flash_attention = true;      ///< --use-flash-attn: one fused attention kernel (FlashAttention-2)

  int world() const { return tp * pp * dp; }
  /// Sequences one step of the pipelines takes: dp · micro_batch (64-bit: each may be up to 2^30).
  int64_t sequences_per_step() const { return static_cast<int64_t>(dp) * micro_batch; }
  /// Micro-batches per iteration per pipeline: global_batch / (dp · micro_batch) (0 where that
  /// exceeds global_batch; REQUIRES dp, micro_batch >= 1).
  int num_micro_batches() const { return static_cast<int>(global_batch / sequences_per_step()); }
  int tp_index(int rank) const { return rank % tp; }
  int dp_index(int rank) const { return (rank / tp) % dp; }
  int pp_index(int rank) const { return rank / (tp * dp); }
  int rank_of(int tp_i, int dp_i, int pp_i) const { return tp_i + tp * (dp_i + dp * pp_i); }
};

}  // namespace overlapsim
