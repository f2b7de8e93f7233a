// Peak memory per GPU of one training iteration, in bytes.
//
// Model states (Rajbhandari et al., ZeRO, SC'20 §3.1): mixed-precision Adam keeps 2 bytes of
// fp16/bf16 weights, 2 of gradients and 12 of optimizer state (fp32 master, momentum, variance)
// per parameter; ZeRO stage 1 shards the 12 over DP, stage 2 also the gradients, stage 3 also
// the weights.
// Activations (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
// Models", MLSys'23, §4, Table 2), bytes per layer per micro-batch with s sequence, b micro-batch,
// h hidden, a heads, t TP:
//   no recompute, TP without SP: s·b·h·(10 + 24/t + 5·a·s/(h·t));
//   TP + SP: s·b·h/t·(34 + 5·a·s/h); selective recompute + SP: s·b·h/t·34;
//   full recompute: 2·s·b·h per layer (its input; /t with SP) plus one layer's full activations.
// With fused (flash) attention the 5·a·s/h terms (the a·s² softmax input and output and dropout
// mask of the unfused attention core) are not kept: the kernel keeps its output, counted in the
// rest, and one fp32 logsumexp per row and head, 4·s·b·a/t bytes (Dao, FlashAttention-2, 2023,
// §3.1.2; Korthikanti's selective recomputation drops the same terms by recomputing them).
// Under 1F1B (Narayanan et al. SC'21 §2.2) stage i of p keeps min(p − i, m) micro-batches in flight.
#pragma once

#include "models/model_config.hpp"

namespace overlapsim {

struct MemoryEstimate {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double buffers_bytes = 0;      ///< communication buffers and workspace
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes;
  }
};

/// Parameters held by one GPU of pipeline stage `stage` (layers split evenly, embedding on the
/// first stage, the output layer sharing it on the last), divided over TP.
double parameters_per_gpu(const ModelConfig& m, const Parallelism& p, int stage);

/// Peak memory of a GPU of pipeline stage `stage` (0-based). REQUIRES: 0 <= stage < p.pp.
MemoryEstimate estimate_memory(const ModelConfig& m, const Parallelism& p, int stage);

}  // namespace overlapsim
