#include "sim/strategies/registry.hpp"

#include "sim/error.hpp"
#include "sim/passes/passes.hpp"

namespace overlapsim {

namespace {
struct Entry {
  const char* name;
  std::unique_ptr<Strategy> (*make)();
};
// Comparison order; add a new strategy here.
const Entry kStrategies[] = {
    {"serial", make_serial},
    {"megatron", make_megatron},
    {"te-overlap", make_te_overlap},
    {"wang-decomp", make_wang_decomp},
    {"centauri", make_centauri},
};

/// "BASE+PASS[:ARG]+…": the registered passes (sim/passes/registry.cpp) in order on the
/// workload, then BASE's placement of ops on streams.
std::unique_ptr<Strategy> make_composed(const std::string& name) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t plus; (plus = name.find('+', from)) != std::string::npos; from = plus + 1)
    parts.push_back(name.substr(from, plus - from));
  parts.push_back(name.substr(from));
  // An empty part is named as such, not looked up as a strategy or pass named ''.
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].empty()) continue;
    const std::string where = i == 0                  ? "before its first '+'"
                              : i + 1 == parts.size() ? "after its last '+'"
                                                      : "between two '+' (part " + std::to_string(i + 1) + ")";
    throw InputError(SourceLocation{}, "strategy",
                     "composition '" + name + "' has an empty part " + where +
                         "; expected BASE+PASS[:ARG]+... with a name on each side of every '+', e.g. "
                         "megatron+workload-partition:4");
  }
  std::unique_ptr<Strategy> base = make_strategy(parts[0]);
  std::vector<std::unique_ptr<Pass>> passes;
  std::string desc = base->name() + " after passes:";
  for (size_t i = 1; i < parts.size(); ++i) {
    passes.push_back(make_pass(parts[i]));
    desc += " " + passes.back()->description() + ";";
  }
  check_pass_repeats(name, std::vector<std::string>(parts.begin() + 1, parts.end()));
  return make_composed_strategy(name, desc, std::move(passes), std::move(base));
}
}  // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name.find('+') != std::string::npos) return make_composed(name);
  std::string known;
  for (const auto& e : kStrategies) {
    if (name == e.name) return e.make();
    known += known.empty() ? "" : ", ";
    known += e.name;
  }
  throw InputError(SourceLocation{}, "strategy",
                   "unknown strategy '" + name + "'; known: " + known +
                       " (or BASE+PASS[:ARG]+..., passes: " + [] {
                         std::string p;
                         for (const auto& u : pass_usages()) p += (p.empty() ? "" : ", ") + u;
                         return p;
                       }() + ")");
}

bool same_strategy(const std::string& a, const std::string& b) {
  return a == b || make_strategy(a)->description() == make_strategy(b)->description();
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& e : kStrategies) out.emplace_back(e.name);
  return out;
}

}  // namespace overlapsim
