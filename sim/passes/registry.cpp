// The registered passes, by name, for composition on the command line:
//   overlapsim run S.yaml --strategy megatron+workload-partition:4
// Add a pass here with one line (docs/extending.md).
#include "sim/passes/passes.hpp"

#include "sim/error.hpp"

#include <cstdlib>

namespace overlapsim {

namespace {

[[noreturn]] void bad_arg(const std::string& spec, const std::string& expected) {
  throw InputError(SourceLocation{}, "strategy", "pass '" + spec + "': expected " + expected);
}

/// A chunk count: 2 to 64 (one chunk is the op itself; beyond 64 the pieces are smaller than a
/// GEMM tile's worth of tokens on real models and multiply the schedule past what fits in memory).
int positive_int(const std::string& spec, const std::string& arg, int fallback) {
  if (arg.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(arg.c_str(), &end, 10);
  if (end == arg.c_str() || *end != '\0' || v < 2 || v > 64) bad_arg(spec, "a whole number of chunks, 2 to 64");
  return static_cast<int>(v);
}

std::unique_ptr<Pass> primitive(const std::string& spec, const std::string& arg) {
  const auto slash = arg.find('/');
  const std::string mode = arg.substr(0, slash);
  const std::string purpose = slash == std::string::npos ? "all" : arg.substr(slash + 1);
  Substitution sub;
  if (mode == "rs-ag") sub = Substitution::ReduceScatterAllGather;
  else if (mode == "ring") sub = Substitution::RingPermutes;
  else if (mode == "hierarchical") sub = Substitution::Hierarchical;
  else bad_arg(spec, "MODE[/PURPOSE] with MODE rs-ag, ring or hierarchical");
  int want = -1;
  for (CommPurpose p : {CommPurpose::TensorParallel, CommPurpose::DataParallel, CommPurpose::Pipeline,
                        CommPurpose::Embedding})
    if (purpose == to_string(p)) want = static_cast<int>(p);
  if (want < 0 && purpose != "all") bad_arg(spec, "PURPOSE tp, dp, pp, embedding or all");
  PrimitiveSubstitutionOptions o;
  o.choose = [sub, want](const Schedule&, const Op& op) {
    return want < 0 || static_cast<int>(op.purpose) == want ? sub : Substitution::Keep;
  };
  return make_primitive_substitution(std::move(o));
}

std::unique_ptr<Pass> group(const std::string& spec, const std::string& arg) {
  GroupPartitionOptions o;
  if (arg.empty() || arg == "node") o.level = TopologyLevel::Node;
  else if (arg == "nvlink") o.level = TopologyLevel::NvLinkIsland;
  else if (arg == "rail") o.level = TopologyLevel::Rail;
  else bad_arg(spec, "LEVEL node, nvlink or rail");
  return make_group_partition(std::move(o));
}

std::unique_ptr<Pass> workload(const std::string& spec, const std::string& arg) {
  PartitionChoice c;
  if (arg == "ring") {
    c.mode = PartitionMode::Ring;
  } else if (arg == "bidirectional") {
    c.mode = PartitionMode::BidirectionalRing;
  } else {
    c.mode = PartitionMode::Chunks;
    c.chunks = positive_int(spec, arg, 4);
  }
  WorkloadPartitionOptions o;
  o.choose = [c](const Schedule&, const RankProgram&, const Site&) { return c; };
  return make_workload_partition(std::move(o));
}

struct Entry {
  const char* name;
  const char* usage;
  std::unique_ptr<Pass> (*make)(const std::string& spec, const std::string& arg);
};

const Entry kPasses[] = {
    {"primitive-substitution", "primitive-substitution:rs-ag|ring|hierarchical[/tp|dp|pp|embedding]", primitive},
    {"group-partition", "group-partition[:node|nvlink|rail]", group},
    {"workload-partition", "workload-partition[:K|ring|bidirectional] (tensor-parallel sites; K chunks, default 4)",
     workload},
    {"layer-schedule", "layer-schedule (tensor-parallel collectives off the compute stream, layers list-scheduled)",
     [](const std::string& spec, const std::string& arg) {
       if (!arg.empty()) bad_arg(spec, "no argument");
       return make_layer_schedule();
     }},
    {"optimizer-gather-overlap", "optimizer-gather-overlap[:K] (default 4)",
     [](const std::string& spec, const std::string& arg) {
       return make_optimizer_gather_overlap(positive_int(spec, arg, 4));
     }},
};

/// What one composition may name twice. A pass rewrites the pieces an earlier one made as it
/// would the workload's ops, so naming it again either rewrites its own pieces (chunks of chunks)
/// or finds nothing left to do. Passes listed here with `other_arg` may come again with another
/// argument, which rewrites other ops (primitive-substitution:rs-ag/tp then :ring/dp) or cuts at
/// another level; a pass not listed comes at most once.
struct Repeat {
  const char* name;
  bool other_arg;
  /// Why the repeat is refused, after "the second ".
  const char* why;
  /// The argument as the pass reads it, defaults filled in (null: as written).
  std::string (*canonical)(const std::string& arg);
};

const Repeat kRepeats[] = {
    {"primitive-substitution", true,
     "would find nothing left to substitute (the first's pieces are of kinds it does not rewrite, or, "
     "hierarchical's AllReduce across islands, have one member per island)",
     [](const std::string& arg) { return arg.find('/') == std::string::npos ? arg + "/all" : arg; }},
    {"group-partition", true,
     "would find nothing left to split (the first's pieces lie in one island or have one member per island)",
     [](const std::string& arg) { return arg.empty() ? std::string("node") : arg; }},
    {"workload-partition", false, "would cut the first's chunks (or ring steps) into chunks again", nullptr},
    {"optimizer-gather-overlap", false, "would cut each of the first's chunks into chunks again", nullptr},
    {"layer-schedule", false, "would list-schedule again the order the first scheduled", nullptr},
};

}  // namespace

void check_pass_repeats(const std::string& composition, const std::vector<std::string>& specs) {
  struct Seen {
    std::string name, arg, spec;
  };
  std::vector<Seen> seen;
  for (const std::string& spec : specs) {
    const auto colon = spec.find(':');
    Seen now{spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1), spec};
    const Repeat* rule = nullptr;
    for (const Repeat& r : kRepeats)
      if (now.name == r.name) rule = &r;
    if (rule != nullptr && rule->canonical != nullptr) now.arg = rule->canonical(now.arg);
    for (const Seen& before : seen) {
      if (before.name != now.name) continue;
      const bool may = rule != nullptr && rule->other_arg && before.arg != now.arg;
      if (may) continue;
      const std::string as = before.spec == now.spec ? "" : " (as '" + before.spec + "' and '" + now.spec + "')";
      throw InputError(SourceLocation{}, "strategy",
                       "composition '" + composition + "' names pass '" +
                           (rule != nullptr && rule->other_arg ? now.name + ":" + now.arg : now.name) + "' twice" + as +
                           ": the second " + (rule != nullptr ? rule->why : "would rewrite what the first made") +
                           "; expected " +
                           (rule != nullptr && rule->other_arg ? "each argument of it once" : "it once"));
    }
    seen.push_back(std::move(now));
  }
}

std::unique_ptr<Pass> make_pass(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (colon != std::string::npos && arg.empty()) bad_arg(spec, "an argument after ':' (or no ':')");
  std::string known;
  for (const auto& e : kPasses) {
    if (name == e.name) return e.make(spec, arg);
    known += known.empty() ? "" : ", ";
    known += e.name;
  }
  throw InputError(SourceLocation{}, "strategy", "unknown pass '" + name + "'; known: " + known);
}

std::vector<std::string> pass_usages() {
  std::vector<std::string> out;
  for (const auto& e : kPasses) out.emplace_back(e.usage);
  return out;
}

}  // namespace overlapsim
