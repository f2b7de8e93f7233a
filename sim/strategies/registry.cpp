#include "sim/strategies/registry.hpp"

#include "sim/error.hpp"

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
};
}  // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  std::string known;
  for (const auto& e : kStrategies) {
    if (name == e.name) return e.make();
    known += known.empty() ? "" : ", ";
    known += e.name;
  }
  throw InputError(SourceLocation{}, "strategy", "unknown strategy '" + name + "'; known: " + known);
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& e : kStrategies) out.emplace_back(e.name);
  return out;
}

}  // namespace overlapsim
