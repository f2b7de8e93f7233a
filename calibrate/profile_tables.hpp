// The measured tables of a calibration profile (schema version 2, calibrate/README.md): GEMM
// efficiency over shapes, memory-bound bandwidth over sizes, attention efficiency, collective
// α / bus-bandwidth fits, SM interference. Datasheet (version-1) profiles have none of them; the
// cost models then use the scalar efficiencies of Profile.
//
// GEMM interpolation rule. A table holds, for one dtype, the efficiency e = achieved FLOP/s /
// dense peak at every point of a grid M × N × K (ascending axes). Between grid points e is
// interpolated trilinearly in (log2 M, log2 N, log2 K); outside the grid each coordinate is
// clamped to the nearest axis end (efficiency is taken as flat beyond the measured range; the
// cost model's memory-bound floor still applies to small GEMMs).
//
// Collective model (nccl-tests' terms, NVIDIA/nccl-tests doc/PERFORMANCE.md): for a message of
// S bytes (nccl-tests' "size" column) on n ranks,
//   t(S) = α + S · f(n) / busbw,   f = 2(n−1)/n AllReduce; (n−1)/n AllGather, ReduceScatter,
//                                  AllToAll; 1 Broadcast, Reduce, SendRecv
// so busbw is the bandwidth a link must carry for large messages and α the per-call latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim {

/// GEMM efficiency over a shape grid, one dtype.
struct GemmEfficiencyTable {
  std::string dtype;                ///< "fp16", "bf16" or "fp8"
  double peak_flops = 0;            ///< dense peak the efficiencies are relative to, FLOP/s
  std::vector<int64_t> m, n, k;     ///< axes, ascending, >= 1
  /// efficiency[(i · n.size() + j) · k.size() + l] at (m[i], n[j], k[l]), in (0, 1]
  std::vector<double> efficiency;

  double at(std::size_t i, std::size_t j, std::size_t l) const { return efficiency[(i * n.size() + j) * k.size() + l]; }
  /// Interpolated efficiency (rule above). REQUIRES: non-empty axes, m_, n_, k_ >= 1.
  double efficiency_at(int64_t m_, int64_t n_, int64_t k_) const;
};

/// A GEMM measured outside the grid (the harness's key transformer shapes), kept to show how
/// well the table interpolates.
struct GemmKeyShape {
  std::string label;                ///< e.g. "gpt3-175b tp8 fc1"
  std::string dtype;
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 0;            ///< measured
  double interpolated = 0;          ///< the table's value at the same shape
};

/// A memory-bound kernel's achieved bandwidth at one size.
struct MemoryPoint {
  std::string kernel;               ///< "copy", "add", "layernorm", "softmax"
  double bytes = 0;                 ///< HBM bytes read + written
  double bandwidth_Bps = 0;         ///< bytes / median time
};

/// The unfused attention core at one shape.
struct AttentionPoint {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  double time_s = 0;                ///< median, QKᵀ + softmax + PV
  double efficiency = 0;            ///< GEMM FLOPs / (peak · (QKᵀ time + PV time))
};

/// Attention efficiency at a shape from measured points (the harness's grid: seq × heads ×
/// head_dim, batch 1): among the points of the measured head_dim nearest `head_dim` (in log2; a tie
/// takes the larger), bilinear in (log2 batch·heads, log2 seq), each coordinate clamped to the
/// measured range (flat beyond it, as the GEMM table). Batch and heads enter only as their product:
/// both stack independent s×s problems in one batched GEMM. Returns 0 when `points` is empty or
/// the chosen head_dim's points are not a full (batch·heads) × seq grid with one point per cell;
/// the caller then keeps the profile's single efficiency. REQUIRES: batch_heads, seq, head_dim >= 1.
double attention_efficiency_at(const std::vector<AttentionPoint>& points, int64_t batch_heads, int64_t seq,
                               int64_t head_dim);

/// One measured (size, time) point of a collective.
struct CollectivePoint {
  double size_bytes = 0;            ///< nccl-tests' size column
  double time_s = 0;
  double busbw_Bps = 0;             ///< S · f(n) / t
};

/// α and bus bandwidth of one collective on one group shape.
struct CollectiveFit {
  std::string collective;           ///< all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv
  int ranks = 0;                    ///< group size n
  int nodes = 1;                    ///< hosts the group spans
  std::string algorithm = "auto";   ///< NCCL_ALGO seen ("auto": NCCL's own choice)
  std::string protocol = "auto";    ///< NCCL_PROTO seen
  /// NCCL_COLLNET_ENABLE the points ran with: set nonzero in the log, or implied by the one
  /// algorithm it forced (CollNetDirect, CollNetChain, an AllReduce's NVLS across nodes); JSON
  /// "collnet_enable", absent = false. A fit times only collectives of the same setting.
  bool collnet_enable = false;
  double alpha_s = 0;               ///< latency per call, seconds
  double busbw_Bps = 0;             ///< bus bandwidth, bytes/s
  double max_relative_error = 0;    ///< of the fit over the points
  std::vector<CollectivePoint> points;
  std::string source;               ///< where the points came from (log file, harness run)

  /// Time of one call on S bytes under the fitted model.
  double time_s(double size_bytes) const;
};

/// Compute slowdown while a companion kernel occupies num_sm SMs.
struct InterferencePoint {
  std::string companion;            ///< "copy" (SM-limited copy kernel) or "nccl_all_reduce"
  int num_sm = 0;
  double compute_slowdown = 1;      ///< GEMM time beside the companion / GEMM time alone, >= ~1
  double companion_bandwidth_Bps = 0;  ///< the companion's own throughput meanwhile (0: unknown)
};

/// NCCL-tests' bus-bandwidth factor f(n) for a collective (see above). Throws InputError for an
/// unknown collective name.
double bus_factor(const std::string& collective, int ranks);

/// The collective names above, in a fixed order.
const std::vector<std::string>& collective_names();

/// The coefficient I of the replay's SM-interference model (sim/replay.hpp: while communication
/// kernels hold k of the GPU's S SMs, compute runs at 1 − I·k/S of its speed) that best fits the
/// measured slowdowns s of `companion`: least squares through the origin of y = 1 − 1/s against
/// x = k/S, I = Σxy / Σx². 0 when there is no point for that companion.
/// REQUIRES: sm_count >= 1.
double fit_sm_interference(const std::vector<InterferencePoint>& points, const std::string& companion, int sm_count);

/// Interpolates the slowdown at `num_sm` linearly between measured SM counts of `companion`
/// (clamped at the ends); 1 when there is no point for that companion.
double interference_slowdown(const std::vector<InterferencePoint>& points, const std::string& companion, int num_sm);

}  // namespace overlapsim
