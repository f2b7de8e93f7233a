// Closed-form FLOP counts of one training iteration (formulas and sources in flops.hpp).
//
// Both count the dense GEMMs of a GPT decoder with ffn_hidden = 4h: a forward pass of one layer
// over B·s tokens is 24·B·s·h² (QKV, projection, two MLP GEMMs) + 4·B·s²·h (QKᵀ and AV, full
// s×s, no causal halving), i.e. 24·B·s·h²·(1 + s/(6h)); the logit layer is 2·B·s·h·V.
// Backward costs twice the forward. Narayanan's count adds one recomputed forward of the layers
// (4 forward-equivalents: 96 = 4·24) but not of the logit layer (3·2·B·s·h·V = 96·B·s·l·h² ·
// V/(16·l·h)); the model FLOPs leave the recomputation out (72 = 3·24).
#include "models/flops.hpp"

namespace overlapsim {

double narayanan_flops(const ModelConfig& m, int global_batch) {
  const double B = global_batch, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double model_flops(const ModelConfig& m, int global_batch) {
  const double B = global_batch, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

}  // namespace overlapsim
