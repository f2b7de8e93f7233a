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
//   nccl: {algo: auto, proto: auto, nvls_enable: true, pat_enable: true, collnet_enable: false}
//                                     # optional: NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE,
//                                     # NCCL_PAT_ENABLE, NCCL_COLLNET_ENABLE of the job;
//                                     # algo and proto also as NCCL's lists: "ring,tree", "^nvls",
//                                     # "allreduce:tree,ring;allgather:ring", "^LL128"
//   flow: {tree_slice_flows: 1024}   # optional, flow fidelity only: a tree AllReduce of more
//                                     # per-slice flows runs in bulk (collective_plan.hpp)
//   published: {tflops_per_gpu: 148, source: "Narayanan et al. SC'21, Table 1"}   # optional
//   notes: "free text printed with the result"
// dp may be omitted: it is then the machine's GPU count / (tp · pp). An inline model may omit
// ffn_hidden (4 · hidden) and dtype (fp16). Unknown keys are errors.
#pragma once

#include "models/model_config.hpp"
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

struct Published {
  double tflops_per_gpu = 0;  ///< TFLOP/s per GPU as the source counts them
  std::string source;
};

/// What a training job sets in NCCL's environment for every collective of the iteration (an op
/// whose strategy forces its own algorithm keeps it): NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE and
/// NCCL_PAT_ENABLE (src/transport/nvls.cc, src/graph/tuning.cc ncclPatEnable).
/// NCCL_ALGO and NCCL_PROTO are "auto" (NCCL's choice), one name, or a list as NCCL reads it
/// (sim/nccl_selection.hpp: "ring,tree", "^nvls", "allreduce:tree;allgather:ring"). One algorithm
/// name forces it, and where it cannot run for a collective the ring runs, as
/// `overlapsim collective --algo` (NCCL before 2.24 ran the ring where a function had no algorithm
/// left; 2.24 and later fail), which `overlapsim run` notes. A list leaves the automatic choice
/// only what it enables; where it leaves a collective of the iteration nothing that can run, the
/// scenario is refused (sim/simulate.hpp), as NCCL 2.24 and later fail the call. One protocol name
/// forces it; a list of protocols leaves the automatic choice those.
struct NcclEnvironment {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;  ///< one NCCL_ALGO name, else Auto
  bool protocol_auto = true;
  Protocol protocol = Protocol::Simple;  ///< when !protocol_auto (one NCCL_PROTO name)
  NcclSelection lists;                   ///< NCCL_ALGO and NCCL_PROTO given as lists
  bool nvls_enable = true;
  bool pat_enable = true;
  bool collnet_enable = false;  ///< NCCL_COLLNET_ENABLE (NCCL's default 0)
  /// Where NCCL_ALGO and NCCL_PROTO were set (the scenario's nccl.algo and nccl.proto values, or
  /// "<command line>" for --set), for the errors that come later than parsing.
  SourceLocation algo_at, proto_at;
  /// Applies these to `o` (the replay's and the strategies' predictions' collective options).
  void apply(CollectiveOptions& o) const;
};

/// The environment as NCCL's variables, those it sets only, as NCCL spells them
/// ("NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0", "NCCL_ALGO=^NVLS NCCL_PROTO=LL,Simple"); "" for NCCL's defaults.
std::string describe(const NcclEnvironment& env);

/// Parses one NCCL_ALGO name (auto, ring, tree, nvls, nvlstree, pat, collnetdirect, collnetchain;
/// any case). Throws
/// std::invalid_argument naming what was expected.
CollectiveAlgorithm parse_nccl_algo(const std::string& text);
/// Sets env's NCCL_ALGO from `text` for the scenario's `nccl.algo` and `--set nccl.algo`: "auto",
/// one name (parse_nccl_algo), or a list (parse_nccl_algo_list). Throws std::invalid_argument for a
/// bad name, NcclListError (sim/nccl_selection.hpp, with the offset in `text`) for a bad list.
void parse_nccl_algo(const std::string& text, NcclEnvironment& env);
/// Sets env's NCCL_PROTO from `text` for `nccl.proto`: "auto", one name (ll, ll128, simple; any
/// case) or a list (parse_nccl_proto_list). Throws as parse_nccl_algo(text, env).
void parse_nccl_proto(const std::string& text, NcclEnvironment& env);

/// Settings of the flow fidelity's lowering (the scenario's `flow` map, `--set flow.KEY=V`); the
/// analytic fidelity ignores them.
struct FlowSettings {
  /// Most per-slice flows a tree AllReduce is replayed with; above, its hops run in bulk
  /// (CollectiveOptions::tree_slice_flows, CollectivePlan::tree_in_bulk): 0 runs every tree in
  /// bulk, kMaxTreeFlows every tree it can slice by slice. Bulk and slice by slice agree alone;
  /// beside other traffic on the tree's links they differ (README "Contention").
  long long tree_slice_flows = kMaxTreeSliceFlows;
  /// What is set, as the table's fidelity line and the JSON show it ("flow.tree_slice_flows 0");
  /// "" where nothing is.
  std::string describe() const;
};

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
  FlowSettings flow;
  std::optional<Published> published;
  std::string notes;
  /// Where each model, parallelism and topology_overrides value was given: the file's line and column, or
  /// "<command line>" for a --set assignment (apply_setting). Checks across keys (e.g.
  /// global_batch against dp · micro_batch, sim/simulate.cpp) name the key's place from it.
  std::map<std::string, SourceLocation> given_at;
  /// given_at[key], else the scenario file without a line.
  SourceLocation location_of(const std::string& key) const;
};

/// Parses a scenario file. Throws InputError (file:line:column, key, expected) on any problem.
Scenario load_scenario(const std::string& path);

/// Applies a command-line or sweep assignment such as "parallelism.tp=4", "fidelity=analytic"
/// or "topology_overrides.node.count=64". Throws InputError naming the key on a bad key/value.
void apply_setting(Scenario& s, const std::string& key, const std::string& value);

}  // namespace overlapsim
