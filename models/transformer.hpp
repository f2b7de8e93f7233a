// Workload builder: one training iteration of a GPT-style decoder as a per-rank op program
// (sim/schedule.hpp), in the order Megatron-LM issues it (Shoeybi et al. 2019 §3; Narayanan et
// al. SC'21 §2–3; Korthikanti et al. MLSys'23 §4 for sequence parallelism).
//
// Per transformer layer and micro-batch of T = micro_batch · seq tokens on a rank of a TP group
// of size t (h hidden, f ffn_hidden, a heads):
//   forward:  LN1 → [SP: AllGather T·h] → QKV GEMM (T × 3h/t × h) → attention core (a/t heads;
//             one FlashAttention kernel, or Megatron's unfused scores GEMM, softmax, dropout, context GEMM)
//             → proj GEMM (T × h × h/t) → [SP: ReduceScatter | AllReduce] T·h → dropout+residual
//             → LN2 → [SP: AllGather] → FC1 GEMM (T × f/t × h) → GeLU → FC2 GEMM (T × h × f/t)
//             → [SP: ReduceScatter | AllReduce] → dropout+residual
//   backward: the reverse; each GEMM as a dgrad and a wgrad GEMM; the row-parallel GEMMs' input
//             gradient needs [SP: AllGather] before it; the column-parallel GEMMs' input gradient
//             is reduced ([SP: ReduceScatter | AllReduce]) while the wgrad GEMM may run (Megatron's
//             asynchronous TP all-reduce); with SP the wgrad needs the LayerNorm output gathered
//             again (an AllGather issued before the dgrad GEMM).
//   recompute: full — the layer's forward (with its collectives) rerun before its backward;
//             selective — the attention core rerun.
// First stage: embedding lookup and its TP AllReduce (ReduceScatter with SP). Last stage: final
// LayerNorm, logits GEMM (T × V/t × h), vocab-parallel cross entropy (three small AllReduces),
// and their backward. Between stages: activations (T·h/t bytes·sizeof(dtype): the [s/t, b, h] shard
// with SP, Megatron's scatter-gather optimisation without) sent forward and gradients back, under
// 1F1B or GPipe order.
// After the last micro-batch: data-parallel gradient reduction in buckets of at least 40 M
// parameters (Megatron-core's default, max(4e7, 1e6·dp)), AllReduce or (ZeRO ≥ 1) ReduceScatter;
// the tied-embedding gradient AllReduce between first and last stage; the Adam step on the local
// (ZeRO-sharded) parameters; and with ZeRO ≥ 1 the parameter AllGather.
//
// Element types (Op::datatype, which NCCL's NVLS and fp8 rules read): activations in the model's
// dtype (FP32/TF32 float, FP16 half, BF16 bfloat16, FP8 e4m3); parameters and their gradients
// the same, except that FP8 models keep them in BF16 (2 bytes); the cross-entropy reductions in
// float (a Max, then two Sums).
//
// Ops are emitted with their data dependencies only; every op is on stream 0 and carries the
// `stream hint` a strategy may use to let it overlap (see sim/strategy.hpp).
#pragma once

#include "models/cost_model.hpp"
#include "models/model_config.hpp"
#include "sim/schedule.hpp"

#include <vector>

namespace overlapsim {

/// Streams of the programs the builder emits, before any strategy moves ops.
enum StreamId : int16_t { kComputeStream = 0, kTpCommStream = 1, kDpCommStream = 2, kP2PStream = 3, kNumStreams = 4 };

/// Which ranks to simulate: representatives (TP index 0 of DP replica 0, every pipeline stage —
/// exact on a symmetric machine, design §9) or every rank.
enum class Folding { Representatives, None };

/// Builds the iteration. Throws InputError when the layout does not fit the model: heads,
/// hidden, ffn_hidden or vocab not divisible by tp; layers not divisible by pp; global_batch
/// not divisible by dp · micro_batch.
Schedule build_iteration(const ModelConfig& model, const Parallelism& par, const CostModel& cost,
                         Folding folding = Folding::Representatives);

/// Checks the divisibility rules above; throws InputError naming the parallelism key.
void check_layout(const ModelConfig& model, const Parallelism& par);

/// Global ranks a folded schedule simulates, and how many real ranks each stands for.
std::vector<int> representative_ranks(const Parallelism& par);

}  // namespace overlapsim
