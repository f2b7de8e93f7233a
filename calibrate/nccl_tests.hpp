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
//
// NCCL's tuning choices (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING; rank 0 prints one line per
// collective call) are read in the three formats NCCL has used (src/enqueue.cc):
//   "NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 23.450001"          2.21-2.22 (topoGetAlgoInfo)
//   "NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 23.45"    2.23-2.26 (topoGetAlgoInfo)
//   "NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..7}"
//                                                                        2.27 and later
//                                                                        (scheduleCollTasksToPlan)
// Numbers are NCCL's (src/include/nccl_common.h, since 2.19 plugin/nccl_tuner.h): algorithms
// 0 TREE, 1 RING, 2 COLLNET_DIRECT, 3 COLLNET_CHAIN, 4 NVLS, 5 NVLS_TREE, 6 PAT; protocols 0 LL,
// 1 LL128, 2 SIMPLE. The first two formats print NCCL's nBytes (the larger buffer: nccl-tests'
// size); the third prints count · type size, the per-rank buffer of AllGather and ReduceScatter,
// which is multiplied by the group size. Lines naming another collective than the log's are
// ignored.
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
  int64_t count = 0;         ///< (past 2^63: the largest int64; count_text holds it as written)
  std::string count_text;    ///< the count as written
  std::string type, redop;   ///< as printed ("" when the header has no such column)
  int root = -2;             ///< the root column: Broadcast's and Reduce's root rank, -1 as printed for the
                             ///< others; -2: the header has no root column
  NcclTestsHalf out_of_place, in_place;
};

/// One of NCCL's TUNING lines: what NCCL ran one call of the collective with.
struct NcclTuningLine {
  int line = 0;             ///< 1-based line in the log
  double bytes = 0;         ///< NCCL's nBytes (nccl-tests' size), bytes
  std::string algorithm;    ///< lower case: "ring", "tree", "nvls", "nvls_tree", "collnet_direct", ...
  std::string protocol;     ///< "LL", "LL128" or "Simple"
};

struct NcclTestsLog {
  std::string path;
  std::string collective;        ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, reduce
  std::string program;           ///< from "# Collective test starting:", "" in older logs
  int threads = 0, gpus_per_thread = 0;  ///< from "# nThread N nGpus M"
  int ranks = 0;                 ///< group size n
  int nodes = 1;
  /// Ranks on each host where every host of the group holds as many (the rank lines'), 0 where
  /// they differ; without rank lines ranks (one host assumed).
  int ranks_per_host = 0;
  std::string ranks_from;        ///< how n was found: "rank lines", "busbw/algbw", "nThread x nGpus"
  std::string gpu_name;          ///< of rank 0 ("" without rank lines)
  std::string nccl_version;      ///< "2.28.9", "" when the log does not say
  std::string algorithm = "auto", protocol = "auto";
  /// NCCL_COLLNET_ENABLE as the log's NCCL INFO lines say it was set ("NCCL_COLLNET_ENABLE set by
  /// environment to 1.", src/init.cc; NCCL reads the value with strtol, any nonzero enables): 1
  /// set nonzero, 0 set to 0, -1 not said.
  int collnet_enable = -1;
  std::vector<NcclTestsRow> rows;
  std::vector<NcclTuningLine> tuning;  ///< NCCL's TUNING lines for this collective, in log order
  double avg_busbw_GBps = -1;    ///< the footer's "Avg bus bandwidth" (-1: absent)
  std::vector<std::string> warnings;  ///< "FILE:LINE: ..." lines worth showing the user
  /// Rows whose time and algbw disagree with the log's other rows (also in warnings): their line
  /// and what disagrees. --compare reads their time; a profile is not fitted from them.
  std::vector<std::pair<int, std::string>> inconsistent_rows;
};

/// Parses one log. `collective` (may be empty) names the collective when neither the log's
/// "Collective test starting" line nor the file name does (e.g. "all_reduce"). Throws InputError
/// "FILE:LINE: ..." for a malformed result row (wrong column count, a value that is not a
/// number), a result row before any column header, a header without the out-of-place and
/// in-place columns, an unknown or unsupported collective, or a log with no result row.
NcclTestsLog parse_nccl_tests_log(const std::string& path, std::istream& in, const std::string& collective = "");

/// Opens and parses a log file (see parse_nccl_tests_log).
NcclTestsLog read_nccl_tests_log(const std::string& path, const std::string& collective = "");
/// Opens a log file that may hold several runs one after another (a sweep script's output: each
/// run from its "# nccl-tests version", "# Collective test starting" or "# nThread" line on) and
/// parses each as parse_nccl_tests_log does, errors naming the line of the file. In file order;
/// one run: one log. Throws InputError as parse_nccl_tests_log for any run, and for an empty file.
std::vector<NcclTestsLog> read_nccl_tests_logs(const std::string& path, const std::string& collective = "");

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

/// Reads the logs (a file of several runs, read_nccl_tests_logs, gives each), groups their points by (collective, ranks, nodes) and fits α and busbw to each
/// group (collective_fit.hpp). Where the logs carry NCCL's TUNING lines, the profile's tuning
/// table gets, per group, one rule per run of consecutive sizes NCCL ran with the same ring or
/// tree algorithm and protocol (max_bytes: the run's largest size; ranks and nodes: the group's);
/// sizes NCCL ran with an algorithm the simulator does not model (NVLS, CollNet, PAT) make no
/// rule and are reported in the warnings; a size run with two choices takes the most frequent.
/// Without TUNING lines the table stays empty. The profile is the device's datasheet profile (calibrate/profiles/)
/// with provenance kind "imported" and a collectives section. Throws InputError when the device
/// cannot be told (no --device and no known GPU name in the logs), when logs disagree on the
/// device, or when two logs of one group were run with different NCCL algorithms or protocols.
ImportResult import_nccl_tests(const std::vector<std::string>& paths, const ImportOptions& options);

}  // namespace overlapsim
