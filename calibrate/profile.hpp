// Calibration profile: the measured (or datasheet) numbers the cost models read.
//
// JSON, versioned (schema "overlapsim-profile"). Written by `overlapsim calibrate` (fitted from
// the harness's raw measurements), by `overlapsim calibrate import-nccl-tests`, or by hand from
// datasheets; every section records where its numbers came from. A datasheet profile per device
// ships in calibrate/profiles/. calibrate/README.md documents every key and unit.
//
// Version 1 (units in the key names):
//   schema, version, device (catalog key), provenance {kind: datasheet|measured|imported,
//   source, date, ...}, gemm {max_efficiency, tile_m, tile_n, source}, memory {efficiency, source},
//   kernel {launch_overhead_s, fixed_overhead_s, source},
//   network {nvlink_efficiency, network_efficiency, pcie_efficiency, [simple_slice_nvlink_s],
//   [ll128_step_nvlink_s], [ll128_busbw_nvlink_Bps], [nvls_loop_s], [p2p_channel_nvlink_Bps],
//   [p2p_round_s], source}, attention {efficiency, source}.
// Version 2 = version 1 plus optional measured tables (profile_tables.hpp):
//   gemm.tables [{dtype, peak_flops, m, n, k, efficiency[m][n][k]}], gemm.key_shapes,
//   memory.hbm_bandwidth_Bps, memory.points, attention.points,
//   collectives {source, fits [{collective, ranks, nodes, algorithm, protocol, [collnet_enable],
//   alpha_s, busbw_Bps, max_relative_error, source, points [{size_bytes, time_s, busbw_Bps}]}]},
//   interference {source, gemm ("bf16 8192x8192x8192"), sm_interference, points [{companion, num_sm, compute_slowdown,
//   companion_bandwidth_Bps}]}.
// Either version, optionally: tuning {source, rules [{collective, ranks, nodes, max_bytes,
//   algorithm, protocol}]}: measured algorithm/protocol choices (sim/nccl_tuning.hpp TuningRule).
//   collective: all_reduce, all_gather, reduce_scatter, broadcast or reduce (allreduce,
//   allgather, reducescatter also read); ranks, nodes (optional, default: any): an integer or
//   an inclusive range [lo, hi] of group sizes / node counts, lo >= 1; max_bytes: the largest
//   size (bytes, NCCL's nBytes: the larger buffer) the rule covers, > 0; algorithm: "ring",
//   "tree", "nvls", "nvlstree", "collnet_direct", "collnet_chain" or "pat" (tree, nvlstree and
//   collnet only for all_reduce, nvls for all_reduce, all_gather and reduce_scatter, pat for the
//   last two; all but ring and tree with Simple only; a rule's choice that cannot run here, e.g.
//   CollNet without NCCL_COLLNET_ENABLE, leaves the choice to the model);
//   protocol: "LL", "LL128" or "Simple" (any case). Of the
//   rules covering a collective, the one of least max_bytes applies; none: the model chooses.
// Both versions load; unknown keys inside a known section are errors, unknown top-level
// sections are ignored (they belong to other readers) unless within two edits of one of these
// names (a typo: an error), and collectives/interference in a version-1 profile are errors.
#pragma once

#include "calibrate/profile_tables.hpp"
#include "sim/nccl_tuning.hpp"

#include <map>
#include <string>
#include <vector>

namespace overlapsim {

struct Profile {
  std::string path;                 ///< file it was loaded from
  int version = 1;                  ///< schema version the file had (written profiles are version 2)
  std::string device;               ///< device-catalog key
  std::string provenance_kind;      ///< "datasheet", "measured" or "imported"
  std::string provenance_source;    ///< one line: where the numbers came from
  std::string provenance_date;      ///< ISO date, may be empty
  /// Other provenance keys, written back as strings: gpu, driver, cuda, nccl, host, harness, raw, logs.
  std::map<std::string, std::string> provenance_extra;

  // GEMM on tensor cores: achieved = peak · max_efficiency · wave_efficiency(M, N) (see cost_model.hpp)
  double gemm_max_efficiency = 0.8;  ///< fraction of dense peak reached by large GEMMs
  int gemm_tile_m = 256;             ///< output tile of the cuBLAS kernel, rows
  int gemm_tile_n = 128;             ///< output tile, columns
  double attention_efficiency = 0.5; ///< fraction of dense peak reached by the attention kernels
  double memory_efficiency = 0.8;    ///< fraction of HBM bandwidth reached by memory-bound kernels
  double launch_overhead_s = 4e-6;   ///< host-side cost of one kernel launch, seconds
  double kernel_fixed_overhead_s = 2e-6; ///< GPU-side per-kernel start/tail cost, seconds
  double nvlink_efficiency = 0.8;    ///< fraction of NVLink/NVSwitch bandwidth NCCL reaches (busbw/peak)
  double network_efficiency = 0.9;   ///< fraction of NIC bandwidth NCCL reaches
  double pcie_efficiency = 0.8;      ///< fraction of PCIe bandwidth reached by P2P copies
  /// Cost of one slice of NCCL's Simple protocol on an NVLink hop, seconds: the memory fence and
  /// flag a Simple slice pays and LL/LL128 avoid (sim/collective_plan.hpp); optional, default 0.
  double simple_slice_nvlink_s = 0;
  /// LL128 on NVLink hops, as measured rather than as NCCL's tuning model has it
  /// (sim/collective_plan.hpp): seconds each ring step adds on an NVLink hop, and the ring's LL128
  /// busbw ceiling over its NVLink hops in bytes/s; optional, 0 leaves NCCL's hwLat and
  /// perChMaxRingLL128Bw alone.
  double ll128_step_nvlink_s = 0;
  double ll128_busbw_nvlink_Bps = 0;
  /// NVLS (NVLink SHARP) AllReduce, as measured: seconds each loop of its kernel after the first
  /// costs beyond its bytes (sim/collective_plan.hpp, NVLS); optional, default 0.
  double nvls_loop_s = 0;
  /// Point-to-point over NVLink, as measured: bytes/s one of NCCL's channels (its thread block)
  /// copies of a Send/Recv (sim/collective_plan.hpp, p2p_rate_cap_Bps); optional, 0: no bound.
  double p2p_channel_nvlink_Bps = 0;
  /// A grouped send/recv to every rank (an AllToAll), as measured: seconds each round of NCCL's
  /// p2p schedule (one per rank of the communicator) adds to its kernel beyond its bytes
  /// (sim/collective_plan.hpp, AllToAll); optional, 0: none.
  double p2p_round_s = 0;

  // Where each section's numbers came from (the "source" key of each section).
  std::string gemm_source, memory_source, kernel_source, network_source, attention_source;

  // Version 2: measured tables (empty in datasheet profiles).
  std::vector<GemmEfficiencyTable> gemm_tables;
  std::vector<GemmKeyShape> gemm_key_shapes;
  double hbm_bandwidth_Bps = 0;      ///< measured (copy kernel, largest size); 0: not measured
  std::vector<MemoryPoint> memory_points;
  std::vector<AttentionPoint> attention_points;
  std::vector<CollectiveFit> collectives;
  std::string collectives_source;
  std::vector<InterferencePoint> interference;
  std::string interference_source;
  std::string interference_gemm;     ///< the GEMM the slowdowns were measured on, e.g. "bf16 8192x8192x8192"
  /// The replay's SM-interference coefficient (sim/replay.hpp ReplayOptions::sm_interference)
  /// fitted to the points (fit_sm_interference; the NCCL companion when measured, else the copy
  /// kernel); 0: not measured.
  double sm_interference = 0;
  /// Measured algorithm/protocol rules (the tuning section); empty: the model chooses.
  std::vector<TuningRule> tuning;
  std::string tuning_source;

  /// The GEMM table for a dtype ("fp16", "bf16", "fp8"), or nullptr. fp16 and bf16 stand in for
  /// each other when only one was measured (same tensor-core rate on every catalogued GPU).
  const GemmEfficiencyTable* gemm_table(const std::string& dtype) const;
  /// The fit for a collective on `ranks` ranks (and `nodes` hosts; -1: any), or nullptr.
  const CollectiveFit* collective(const std::string& name, int ranks, int nodes = -1) const;
};

/// The first word of `text`, an NCCL_ALGO (`algorithm`) or NCCL_PROTO value as a log set it
/// (a name or a list: ring,tree; ^nvls; allreduce:tree;allgather:ring; any case), that NCCL has
/// no algorithm (protocol) or collective of that name for; "" when every word is one.
std::string unknown_nccl_word(const std::string& text, bool algorithm);

/// Loads a profile (version 1 or 2). Throws InputError naming the file, the JSON key (a path
/// such as "collectives.fits[2].busbw_Bps") and what was expected for a wrong schema or version,
/// a missing key, a value out of range (whole-device efficiencies in [0.01, 1], table
/// efficiencies in (0, 1], measured bandwidths from 1e6 to 1e15 B/s, overheads >= 0, axes ascending,
/// table sizes matching the axes), an algorithm or protocol word NCCL has not, or an unknown device.
Profile load_profile(const std::string& path);

/// The folder of the shipped profiles, one per GPU model (calibrate/profiles).
std::string default_profile_folder();
/// Default datasheet profile file for a device model: calibrate/profiles/<model>.json in the
/// source tree. Throws InputError when there is none.
std::string default_profile_path(const std::string& device_model);

/// The profile as version-2 JSON (keys in a fixed order, so equal profiles give equal bytes).
std::string profile_to_json(const Profile& p);

/// Writes profile_to_json(p) to `path` atomically (a temporary file renamed). Throws InputError
/// when the file cannot be written.
void write_profile(const Profile& p, const std::string& path);

}  // namespace overlapsim
