// nccl-tests result rows checked against themselves (nccl_tests_rows.hpp).
#include "calibrate/nccl_tests_rows.hpp"

#include "sim/collective_bench.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace overlapsim {

int type_bytes(const std::string& type) {
  static const std::map<std::string, int> kTypes = {
      {"int8", 1},   {"uint8", 1},   {"char", 1},      {"int32", 4},  {"uint32", 4},  {"int", 4},  {"int64", 8},
      {"uint64", 8}, {"half", 2},    {"bfloat16", 2},  {"float", 4},  {"double", 8},  {"f8e4m3", 1}, {"f8e5m2", 1}};
  const auto it = kTypes.find(type);
  return it == kTypes.end() ? 0 : it->second;
}

void check_repeated_sizes(const NcclTestsLog& log, const std::string& path) {
  std::map<std::tuple<int64_t, std::string, std::string>, int> seen;
  for (const NcclTestsRow& r : log.rows)
    if (const auto [it, fresh] = seen.try_emplace({r.size_bytes, r.type, r.redop}, r.line); !fresh)
      throw InputError(SourceLocation{path, r.line, 0}, "",
                       fmt::format("expected each size once per type and reduction, as nccl-tests prints them, "
                                   "found {} B{}{} again (first at line {})",
                                   r.size_bytes, r.type.empty() ? "" : " of " + r.type,
                                   r.redop.empty() ? "" : " " + r.redop, it->second));
}

void check_time_against_algbw(NcclTestsLog& log, const std::string& path) {
  std::vector<double> k;  // algbw · time / size, per usable half
  const auto ratio = [](const NcclTestsRow& r, const NcclTestsHalf& h) {
    return h.algbw_GBps * h.time_us * 1e3 / static_cast<double>(r.size_bytes);
  };
  for (const NcclTestsRow& r : log.rows)
    for (const NcclTestsHalf* h : {&r.out_of_place, &r.in_place})
      if (h->usable && h->algbw_GBps >= 1 && h->time_us > 0) k.push_back(ratio(r, *h));
  if (k.size() >= 3) {
    std::nth_element(k.begin(), k.begin() + static_cast<long>(k.size() / 2), k.end());
    const double median = k[k.size() / 2];
    for (const NcclTestsRow& r : log.rows)
      for (const NcclTestsHalf* h : {&r.out_of_place, &r.in_place})
        if (h->usable && h->algbw_GBps >= 1 && h->time_us > 0 && std::abs(ratio(r, *h) / median - 1) > 0.05) {
          const std::string what = fmt::format(
              "the {} time ({:g} us) and algbw ({:g} GB/s) disagree by {:.0f}% against the log's other rows for {} "
              "B: one of them is corrupted",
              h == &r.out_of_place ? "out-of-place" : "in-place", h->time_us, h->algbw_GBps,
              100 * std::abs(ratio(r, *h) / median - 1), r.size_bytes);
          log.warnings.push_back(fmt::format("{}:{}: {}; the time is read", path, r.line, what));
          log.inconsistent_rows.emplace_back(r.line, what);
        }
  }
}

void check_count_column(NcclTestsLog& log, const std::string& path) {
  const int64_t per_rank = nccl_tests_count_ranks(parse_bench_op(log.collective), log.ranks);
  for (const NcclTestsRow& r : log.rows) {
    const int bytes = type_bytes(r.type);
    if (bytes == 0) continue;
    const std::string ranks_part = per_rank > 1 ? fmt::format(" on each of {} ranks", per_rank) : "";
    // Sizes are at most 2^62 bytes (refused where read): a count whose bytes pass that disagrees.
    if (r.count > (int64_t{1} << 62) / bytes / per_rank) {
      log.warnings.push_back(fmt::format("{}:{}: count {} of {} ({} B){} is past 2^62 B, not the size {} B; the row is "
                                         "read by its size",
                                         path, r.line, r.count_text, r.type, bytes,
                                         ranks_part, r.size_bytes));
      continue;
    }
    const int64_t expected = r.count * bytes * per_rank;
    if (expected != r.size_bytes)
      log.warnings.push_back(fmt::format("{}:{}: count {} of {} ({} B){} is {} B, not the size {} B; the row is read "
                                         "by its size",
                                         path, r.line, r.count, r.type, bytes, ranks_part, expected, r.size_bytes));
  }
}


void check_collective_columns(const NcclTestsLog& log, const std::string& path, int at, const std::string& named_by,
                              std::vector<double> ratios, double f_median) {
  const bool f_tells_n = log.collective == "all_reduce" || log.collective == "all_gather" ||
                         log.collective == "reduce_scatter" || log.collective == "alltoall";
  const double f_per_n_known = log.collective == "all_reduce" ? 2.0 : 1.0;
  if (!f_tells_n && !ratios.empty()) {
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    const double f = ratios[ratios.size() / 2];
    if (std::abs(f - 1.0) > 0.01)
      throw InputError(SourceLocation{path, at, 0}, "",
                       fmt::format("busbw / algbw is {:.4g} in this log, where {}'s is 1 ({} names it): expected a "
                                   "log of {}",
                                   f, log.collective, named_by, log.collective));
  }
  if (log.collective != "sendrecv") {
    const bool reduces = log.collective == "all_reduce" || log.collective == "reduce_scatter" || log.collective == "reduce";
    for (const NcclTestsRow& r : log.rows) {
      if (r.redop.empty()) continue;
      if ((r.redop == "none") == reduces)
        throw InputError(SourceLocation{path, r.line, 0}, "redop",
                         reduces ? fmt::format("expected the reduction {} performs (sum, prod, ...; {} names it), found "
                                               "none: a log of a collective that reduces nothing",
                                               log.collective, named_by)
                                 : fmt::format("expected none ({} reduces nothing; {} names it), found {}: a log of a "
                                               "collective that reduces",
                                               log.collective, named_by, r.redop));
    }
  }
  // (n − 1)/n < 1 whatever n: a ratio of the bus factor's limit or more is another collective's
  // (a Broadcast's 1 read as an AllGather's).
  if (f_median > 1.001)
    throw InputError(SourceLocation{path, at, 0}, "",
                     fmt::format("busbw / algbw is {:.4g} in this log, where {}'s is {}(n - 1)/n, below {} ({} names "
                                 "it): expected a log of {}",
                                 f_median * f_per_n_known, log.collective, f_per_n_known == 2.0 ? "2" : "",
                                 f_per_n_known == 2.0 ? "2" : "1", named_by, log.collective));
  // A ratio of 1 or more gave no group size; against the rank lines' n it is another collective's
  // where (n − 1)/n is below 0.999.
  if (f_median >= 0.999 && log.ranks_from == "rank lines" && log.ranks < 1000 &&
      std::abs(f_median - (log.ranks - 1.0) / log.ranks) > 0.005)
    throw InputError(SourceLocation{path, at, 0}, "",
                     fmt::format("busbw / algbw is {:.4g} in this log, where {}'s over the {} ranks of its rank lines is "
                                 "{:.4g} ({} names it): expected a log of {}",
                                 f_median * f_per_n_known, log.collective, log.ranks,
                                 f_per_n_known * (log.ranks - 1.0) / log.ranks, named_by, log.collective));
}

}  // namespace overlapsim
