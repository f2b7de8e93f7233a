// `overlapsim collective`'s flags (collective_command.cpp runs it): each flag's meaning, units and
// checks, so that a bad value is refused before anything is loaded.
#include "tools/overlapsim/commands.hpp"

#include "sim/collective_plan.hpp"

#include <fmt/format.h>

#include <functional>
#include <string>

namespace overlapsim::cli {

namespace {

/// A check that a flag's value is a whole number from `lo` to `hi` (default 2^20), saying so for
/// 2.5 or abc (CLI11's own checks read "not in range" or "Failed parsing abc as a INT" there).
std::function<std::string(const std::string&)> whole_number(long long lo, long long hi = 1 << 20) {
  return [lo, hi](const std::string& v) {
    size_t used = 0;
    long long k = 0;
    try {
      k = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    return used == v.size() && !v.empty() && k >= lo && k <= hi
               ? std::string()
               : fmt::format("expected a whole number from {} to {}, found '{}'", lo, hi, v);
  };
}

/// A check that --tolerance is a percentage from 0 to 10^6 (CLI11's range check said "Value abc
/// not in range 0.000000 to 1000000.000000").
std::string percentage(const std::string& v) {
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  return used == v.size() && !v.empty() && x >= 0 && x <= 1e6
             ? std::string()
             : fmt::format("expected a percentage from 0 to 1000000, found '{}'", v);
}
}  // namespace

void add_collective_command(CLI::App& app, CollectiveArgs& a) {
  CLI::App* c = app.add_subcommand("collective", "time one collective over sizes, in nccl-tests' terms");
  c->add_option("--op", a.op,
                 "allreduce | allgather | reducescatter | alltoall | broadcast | reduce | sendrecv (required "
                 "unless --compare gives it)");
  c->add_option("--ranks,-n", a.ranks,
                "GPUs taking part (2 or more): ranks 0..N-1 of the topology (default: all; --compare: the log's)")
      ->check(whole_number(2));  // 2 or more, as the later checks say (CLI11 alone said "Could not convert" past int)
  c->add_option("--ranks-per-node", a.ranks_per_node,
                "GPUs taken from each node, the first K of nodes 0, 1, ... (nccl-tests under mpirun -N K or srun "
                "--ntasks-per-node=K; default: every GPU of a node; --compare: the log's ranks per host)")
      ->check(whole_number(1));
  c->add_option("--topology,-t", a.topology, "topology YAML file")
      ->required()
      ->check([](const std::string& v) { return v.empty() ? std::string("expected a YAML file, found an empty value") : std::string(); });
  c->add_option("--override", a.overrides, "topology override KEY=VALUE, e.g. node.count=16 (repeatable)")
      ->allow_extra_args(false);  // one value per flag (CLI11 lets a vector option take the words after it)
  c->add_option("--sizes", a.sizes, "FROM:TO with units, default 8B:8GiB (nccl-tests -b/-e); each size is the one nccl-tests runs for "
                "it: whole elements of --datatype (a rank's, for allgather, reducescatter, alltoall)")
      ->check([](const std::string& v) { return v.empty() ? std::string("expected FROM:TO, found an empty value") : std::string(); });
  c->add_option("--factor,-f", a.factor, "size multiplication factor, default 2 (nccl-tests -f)")
      ->type_name("INT")
      ->check(whole_number(2));  // nccl-tests' -f is a whole number: said so, not "not in range"
  // An empty value would read as "not given" (auto, the default profile, no log, or the log's
  // with --compare): refused, so that `--compare "$LOG"` with LOG unset fails.
  const CLI::Validator non_empty = non_empty_value();
  c->add_option("--fidelity", a.fidelity, "flow | analytic")->check(non_empty);
  c->add_option("--protocol", a.protocol,
                "auto | ll | ll128 | simple (NCCL_PROTO), or a list as NCCL_PROTO takes it: LL,Simple; ^LL128; "
                "allreduce:LL128;allgather:Simple (the automatic choice among those)")
      ->check(non_empty);
  c->add_option("--algo", a.algo, "auto | ring | tree | nvls | nvlstree | pat | collnetdirect | collnetchain (NCCL_ALGO; tree, nvlstree and collnetchain apply to allreduce only, nvls and collnetdirect to allreduce, allgather and reducescatter; nvls inside one Hopper NVSwitch node, also across such nodes with --collnet on a fabric with SHARP (allgather and reducescatter there on SHARP 3), nvlstree across such nodes; pat to allgather and reducescatter over one GPU per node; collnet* across nodes with --collnet on a fabric with SHARP, collnetdirect also allgather and reducescatter on SHARP 3; else the ring), or a list as NCCL_ALGO takes it: ring,tree; ^nvls; allreduce:tree,ring;allgather:ring (the automatic choice among those; refused where none can run)")
      ->check(non_empty);
  c->add_option("--redop,-o", a.redop,
                "sum | prod | max | min | avg | mulsum: the reduction of allreduce, reducescatter and reduce (nccl-tests -o; "
                "default sum, or the log's with --compare): avg and mulsum keep a reducescatter off NCCL's PAT, "
                "which cannot scale")
      ->check(non_empty);
  c->add_option("--datatype,-d", a.datatype,
                "int8 | uint8 | int32 | uint32 | int64 | uint64 | half | float | double | bfloat16 | f8e4m3 | f8e5m2: "
                "the elements (nccl-tests -d; also fp16, float16, bf16, fp32, float32, fp64, float64, fp8e4m3, "
                "float8e4m3, fp8e5m2, float8e5m2, char, int; any case; default float, or the log's with --compare): "
                "the sizes are whole "
                "elements; NVLS reduces only some types (no max or min of float or double, no 8-bit type), and fp8 "
                "reductions need compute capability 9.0 and run off NCCL's ring beyond 8 ranks")
      ->check(non_empty);
  c->add_option("--channels", a.channels,
                 "NCCL's channels for every size (NCCL_MIN/MAX_NCHANNELS): the SMs held, Simple's slices and the "
                 "rings the flows run on, and the communicator's channels that a sendrecv or alltoall splits its "
                 "messages over (default: NCCL's count for the size over the topology's node.nccl_channels, "
                 "else 8, on 8 rings)")
      ->check(CLI::Validator(whole_number(1, 64), "1 to 64"));
  c->add_option("--root,-r", a.root,
                 "Broadcast's and Reduce's root rank, 0 to ranks - 1 (nccl-tests -r; default 0, or the log's root "
                 "column with --compare); the ring order is kept, rotated to start at the root")
      ->check(CLI::Validator(whole_number(0, 1 << 30), "0 or more"));
  c->add_option("--calibration", a.calibration, "profile JSON (default: the GPU's datasheet profile)")
      ->type_name("FILE")
      ->check(non_empty);
  c->add_flag("--unfold", a.unfold, "simulate every rank instead of rank 0 with mirrors");
  c->add_flag("--collnet", a.collnet,
              "NCCL_COLLNET_ENABLE=1: NCCL's CollNet (CollNetDirect, CollNetChain, and NVLS across Hopper NVSwitch "
              "nodes) may run an allreduce across nodes where the topology's fabric reduces in its switches "
              "(fabric.sharp: InfiniBand SHARP), and CollNetDirect or NVLS an allgather or reducescatter on SHARP 3");
  c->add_option("--tree-slice-flows", a.tree_slice_flows,
                fmt::format("flow fidelity: a tree allreduce of more per-slice flows than this runs in bulk, one flow "
                            "per hop and tree (a scenario's flow.tree_slice_flows; default {}; 0: every tree in bulk, "
                            "{}: every tree that can slice by slice)",
                            kMaxTreeSliceFlows, kMaxTreeFlows))
      ->type_name("N")
      ->check(CLI::Validator(whole_number(0, 1LL << 30), "0 to 2^30"));
  c->add_option("--compare", a.compare,
                "an nccl-tests log (stdout of *_perf): simulate its collective, ranks and sizes and print its "
                "busbw (from its times) and the error beside each row")
      ->type_name("LOG")
      ->check(non_empty);
  c->add_option("--tolerance", a.tolerance_pct,
                "with --compare: exit status 1 when a size from --compare-from on is off by more than this many percent")
      ->check(CLI::Validator(percentage, "0 to 1000000"));
  c->add_option("--compare-from", a.compare_from, "with --compare: the smallest size the summary and --tolerance "
                                                  "count (default 1MiB)")
      ->check([](const std::string& v) { return v.empty() ? std::string("expected a size, found an empty value") : std::string(); });
}

}  // namespace overlapsim::cli
