// Cost model v0 (formulas in cost_model.hpp).
//
// Attention core, as Megatron-LM of SC'21 runs it (unfused: a batched GEMM QKᵀ, a fused
// scale-mask-softmax kernel, a batched GEMM with V):
// - FLOPs: forward 4·b·a·s²·d (QKᵀ and AV, 2·s²·d each per head). The causal mask is NOT
//   halved: the unfused kernels compute the full s×s score matrix and mask it afterwards, and
//   Narayanan et al.'s FLOP count (s/(6h) term) counts the full s² too. Backward = 2× forward
//   (two GEMMs per forward GEMM: the gradients of both operands). FlashAttention-2 (Dao 2023,
//   §4.1 "Benchmarking attention") counts backward as 2.5× forward because it recomputes QKᵀ in
//   the backward pass; unfused attention stores the probabilities instead, so 2× applies here.
// - Time: FLOPs / (peak · efficiency) plus the softmax's HBM traffic at
//   memory_efficiency: the s×s matrix of every head is read and written once forward (scores
//   in, probabilities out: 2·b·a·s²·sizeof(dtype) bytes) and read twice and written once backward
//   (probabilities and their gradient in, score gradient out: 3·b·a·s²·sizeof(dtype)). The GEMMs'
//   own traffic on the score matrix is taken as hidden behind their math. The efficiency is the
//   measured points' at this shape where the profile has them (attention_efficiency_at,
//   calibrate/profile_tables.hpp), else the profile's attention_efficiency. One
//   kernel_fixed_overhead_s is added for the attention core as a whole.
#include "models/cost_model.hpp"

#include "sim/error.hpp"

#include <algorithm>

namespace overlapsim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// L2 bandwidth per dense tensor FLOP: A100's L2 delivers 5120 bytes per clock (NVIDIA A100
// Tensor Core GPU Architecture whitepaper, "L2 cache") for 108 SMs × 1024 dense FP16 FMA
// (2048 FLOP) per clock: 5120 / (108 · 2048) ≈ 0.0231 B/FLOP. Taken for every GPU until a
// measured GEMM table replaces the v0 rule (Hopper's TMA multicast halves the shared operand's
// traffic, so this is conservative there).
constexpr double kL2BytesPerTensorFlop = 5120.0 / (108.0 * 2048.0);
}  // namespace

CostModel::CostModel(const DeviceSpec& device, const Profile& profile)
    : device_(device), profile_(profile) {
  OVERLAPSIM_CHECK(profile_.device.empty() || profile_.device == device_.model,
                   "calibration profile for '" + profile_.device + "' used with device '" +
                       device_.model + "'");
  OVERLAPSIM_CHECK(device_.sm_count > 0 && device_.hbm_bandwidth_Bps > 0, "device spec incomplete");
  OVERLAPSIM_CHECK(profile_.gemm_tile_m > 0 && profile_.gemm_tile_n > 0, "profile tile sizes must be positive");
}

double CostModel::gemm_time_s(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) const {
  OVERLAPSIM_CHECK(m >= 1 && n >= 1 && k >= 1 && batch >= 1, "GEMM dimensions must be >= 1");
  const uint64_t h = (static_cast<uint64_t>(m) * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(n) * 0xC2B2AE3D27D4EB4Full) ^
                     (static_cast<uint64_t>(k) * 0x165667B19E3779F9ull) ^ (static_cast<uint64_t>(batch) << 7) ^
                     static_cast<uint64_t>(dtype);
  GemmMemo& e = gemm_memo_[(h ^ (h >> 29)) % gemm_memo_.size()];
  if (e.m == m && e.n == n && e.k == k && e.batch == batch && e.dtype == dtype) return e.seconds;
  e = GemmMemo{m, n, k, batch, dtype, compute_gemm_time_s(m, n, k, dtype, batch)};
  return e.seconds;
}

double CostModel::compute_gemm_time_s(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) const {
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                       static_cast<double>(n) * static_cast<double>(k);
  const double bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n +
                        static_cast<double>(m) * n) *
                       static_cast<double>(batch) * dtype_bytes(dtype);
  const double memory_s = bytes / (device_.hbm_bandwidth_Bps * profile_.memory_efficiency);

  // A measured table (calibrate/profile_tables.hpp) replaces the v0 rule: a batch of b GEMMs is
  // looked up as one GEMM of b·M rows (the batch stacks output tiles as M does).
  if (const GemmEfficiencyTable* t = profile_.gemm_table(to_string(dtype))) {
    const double compute_s = flops / (device_.peak_flops(dtype) * t->efficiency_at(m * batch, n, k));
    return std::max(compute_s, memory_s) + profile_.kernel_fixed_overhead_s;
  }

  // cuBLAS picks a kernel per shape; model it as the best of a few output tiles, each costed by
  //  - wave quantization: each SM holds one output tile at a time, the last wave may be partial;
  //  - operand traffic: a Mt×Nt tile needs (Mt+Nt)/(Mt·Nt) bytes of operands per FLOP (fp16)
  //    from L2; where that exceeds the L2 bandwidth per tensor FLOP, the tile runs at the ratio.
  // The profile's tile (gemm_tile_m × gemm_tile_n, the large-GEMM kernel) comes first.
  const int64_t tiles_mn[][2] = {{profile_.gemm_tile_m, profile_.gemm_tile_n}, {128, 128}, {128, 64}, {64, 128},
                                 {64, 64}};
  const int64_t sms = device_.sm_count;
  double best = 0;
  for (const auto& t : tiles_mn) {
    const int64_t tiles = batch * ceil_div(m, t[0]) * ceil_div(n, t[1]);
    const int64_t waves = ceil_div(tiles, sms);
    const double wave_efficiency = static_cast<double>(tiles) / static_cast<double>(waves * sms);
    const double need = static_cast<double>(t[0] + t[1]) / static_cast<double>(t[0] * t[1]);  // B per FLOP, fp16
    const double tile_efficiency = std::min(1.0, kL2BytesPerTensorFlop / need);
    best = std::max(best, wave_efficiency * tile_efficiency);
  }
  const double compute_s = flops / (device_.peak_flops(dtype) * profile_.gemm_max_efficiency * best);
  return std::max(compute_s, memory_s) + profile_.kernel_fixed_overhead_s;
}

double CostModel::memory_bound_time_s(double bytes) const {
  OVERLAPSIM_CHECK(bytes >= 0, "byte count must be >= 0");
  return bytes / (device_.hbm_bandwidth_Bps * profile_.memory_efficiency) +
         profile_.kernel_fixed_overhead_s;
}

double CostModel::attention_time_s(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                                   DType dtype, bool backward) const {
  OVERLAPSIM_CHECK(batch >= 1 && heads >= 1 && seq >= 1 && head_dim >= 1,
                   "attention dimensions must be >= 1");
  const double score_elements = static_cast<double>(batch) * static_cast<double>(heads) *
                                static_cast<double>(seq) * static_cast<double>(seq);
  const double forward_flops = 4.0 * score_elements * static_cast<double>(head_dim);
  const double flops = backward ? 2.0 * forward_flops : forward_flops;
  // Measured points (a calibrated profile) give the efficiency at this shape; else the profile's one.
  const double at_shape = attention_efficiency_at(profile_.attention_points, batch * heads, seq, head_dim);
  const double efficiency = at_shape > 0 ? at_shape : profile_.attention_efficiency;
  const double compute_s = flops / (device_.peak_flops(dtype) * efficiency);

  const double softmax_accesses = backward ? 3.0 : 2.0;
  const double softmax_bytes = softmax_accesses * score_elements * dtype_bytes(dtype);
  const double softmax_s = softmax_bytes / (device_.hbm_bandwidth_Bps * profile_.memory_efficiency);
  return compute_s + softmax_s + profile_.kernel_fixed_overhead_s;
}

}  // namespace overlapsim
