#include "sim/scenario.hpp"

#include "sim/nccl_tuning.hpp"
#include "sim/strategy.hpp"
#include "sim/yaml_input.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace overlapsim {

namespace {

std::string resolve(const std::string& base_file, const std::string& rel) {
  namespace fs = std::filesystem;
  fs::path p(rel);
  if (p.is_absolute()) return rel;
  return (fs::path(base_file).parent_path() / p).lexically_normal().string();
}

/// `p` made absolute against the working folder and normalised, with no trailing '/' ("" is the
/// working folder), for messages.
std::string absolute_path(const std::filesystem::path& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path a = fs::absolute(p.empty() ? fs::path(".") : p, ec);
  if (ec) return p.string();
  a = a.lexically_normal();
  if (!a.has_filename() && a.has_relative_path()) a = a.parent_path();
  return a.string();
}

/// What stands at `file` where a readable file was expected ("a folder", "an unreadable file",
/// "no file"), or nullptr when it is one.
const char* unreadable_file(const std::string& file) {
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(file, ec);
  if (!folder && std::ifstream(file)) return nullptr;
  return folder ? "a folder" : std::filesystem::exists(file, ec) ? "an unreadable file" : "no file";
}

DType parse_dtype(const std::string& v) {
  if (v == "fp16") return DType::FP16;
  if (v == "bf16") return DType::BF16;
  if (v == "fp32") return DType::FP32;
  if (v == "fp8") return DType::FP8;
  throw std::invalid_argument("expected fp16, bf16, fp32 or fp8, found '" + v + "'");
}

Recompute parse_recompute(const std::string& v) {
  if (v == "none") return Recompute::None;
  if (v == "selective") return Recompute::Selective;
  if (v == "full") return Recompute::Full;
  throw std::invalid_argument("expected none, selective or full, found '" + v + "'");
}

PipelineSchedule parse_pipeline(const std::string& v) {
  if (v == "1f1b") return PipelineSchedule::OneFOneB;
  if (v == "gpipe") return PipelineSchedule::GPipe;
  throw std::invalid_argument("expected 1f1b or gpipe, found '" + v + "'");
}

/// NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE and NCCL_COLLNET_ENABLE as a job sets them (1, 0) or as YAML
/// writes them (true, false), for the scenario's nccl.nvls_enable, nccl.pat_enable and
/// nccl.collnet_enable and their --set.
bool parse_nccl_switch(const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw std::invalid_argument("expected true, false, 1 or 0 (as NCCL's variable), found '" + v + "'");
}

template <typename F>
auto parse_with(const YamlFile& f, const YAML::Node& n, const std::string& key, F parse) {
  // An empty value ("nccl: {collnet_enable: }") gets what `parse` expects, not only "a string".
  if (n.IsNull() || (n.IsScalar() && n.Scalar().empty())) {
    try {
      parse(std::string());
    } catch (const std::invalid_argument& e) {
      std::string message = e.what();
      const size_t at = message.rfind(", found ''");
      if (at != std::string::npos) message = message.substr(0, at) + ", found an empty value";
      fail(f, n, key, message);
    }
  }
  const std::string v = as_string(f, n, key);
  try {
    return parse(v);
  } catch (const std::invalid_argument& e) {
    fail(f, n, key, e.what());
  }
}

/// Parses nccl.algo or nccl.proto with `parse`; a bad list's error points at the character where
/// it goes wrong (the value's column plus its offset, past an opening quote).
template <typename F>
void parse_nccl_value(const YamlFile& f, const YAML::Node& n, const std::string& key, F parse) {
  const std::string v = as_string(f, n, key);
  try {
    parse(v);
  } catch (const NcclListError& e) {
    SourceLocation at = location_of(f, n);
    if (at.column > 0) at.column += static_cast<int>(e.offset()) + (n.Tag() == "!" ? 1 : 0);
    throw InputError(at, key, std::string(e.what()) + " (in '" + v + "')");
  } catch (const std::invalid_argument& e) {
    fail(f, n, key, e.what());
  }
}

int positive_int(const YamlFile& f, const YAML::Node& n, const std::string& key, int min_value = 1) {
  const long long v = as_int(f, n, key);
  if (v < min_value || v > (1LL << 30))
    fail(f, n, key, "expected an integer from " + std::to_string(min_value) + " to 2^30, found " + std::to_string(v));
  return static_cast<int>(v);
}

void load_model(const YamlFile& f, const YAML::Node& n, ModelConfig& m) {
  if (!n.IsMap()) fail(f, n, "model", "expected a map such as {preset: gpt3-175b}");
  if (n["preset"]) {
    check_keys(f, n, {"preset"}, "model");
    const std::string name = as_string(f, n["preset"], "model.preset");
    try {
      m = model_preset(name);
    } catch (const InputError& e) {
      fail(f, n["preset"], "model.preset", e.what());
    }
    return;
  }
  check_keys(f, n, {"name", "layers", "hidden", "heads", "ffn_hidden", "seq_len", "vocab", "dtype"}, "model");
  m.name = n["name"] ? as_string(f, n["name"], "model.name") : std::string("inline");
  m.layers = positive_int(f, require(f, n, "layers", "model.layers"), "model.layers");
  m.hidden = positive_int(f, require(f, n, "hidden", "model.hidden"), "model.hidden");
  m.heads = positive_int(f, require(f, n, "heads", "model.heads"), "model.heads");
  if (n["ffn_hidden"]) {
    m.ffn_hidden = positive_int(f, n["ffn_hidden"], "model.ffn_hidden");
  } else {
    // (4 · hidden in 64 bits: in an int it wrapped for hidden >= 2^29, to 0 or a negative size.)
    const long long ffn = 4LL * m.hidden;
    if (ffn > (1LL << 30))
      fail(f, n["hidden"], "model.hidden",
           "ffn_hidden defaults to 4 * hidden = " + std::to_string(ffn) +
               ", above 2^30: give a hidden of at most 2^28, or model.ffn_hidden");
    m.ffn_hidden = static_cast<int>(ffn);
  }
  m.seq_len = positive_int(f, require(f, n, "seq_len", "model.seq_len"), "model.seq_len");
  m.vocab = positive_int(f, require(f, n, "vocab", "model.vocab"), "model.vocab");
  m.dtype = n["dtype"] ? parse_with(f, n["dtype"], "model.dtype", parse_dtype) : DType::FP16;
  if (m.hidden % m.heads) fail(f, n["heads"], "model.heads", "must divide hidden = " + std::to_string(m.hidden));
}

void load_parallelism(const YamlFile& f, const YAML::Node& n, Scenario& s) {
  if (!n.IsMap()) fail(f, n, "parallelism", "expected a map such as {tp: 8, pp: 1, global_batch: 512}");
  check_keys(f, n, {"tp", "pp", "dp", "sp", "micro_batch", "global_batch", "pipeline_schedule", "zero_stage",
                    "recompute", "overlap_grad_reduce", "async_tp_reduce", "flash_attention", "average_in_collective"},
             "parallelism");
  Parallelism& p = s.parallelism;
  p.tp = n["tp"] ? positive_int(f, n["tp"], "parallelism.tp") : 1;
  p.pp = n["pp"] ? positive_int(f, n["pp"], "parallelism.pp") : 1;
  s.dp_given = static_cast<bool>(n["dp"]);
  p.dp = s.dp_given ? positive_int(f, n["dp"], "parallelism.dp") : 1;
  p.sp = n["sp"] ? as_bool(f, n["sp"], "parallelism.sp") : false;
  p.micro_batch = n["micro_batch"] ? positive_int(f, n["micro_batch"], "parallelism.micro_batch") : 1;
  p.global_batch = positive_int(f, require(f, n, "global_batch", "parallelism.global_batch"), "parallelism.global_batch");
  if (n["pipeline_schedule"])
    p.pipeline_schedule = parse_with(f, n["pipeline_schedule"], "parallelism.pipeline_schedule", parse_pipeline);
  if (n["zero_stage"]) {
    const long long z = as_int(f, n["zero_stage"], "parallelism.zero_stage");
    if (z < 0 || z > 3)
      fail(f, n["zero_stage"], "parallelism.zero_stage", "expected 0, 1, 2 or 3 (the ZeRO stage), found " + std::to_string(z));
    p.zero_stage = static_cast<int>(z);
  }
  if (n["recompute"]) p.recompute = parse_with(f, n["recompute"], "parallelism.recompute", parse_recompute);
  if (n["overlap_grad_reduce"])
    p.overlap_grad_reduce = as_bool(f, n["overlap_grad_reduce"], "parallelism.overlap_grad_reduce");
  if (n["async_tp_reduce"]) p.async_tp_reduce = as_bool(f, n["async_tp_reduce"], "parallelism.async_tp_reduce");
  if (n["flash_attention"]) p.flash_attention = as_bool(f, n["flash_attention"], "parallelism.flash_attention");
  if (n["average_in_collective"])
    p.average_in_collective = as_bool(f, n["average_in_collective"], "parallelism.average_in_collective");
}

std::vector<std::string> parse_strategies(const YamlFile& f, const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsScalar() && ascii_lower(n.as<std::string>()) == "all") return strategy_names();
  if (!n.IsSequence() || n.size() == 0) fail(f, n, "strategies", "expected a list of strategy names, or 'all'");
  // Whatever --strategy takes: a registered name or a composition (BASE+PASS[:ARG]+...), in any
  // case, or `all` alone.
  if (n.size() == 1 && n[0].IsScalar() && ascii_lower(as_string(f, n[0], "strategies")) == "all") return strategy_names();
  for (const auto& item : n) {
    const std::string name = ascii_lower(as_string(f, item, "strategies"));
    if (name == "all") fail(f, item, "strategies", "'all' names every strategy; expected it alone, not beside others");
    try {
      (void)make_strategy(name);
    } catch (const InputError& e) {
      fail(f, item, "strategies", e.message());
    }
    for (const std::string& before : out)
      if (same_strategy(name, before))
        fail(f, item, "strategies",
             name == before ? "'" + name + "' is listed twice" : "'" + name + "' is '" + before + "' again; expected each strategy once");
    out.push_back(name);
  }
  return out;
}

}  // namespace

CollectiveAlgorithm parse_nccl_algo(const std::string& text) {
  CollectiveAlgorithm a = CollectiveAlgorithm::Auto;
  if (!parse_algorithm(text, &a))
    throw std::invalid_argument("expected auto, ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain (NCCL_ALGO), "
                                "found '" + text + "' (or a list as NCCL reads it: ring,tree; ^nvls; allreduce:tree,ring;allgather:ring)");
  return a;
}

void parse_nccl_algo(const std::string& text, NcclEnvironment& env) {
  if (is_single_nccl_name(text)) {
    env.algorithm = parse_nccl_algo(text);
    clear_nccl_algo_list(env.lists);
    return;
  }
  parse_nccl_algo_list(text, env.lists);
  env.algorithm = CollectiveAlgorithm::Auto;
}

void parse_nccl_proto(const std::string& text, NcclEnvironment& env) {
  if (!is_single_nccl_name(text)) {
    parse_nccl_proto_list(text, env.lists);
    env.protocol_auto = true;
    return;
  }
  if (ascii_lower(text) == "auto") {
    env.protocol_auto = true;
    clear_nccl_proto_list(env.lists);
    return;
  }
  Protocol p = Protocol::Simple;
  if (!parse_protocol(text, &p))
    throw std::invalid_argument("expected auto, ll, ll128 or simple (NCCL_PROTO), found '" + text +
                                "' (or a list as NCCL reads it: LL,Simple; ^LL128)");
  env.protocol_auto = false;
  env.protocol = p;
  clear_nccl_proto_list(env.lists);
}

std::string describe(const NcclEnvironment& env) {
  std::string out;
  const auto add = [&](const std::string& kv) { out += (out.empty() ? "" : " ") + kv; };
  // NCCL's own spellings (src/init.cc ncclAlgoStr, ncclProtoStr), a list as NCCL reads it.
  if (env.algorithm != CollectiveAlgorithm::Auto) add(std::string("NCCL_ALGO=") + nccl_algo_name(env.algorithm));
  else if (!env.lists.algo_text.empty()) add("NCCL_ALGO=" + env.lists.algo_text);
  if (!env.protocol_auto) add(std::string("NCCL_PROTO=") + to_string(env.protocol));
  else if (!env.lists.proto_text.empty()) add("NCCL_PROTO=" + env.lists.proto_text);
  if (!env.nvls_enable) add("NCCL_NVLS_ENABLE=0");
  if (!env.pat_enable) add("NCCL_PAT_ENABLE=0");
  if (env.collnet_enable) add("NCCL_COLLNET_ENABLE=1");
  return out;
}

std::string FlowSettings::describe() const {
  return tree_slice_flows == kMaxTreeSliceFlows ? "" : fmt::format("flow.tree_slice_flows {}", tree_slice_flows);
}

void NcclEnvironment::apply(CollectiveOptions& o) const {
  if (algorithm != CollectiveAlgorithm::Auto) o.algorithm = algorithm;
  if (!protocol_auto) {
    o.protocol_auto = false;
    o.protocol = protocol;
  }
  o.allowed = lists;
  o.nvls_enable = nvls_enable;
  o.pat_enable = pat_enable;
  o.collnet_enable = collnet_enable;
}

Scenario load_scenario(const std::string& path) {
  const YamlFile f = load_yaml_file(path);
  const YAML::Node& r = f.root;
  if (!r.IsMap()) fail(f, r, "", "expected a scenario: a map with name, model, topology, parallelism");
  check_keys(f, r, {"name", "model", "topology", "topology_overrides", "parallelism", "calibration", "strategies",
                    "fidelity", "nccl", "flow", "published", "notes"},
             "");
  Scenario s;
  s.path = path;
  s.name = as_string(f, require(f, r, "name"), "name");
  // The name heads the table and the JSON ("scenario  NAME"): an empty one names nothing.
  if (s.name.find_first_not_of(" \t") == std::string::npos) fail(f, r["name"], "name", "expected a non-empty name, found ''");
  load_model(f, require(f, r, "model"), s.model);
  // A missing file is named where the scenario names it, not only by its own path: by its
  // absolute path, and a relative one also as written and the folder it was taken from (the
  // scenario file's, not the working folder).
  auto readable = [&](const std::string& written, const std::string& file, const char* key, const char* what) {
    const char* found = unreadable_file(file);
    if (found == nullptr) return;
    std::string msg = std::string("expected a readable ") + what + ", found " + found + " at " + absolute_path(file);
    if (!std::filesystem::path(written).is_absolute())
      msg += " ('" + written + "' from " + absolute_path(std::filesystem::path(path).parent_path()) +
             ": a relative path is relative to the scenario file's folder)";
    fail(f, r[key], key, msg);
  };
  const std::string topology_written = as_string(f, require(f, r, "topology"), "topology");
  s.topology_path = resolve(path, topology_written);
  readable(topology_written, s.topology_path, "topology", "topology file");
  if (const YAML::Node o = r["topology_overrides"]) {
    if (!o.IsMap()) fail(f, o, "topology_overrides", "expected a map such as {node.count: 128}");
    std::map<std::string, YAML::Node> first;  // each key's first node, for a duplicate's message
    for (const auto& kv : o) {
      const std::string key = "topology_overrides." + as_string(f, kv.first, "topology_overrides");
      if (const auto at = first.find(key); at != first.end())
        fail(f, kv.first, key,
             "duplicate key (first at line " + std::to_string(location_of(f, at->second).line) +
                 "); expected each key once");
      first.emplace(key, kv.first);
      s.topology_overrides[key.substr(sizeof("topology_overrides.") - 1)] = as_string(f, kv.second, key);
      s.given_at[key] = location_of(f, kv.second);  // (the topology's checks of it name this place)
    }
  }
  load_parallelism(f, require(f, r, "parallelism"), s);
  // Each model and parallelism value's place, for the checks across keys (Scenario::given_at).
  for (const char* section : {"model", "parallelism"}) {
    const YAML::Node n = r[section];
    s.given_at[section] = location_of(f, n);
    if (n.IsMap())
      for (const auto& kv : n) s.given_at[std::string(section) + "." + kv.first.as<std::string>()] = location_of(f, kv.second);
  }
  if (r["calibration"]) {
    const std::string written = as_string(f, r["calibration"], "calibration");
    s.calibration_path = resolve(path, written);
    readable(written, s.calibration_path, "calibration", "calibration profile");
  }
  s.strategies = r["strategies"] ? parse_strategies(f, r["strategies"]) : strategy_names();
  if (r["fidelity"]) {
    const YAML::Node n = r["fidelity"];
    s.fidelity = parse_with(f, n, "fidelity", parse_fidelity);
  }
  if (const YAML::Node n = r["nccl"]) {
    if (!n.IsMap()) fail(f, n, "nccl", "expected a map such as {algo: ring, proto: simple, nvls_enable: false}");
    check_keys(f, n, {"algo", "proto", "nvls_enable", "pat_enable", "collnet_enable"}, "nccl");
    if (n["algo"]) {
      parse_nccl_value(f, n["algo"], "nccl.algo", [&](const std::string& t) { parse_nccl_algo(t, s.nccl); });
      s.nccl.algo_at = location_of(f, n["algo"]);
    }
    if (n["proto"]) {
      parse_nccl_value(f, n["proto"], "nccl.proto", [&](const std::string& t) { parse_nccl_proto(t, s.nccl); });
      s.nccl.proto_at = location_of(f, n["proto"]);
    }
    if (n["nvls_enable"]) s.nccl.nvls_enable = parse_with(f, n["nvls_enable"], "nccl.nvls_enable", parse_nccl_switch);
    if (n["pat_enable"]) s.nccl.pat_enable = parse_with(f, n["pat_enable"], "nccl.pat_enable", parse_nccl_switch);
    if (n["collnet_enable"])
      s.nccl.collnet_enable = parse_with(f, n["collnet_enable"], "nccl.collnet_enable", parse_nccl_switch);
  }
  if (const YAML::Node n = r["flow"]) {
    if (!n.IsMap()) fail(f, n, "flow", "expected a map such as {tree_slice_flows: 0}");
    check_keys(f, n, {"tree_slice_flows"}, "flow");
    if (n["tree_slice_flows"]) s.flow.tree_slice_flows = positive_int(f, n["tree_slice_flows"], "flow.tree_slice_flows", 0);
  }
  if (const YAML::Node p = r["published"]) {
    if (!p.IsMap()) fail(f, p, "published", "expected {tflops_per_gpu: N, source: \"...\"}");
    check_keys(f, p, {"tflops_per_gpu", "source"}, "published");
    Published pub;
    pub.tflops_per_gpu = as_double(f, require(f, p, "tflops_per_gpu"), "published.tflops_per_gpu");
    if (!(pub.tflops_per_gpu > 0)) fail(f, p["tflops_per_gpu"], "published.tflops_per_gpu", "expected a positive number");
    pub.source = as_string(f, require(f, p, "source"), "published.source");
    s.published = pub;
  }
  if (r["notes"]) s.notes = as_string(f, r["notes"], "notes");
  return s;
}

namespace {
[[noreturn]] void bad_setting(const std::string& key, const std::string& msg) {
  throw InputError(SourceLocation{"<command line>", 0, 0}, key, msg);
}
}  // namespace

SourceLocation Scenario::location_of(const std::string& key) const {
  const auto it = given_at.find(key);
  return it != given_at.end() ? it->second : SourceLocation{path, 0, 0};
}

void apply_setting(Scenario& s, const std::string& key, const std::string& value) {
  auto bad = [&](const std::string& msg) { bad_setting(key, msg); };
  s.given_at[key] = SourceLocation{"<command line>", 0, 0};  // (--set: checks across keys name it there)
  auto to_int = [&](int min_value, int max_value = 1 << 30) {
    try {
      // Digits, after a minus sign at most (as the YAML reader takes them: no '+', no blanks).
      const size_t first = !value.empty() && value[0] == '-' ? 1 : 0;
      if (value.size() == first || value.find_first_not_of("0123456789", first) != std::string::npos)
        throw std::invalid_argument("");
      size_t used = 0;
      const long long v = std::stoll(value, &used);
      if (used != value.size() || v < min_value || v > max_value) throw std::invalid_argument("");
      return static_cast<int>(v);
    } catch (const std::exception&) {
      bad_setting(key, "expected an integer from " + std::to_string(min_value) + " to " +
                           (max_value == 1 << 30 ? std::string("2^30") : std::to_string(max_value)) + ", found '" +
                           value + "'");
    }
  };
  auto to_bool = [&]() {
    if (value == "true") return true;
    if (value == "false") return false;
    bad_setting(key, "expected true or false, found '" + value + "'");
  };
  try {
    Parallelism& p = s.parallelism;
    if (key == "parallelism.tp") p.tp = to_int(1);
    else if (key == "parallelism.pp") p.pp = to_int(1);
    else if (key == "parallelism.dp") { p.dp = to_int(1); s.dp_given = true; }
    else if (key == "parallelism.sp") p.sp = to_bool();
    else if (key == "parallelism.micro_batch") p.micro_batch = to_int(1);
    else if (key == "parallelism.global_batch") p.global_batch = to_int(1);
    else if (key == "parallelism.zero_stage") p.zero_stage = to_int(0, 3);  // ZeRO stages 0-3
    else if (key == "parallelism.recompute") p.recompute = parse_recompute(value);
    else if (key == "parallelism.overlap_grad_reduce") p.overlap_grad_reduce = to_bool();
    else if (key == "parallelism.async_tp_reduce") p.async_tp_reduce = to_bool();
    else if (key == "parallelism.flash_attention") p.flash_attention = to_bool();
    else if (key == "parallelism.average_in_collective") p.average_in_collective = to_bool();
    else if (key == "parallelism.pipeline_schedule") p.pipeline_schedule = parse_pipeline(value);
    else if (key == "fidelity") s.fidelity = parse_fidelity(value);
    else if (key == "nccl.algo" || key == "nccl.proto") {
      try {
        if (key == "nccl.algo") parse_nccl_algo(value, s.nccl);
        else parse_nccl_proto(value, s.nccl);
      } catch (const NcclListError& e) {
        bad(fmt::format("{} (in '{}', at character {})", e.what(), value, e.offset() + 1));
      }
      (key == "nccl.algo" ? s.nccl.algo_at : s.nccl.proto_at) = SourceLocation{"<command line>", 0, 0};
    }
    else if (key == "flow.tree_slice_flows") s.flow.tree_slice_flows = to_int(0);
    else if (key == "nccl.nvls_enable") s.nccl.nvls_enable = parse_nccl_switch(value);
    else if (key == "nccl.pat_enable") s.nccl.pat_enable = parse_nccl_switch(value);
    else if (key == "nccl.collnet_enable") s.nccl.collnet_enable = parse_nccl_switch(value);
    else if (key == "model.preset") {
      try {
        s.model = model_preset(value);
      } catch (const InputError& e) {
        bad(e.message());
      }
    }
    else if (key == "calibration") {
      // A path on the command line is relative to the working folder (in the file, to the file's).
      if (value.empty()) bad("expected the path of a calibration profile (JSON), found ''");
      if (const char* found = unreadable_file(value))
        bad(std::string("expected a readable calibration profile, found ") + found + " at " + absolute_path(value));
      s.calibration_path = value;
    }
    else if (key.rfind("topology_overrides.", 0) == 0) s.topology_overrides[key.substr(19)] = value;
    else bad("unknown setting; expected parallelism.{tp,pp,dp,sp,micro_batch,global_batch,zero_stage,recompute,"
             "pipeline_schedule,overlap_grad_reduce,async_tp_reduce,flash_attention,average_in_collective}, fidelity, "
             "nccl.{algo,proto,nvls_enable,pat_enable,collnet_enable}, flow.tree_slice_flows, model.preset, calibration or "
             "topology_overrides.KEY");
  } catch (const std::invalid_argument& e) {
    bad(e.what());
  }
}

}  // namespace overlapsim
