// What `overlapsim collective` takes from its flags before it simulates (collective_command.cpp):
// the machine, trimmed where its nodes at full size pass the machine limit, and the sizes as
// nccl-tests runs them.
#pragma once

#include "calibrate/nccl_tests.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim::cli {

/// The bytes one unit of nccl-tests' count column stands for, its elements being of `type`: the
/// element's size (datatype_bytes: 4 for float), times `ranks` for AllGather, ReduceScatter and
/// AllToAll, whose count is a rank's share of the size (nccl_tests_count_ranks), bytes.
double counted_bytes(BenchOp op, int ranks, DataType type);

/// The element type `op` moves (nccl-tests -d): `flag`'s (--datatype; "" where not given), else
/// the type column of `log` (--compare; null without one) where it has one, else float. Names
/// as parse_datatype reads them. `*notes` gets where the type came from the log, and for an fp8
/// reduction over more than 8 `ranks` that NCCL's tuner weighs the ring ×1024. Throws
/// InputError: "--datatype" for a name that is no type, or one other than the log's; at the
/// log's line ("type") for a name that is no type, or a second type (a run of nccl-tests -d
/// all: one type per comparison); "--datatype" (or the log's line) for an fp8 reduction
/// (allreduce, reducescatter, reduce) on GPUs `dev` below compute capability 9.0, which NCCL
/// builds no kernel for (nccl_has_kernel).
DataType collective_datatype(const std::string& flag, const NcclTestsLog* log, BenchOp op, int ranks,
                             const DeviceSpec& dev, std::vector<std::string>* notes);

/// What `overlapsim collective --compare` runs of a log's NCCL_ALGO (compared_algorithm).
struct ComparedAlgorithm {
  std::string algo;  ///< as --algo takes it: "auto", one name or a list
  /// algorithm_bit of each algorithm to leave out of the automatic choice (or the log's list) for
  /// the log's collective: what the log's NCCL did not have for it (compared_algorithm).
  unsigned left_out = 0;
};

/// The algorithm `overlapsim collective --compare` runs for log `log` of collective `op`, as
/// --algo takes it: `flag_algo` where given (--algo; "" where not), else the log's NCCL_ALGO where
/// it reads as one algorithm modelled for `op` or as a list NCCL_ALGO takes, else "auto". Sets
/// `*collnet_enable` (NCCL_COLLNET_ENABLE, from --collnet) where the log ran with it: set to 1 by
/// its NCCL INFO lines, or not said beside an NCCL_ALGO that names one that needs it (CollNet,
/// NVLS across nodes; one name, or a list that lists it, not one that excludes it);
/// `sharp_version` is the topology's (0: its fabric does not reduce, said in the notes). What the
/// log's NCCL (its nccl_version; unknown: no matter) did not have for the collective ran in no
/// comparison: NVLS (an AllReduce in one node) before 2.17, NVLS_TREE and an AllReduce's NVLS
/// across nodes before 2.18, NVLS AllGather/ReduceScatter in one node before 2.19, across nodes
/// (and CollNetDirect's) before 2.20, PAT before 2.23: the log's NCCL_ALGO naming one runs the
/// ring, and the automatic choice (no --algo, or --algo auto) or the log's list is without them
/// (left_out; what runs only with CollNet where CollNet is on, NVLS where the topology's GPUs'
/// `compute_capability` is 9.0 or more, PAT where the log has one rank a node), each said in a note. Appends to
/// `*notes` what it took from the log and what a flag took in its place. Throws nothing.
ComparedAlgorithm compared_algorithm(const NcclTestsLog& log, BenchOp op, const std::string& flag_algo,
                                     bool flag_collnet, int sharp_version, int compute_capability,
                                     bool* collnet_enable, std::vector<std::string>* notes);

/// The topology of file `path` with the overrides `*ov`. Where node.count passes the machine
/// limit at the nodes' full size and the collective takes `k` GPUs a node (k > 0: --ranks-per-node,
/// or a --compare log's ranks per host), the nodes are loaded with their first k GPUs (their
/// NICs, one per GPU, and their places in the rails with them): `*ov` then holds
/// node.gpus.count=k, for every later load to grow from, and `*trimmed_note` says so.
/// Throws InputError: the load's own where k is 0, equals a node's GPUs or node.gpus.count is
/// overridden; "--ranks-per-node" where k passes a node's GPUs; node.count's where even k GPUs
/// a node pass the limit (naming the trimming).
Topology load_collective_topology(const std::string& path, TopologyOverrides* ov, int k, std::string* trimmed_note);

/// The most bytes a collective over `ranks` GPUs of `dev` can be: their memory together (HBM ·
/// ranks), bytes; 0 where the catalog gives `dev` no memory (no bound). A size above it would not
/// fit even spread over every rank.
double all_ranks_memory_bytes(const DeviceSpec& dev, int ranks);
/// That bound as messages give it: "X B, the memory of all N ranks together (N x G GiB of MODEL)".
std::string all_ranks_memory_text(const DeviceSpec& dev, int ranks);

/// The sizes of `range` ("FROM:TO", e.g. 8B:8GiB), FROM, FROM · factor, ... up to TO, each as
/// nccl-tests runs and prints it for `op` over `ranks` of `type`'s elements: whole elements, a
/// rank's share for AllGather, ReduceScatter and AllToAll (counted_bytes: 100 B of float
/// AllGather over 8 ranks is 96 B), bytes, ascending, without repeats. A size that holds no
/// element a rank is left out with a note in `*notes`. Throws InputError on "--sizes": not
/// FROM:TO, not whole bytes of at least one element, FROM above TO, TO above the memory of all
/// the ranks together (`dev`'s HBM · ranks), or no size left.
std::vector<double> collective_sizes(const std::string& range, double factor, BenchOp op, int ranks,
                                     DataType type, const DeviceSpec& dev, std::vector<std::string>* notes);

}  // namespace overlapsim::cli
