// Consistency checks of an nccl-tests log's result rows (calibrate/nccl_tests.hpp: the reader
// calls them once a run's rows are read): what nccl-tests prints of one measurement must agree
// with itself. Errors and warnings name the file and the row's line.
#pragma once

#include "calibrate/nccl_tests.hpp"

#include <string>
#include <vector>

namespace overlapsim {

/// Bytes of an element of an nccl-tests -d type, by the name it prints (src/common.cu
/// test_typenames; "char" and "int" before NCCL 2; fp8 in recent versions); 0 for another name.
int type_bytes(const std::string& type);

/// nccl-tests prints each size once per type and reduction (-d all and -o all repeat the sizes,
/// each with its own). Throws InputError at the second row of a size with the same type and
/// reduction: a pasted or edited row, which would count twice in a fit and print twice beside a
/// comparison.
void check_repeated_sizes(const NcclTestsLog& log, const std::string& path);

/// Each half's time and algbw come from one measurement (algbw = bytes / time, the bytes the
/// size column's or, in some generations, that times the ranks): a half whose algbw · time / size
/// strays more than 5% from the log's median (over halves of at least 1 GB/s algbw, where the
/// printed two decimals are exact to 1%; three at least) is corrupted in one of them. Adds a
/// warning (its time is what --compare reads) and an entry of log.inconsistent_rows (the import
/// refuses it).
void check_time_against_algbw(NcclTestsLog& log, const std::string& path);

/// The count column: nccl-tests prints a rank's elements per call (its paramcount: the whole
/// buffer for AllReduce, Broadcast, Reduce and SendRecv, a rank's share of the size for
/// AllGather, ReduceScatter and AllToAll), so size = count · type size (· ranks,
/// nccl_tests_count_ranks). A row that disagrees is corrupted or edited: a warning; its size is
/// what is read. REQUIRES: log.collective and log.ranks set.
void check_count_column(NcclTestsLog& log, const std::string& path);

/// The columns that tell one collective from another, against log.collective (`named_by`: what
/// named it, for the message; errors at line `at`, the run's first where the file holds several):
/// busbw / algbw (`ratios`, each half's of at least 10 GB/s algbw; their median is 1 for
/// Broadcast, Reduce and SendRecv; `f_median` the median over the bus factor's n-free part,
/// (n − 1)/n, for AllReduce, AllGather, ReduceScatter and AllToAll, -1 where none was read,
/// checked against the rank lines' n where it gave none itself) and every row's redop (none where
/// the collective reduces nothing, an operation where it reduces; sendrecv_perf prints "sum" for
/// the operation it does not perform). Throws InputError naming the line. (Regression: an unnamed
/// AllGather run was compared as a Reduce, and a log of ratio 1 as an AllGather over 8 ranks.)
/// REQUIRES: log.collective and log.ranks set.
void check_collective_columns(const NcclTestsLog& log, const std::string& path, int at, const std::string& named_by,
                              std::vector<double> ratios, double f_median);

}  // namespace overlapsim
