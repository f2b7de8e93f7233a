// Scenario files (design §3): what to simulate — a model, a machine, a parallel layout, a
// calibration profile, the strategies to compare, and the fidelity.
//
//   name: gpt3-175b-1024-a100
//   model: {preset: gpt3-175b}        # or inline: {name, layers, hidden, heads, ffn_hidden,
//                                     #             seq_len, vocab, dtype: fp16|bf16|fp32|fp8}
//   topology: ../topologies/dgx-a100-superpod.yaml   # relative to this file
//   topology_overrides: {node.count: 128}
//   parallelism: {tp: 8, pp: 16, dp: 8, sp: true, micro_batch: 1, global_batch: 1536,
//                 pipeline_schedule: 1f1b|gpipe, zero_stage: 0..3, recompute: none|selective|full,
//                 overlap_grad_reduce: true, async_tp_reduce: true, flash_attention: true,
//                 average_in_collective: false}
//                 (the last four: Megatron-LM training-loop flags, models/model_config.hpp)
//   calibration: ../calibrate/profiles/a100-sxm4-80gb.json   # optional: default per GPU model
//   strategies: [serial, megatron]    # or: all; entries as --strategy takes them (megatron+workload-partition:4)
//   fidelity: flow                    # flow | analytic
//   nccl: {algo: auto, proto: auto, nvls_enable: true, pat_enable: true}   # optional: NCCL_ALGO,
//                                     # NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE of the job
//   published: {tflops_per_gpu: 148, source: "Narayanan et al. SC'21, Table 1"}   # optional
//   notes: "free text printed with the result"
// dp may be omitted: it is then the machine's GPU count / (tp · pp). An inline model may omit
// ffn_hidden (4 · hidden) and dtype (fp16). Unknown keys are errors.
#pragma once

#include "models/model_config.hpp"
#include "sim/collective_plan.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

struct Published {
  double tflops_per_gpu = 0;  ///< TFLOP/s per GPU as the source counts them
  std::string source;
};

/// What a training job sets in NCCL's environment for every collective of the iteration (an op
/// whose strategy forces its own algorithm keeps it): NCCL_ALGO, NCCL_PROTO (one name each;
/// auto: NCCL's choice), NCCL_NVLS_ENABLE and NCCL_PAT_ENABLE (src/transport/nvls.cc,
/// src/graph/tuning.cc ncclPatEnable). A forced algorithm that cannot run for a collective runs
/// the ring, as `overlapsim collective --algo` (NCCL itself fails there).
struct NcclEnvironment {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  bool protocol_auto = true;
  Protocol protocol = Protocol::Simple;  ///< when !protocol_auto
  bool nvls_enable = true;
  bool pat_enable = true;
  /// Applies these to `o` (the replay's and the strategies' predictions' collective options).
  void apply(CollectiveOptions& o) const;
};

/// The environment as NCCL's variables, those it sets only ("NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0");
/// "" for NCCL's defaults.
std::string describe(const NcclEnvironment& env);

/// Parses an NCCL_ALGO name for the scenario's `nccl.algo` (auto, ring, tree, nvls, nvlstree,
/// pat; any case). Throws std::invalid_argument naming what was expected.
CollectiveAlgorithm parse_nccl_algo(const std::string& text);
/// Parses an NCCL_PROTO name for `nccl.proto` (auto, ll, ll128, simple; any case) into `env`.
/// Throws std::invalid_argument naming what was expected.
void parse_nccl_proto(const std::string& text, NcclEnvironment& env);

struct Scenario {
  std::string path;
  std::string name;
  ModelConfig model;
  std::string topology_path;        ///< resolved against the scenario's folder
  TopologyOverrides topology_overrides;
  Parallelism parallelism;
  bool dp_given = false;
  std::string calibration_path;     ///< resolved; empty: the GPU model's default profile
  std::vector<std::string> strategies;
  Fidelity fidelity = Fidelity::Flow;
  NcclEnvironment nccl;
  std::optional<Published> published;
  std::string notes;
};

/// Parses a scenario file. Throws InputError (file:line:column, key, expected) on any problem.
Scenario load_scenario(const std::string& path);

/// Applies a command-line or sweep assignment such as "parallelism.tp=4", "fidelity=analytic"
/// or "topology_overrides.node.count=64". Throws InputError naming the key on a bad key/value.
void apply_setting(Scenario& s, const std::string& key, const std::string& value);

}  // namespace overlapsim
