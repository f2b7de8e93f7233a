// What the calibration harness measures: the shape grids, as plain C++ (standard library only).
//
// This header is compiled twice: into the CUDA harness (calibrate/harness/, which must build on a
// GPU machine with nothing but CUDA, cuBLASLt, NCCL and the C++ standard library) and into the
// CPU test binary (tests/calibrate_test.cpp), which checks the grids without a GPU. The fitting
// side (calibrate/fit.cpp) reads the same axes back from the raw measurements, so it does not
// depend on this header's constants.
//
// GEMM grid. C[M×N] = A[M×K]·B[K×N]. In Megatron-style tensor parallelism with TP degree t,
// hidden size h and T tokens per micro-batch (T = micro_batch · seq_len, divided by the chunk
// count when a strategy chunks the GEMM), a transformer layer's GEMMs are
//   QKV  (T, 3h/t, h)     attention output projection  (T, h, h/t)
//   FC1  (T, 4h/t, h)     FC2                          (T, h, 4h/t)
// and the backward pass adds the same shapes with the roles of N and K exchanged (dgrad) and
// with M = h-sized and K = T (wgrad). For h ∈ [2048, 16384] and t ∈ {1, ..., 8}, every N and K
// lies in [256, 65536] and, with chunking into up to 8 pieces, T in [128, 32768]. The grid is the
// tensor product of three power-of-two axes over those ranges, so that the fitted efficiency
// table can be interpolated (trilinearly in log2 M, log2 N, log2 K; calibrate/profile.hpp).
// Key shapes (the four GEMMs of GPT-3 175B at TP 8 and of Llama-3-70B-like h = 8192 at TP 4,
// 2048 tokens, unchunked and chunked 4 ways) are measured as well: they are the summary's
// headline numbers and a check of the interpolation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim::harness {

/// One GEMM problem: C[m×n] = A[m×k]·B[k×n], all >= 1.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  std::string label;  ///< e.g. "gpt3-175b tp8 fc1" for key shapes; empty on the grid
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

inline bool operator==(const GemmShape& a, const GemmShape& b) { return a.m == b.m && a.n == b.n && a.k == b.k; }

/// The three axes of the GEMM grid (ascending powers of two).
struct GemmAxes {
  std::vector<int64_t> m, n, k;
};

/// Powers of two from `lo` to `hi` inclusive (both powers of two, lo <= hi).
inline std::vector<int64_t> powers_of_two(int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t v = lo; v <= hi; v *= 2) out.push_back(v);
  return out;
}

/// Axes of the GEMM grid. Full: M 128..16384 (8 values), N and K 256..32768 (8 values each),
/// 512 shapes. Quick: M 256..16384 by factors of 4, N and K 1024..16384 by factors of 2 less
/// the 2048 point, 4×4×4 = 64 shapes (the quick mode must finish in minutes on one GPU).
inline GemmAxes gemm_axes(bool quick) {
  GemmAxes a;
  if (quick) {
    a.m = {256, 1024, 4096, 16384};
    a.n = {1024, 4096, 8192, 16384};
    a.k = {1024, 4096, 8192, 16384};
  } else {
    a.m = powers_of_two(128, 16384);
    a.n = powers_of_two(256, 32768);
    a.k = powers_of_two(256, 32768);
  }
  return a;
}

/// The tensor product of the axes, M slowest, K fastest.
inline std::vector<GemmShape> gemm_grid(const GemmAxes& axes) {
  std::vector<GemmShape> out;
  out.reserve(axes.m.size() * axes.n.size() * axes.k.size());
  for (int64_t m : axes.m)
    for (int64_t n : axes.n)
      for (int64_t k : axes.k) out.push_back(GemmShape{m, n, k, ""});
  return out;
}

/// The forward GEMMs of one transformer layer under TP degree `tp` for `tokens` tokens split into
/// `chunks` pieces. REQUIRES: hidden and ffn_hidden divisible by tp, tokens by chunks.
inline std::vector<GemmShape> transformer_layer_gemms(const std::string& name, int64_t hidden, int64_t ffn_hidden,
                                                      int64_t tp, int64_t tokens, int64_t chunks) {
  const int64_t t = tokens / chunks;
  const std::string p = name + " tp" + std::to_string(tp) + (chunks > 1 ? " chunk" + std::to_string(chunks) : "") + " ";
  return {
      GemmShape{t, 3 * hidden / tp, hidden, p + "qkv"},
      GemmShape{t, hidden, hidden / tp, p + "proj"},
      GemmShape{t, ffn_hidden / tp, hidden, p + "fc1"},
      GemmShape{t, hidden, ffn_hidden / tp, p + "fc2"},
  };
}

/// Key shapes: GPT-3 175B (h 12288, FFN 49152) at TP 8 and an h = 8192, FFN 28672 model
/// (Llama-3-70B's sizes) at TP 4, 2048 tokens; unchunked, and chunked 4 ways in the full mode.
inline std::vector<GemmShape> key_gemm_shapes(bool quick) {
  std::vector<GemmShape> out = transformer_layer_gemms("gpt3-175b", 12288, 49152, 8, 2048, 1);
  auto add = [&](std::vector<GemmShape> v) { out.insert(out.end(), v.begin(), v.end()); };
  add(transformer_layer_gemms("h8192", 8192, 28672, 4, 2048, 1));
  if (!quick) {
    add(transformer_layer_gemms("gpt3-175b", 12288, 49152, 8, 2048, 4));
    add(transformer_layer_gemms("h8192", 8192, 28672, 4, 2048, 4));
  }
  return out;
}

/// Element counts of the memory-bound kernels: powers of 4 from 2^16 to 2^28 (quick: 2^20 to 2^28
/// by 16×), so that the largest buffers (2^28 two-byte elements = 512 MiB) are far beyond L2.
inline std::vector<int64_t> memory_sizes(bool quick) {
  std::vector<int64_t> out;
  const int64_t lo = quick ? (int64_t{1} << 20) : (int64_t{1} << 16);
  const int64_t step = quick ? 16 : 4;
  for (int64_t v = lo; v <= (int64_t{1} << 28); v *= step) out.push_back(v);
  return out;
}

/// One attention problem: `batch` sequences of `heads` heads, seq×seq scores, head_dim each.
struct AttentionShape {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  /// Forward FLOPs of the unfused core: QKᵀ and P·V, 2·s²·d each per head.
  double flops() const {
    return 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq) *
           static_cast<double>(seq) * static_cast<double>(head_dim);
  }
};

/// Attention grid: seq ∈ {512, 1024, 2048, 4096} (quick: {1024, 4096}), heads per GPU ∈ {8, 16,
/// 32} (quick: {16}), head_dim ∈ {64, 128} (quick: {128}), batch 1 (heads and batch play the
/// same role in a batched GEMM).
inline std::vector<AttentionShape> attention_grid(bool quick) {
  const std::vector<int64_t> seqs = quick ? std::vector<int64_t>{1024, 4096} : std::vector<int64_t>{512, 1024, 2048, 4096};
  const std::vector<int64_t> heads = quick ? std::vector<int64_t>{16} : std::vector<int64_t>{8, 16, 32};
  const std::vector<int64_t> dims = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{64, 128};
  std::vector<AttentionShape> out;
  for (int64_t s : seqs)
    for (int64_t h : heads)
      for (int64_t d : dims) out.push_back(AttentionShape{1, h, s, d});
  return out;
}

/// Collective message sizes (nccl-tests' "size" column, bytes): 8 B ... max by factors of
/// `factor`. Full: 8 B to 4 GiB by 2; quick: 1 KiB to 256 MiB by 4.
inline std::vector<int64_t> collective_sizes(bool quick) {
  std::vector<int64_t> out;
  const int64_t lo = quick ? 1024 : 8;
  const int64_t hi = quick ? (int64_t{256} << 20) : (int64_t{4} << 30);
  const int64_t f = quick ? 4 : 2;
  for (int64_t v = lo; v <= hi; v *= f) out.push_back(v);
  return out;
}

/// Group sizes for the collectives on a machine with `gpus` GPUs: 2, 4, 8, ... up to gpus, and
/// gpus itself when it is not a power of two. Empty for fewer than 2 GPUs.
inline std::vector<int> collective_group_sizes(int gpus) {
  std::vector<int> out;
  for (int g = 2; g <= gpus; g *= 2) out.push_back(g);
  if (gpus >= 2 && (out.empty() || out.back() != gpus)) out.push_back(gpus);
  return out;
}

/// SM counts the interference companion (copy kernel or NCCL kernel) occupies: 1, 2, 4, 8, 16,
/// 32 (quick: 2, 8, 32), never more than half the GPU's SMs.
inline std::vector<int> interference_sm_counts(int sm_count, bool quick) {
  const std::vector<int> all = quick ? std::vector<int>{2, 8, 32} : std::vector<int>{1, 2, 4, 8, 16, 32};
  std::vector<int> out;
  for (int s : all)
    if (s <= sm_count / 2) out.push_back(s);
  return out;
}

}  // namespace overlapsim::harness
