// The table `overlapsim collective` prints (collective_command.cpp): nccl-tests' columns, and
// with --compare LOG the log's busbw and the error beside each row.
#pragma once

#include "calibrate/nccl_tests.hpp"
#include "sim/collective_bench.hpp"
#include "sim/topology.hpp"
#include "tools/overlapsim/commands.hpp"

#include <string>
#include <vector>

namespace overlapsim::cli {

/// What the table of `collective` prints from, once the collective has run (collective_command).
struct CollectiveTable {
  BenchOp op;
  int ranks;
  const Topology& topo;
  int nodes;     ///< the nodes the members are on
  int per_node;  ///< members per node where not every GPU of a node is one, or the nodes were trimmed to them; else 0
  const BenchOptions& opt;
  const std::string& profile_path;
  const NcclTestsLog* log;  ///< the --compare log, null without one
  const std::vector<std::string>& notes;
  const std::vector<BenchRow>& rows;
  double compare_from;           ///< the compared sizes' least, bytes
  const std::string& from_text;  ///< as --compare-from gave it
  bool reduces;                  ///< the collective reduces (its rows print the reduction)
};

/// Prints the table in nccl-tests' columns: the header lines, the notes and the log's warnings
/// (those on stderr too), a row per size (with a log: its measured busbw and the error), the
/// average busbw and, with a log, the comparison's summary. Returns the exit status: 1 where
/// --tolerance is passed at some size or no measured size was compared, else 0.
int print_collective_table(const CollectiveArgs& a, const CollectiveTable& t);

}  // namespace overlapsim::cli
