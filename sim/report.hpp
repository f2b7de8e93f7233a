// Writers of a RunResult: a table for people, JSON for programs. Both carry units.
#pragma once

#include "sim/output_file.hpp"
#include "sim/result.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace overlapsim {

/// A table a person reads at a glance: one row per strategy, units in the header. A strategy
/// --max-ops refused has a row reading "refused" (and its peak memory) and its reason under the
/// table.
void print_table(std::ostream& out, const RunResult& r);

/// The plan of every strategy that searched one (`run --explain`): per communication op, the
/// alternatives considered with their predicted time and exposed communication (milliseconds),
/// the chosen one marked. Strategies without a plan get one line saying so.
void print_plans(std::ostream& out, const RunResult& r);
/// Strategy `s`'s communication as replayed (StrategyResult::communication), one row per op:
/// name, kind, group (purpose, ranks, nodes x ranks on each), size, instances, NCCL's plan, SMs,
/// contention-free and replayed mean and longest times (µs). Nothing when it has none.
void print_communication(std::ostream& out, const StrategyResult& s, const RunResult& r);

/// The same figures as JSON (keys carry units: iteration_s, peak_memory_bytes, ...). A strategy
/// --max-ops refused has no figures but "refused": {"reason", "ops", "max_ops", "replays_before"},
/// and the top level lists such strategies under "refused" (absent when none).
nlohmann::json to_json(const RunResult& r);

/// Writes JSON to `path` atomically (a temporary file beside the target, renamed over it): a
/// failed write leaves no half-written file. A symbolic link is followed (its target is
/// replaced). Throws InputError naming the path if it cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace overlapsim
