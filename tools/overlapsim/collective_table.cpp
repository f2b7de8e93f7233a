// The table `overlapsim collective` prints (collective_table.hpp).
#include "tools/overlapsim/collective_table.hpp"

#include "tools/overlapsim/collective_inputs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iostream>

namespace overlapsim::cli {

namespace {

/// The measured half of a log row the comparison uses: out-of-place, or in-place where the
/// out-of-place half's #wrong column says it is not trustworthy; null when neither is.
const NcclTestsHalf* measured_half(const NcclTestsRow& r) {
  if (r.out_of_place.usable) return &r.out_of_place;
  if (r.in_place.usable) return &r.in_place;
  return nullptr;
}

}  // namespace

CollectiveTablePrinter::CollectiveTablePrinter(const CollectiveArgs& a, const CollectiveTable& t) : a_(a), t_(t) {}

void CollectiveTablePrinter::head() {
  const CollectiveTable& t = t_;
  const BenchOp op = t.op;
  const Topology& topo = t.topo;
  static const NcclTestsLog kNoLog;
  const NcclTestsLog& log = t.log ? *t.log : kNoLog;
  std::cout << fmt::format("# overlapsim collective: {} over {} of {} GPUs of {} ({}{}), {} fidelity, profile {}\n",
                           to_string(op), t.ranks, topo.num_gpus(), topo.name, topo.gpu_model(),
                           t.per_node > 0 ? fmt::format(", {} per node on {} node(s)", t.per_node, t.nodes)
                                          : std::string(),
                           to_string(t.opt.replay.fidelity), t.profile_path);
  if (t.log)
    std::cout << fmt::format("# compared with {}: {}, {} ranks on {} node(s){}{}; measured: busbw from the "
                             "out-of-place time (in-place where #wrong flags it)\n",
                             a_.compare, log.collective, log.ranks, log.nodes,
                             log.gpu_name.empty() ? "" : ", " + log.gpu_name,
                             log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version);
  for (const std::string& n : t.notes) std::cout << "# note: " << n << "\n";
  notes_printed_ = t.notes.size();
  for (const std::string& w : log.warnings) {  // the reader's (FAILED bounds, rows left out, a guessed rank count)
    std::cout << "# warning: " << w << "\n";
    std::cerr << "overlapsim: warning: " << w << "\n";
  }
  const std::string extra_head = t.log ? fmt::format(" {:>9} {:>8}", "measured", "error") : "";
  const std::string extra_unit = t.log ? fmt::format(" {:>9} {:>8}", "(GB/s)", "(%)") : "";
  std::cout << fmt::format("# {:>12} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}{}  {}\n", "size", "count", "type",
                           "redop", "root", "time", "algbw", "busbw", extra_head, "algorithm");
  std::cout << fmt::format("# {:>12} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}{}  {}\n", "(B)", "(elements)", "", "", "",
                           "(us)", "(GB/s)", "(GB/s)", extra_unit, "(/protocol/channels)");
  std::cout.flush();
}

void CollectiveTablePrinter::row(size_t i, const BenchRow& r) {
  const CollectiveTable& t = t_;
  const BenchOp op = t.op;
  const bool rooted = op == BenchOp::Broadcast || op == BenchOp::Reduce;
  const double bound_pct = a_.tolerance_pct >= 0 ? a_.tolerance_pct : 10.0;  // the summary's bound
  std::string extra;
  if (t.log) {
    // From the log's time (its busbw column is rounded to 0.01 GB/s): the same size and group,
    // so measured busbw = simulated busbw · simulated time / measured time.
    const NcclTestsHalf* m = measured_half(t.log->rows[i]);
    if (!m || m->time_us <= 0 || r.time_s <= 0) {
      extra = fmt::format(" {:>9} {:>8}", "n/a", "-");
    } else {
      const double measured_GBps = r.busbw_Bps / 1e9 * (r.time_s * 1e6) / m->time_us;
      const double err = m->time_us / (r.time_s * 1e6) - 1;
      extra = fmt::format(" {:>9.2f} {:>+8.1f}", measured_GBps, 100 * err);
      if (r.size_bytes >= t.compare_from) {
        ++counted_;
        if (std::abs(err) * 100 <= bound_pct) ++within_;
        if (a_.tolerance_pct >= 0 && std::abs(err) * 100 > a_.tolerance_pct) ++over_;
        if (std::abs(err) > std::abs(worst_)) worst_ = err, worst_size_ = r.size_bytes;
      }
    }
  }
  // The log's count, type and redop where it prints them (the simulation moves bytes).
  const NcclTestsRow* lr = t.log ? &t.log->rows[i] : nullptr;
  // nccl-tests' count (counted_bytes); the log's as written, whatever it says (the reader warns
  // where it disagrees).
  const std::string count = lr ? lr->count_text : fmt::format("{:.0f}", std::floor(r.size_bytes / counted_bytes(op, t.ranks, t.opt.replay.collectives.datatype)));
  const std::string type = lr && !lr->type.empty() ? lr->type : to_string(t.opt.replay.collectives.datatype);
  const std::string row_redop =
      lr && !lr->redop.empty() ? lr->redop : t.reduces ? to_string(t.opt.replay.collectives.reduce_op) : "none";
  std::cout << fmt::format("  {:>12.0f} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}{}  {}\n", r.size_bytes,
                           count, type, row_redop, rooted ? std::to_string(t.opt.root) : "-1", r.time_s * 1e6, r.algbw_Bps / 1e9,
                           r.busbw_Bps / 1e9, extra, r.plan);
  std::cout.flush();
  sum_busbw_ += r.busbw_Bps;
  ++rows_;
}

int CollectiveTablePrinter::tail() {
  const CollectiveTable& t = t_;
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n", rows_ == 0 ? 0.0 : sum_busbw_ / rows_ / 1e9);
  // Notes of the results (a forced algorithm that did not run), after the rows that tell them.
  for (size_t k = notes_printed_; k < t.notes.size(); ++k) std::cout << "# note: " << t.notes[k] << "\n";
  notes_printed_ = t.notes.size();
  if (t.log) {
    const double bound_pct = a_.tolerance_pct >= 0 ? a_.tolerance_pct : 10.0;
    if (counted_ == 0) {
      std::cout << fmt::format("# Compared: no measured size from {} on\n", t.from_text);
      // A gate that checked nothing does not pass.
      if (a_.tolerance_pct >= 0) {
        std::cerr << fmt::format("overlapsim: --tolerance: no usable measured size from {} on in {}\n", t.from_text,
                                 a_.compare);
        return 1;
      }
    } else {
      std::cout << fmt::format("# Compared from {} on: {} of {} sizes within {}%; largest error {:+.1f}% at {:.0f} B\n",
                               t.from_text, within_, counted_, bound_pct, 100 * worst_, worst_size_);
    }
    if (over_ > 0) {
      std::cerr << fmt::format("overlapsim: {} of {} sizes from {} on are off by more than {}% of {}\n", over_, counted_,
                               t.from_text, a_.tolerance_pct, a_.compare);
      return 1;
    }
  }
  return 0;
}

}  // namespace overlapsim::cli
