// overlapsim collective: its table, --compare against nccl-tests logs, --ranks-per-node and its refusals.
#include "calibrate/gpu_names.hpp"
#include "sim/error.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

}  // namespace

TEST_CASE("collective --compare: a log's collective, ranks and sizes, its busbw and the error beside each row") {
  const std::string logs = kSrc + "/tests/data/nccl-tests/";
  const std::string a100 = kSrc + "/topologies/dgx-a100.yaml";
  const Run r = run_cli("collective -t " + a100 + " --compare " + logs + "all_reduce_perf_8xa100.log");
  REQUIRE(r.status == 0);
  CHECK(r.output.find("AllReduce over 8 of 8 GPUs") != std::string::npos);
  CHECK(r.output.find("compared with " + logs + "all_reduce_perf_8xa100.log: all_reduce, 8 ranks on 1 node(s)") !=
        std::string::npos);
  // The 1 GiB row: simulated time and busbw, the log's busbw from its time (1073741824 B in
  // 8190... µs simulated; the log's out-of-place half, busbw printed 226.19), error = measured
  // time / simulated time − 1.
  std::istringstream lines(r.output);
  std::string line;
  int rows = 0;
  bool seen = false;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++rows;
    std::istringstream f(line);
    double size = 0, count = 0, time_us = 0, algbw = 0, busbw = 0, measured = 0, err = 0;
    std::string type, redop, root;
    f >> size >> count >> type >> redop >> root >> time_us >> algbw >> busbw >> measured >> err;
    REQUIRE(f);
    if (size != 1073741824.0) continue;
    seen = true;
    CHECK(measured == testing::approx(226.19).epsilon(0.001));
    CHECK(std::abs(err - 100 * (busbw / measured - 1)) < 0.06);  // printed to 0.1%
  }
  CHECK(seen);
  CHECK(rows == 28);  // every size of the log, 8 B to 1 GiB
  CHECK(r.output.find("# Compared from 1MiB on: ") != std::string::npos);
  // --tolerance gates: exit status 1 and the count on stderr when a size is off by more.
  const Run tight = run_cli("collective -t " + a100 + " --compare " + logs + "all_reduce_perf_8xa100.log --tolerance 1");
  CHECK(tight.status == 1);
  CHECK(tight.output.find("sizes from 1MiB on are off by more than 1% of") != std::string::npos);
  CHECK(run_cli("collective -t " + a100 + " --compare " + logs + "all_reduce_perf_8xa100.log --tolerance 1000").status == 0);
  // --compare-from: only 512 MiB and 1 GiB count (-4.9% and -1.5% on this synthetic log); from
  // 1 GiB on a 2% tolerance passes, from 512 MiB it fails.
  CHECK(run_cli("collective -t " + a100 + " --compare " + logs + "all_reduce_perf_8xa100.log --tolerance 2 "
                "--compare-from 1GiB")
            .status == 0);
  CHECK(run_cli("collective -t " + a100 + " --compare " + logs + "all_reduce_perf_8xa100.log --tolerance 2 "
                "--compare-from 512MiB")
            .status == 1);
}

TEST_CASE("collective: an empty --compare, --fidelity, --calibration or --topology is refused, not read as not given") {
  // `--compare "$LOG"` with LOG unset must not pass as a plain run.
  const std::string a100 = " -t " + kSrc + "/topologies/dgx-a100.yaml --op allreduce --sizes 1MiB:1MiB";
  for (const char* flag : {"--compare", "--fidelity", "--calibration"}) {
    CAPTURE(flag);
    const Run r = run_cli("collective" + a100 + " " + flag + " ''");
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string(flag) + ": expected a value, found an empty one") != std::string::npos);
  }
  const Run t = run_cli("collective --op allreduce -t ''");
  CHECK(t.status == 2);
  CHECK(t.output.find("--topology: expected a YAML file, found an empty value") != std::string::npos);
}

TEST_CASE("collective --compare: a log of several reductions (nccl-tests -o all) is refused at the first other one") {
  // Every row was simulated with the first row's reduction, the avg rows printed as avg.
  const std::string log = kSrc + "/tests/data/nccl-tests/bad/all_reduce_perf_mixed_redop.log";
  const Run r = run_cli("collective -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=1 --compare " + log);
  CHECK(r.status == 2);
  CHECK(r.output.find(log + ":49: redop: expected one reduction per comparison, as line 48 ran, found avg") !=
        std::string::npos);
}

TEST_CASE("collective --compare: a sweep's log of several runs, one picked by --op") {
  // Two runs of one H100 node's sweep (xxrjun/nccl-tests-cluster; tests/data/nccl-tests/README.md).
  const std::string log = kSrc + "/tests/data/nccl-tests/sweep_8xh100_xxrjun.log";
  const std::string h100 = " -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=1";
  const Run none = run_cli("collective" + h100 + " --compare " + log);
  CHECK(none.status == 2);
  CHECK(none.output.find("expected --op to pick one of the log's 2 runs: all_reduce (rows from line 20), sendrecv "
                         "(rows from line 51)") != std::string::npos);
  // An empty file (as all_reduce_perf_empty.log, so that its name names a collective) has no run to pick.
  const std::string empty = temp_path("all_reduce_perf_empty.log");
  { std::ofstream(empty).flush(); }
  const Run nothing = run_cli("collective" + h100 + " --compare " + empty);
  std::remove(empty.c_str());
  CHECK(nothing.status == 2);
  CHECK(nothing.output.find(": no nccl-tests results in it: expected the output of a nccl-tests binary") !=
        std::string::npos);
  const Run other = run_cli("collective" + h100 + " --compare " + log + " --op alltoall");
  CHECK(other.status == 2);
  CHECK(other.output.find("expected --op to name one of the log's runs") != std::string::npos);
  const Run sr = run_cli("collective" + h100 + " --compare " + log + " --op sendrecv --fidelity analytic");
  REQUIRE(sr.status == 0);
  CHECK(sr.output.find("SendRecv over 8 of 8 GPUs") != std::string::npos);
  CHECK(sr.output.find("NCCL 2.29.2") != std::string::npos);  // the second run's own version line
  CHECK(sr.output.find("# note: run 2 of the log's 2 (sendrecv, rows from line 51)") != std::string::npos);
  CHECK(sr.output.find("5 of 6 sizes within 10%") != std::string::npos);
  const Run ar = run_cli("collective" + h100 + " --compare " + log + " --op allreduce --fidelity analytic");
  REQUIRE(ar.status == 0);
  CHECK(ar.output.find("6 of 6 sizes within 10%") != std::string::npos);
  // --op names a run that names no collective itself, not the runs that name theirs (regression:
  // an unnamed AllGather run followed by an AllReduce run, --op allgather was refused at the
  // AllReduce run's line for contradicting it).
  const Run ag = run_cli("collective" + h100 + " --compare " + kSrc +
                         "/tests/data/nccl-tests/bad/two_runs.log --op allgather --fidelity analytic");
  CHECK(ag.status == 0);
  CHECK(ag.output.find("# note: run 1 of the log's 2 (all_gather, rows from line 20)") != std::string::npos);
  CHECK(ag.output.find("# note: NCCL_ALGO=Ring as the log ran it") != std::string::npos);
  // A flag in place of what the log ran is said (it overrode the log's NCCL_ALGO without a word).
  const Run forced = run_cli("collective" + h100 + " --compare " + kSrc +
                             "/tests/data/nccl-tests/bad/two_runs.log --op allgather --algo pat --fidelity analytic");
  CHECK(forced.status == 0);
  CHECK(forced.output.find("# note: --algo pat in place of the log's NCCL_ALGO=Ring") != std::string::npos);
  // --op naming the collective a later run names: that run, the unnamed one skipped (regression:
  // the unnamed AllGather run was read as an AllReduce and refused for its busbw/algbw).
  const Run named = run_cli("collective" + h100 + " --compare " + kSrc +
                            "/tests/data/nccl-tests/bad/two_runs.log --op allreduce --fidelity analytic");
  CHECK(named.status == 0);
  CHECK(named.output.find("compared with " + kSrc + "/tests/data/nccl-tests/bad/two_runs.log: all_reduce, 8 ranks on 1 "
                          "node(s), NVIDIA H100 80GB HBM3, NCCL 2.28.9") != std::string::npos);
  // Without --op, the unnamed run's error lists the runs that name theirs (it said the file had no
  // "Collective test starting" line, which its second run has).
  const Run pick = run_cli("collective" + h100 + " --compare " + kSrc + "/tests/data/nccl-tests/bad/two_runs.log");
  CHECK(pick.status == 2);
  CHECK(pick.output.find("two_runs.log:1: this run names no collective (no \"# Collective test starting\" line) and the "
                         "file holds more runs (all_reduce from line 45): expected --op to pick one") != std::string::npos);
}

TEST_CASE("collective --compare: a log of a GPU family the catalog lacks is refused, a name of none is noted") {
  // Regression: a V100 or RTX 4090 log ran against an H100 topology with only a note (they are
  // not in the device catalog, which refused only catalogued models).
  const std::string h100 = " -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=1 --compare ";
  const auto renamed = [](const std::string& gpu) {
    std::ifstream in(kSrc + "/tests/data/nccl-tests/all_reduce_perf_8xh100.log");
    const std::string path = temp_path("_all_reduce_perf.log");
    std::ofstream out(path);
    for (std::string l; std::getline(in, l);) {
      const size_t at = l.find("NVIDIA H100 80GB HBM3");
      out << (at == std::string::npos ? l : l.substr(0, at) + gpu) << "\n";
    }
    return path;
  };
  for (const char* gpu : {"Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 4090"}) {
    CAPTURE(gpu);
    const Run r = run_cli("collective" + h100 + renamed(gpu));
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("expected GPUs of the topology's model (h100-sxm5-80gb, H100), found a log of ") + gpu) !=
          std::string::npos);
  }
  const Run junk = run_cli("collective" + h100 + renamed("Flux Capacitor 9000"));
  CHECK(junk.status == 0);
  CHECK(junk.output.find("the log's GPUs (Flux Capacitor 9000) are not in the device catalog") != std::string::npos);
  CHECK(gpu_family("NVIDIA A100-SXM4-40GB") == "A100");
  CHECK(gpu_family("NVIDIA A10") == "A10");
  CHECK(gpu_family("NVIDIA H20") == "H20");
  CHECK(gpu_family("h200-sxm-141gb") == "H200");
  CHECK(gpu_family("rtx-a6000") == "A6000");
  CHECK(gpu_family("Flux Capacitor 9000").empty());
}

TEST_CASE("collective --compare: what contradicts the log, or a topology too small for it, is refused") {
  const std::string logs = kSrc + "/tests/data/nccl-tests/";
  const std::string a100 = kSrc + "/topologies/dgx-a100.yaml";
  const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml";
  const std::string log = logs + "all_reduce_perf_8xa100.log";
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"-t " + a100 + " --compare " + log + " --sizes 1MiB:1GiB", "--sizes: not with --compare: the sizes are the log's"},
      {"-t " + a100 + " --compare " + log + " -f 4", "--factor: not with --compare"},
      // nccl-tests' -f is a whole number (regression: 2.5 and abc read "not in range 2 to 1048576").
      {"-t " + a100 + " --op allreduce -f 2.5", "--factor: expected a whole number from 2 to 1048576, found '2.5'"},
      {"-t " + a100 + " --op allreduce -f abc", "--factor: expected a whole number from 2 to 1048576, found 'abc'"},
      {"-t " + a100 + " --op allreduce -f 1", "--factor: expected a whole number from 2 to 1048576, found '1'"},
      {"-t " + a100 + " --compare " + log + " --op allgather", "--op: expected the log's collective (all_reduce"},
      {"-t " + a100 + " --compare " + log + " -n 4", "--ranks: expected the log's 8 ranks"},
      {"-t " + a100 + " --op allreduce --tolerance 5", "--tolerance: only with --compare"},
      {"-t " + a100, "--op: expected a collective (or --compare LOG)"},
      {"-t " + a100 + " --compare " + logs + "bad/bad_number.log", "bad_number.log:20"},
      {"-t " + a100 + " --compare /nonexistent.log", "/nonexistent.log"},
      // A device reads forever or nothing (/dev/zero was read for 1 GB before its error).
      {"-t " + a100 + " --compare /dev/zero", "/dev/zero: is a device; expected an nccl-tests log file"},
      {"-t " + a100 + " --compare " + log + " --tolerance nan", "--tolerance: expected a percentage from 0 to 1000000, found 'nan'"},
      {"-t " + a100 + " --op allreduce --compare-from 4MiB", "--compare-from: only with --compare"},
      // Regression: the default's own value (1MiB) slipped through.
      {"-t " + a100 + " --op allreduce --compare-from 1MiB", "--compare-from: only with --compare"},
      {"-t " + a100 + " --op allreduce --compare-from ''", "expected a size, found an empty value"},
      // Another GPU's log against this topology is a mistake, not a comparison.
      {"-t " + a100 + " --compare " + logs + "all_reduce_perf_8xh100.log",
       "expected GPUs of the topology's model (a100-sxm4-80gb), found a log of NVIDIA H100 80GB HBM3"},
      // Two runs of which the first names no collective: that run's error, at its first line, with
      // the runs that name theirs for --op.
      {"-t " + h100 + " --override node.count=1 --compare " + logs + "bad/two_runs.log",
       "two_runs.log:1: this run names no collective"},
      {"-t " + h100 + " --override node.count=1 --compare " + logs + "bad/negative_size.log", "negative_size.log:21:"},
      // A size no run of the log's ranks could hold (2^62 B) is corrupted, not compared.
      {"-t " + h100 + " --override node.count=1 --compare " + logs + "bad/all_reduce_perf_size_2p62.log",
       "all_reduce_perf_size_2p62.log:48: size: expected at most 687194767360 B, the memory of all 8 ranks together"},
      // 16 ranks on 2 nodes against one H100 node: the error says how many nodes to give it.
      {"-t " + h100 + " --override node.count=1 --compare " + logs + "reduce_scatter_perf_2x8xh100.log",
       "the log ran 16 ranks but dgx-h100-superpod has 8 GPUs (give it more nodes, e.g. --override node.count=2)"},
      // Every rank's ring flows past a million a size are refused, not left to run for minutes
      // (an unfolded AllGather over 520 H100s took 204 s a size).
      {"-t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=65 --op allgather --sizes 128MiB:128MiB --unfold",
       "--unfold: a ring of every rank would simulate about 2.2 M flows a size (520 ranks x 8 channels x 519 steps); "
       "expected at most 1.0 M"},
      // An AllReduce left to auto may run the tree at some sizes: the refusal says so and offers it.
      {"-t " + kSrc + "/topologies/dgx-a100-superpod.yaml --override node.count=128 --op allreduce --sizes 1GiB:1GiB --unfold",
       "--unfold: a ring of every rank, which --algo auto may run at some of these sizes, would simulate about 16.8 M "
       "flows a size (1024 ranks x 8 channels x 2046 steps); expected at most 1.0 M (drop --unfold: rank 0 with mirrors "
       "times the same collective; or --fidelity analytic; or --algo tree, which runs no ring)"},
      // A table of published figures is not a log: the error says what was expected.
      {"-t " + a100 + " --compare " + kSrc + "/tests/data/nccl-tests-published/dgx-a100-1node-allreduce-stas00.csv",
       "found none (a CSV file: expected the text a *_perf binary prints, not a table of figures)"},
      // A reduction that contradicts the log's is refused, as --op is.
      {"-t " + h100 + " --override node.count=2 --compare " + logs + "reduce_scatter_perf_2x8xh100.log -o avg",
       "--redop: expected the log's sum ("},
      // A topology without a fabric does not grow by node.count: no such hint.
      {"-t " + a100 + " --compare " + logs + "reduce_scatter_perf_2x8xh100.log",
       "the log ran 16 ranks but dgx-a100 has 8 GPUs (a topology of that many GPUs)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run r = run_cli("collective " + c.args);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
  // A gate that compared nothing does not pass.
  const Run none = run_cli("collective -t " + a100 + " --compare " + log + " --compare-from 2GiB --tolerance 1");
  CHECK(none.status == 1);
  CHECK(none.output.find("--tolerance: no usable measured size from 2GiB on") != std::string::npos);
  const Run two = run_cli("collective -t " + h100 + " --override node.count=2 --compare " + logs +
                          "reduce_scatter_perf_2x8xh100.log --fidelity analytic");
  CHECK(two.status == 0);
  CHECK(two.output.find("ReduceScatter over 16 of 16 GPUs") != std::string::npos);
  CHECK(two.output.find("16 ranks on 2 node(s)") != std::string::npos);
}

TEST_CASE("topo says what NCCL's model reads, --protocol on a point-to-point collective says it is left alone") {
  const Run t = run_cli("topo " + kSrc + "/topologies/dgx-a100-superpod.yaml --override node.count=2");
  REQUIRE(t.status == 0);
  CHECK(t.output.find("nccl: cpu vendor amd, channels 24 in one node, 16 across nodes (2 for a communicator of one GPU a node)") != std::string::npos);
  // Whether the fabric reduces in its switches, which CollNet needs (regression: not shown).
  CHECK(t.output.find("fabric: SHARP 2 in its switches (CollNet can run, with NCCL_COLLNET_ENABLE=1)") !=
        std::string::npos);
  CHECK(run_cli("topo " + kSrc + "/topologies/dgx-a100-superpod.yaml --override node.count=2 --override fabric.sharp=none")
            .output.find("fabric: no in-switch reduction (no fabric.sharp: CollNet cannot run)") != std::string::npos);
  const Run star = run_cli("topo " + kSrc + "/tests/data/replay/star8.yaml");
  REQUIRE(star.status == 0);
  CHECK(star.output.find("nccl:") == std::string::npos);  // nothing stated
  CHECK(star.output.find("fabric:") == std::string::npos);  // one node, no SHARP
  const Run a2a = run_cli("collective --op alltoall -t " + kSrc + "/topologies/dgx-a100.yaml --sizes 1MiB:1MiB --protocol ll");
  REQUIRE(a2a.status == 0);
  CHECK(a2a.output.find("# note: --protocol ll leaves AllToAll alone") != std::string::npos);
}

TEST_CASE("collective --sizes: a buffer beyond the memory of all the ranks together is refused") {
  // (regression: --sizes 16384PiB:16384PiB was simulated)
  const std::string a100 = " -t " + kSrc + "/topologies/dgx-a100.yaml";
  const Run absurd = run_cli("collective --op allreduce --sizes 16384PiB:16384PiB" + a100);
  CHECK(absurd.status == 2);
  CHECK(absurd.output.find("<command line>: --sizes: expected sizes of at most 687194767360 B, the memory of all 8 "
                           "ranks together (8 x 80 GiB of a100-sxm4-80gb), found 18446744073709551616 B (in "
                           "'16384PiB:16384PiB')") != std::string::npos);
  // The ranks taking part count, not the machine's GPUs; the limit itself is accepted (and noted).
  const Run two = run_cli("collective --op allgather -n 2 --sizes 1GiB:161GiB" + a100);
  CHECK(two.status == 2);
  CHECK(two.output.find("expected sizes of at most 171798691840 B, the memory of all 2 ranks together") !=
        std::string::npos);
  const Run edge = run_cli("collective --op allgather -n 2 --fidelity analytic --sizes 160GiB:160GiB" + a100);
  CHECK(edge.status == 0);
  CHECK(edge.output.find("do not fit in one a100-sxm4-80gb's 80 GiB of memory") != std::string::npos);
  // The note and the refusal count in the same unit (regression: the note said "86 GB").
  const Run all = run_cli("collective --op allreduce --fidelity analytic --sizes 640GiB:640GiB" + a100);
  CHECK(all.status == 0);
  CHECK(all.output.find("# note: sizes above 85899345920 B do not fit in one a100-sxm4-80gb's 80 GiB of memory") !=
        std::string::npos);
  const Run over = run_cli("collective --op allreduce --sizes 641GiB:641GiB" + a100);
  CHECK(over.status == 2);
  CHECK(over.output.find("the memory of all 8 ranks together (8 x 80 GiB of a100-sxm4-80gb), found 688268509184 B") !=
        std::string::npos);
}

TEST_CASE("collective: a forced algorithm that cannot run says what ran, sizes below one float are refused, above the GPU noted") {
  const std::string h100 = " -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=1 --sizes 1MiB:4MiB";
  // NVLS needs two or more channels; Tree is AllReduce only.
  const Run one = run_cli("collective --op allreduce --algo nvls --channels 1" + h100);
  REQUIRE(one.status == 0);
  CHECK(one.output.find("# note: --algo nvls did not run at 3 of 3 size(s), ring ran instead") != std::string::npos);
  const Run ag = run_cli("collective --op allgather --algo tree" + h100);
  REQUIRE(ag.status == 0);
  CHECK(ag.output.find("# note: --algo tree did not run at 3 of 3 size(s), ring ran instead") != std::string::npos);
  // What runs as forced says nothing: NVLS here, and the ring's chain for Broadcast.
  const Run nvls = run_cli("collective --op allreduce --algo nvls" + h100);
  REQUIRE(nvls.status == 0);
  CHECK(nvls.output.find("# note:") == std::string::npos);
  const Run bc = run_cli("collective --op broadcast --algo ring" + h100);
  REQUIRE(bc.status == 0);
  CHECK(bc.output.find("# note:") == std::string::npos);
  // Below one float nothing moves; above the GPU's memory the run says it could not be real.
  const Run tiny = run_cli("collective --op allreduce --sizes 3B:3B -t " + kSrc + "/topologies/dgx-a100.yaml");
  CHECK(tiny.status == 2);
  CHECK(tiny.output.find("--sizes: expected whole numbers of bytes >= 4B") != std::string::npos);
  // Between whole floats a size moves (and reports) count · 4 bytes, as nccl-tests: 5B:7B is one row of 4 B.
  const Run odd = run_cli("collective --op allreduce --fidelity analytic --sizes 5B:7B -t " + kSrc + "/topologies/dgx-a100.yaml");
  REQUIRE(odd.status == 0);
  CHECK(odd.output.find("\n             4            1    float") != std::string::npos);
  CHECK(odd.output.find("\n             5 ") == std::string::npos);
  // An empty --sizes is no default, and a reversed range names both sizes.
  const Run empty = run_cli("collective --op allreduce --sizes '' -t " + kSrc + "/topologies/dgx-a100.yaml");
  CHECK(empty.status == 2);
  CHECK(empty.output.find("--sizes: expected FROM:TO, found an empty value") != std::string::npos);
  const Run reversed = run_cli("collective --op allreduce --sizes 2GiB:1GiB -t " + kSrc + "/topologies/dgx-a100.yaml");
  CHECK(reversed.status == 2);
  CHECK(reversed.output.find("expected the first size at most the last, found 2147483648 B > 1073741824 B") !=
        std::string::npos);
  const Run huge = run_cli("collective --op allreduce --fidelity analytic --sizes 128GiB:128GiB -t " + kSrc +
                           "/topologies/dgx-a100.yaml");
  CHECK(huge.status == 0);
  CHECK(huge.output.find("# note: sizes above 85899345920 B do not fit in one a100-sxm4-80gb's 80 GiB of memory: "
                         "simulated all the same") != std::string::npos);
  const Run a2a = run_cli("collective --op alltoall --algo ring" + h100);
  REQUIRE(a2a.status == 0);
  CHECK(a2a.output.find("# note: --algo ring leaves AllToAll alone") != std::string::npos);
  // PAT runs over one GPU per node: forced inside a node it says the ring ran; over 4 one-GPU
  // nodes it runs, and Auto takes it at 1 MiB (NCCL's tuner ranks it first there).
  const Run pat_node = run_cli("collective --op allgather --algo pat" + h100);
  REQUIRE(pat_node.status == 0);
  CHECK(pat_node.output.find("# note: --algo pat did not run at 3 of 3 size(s), ring ran instead") != std::string::npos);
  const std::string one_gpu = " -t " + kSrc +
                              "/topologies/dgx-h100-superpod.yaml --override node.count=4 --override node.gpus.count=1 "
                              "--sizes 1MiB:1MiB";
  for (const char* algo : {"pat", "PAT", "auto"}) {
    CAPTURE(algo);
    const Run pat = run_cli(std::string("collective --op reducescatter --algo ") + algo + one_gpu);
    REQUIRE(pat.status == 0);
    CHECK(pat.output.find(" pat/Simple/") != std::string::npos);
    CHECK(pat.output.find("# note:") == std::string::npos);
  }
  // An averaging ReduceScatter runs as the ring (NCCL's PAT cannot scale); --redop is nccl-tests' -o.
  for (const char* flag : {" --redop avg", " -o AVG", " --redop mulsum"}) {
    CAPTURE(flag);
    const Run avg = run_cli(std::string("collective --op reducescatter") + flag + one_gpu);
    REQUIRE(avg.status == 0);
    CHECK(avg.output.find(" ring/") != std::string::npos);
    CHECK(avg.output.find(" pat/") == std::string::npos);
  }
  const Run avg_row = run_cli("collective --op reducescatter --redop avg" + one_gpu);
  CHECK(avg_row.output.find("    float    avg     -1") != std::string::npos);
  const Run ag_avg = run_cli("collective --op allgather --redop avg" + one_gpu);
  REQUIRE(ag_avg.status == 0);
  CHECK(ag_avg.output.find(" pat/Simple/") != std::string::npos);
  CHECK(ag_avg.output.find("# note: --redop avg leaves AllGather alone: it reduces nothing") != std::string::npos);
  const Run bad_redop = run_cli("collective --op reducescatter --redop mean" + one_gpu);
  CHECK(bad_redop.status == 2);
  CHECK(bad_redop.output.find("--redop") != std::string::npos);
  CHECK(bad_redop.output.find("expected sum, prod, max, min, avg or mulsum, found 'mean'") != std::string::npos);
  const Run bad = run_cli("collective --op allgather --algo bruck" + one_gpu);
  CHECK(bad.status == 2);
  CHECK(bad.output.find("expected auto, ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain") != std::string::npos);
}

TEST_CASE("collective's count column is nccl-tests': elements per rank for allgather, reducescatter, alltoall") {
  // nccl-tests prints a rank's part for these (1024 B over 8 ranks: 32 floats), the buffer's
  // elements for the others (regression: 256 printed for every collective).
  const std::string t = " -t " + kSrc + "/topologies/dgx-a100.yaml --sizes 1KiB:1KiB --fidelity analytic";
  for (const char* op : {"allgather", "reducescatter", "alltoall"}) {
    CAPTURE(op);
    const Run r = run_cli(std::string("collective --op ") + op + t);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("          1024           32    float") != std::string::npos);
  }
  for (const char* op : {"allreduce", "broadcast", "reduce", "sendrecv"}) {
    CAPTURE(op);
    const Run r = run_cli(std::string("collective --op ") + op + t);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("          1024          256    float") != std::string::npos);
  }
}

TEST_CASE("collective --compare: a log whose hosts hold different numbers of ranks says so") {
  // The 10 x 2 log with one rank moved from the last host to the first: 3, 2, ..., 2, 1.
  std::string text = slurp(kSrc + "/tests/data/nccl-tests/all_gather_perf_10x2xh100_xxrjun.log");
  const std::string from = "Rank 19 Group  0 Pid 1596832 on cnode3-011", to = "Rank 19 Group  0 Pid 1596832 on cnode3-002";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  const std::string path = temp_path("_all_gather_perf.log");
  std::ofstream(path) << text;
  const Run r = run_cli("collective -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=10 --compare " +
                        path + " --fidelity analytic");
  CHECK(r.status == 0);
  CHECK(r.output.find("note: the log's 10 hosts hold different numbers of its 20 ranks") != std::string::npos);
}

TEST_CASE("collective --ranks-per-node: the first K GPUs of each node, the log's per host with --compare") {
  const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml";
  const std::string log = kSrc + "/tests/data/nccl-tests/all_gather_perf_10x2xh100_xxrjun.log";
  // A real 20-rank log, 2 per host on 10 hosts: compared on 2 GPUs of each of 10 nodes.
  const Run cmp = run_cli("collective -t " + h100 + " --override node.count=10 --compare " + log + " --fidelity analytic");
  CHECK(cmp.status == 0);
  CHECK(cmp.output.find("AllGather over 20 of 80 GPUs of dgx-h100-superpod (h100-sxm5-80gb, 2 per node on 10 node(s))") !=
        std::string::npos);
  CHECK(cmp.output.find("20 ranks on 10 node(s)") != std::string::npos);
  CHECK(cmp.output.find("here on") == std::string::npos);  // no node-count mismatch note
  CHECK(cmp.output.find("6 of 6 sizes within 10%") != std::string::npos);
  // Without --compare: every node's first GPU by default rank count.
  const Run one = run_cli("collective -t " + h100 + " --override node.count=4 --op allreduce --ranks-per-node 1 "
                          "--sizes 1GiB:1GiB --fidelity analytic");
  CHECK(one.status == 0);
  CHECK(one.output.find("AllReduce over 4 of 32 GPUs of dgx-h100-superpod (h100-sxm5-80gb, 1 per node on 4 node(s))") !=
        std::string::npos);
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"-t " + h100 + " --override node.count=10 --compare " + log + " --ranks-per-node 4",
       "--ranks-per-node: expected the log's 2 ranks per host (20 ranks on 10 host(s)"},
      {"-t " + h100 + " --override node.count=5 --compare " + log,
       "--ranks-per-node: 20 ranks at 2 per node need 10 nodes, dgx-h100-superpod has 5; --override node.count=10 "
       "gives them"},
      {"-t " + h100 + " --override node.count=2 --op allreduce --ranks-per-node 9",
       "--ranks-per-node: expected at most 8 (the GPUs of a node of dgx-h100-superpod), found 9"},
      {"-t " + h100 + " --override node.count=10 --op allreduce --ranks-per-node 1 --ranks 16",
       "--ranks-per-node: 16 ranks at 1 per node need 16 nodes, dgx-h100-superpod has 10; --override node.count=16"},
      {"-t " + h100 + " --override node.count=2 --op allreduce --ranks-per-node 1 --ranks 1", "--ranks: expected a whole number from 2 to 1048576, found '1'"},
      {"-t " + h100 + " --op allreduce --ranks-per-node 0", "--ranks-per-node"},
      // Past int: said so (CLI11 alone: "Could not convert").
      {"-t " + h100 + " --op allreduce --ranks 4294967298", "--ranks: expected a whole number from 2 to 1048576, found '4294967298'"},
      {"-t " + h100 + " --op allreduce --ranks-per-node 1.5", "expected a whole number from 1 to 1048576, found '1.5'"},
      // One node, one rank a node: the flag that gave one rank is named, not --ranks.
      {"-t " + kSrc + "/topologies/dgx-a100.yaml --op allreduce --ranks-per-node 1",
       "--ranks-per-node: 1 per node on the 1 node(s) of dgx-a100 gives 1 rank; expected 2 or more"},
      // 2 ranks a host against one-GPU nodes: refused, not compared on 20 hosts of one.
      {"-t " + h100 + " --override node.count=10 --override node.gpus.count=1 --compare " + log,
       "--topology: the log ran 2 ranks on each of its 10 hosts but a node of dgx-h100-superpod has 1 GPU(s)"},
      // A one-host log contradicts another count per node as a many-host one does.
      {"-t " + h100 + " --override node.count=4 --compare " + kSrc +
           "/tests/data/nccl-tests/all_reduce_perf_8xh100.log --ranks-per-node 2",
       "--ranks-per-node: expected the log's 8 ranks per host (8 ranks on 1 host(s)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run r = run_cli("collective " + c.args);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
}

TEST_CASE("collective --ranks-per-node past the machine limit at the nodes' full size: the nodes' first K GPUs") {
  // 4096 DGX H100 nodes at one rank a node: 32768 GPUs at the nodes' full size pass the 16,384-GPU
  // limit; the collective takes one GPU and its NIC of each node, which nodes of one GPU are, so
  // it runs on those and says so, with the figures of --override node.gpus.count=1.
  const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml";
  const std::string common = " --op allreduce --sizes 1MiB:1GiB -f 32 --fidelity analytic";
  const Run k1 = run_cli("collective -t " + h100 + " --override node.count=4096 --ranks-per-node 1" + common);
  const Run one = run_cli("collective -t " + h100 + " --override node.count=4096 --override node.gpus.count=1" + common);
  REQUIRE(k1.status == 0);
  REQUIRE(one.status == 0);
  CHECK(k1.output.find("note: the nodes loaded with their first 1 GPU(s) and NIC(s) only (node.gpus.count=1): at "
                       "their full size they pass the machine limit (expected at most 16384 GPUs") != std::string::npos);
  CHECK(k1.output.find("AllReduce over 4096 of 4096 GPUs of dgx-h100-superpod (h100-sxm5-80gb, 1 per node on 4096 "
                       "node(s))") != std::string::npos);
  const auto rows = [](const std::string& out) {
    std::string kept;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') kept += line + "\n";
    return kept;
  };
  CHECK(!rows(k1.output).empty());
  CHECK(rows(k1.output) == rows(one.output));
  // Past the limit even at K GPUs a node: the limit's own error, at node.count.
  // K at the nodes' full size trims nothing, and a node.count that is no count is not a limit:
  // their errors as they are, without the trimming's words.
  for (const std::string& args : {std::string(" --override node.count=4096 --ranks-per-node 8"),
                                  std::string(" --override node.count=99999999999999999999 --ranks-per-node 1")}) {
    CAPTURE(args);
    const Run r = run_cli("collective -t " + h100 + args + common);
    CHECK(r.status == 2);
    CHECK(r.output.find("node.count: expected") != std::string::npos);
    CHECK(r.output.find("loaded with only") == std::string::npos);
  }
  const Run over = run_cli("collective -t " + h100 + " --override node.count=20000 --ranks-per-node 1" + common);
  CHECK(over.status == 2);
  CHECK(over.output.find("node.count: expected at most 16384 GPUs in the machine") != std::string::npos);
  CHECK(over.output.find("found 20000 nodes of 1 GPU = 20000") != std::string::npos);
  CHECK(over.output.find("; that is with the nodes loaded with only the 1 GPU(s) a node the collective takes") !=
        std::string::npos);
  // More per node than a node holds: that error, not the machine limit's.
  const Run nine = run_cli("collective -t " + h100 + " --override node.count=4096 --ranks-per-node 9" + common);
  CHECK(nine.status == 2);
  CHECK(nine.output.find("--ranks-per-node: expected at most 8 (the GPUs of a node of dgx-h100-superpod), found 9") !=
        std::string::npos);
  // Digits past 2^63: a count too large, said as the limit.
  const Run huge = run_cli("collective -t " + h100 + " --override node.count=99999999999999999999" + common);
  CHECK(huge.output.find("node.count: expected at most 16384 GPUs in the machine, found '99999999999999999999' "
                         "nodes") != std::string::npos);
}

TEST_CASE("collective: an AllToAll past 4,096 ranks refused, and --compare's hosts trim the nodes as --ranks-per-node does") {
  const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml";
  // An AllToAll's pieces grow with the square of its ranks (16,384 ranks ran past 12 GB).
  const Run big = run_cli("collective --op alltoall -t " + h100 + " --override node.count=1024 --sizes 1MiB:1MiB "
                          "--fidelity analytic");
  CHECK(big.status == 2);
  CHECK(big.output.find("--ranks: an AllToAll over 8192 ranks is 67100672 point-to-point pieces") != std::string::npos);
  // A log of 4,096 hosts at one rank each: the ranks per host come from its rank lines, and past
  // the machine limit at full size the nodes load with that one GPU, as --ranks-per-node 1 does.
  const std::string log = testing::temp_path("all_reduce_perf.log");
  {
    std::ofstream f(log);
    f << "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
         "# Collective test starting: all_reduce_perf\n#\n# Using devices\n";
    for (int r = 0; r < 4096; ++r)
      f << fmt::format("#  Rank {:4d} Group  0 Pid {:6d} on host{:04d} device  0 [0000:9d:00] NVIDIA H100 80GB HBM3\n",
                       r, 1000 + r, r);
    f << "#\n#                                                              out-of-place                       in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n"
         "  1073741824     268435456     float     sum      -1  50000.0   21.47   42.94       0  50000.0   21.47   42.94       0\n";
  }
  const Run cmp = run_cli("collective -t " + h100 + " --override node.count=4096 --compare " + log + " --fidelity analytic");
  CHECK(cmp.status == 0);
  CHECK(cmp.output.find("note: the nodes loaded with their first 1 GPU(s) and NIC(s) only") != std::string::npos);
}

TEST_CASE("collective --compare: a log whose busbw/algbw or redop column is another collective's than --op names is refused") {
  // (regression: an unnamed AllGather run, busbw = 7/8 algbw and redop none, was compared as a
  // Reduce, a Broadcast or a SendRecv with row warnings only)
  const auto copy = [](const std::string& from) {
    const std::string path = temp_path("_unnamed.log");
    std::filesystem::copy_file(from, path, std::filesystem::copy_options::overwrite_existing);
    return path;
  };
  const std::string gather = copy(kSrc + "/tests/data/nccl-tests/all_gather_perf_8xh100.log");
  const std::string cmd = "collective --fidelity analytic -t " + kSrc +
                          "/topologies/dgx-h100-superpod.yaml --override node.count=2 --compare ";
  for (const std::string op : {"reduce", "broadcast", "sendrecv"}) {
    CAPTURE(op);
    const Run r = run_cli(cmd + gather + " --op " + op);
    CHECK(r.status == 2);
    CHECK(r.output.find("busbw / algbw is 0.875 in this log, where ") != std::string::npos);
  }
  CHECK(run_cli(cmd + gather + " --op allgather").status == 0);
  // An AlltoAll's busbw/algbw is a ReduceScatter's; its redop column is not.
  const std::string scatter = copy(kSrc + "/tests/data/nccl-tests/reduce_scatter_perf_2x8xh100.log");
  const Run a2a = run_cli(cmd + scatter + " --op alltoall");
  CHECK(a2a.status == 2);
  CHECK(a2a.output.find(": redop: expected none (alltoall reduces nothing; the command line (alltoall) names it), found "
                        "sum") != std::string::npos);
  // Every row's redop (regression: the first row alone was read), and a ratio of 1 over the rank
  // lines' 8 ranks (regression: accepted as an AllGather, the group size left to the rank lines).
  const auto edited = [](const std::string& from, const auto& edit) {
    std::ifstream in(from);
    const std::string path = temp_path("_all_gather_perf.log");
    std::ofstream out(path);
    int n = 0;
    for (std::string l; std::getline(in, l);) out << edit(l, ++n) << "\n";
    return path;
  };
  const std::string base = kSrc + "/tests/data/nccl-tests/all_gather_perf_8xh100.log";
  const std::string one_sum = edited(base, [](std::string l, int n) {
    if (n == 25) l.replace(l.find("    none"), 8, "     sum");
    return l;
  });
  const Run mixed = run_cli(cmd + one_sum);
  CHECK(mixed.status == 2);
  CHECK(mixed.output.find("_all_gather_perf.log:25: redop: expected none (all_gather reduces nothing") != std::string::npos);
  const std::string ratio_one = edited(base, [](std::string l, int) {
    std::istringstream t(l);
    std::vector<std::string> w{std::istream_iterator<std::string>(t), {}};
    if (l.empty() || l[0] == '#' || w.size() != 13) return l;
    w[7] = w[6];  // busbw = algbw, both halves
    w[11] = w[10];
    std::string joined;
    for (const auto& x : w) joined += "  " + x;
    return joined;
  });
  const Run ratio = run_cli(cmd + ratio_one);
  CHECK(ratio.status == 2);
  CHECK(ratio.output.find("busbw / algbw is 1 in this log, where all_gather's over the 8 ranks of its rank lines is "
                          "0.875") != std::string::npos);
  for (const std::string& p : {gather, scatter, one_sum, ratio_one}) std::filesystem::remove(p);
}

TEST_CASE("collective --root: a Broadcast from another rank, the ring order kept, and the log's root column taken") {
  // (regression: a log of root 3 was simulated and printed with root 0, and no flag set a root)
  const std::string pairs = "collective --fidelity analytic -t " + kSrc +
                            "/topologies/a6000-8gpu-nvlink-pairs.yaml --op broadcast --sizes 64MiB:64MiB";
  const Run r0 = run_cli(pairs);
  const Run r3 = run_cli(pairs + " --root 3");
  REQUIRE(r0.status == 0);
  REQUIRE(r3.status == 0);
  CHECK(r0.output.find("   none      0 ") != std::string::npos);
  CHECK(r3.output.find("   none      3 ") != std::string::npos);
  // NVLink pairs and PCIe: the chain from rank 3 crosses the machine otherwise than from rank 0.
  CHECK(r0.output.find("3289.12") != std::string::npos);
  CHECK(r3.output.find("3358.05") != std::string::npos);
  CHECK(run_cli(pairs + " --root 8").output.find("--root: expected a rank from 0 to 7 (the group's), found 8") !=
        std::string::npos);
  // As --redop for a collective that reduces nothing: said, not applied.
  const Run no_root = run_cli("collective --op allreduce --fidelity analytic --sizes 1MiB:1MiB -t " + kSrc +
                              "/topologies/dgx-a100.yaml -r 1");
  CHECK(no_root.status == 0);
  CHECK(no_root.output.find("# note: --root 1 leaves AllReduce alone: it has no root") != std::string::npos);
  CHECK(no_root.output.find("    sum     -1 ") != std::string::npos);
  // Past the group's ranks too: noted, not applied (regression: an internal error).
  const Run far = run_cli("collective --op allreduce --fidelity analytic --sizes 1MiB:1MiB -t " + kSrc +
                          "/topologies/dgx-a100.yaml -r 100");
  CHECK(far.status == 0);
  CHECK(far.output.find("# note: --root 100 leaves AllReduce alone: it has no root") != std::string::npos);
  // A log's root column is the comparison's root; a --root against it is refused.
  const std::string log = temp_path("_broadcast_perf.log");
  {
    std::ofstream out(log);
    out << "# Collective test starting: broadcast_perf\n# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: "
           "2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
    for (int r = 0; r < 8; ++r)
      out << "#  Rank  " << r << " Group  0 Pid  4821" << r << " on dgx-h100-01 device  " << r
          << " [0x18] NVIDIA H100 80GB HBM3\n";
    out << "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
           "busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) "
           " (GB/s)  (GB/s)\n"
           "     1048576        262144     float    none       3    20.00   52.43   52.43      0    20.00   52.43   52.43      0\n"
           "     2097152        524288     float    none       3    30.00   69.91   69.91      0    30.00   69.91   69.91      0\n"
           "     4194304       1048576     float    none       3    45.00   93.21   93.21      0    45.00   93.21   93.21      0\n"
           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 71.85\n";
  }
  const std::string h100 = "collective --fidelity analytic -t " + kSrc +
                           "/topologies/dgx-h100-superpod.yaml --override node.count=1 --compare " + log;
  const Run cmp = run_cli(h100);
  REQUIRE(cmp.status == 0);
  CHECK(cmp.output.find("   none      3 ") != std::string::npos);
  CHECK(cmp.output.find("   none      0 ") == std::string::npos);
  CHECK(run_cli(h100 + " --root 2").output.find("--root: expected the log's root 3 (") != std::string::npos);
  // A root column of -1 in a Broadcast's log, of a rank in an AllReduce's: another collective's.
  std::string text = slurp(log);
  const std::string minus = log + ".m1_broadcast_perf.log";
  {
    std::string t = text;
    for (size_t at; (at = t.find("    none       3 ")) != std::string::npos;) t.replace(at, 17, "    none      -1 ");
    std::ofstream(minus) << t;
  }
  CHECK(run_cli("collective --fidelity analytic -t " + kSrc + "/topologies/dgx-h100-superpod.yaml --override "
                "node.count=1 --compare " + minus)
            .output.find(": root: expected the root rank of the Broadcast (0 or more), found -1") != std::string::npos);
  std::filesystem::remove(minus);
  std::filesystem::remove(log);
}
