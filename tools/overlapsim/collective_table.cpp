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

int print_collective_table(const CollectiveArgs& a, const CollectiveTable& t) {
  const BenchOp op = t.op;
  const int ranks = t.ranks;
  const Topology& topo = t.topo;
  const BenchOptions& opt = t.opt;
  const bool comparing = t.log != nullptr;
  static const NcclTestsLog kNoLog;
  const NcclTestsLog& log = comparing ? *t.log : kNoLog;
  const std::vector<BenchRow>& rows = t.rows;
  const int per_node = t.per_node;
  std::cout << fmt::format("# overlapsim collective: {} over {} of {} GPUs of {} ({}{}), {} fidelity, profile {}\n",
                           to_string(op), ranks, topo.num_gpus(), topo.name, topo.gpu_model(),
                           per_node > 0 ? fmt::format(", {} per node on {} node(s)", per_node,
                                                      t.nodes)
                                        : std::string(),
                           to_string(opt.replay.fidelity), t.profile_path);
  if (comparing)
    std::cout << fmt::format("# compared with {}: {}, {} ranks on {} node(s){}{}; measured: busbw from the "
                             "out-of-place time (in-place where #wrong flags it)\n",
                             a.compare, log.collective, log.ranks, log.nodes,
                             log.gpu_name.empty() ? "" : ", " + log.gpu_name,
                             log.nccl_version.empty() ? "" : ", NCCL " + log.nccl_version);
  for (const std::string& n : t.notes) std::cout << "# note: " << n << "\n";
  for (const std::string& w : log.warnings) {  // the reader's (FAILED bounds, rows left out, a guessed rank count)
    std::cout << "# warning: " << w << "\n";
    std::cerr << "overlapsim: warning: " << w << "\n";
  }
  const std::string extra_head = comparing ? fmt::format(" {:>9} {:>8}", "measured", "error") : "";
  const std::string extra_unit = comparing ? fmt::format(" {:>9} {:>8}", "(GB/s)", "(%)") : "";
  std::cout << fmt::format("# {:>12} {:>12} {:>6} {:>6} {:>6} {:>10} {:>8} {:>8}{}  {}\n", "size", "count", "type",
                           "redop", "root", "time", "algbw", "busbw", extra_head, "algorithm");
  std::cout << fmt::format("# {:>12} {:>12} {:>6} {:>6} {:>6} {:>10} {:>8} {:>8}{}  {}\n", "(B)", "(elements)", "", "", "",
                           "(us)", "(GB/s)", "(GB/s)", extra_unit, "(/protocol/channels)");
  const bool rooted = op == BenchOp::Broadcast || op == BenchOp::Reduce;
  double sum_busbw = 0;
  int counted = 0, within = 0, over = 0;
  const double bound_pct = a.tolerance_pct >= 0 ? a.tolerance_pct : 10.0;  // the summary's bound
  double worst = 0, worst_size = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    std::string extra;
    if (comparing) {
      // From the log's time (its busbw column is rounded to 0.01 GB/s): the same size and group,
      // so measured busbw = simulated busbw · simulated time / measured time.
      const NcclTestsHalf* m = measured_half(log.rows[i]);
      if (!m || m->time_us <= 0 || r.time_s <= 0) {
        extra = fmt::format(" {:>9} {:>8}", "n/a", "-");
      } else {
        const double measured_GBps = r.busbw_Bps / 1e9 * (r.time_s * 1e6) / m->time_us;
        const double err = m->time_us / (r.time_s * 1e6) - 1;
        extra = fmt::format(" {:>9.2f} {:>+8.1f}", measured_GBps, 100 * err);
        if (r.size_bytes >= t.compare_from) {
          ++counted;
          if (std::abs(err) * 100 <= bound_pct) ++within;
          if (a.tolerance_pct >= 0 && std::abs(err) * 100 > a.tolerance_pct) ++over;
          if (std::abs(err) > std::abs(worst)) worst = err, worst_size = r.size_bytes;
        }
      }
    }
    // The log's count, type and redop where it prints them (the simulation moves bytes).
    const NcclTestsRow* lr = comparing ? &log.rows[i] : nullptr;
    // nccl-tests' count (counted_bytes); the log's as written, whatever it says (the reader warns
    // where it disagrees).
    const std::string count = lr ? lr->count_text : fmt::format("{:.0f}", std::floor(r.size_bytes / counted_bytes(op, ranks)));
    const std::string type = lr && !lr->type.empty() ? lr->type : "float";
    const std::string row_redop =
        lr && !lr->redop.empty() ? lr->redop : t.reduces ? to_string(opt.replay.collectives.reduce_op) : "none";
    std::cout << fmt::format("  {:>12.0f} {:>12} {:>6} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}{}  {}\n", r.size_bytes,
                             count, type, row_redop, rooted ? "0" : "-1", r.time_s * 1e6, r.algbw_Bps / 1e9,
                             r.busbw_Bps / 1e9, extra, r.plan);
    sum_busbw += r.busbw_Bps;
  }
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n", rows.empty() ? 0.0 : sum_busbw / rows.size() / 1e9);
  if (comparing) {
    if (counted == 0) {
      std::cout << fmt::format("# Compared: no measured size from {} on\n", t.from_text);
      // A gate that checked nothing does not pass.
      if (a.tolerance_pct >= 0) {
        std::cerr << fmt::format("overlapsim: --tolerance: no usable measured size from {} on in {}\n", t.from_text,
                                 a.compare);
        return 1;
      }
    } else {
      std::cout << fmt::format("# Compared from {} on: {} of {} sizes within {}%; largest error {:+.1f}% at {:.0f} B\n",
                               t.from_text, within, counted, bound_pct, 100 * worst, worst_size);
    }
    if (over > 0) {
      std::cerr << fmt::format("overlapsim: {} of {} sizes from {} on are off by more than {}% of {}\n", over, counted,
                               t.from_text, a.tolerance_pct, a.compare);
      return 1;
    }
  }
  return 0;
}

}  // namespace overlapsim::cli
