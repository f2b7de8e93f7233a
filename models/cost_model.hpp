// Cost model v0: stand-alone time of each kernel on one GPU, from the device's datasheet and a
// calibration profile.
//
// GEMM (C[M×N] = A[M×K]·B[K×N], batch b, dtype d):
//   t = max(2·b·M·N·K / (peak(d) · e_max · e_kernel), bytes / (HBM · e_mem)) + t_fixed
//   e_kernel = max over output tiles Mt×Nt ∈ {profile tile, 128×128, 128×64, 64×128, 64×64} of
//              e_wave · e_tile (cuBLAS picks a kernel per shape):
//   e_wave = tiles / (ceil(tiles / SMs) · SMs), tiles = b·ceil(M/Mt)·ceil(N/Nt)
//   (wave quantization: NVIDIA, "Matrix Multiplication Background User's Guide", §"Wave
//   quantization"); e_tile = min(1, L2 bytes per tensor FLOP / ((Mt+Nt)/(Mt·Nt))) — a small tile
//   re-reads its operands more often than L2 can feed them (A100 whitepaper's 5120 B/clk L2);
//   bytes = (M·K + K·N + M·N)·b·sizeof(d).
// With a measured GEMM table in the profile (version 2, calibrate/profile_tables.hpp), the
// compute term uses the table's interpolated efficiency at (b·M, N, K) instead of
// e_max · e_wave.
// Memory-bound kernel moving `bytes` through HBM: t = bytes / (HBM · e_mem) + t_fixed.
// Attention core (softmax(QKᵀ)V of b·heads heads, s×s, head_dim): 4·b·heads·s²·head_dim FLOPs
// forward (2× backward) at peak · e_attn, plus the softmax's memory traffic.
// Every kernel launch costs the host `launch_overhead_s`; a kernel cannot be shorter than that
// when the GPU is waiting for launches (see replay.hpp).
#pragma once

#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"

#include <array>
#include <cstdint>

namespace overlapsim {

class CostModel {
 public:
  /// REQUIRES: profile.device == device.model (or the profile is generic). Copies both.
  CostModel(const DeviceSpec& device, const Profile& profile);

  /// Seconds for a (batched) GEMM; m, n, k, batch >= 1. A workload asks for a few shapes tens of
  /// thousands of times (GPT-3 on PP 8: 31,185 calls for 8 layer shapes per sample), so the
  /// last shapes are remembered (a direct-mapped memo of 64 entries, same result bit for bit).
  double gemm_time_s(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch = 1) const;
  /// Seconds for a memory-bound kernel reading+writing `bytes` bytes of HBM in total.
  double memory_bound_time_s(double bytes) const;
  /// Seconds for the attention core of `batch` sequences, forward (backward = false) or backward;
  /// at the measured efficiency for this shape where the profile has attention points (cost_model.cpp).
  double attention_time_s(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim, DType dtype,
                          bool backward) const;
  /// Seconds of host time per kernel launch.
  double launch_overhead_s() const { return profile_.launch_overhead_s; }

  const DeviceSpec& device() const { return device_; }
  const Profile& profile() const { return profile_; }

 private:
  double compute_gemm_time_s(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) const;

  struct GemmMemo {
    int64_t m = 0, n = 0, k = 0, batch = 0;  ///< m == 0: empty
    DType dtype{};
    double seconds = 0;
  };
  DeviceSpec device_;
  Profile profile_;
  mutable std::array<GemmMemo, 64> gemm_memo_{};
};

}  // namespace overlapsim
