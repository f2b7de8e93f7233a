// Closed-form FLOP counts of one training iteration.
#pragma once

#include "models/model_config.hpp"

namespace overlapsim {

/// FLOPs per iteration as Narayanan et al. (SC'21, §5.1, eq. 3) count them, *including* the
/// recomputed forward pass of full activation recomputation:
///   F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)),  B = global batch (sequences).
/// This is the numerator of the paper's "TFLOP/s per GPU". Assumes ffn_hidden = 4h.
double narayanan_flops(const ModelConfig& m, int global_batch);

/// Model FLOPs per iteration (no recomputation): 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) in
/// the same notation — the numerator of MFU (Chowdhery et al., PaLM, App. B; Korthikanti et al.).
double model_flops(const ModelConfig& m, int global_batch);

}  // namespace overlapsim
