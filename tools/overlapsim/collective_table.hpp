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

/// What the table of `collective` prints from (collective_command).
struct CollectiveTable {
  BenchOp op;
  int ranks;
  const Topology& topo;
  int nodes;     ///< the nodes the members are on
  int per_node;  ///< members per node where not every GPU of a node is one, or the nodes were trimmed to them; else 0
  const BenchOptions& opt;
  const std::string& profile_path;
  const NcclTestsLog* log;  ///< the --compare log, null without one
  /// The notes: those known before the collective runs are printed with the header, those
  /// added after it (of its results) after the rows.
  const std::vector<std::string>& notes;
  double compare_from;           ///< the compared sizes' least, bytes
  const std::string& from_text;  ///< as --compare-from gave it
  bool reduces;                  ///< the collective reduces (its rows print the reduction)
};

/// Prints the table in nccl-tests' columns, as nccl-tests does, a row as each size is done:
/// head() the header lines, the notes so far and the log's warnings (those on stderr too);
/// row() each size's row (with a log: its measured busbw and the error); tail() the average
/// busbw, the notes added since the head and, with a log, the comparison's summary. Each call
/// flushes stdout, so that a long sweep shows its rows as they come and a stopped one keeps
/// them.
class CollectiveTablePrinter {
 public:
  /// `a` and `t` must outlive the printer.
  CollectiveTablePrinter(const CollectiveArgs& a, const CollectiveTable& t);
  void head();
  /// Row i of the sizes (the i-th of the log's rows with --compare).
  void row(size_t i, const BenchRow& r);
  /// Returns the exit status: 1 where --tolerance is passed at some size or no measured size
  /// was compared, else 0.
  int tail();

 private:
  const CollectiveArgs& a_;
  const CollectiveTable& t_;
  size_t notes_printed_ = 0;
  double sum_busbw_ = 0;
  int rows_ = 0;
  int counted_ = 0, within_ = 0, over_ = 0;  // --compare: sizes compared, within the bound, past --tolerance
  double worst_ = 0, worst_size_ = 0;
};

}  // namespace overlapsim::cli
