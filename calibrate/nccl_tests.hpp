// Reading the stdout of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf,
// reduce_scatter_perf, alltoall_perf, sendrecv_perf, broadcast_perf, reduce_perf) and fitting
// α and bus bandwidth per collective and group shape from it.
//
// The format is defined by nccl-tests itself (https://github.com/NVIDIA/nccl-tests): README.md
// ("Usage", "Arguments") and src/common.cu — in releases since 2.17 src/util.cu:
// writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble, writeBenchmarkLineBody,
// writeResultFooter. A log is
//   # nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809      (since 2.17)
//   # Collective test starting: all_reduce_perf                              (since 2.17)
//   # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 ...
//   #
//   # Using devices
//   #  Rank  0 Group  0 Pid  28307 on      gpu59 device  0 [0000:16:00] NVIDIA H100 80GB HBM3
//   ...
//   #                                                              out-of-place                       in-place
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//              8             2     float     sum      -1    42.56    0.00    0.00      0    41.33    0.00    0.00      0
//   ...
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 22.4312
// Older releases (before 2.13, 2022) print no root column, an "error" column (the maximum
// relative error, "%5.0le") instead of "#wrong", and rank lines without "Group"; -I adds
// per-iteration columns (i_min, i_max, i_p99, i_cv%) to each half, -S a timestamp, -C names the
// time column "cputime". The parser therefore reads the column layout from the header line and
// locates time, algbw, busbw and #wrong/error by name in each half.
//
// Columns: size is nccl-tests' S in bytes (AllGather: the gathered output; ReduceScatter: the
// input; AllToAll: the whole send buffer), time in µs, algbw = S / time in GB/s (1e9 B/s), busbw =
// algbw · f(n) (profile_tables.hpp; NVIDIA/nccl-tests doc/PERFORMANCE.md).
//
// The group size n is the number of ranks in rank 0's group among the "Rank ... Group ..."
// lines; without rank lines it is inferred from busbw / algbw = f(n) (AllReduce, AllGather,
// ReduceScatter, AllToAll) or else taken as nThread · nGpus. The nodes are the distinct host
// names among the group's rank lines. NCCL_ALGO / NCCL_PROTO are taken from NCCL's own INFO
// lines ("NCCL_ALGO set by environment to Ring", NCCL_DEBUG=INFO) when present, else "auto".
#pragma once

#include "calibrate/profile.hpp"

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace overlapsim {

/// One half (out-of-place or in-place) of a result row.
struct NcclTestsHalf {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::string wrong;   ///< the #wrong (or old "error") column as printed, "N/A" possible
  bool usable = true;  ///< false when #wrong counts wrong elements (the result is not trustworthy)
};

struct NcclTestsRow {
  int line = 0;              ///< 1-based line in the log
  int64_t size_bytes = 0;
  int64_t count = 0;
  std::string type, redop;   ///< as printed ("" when the header has no such column)
  NcclTestsHalf out_of_place, in_place;
};

struct NcclTestsLog {
  std::string path;
  std::string collective;        ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, reduce
  std::string program;           ///< from "# Collective test starting:", "" in older logs
  int threads = 0, gpus_per_thread = 0;  ///< from "# nThread N nGpus M"
  int ranks = 0;                 ///< group size n
  int nodes = 1;
  std::string ranks_from;        ///< how n was found: "rank lines", "busbw/algbw", "nThread x nGpus"
  std::string gpu_name;          ///< of rank 0 ("" without rank lines)
  std::string nccl_version;      ///< "2.28.9", "" when the log does not say
  std::string algorithm = "auto", protocol = "auto";
  std::vector<NcclTestsRow> rows;
  double avg_busbw_GBps = -1;    ///< the footer's "Avg bus bandwidth" (-1: absent)
  std::vector<std::string> warnings;  ///< "FILE:LINE: ..." lines worth showing the user
};

/// Parses one log. `collective` (may be empty) names the collective when neither the log's
/// "Collective test starting" line nor the file name does (e.g. "all_reduce"). Throws InputError
/// "FILE:LINE: ..." for a malformed result row (wrong column count, a value that is not a
/// number), a result row before any column header, a header without the out-of-place and
/// in-place columns, an unknown or unsupported collective, or a log with no result row.
NcclTestsLog parse_nccl_tests_log(const std::string& path, std::istream& in, const std::string& collective = "");

/// Opens and parses a log file (see parse_nccl_tests_log).
NcclTestsLog read_nccl_tests_log(const std::string& path, const std::string& collective = "");

/// The canonical collective name for an nccl-tests program or a name written by a user
/// ("all_reduce_perf", "allreduce", "all_reduce_perf_mpi", ...), or "" when unknown.
std::string nccl_tests_collective(const std::string& name);

struct ImportOptions {
  std::string device;      ///< catalog model; empty: from the logs' GPU name
  std::string collective;  ///< for logs that do not name theirs; may be empty
};

struct ImportResult {
  Profile profile;                  ///< the device's datasheet profile with the fitted collectives
  std::vector<NcclTestsLog> logs;
  std::vector<std::string> warnings;
};

/// Reads the logs, groups their points by (collective, ranks, nodes) and fits α and busbw to each
/// group (collective_fit.hpp). The profile is the device's datasheet profile (calibrate/profiles/)
/// with provenance kind "imported" and a collectives section. Throws InputError when the device
/// cannot be told (no --device and no known GPU name in the logs), when logs disagree on the
/// device, or when two logs of one group were run with different NCCL algorithms or protocols.
ImportResult import_nccl_tests(const std::vector<std::string>& paths, const ImportOptions& options);

}  // namespace overlapsim
