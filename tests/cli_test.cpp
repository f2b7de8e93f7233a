// The command line end to end: deterministic output, folding, steady state, outputs and the flow module.
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

TEST_CASE("two runs of the same scenario write identical JSON") {
  const std::string a = temp_path(".json");
  const std::string b = temp_path(".json");
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  REQUIRE(run_cli("run -q " + scenario + " --json " + a).status == 0);
  REQUIRE(run_cli("run -q " + scenario + " --json " + b).status == 0);
  const std::string ja = slurp(a), jb = slurp(b);
  CHECK(!ja.empty());
  CHECK(ja.find("\"iteration_s\"") != std::string::npos);
  CHECK(ja == jb);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("folding: one representative per stage gives the unfolded iteration") {
  const Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  SimulateOptions folded, unfolded;
  unfolded.folding = Folding::None;
  const RunResult a = simulate(sc, folded), b = simulate(sc, unfolded);
  CHECK(a.simulated_ranks == 2);
  CHECK(b.simulated_ranks == 8);
  REQUIRE(a.strategies.size() == b.strategies.size());
  // serial: communication never overlaps, so every link carries the same flows folded or not:
  // exact. megatron: a pipeline transfer into a representative meets, unfolded, the TP and DP
  // flows its mirrors send into it at that moment, which folding leaves out: close, not exact
  // (1.03e-3 apart since the TP collectives of 2 MiB run the Simple ring NCCL's tuner ranks first).
  REQUIRE(a.strategies[0].strategy == "serial");
  CHECK(a.strategies[0].iteration_s == testing::approx(b.strategies[0].iteration_s).epsilon(1e-12));
  REQUIRE(a.strategies[1].strategy == "megatron");
  CHECK(a.strategies[1].iteration_s == testing::approx(b.strategies[1].iteration_s).epsilon(2e-3));
}

TEST_CASE("folding: a node whose GPUs are not joined alike (NVLink pairs beside PCIe) simulates every rank") {
  // Regression: on the 8-GPU A6000 box TP 2 x DP 4 was folded onto one rank, whose DP ring did not
  // meet the other rings on the PCIe switches: 0.0201 s folded against 0.0249 s with every rank.
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  sc.topology_path = kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml";
  sc.parallelism.tp = 2;
  sc.parallelism.pp = 1;
  sc.parallelism.dp = 4;
  SimulateOptions folded, unfolded;
  unfolded.folding = Folding::None;
  const RunResult a = simulate(sc, folded), b = simulate(sc, unfolded);
  CHECK(a.simulated_ranks == 8);
  CHECK(a.notes.find("are not all joined alike (NVLink pairs beside PCIe)") != std::string::npos);
  REQUIRE(a.strategies.size() == b.strategies.size());
  for (size_t i = 0; i < a.strategies.size(); ++i) CHECK(a.strategies[i].iteration_s == b.strategies[i].iteration_s);
  // An NVSwitch node still folds.
  const RunResult dgx = simulate(load_scenario(kSrc + "/tests/data/scenarios/small.yaml"), folded);
  CHECK(dgx.simulated_ranks == 2);
}

TEST_CASE("folding: a layout that fills its nodes unevenly simulates every rank, and says so") {
  // Regression: DP 12 over 8 + 4 GPUs was folded onto rank 0, whose ring neighbours' NICs the
  // short node's ranks do not share: exposed communication 1.65 ms folded against 3.25 ms.
  const Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/uneven-nodes.yaml");
  SimulateOptions folded, unfolded;
  unfolded.folding = Folding::None;
  const RunResult a = simulate(sc, folded), b = simulate(sc, unfolded);
  CHECK(a.simulated_ranks == 12);
  CHECK(a.notes.find("unevenly") != std::string::npos);
  CHECK(b.notes.find("unevenly") == std::string::npos);
  REQUIRE(a.strategies.size() == b.strategies.size());
  for (size_t i = 0; i < a.strategies.size(); ++i) {
    CHECK(a.strategies[i].iteration_s == b.strategies[i].iteration_s);
    CHECK(a.strategies[i].exposed_comm_s == b.strategies[i].exposed_comm_s);
  }
  // The world fills 2 nodes of 6 GPUs alike, but TP 4 groups do not: 0–3 on one node, 4–7 two
  // and two, 8–11 on the other.
  Scenario tp4 = sc;
  tp4.parallelism.tp = 4;
  tp4.parallelism.dp = 3;
  tp4.topology_overrides["node.gpus.count"] = "6";
  const RunResult c = simulate(tp4, folded), d = simulate(tp4, unfolded);
  CHECK(c.simulated_ranks == 12);
  CHECK(c.strategies[0].iteration_s == d.strategies[0].iteration_s);
  // The note reaches the JSON too.
  const std::string json = temp_path(".json");
  REQUIRE(run_cli("run -q " + kSrc + "/tests/data/scenarios/uneven-nodes.yaml -s serial --json " + json).status == 0);
  CHECK(slurp(json).find("unevenly") != std::string::npos);
  std::remove(json.c_str());
}

TEST_CASE("megatron overlaps what serial blocks on, and both report every figure") {
  const Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  const RunResult r = simulate(sc);
  REQUIRE(r.strategies.size() == 2);
  const auto& serial = r.strategies[0];
  const auto& megatron = r.strategies[1];
  CHECK(serial.strategy == "serial");
  CHECK(megatron.iteration_s < serial.iteration_s);
  CHECK(megatron.speedup_vs_megatron == 1.0);
  for (const auto& s : r.strategies) {
    CHECK(s.compute_s > 0);
    CHECK(s.exposed_comm_s > 0);
    CHECK(s.peak_memory_bytes > 0);
    // The three parts of the time add up to the iteration.
    CHECK(s.compute_s + s.exposed_comm_s + s.bubble_s == testing::approx(s.iteration_s).epsilon(1e-9));
    CHECK(s.mfu > 0);
    CHECK(s.mfu < 1);
  }
}

TEST_CASE("a million micro-batches run from their steady state, holding only the samples") {
  // The schedule --max-ops refuses to hold whole (about 10^9 ops by its estimate) is extended
  // from replays of 4, 5 and 6 micro-batches.
  const Run r = run_cli("run -q -s megatron --fidelity analytic " + kSrc + "/tests/data/scenarios/bad/too-many-ops.yaml");
  CHECK(r.status == 0);
  CHECK(r.output.find("the 1000000 micro-batches' steady state extended from replays of 4, 5 and 6") !=
        std::string::npos);
}

TEST_CASE("the table keeps its columns aligned for figures too long for them") {
  // 2^30 sequences: iterations of about 10^6 s, wider than the 11 characters of the column.
  const Run r = run_cli("run -q --fidelity analytic --set parallelism.global_batch=1073741824 " + kSrc +
                        "/tests/data/scenarios/small.yaml");
  REQUIRE(r.status == 0);
  std::istringstream in(r.output);
  std::string line;
  std::vector<size_t> lengths;  // the header's two lines and the strategies' rows
  while (std::getline(in, line))
    if (line.rfind("strategy", 0) == 0 || (!lengths.empty() && !line.empty() && lengths.size() < 4))
      lengths.push_back(line.size());
  REQUIRE(lengths.size() == 4);
  for (size_t n : lengths) CHECK(n == lengths[0]);
}

TEST_CASE("progress lines say how many ops a replay will hold") {
  // small.yaml: 4 micro-batches, too few for the steady state: each strategy replays them all.
  const Run r = run_cli("run " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic");
  REQUIRE(r.status == 0);
  // The estimate made before building anything is the count (852 ops; the former per-layer rule
  // of thumb said 1120).
  CHECK(r.output.find("overlapsim: simulating serial (analytic fidelity) (about 852 ops on 2 simulated rank(s))") !=
        std::string::npos);
  CHECK(r.output.find("overlapsim: simulating megatron (analytic fidelity) (about ") != std::string::npos);
}

TEST_CASE("a scenario's strategies may be compositions, as --strategy takes them") {
  const Run r = run_cli("run -q " + kSrc + "/tests/data/scenarios/composed-strategies.yaml");
  CHECK(r.status == 0);
  CHECK(r.output.find("\nmegatron ") != std::string::npos);
  CHECK(r.output.find("\nmegatron+workload-partition:4 ") != std::string::npos);
}

TEST_CASE("outputs: the usual file mode, an interrupted run leaves no temporary file") {
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  const std::string out = temp_path(".json");
  const mode_t mask = ::umask(022);
  Run r = run_cli("run -q " + scenario + " --fidelity analytic --json " + out);
  ::umask(mask);
  REQUIRE(r.status == 0);
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);  // mkstemp's 0600 made 0666 less the umask
  std::remove(out.c_str());

  // A path no temporary file can be made beside is refused before the simulation, not after it
  // (--json /dev/stdout on a pipe: its name in /proc/PID/fd; here a folder of /proc).
  const Run pipe = run_cli("run -q " + scenario + " --fidelity analytic --json /proc/self/overlapsim.json");
  CHECK(pipe.status == 2);
  CHECK(pipe.output.find("--json: ") != std::string::npos);

  // SIGTERM while the default scenario is being simulated (its trace file is open from the start).
  const std::string dir = temp_path("-dir");
  std::filesystem::create_directory(dir);
  const std::string cmd = "timeout -s TERM 1.5 " + std::string(OVERLAPSIM_BINARY) + " run -q " + kSrc +
                          "/scenarios/default.yaml -s megatron --trace " + dir + "/t.json > /dev/null 2>&1";
  (void)std::system(cmd.c_str());
  int left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    CAPTURE(e.path().string());
    ++left;
  }
  CHECK(left == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a result that cannot be written to standard output is an error, exit status 1") {
  // > /dev/full: every write fails (ENOSPC); the result is lost, so the command must not say 0.
  if (!std::filesystem::exists("/dev/full")) return;
  const std::string err = temp_path(".err");
  for (const std::string args :
       {"topo " + kSrc + "/topologies/dgx-a100.yaml",
        "collective --op allreduce -t " + kSrc + "/topologies/dgx-a100.yaml --sizes 8B:1KiB --fidelity analytic",
        "run -q " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic"}) {
    CAPTURE(args);
    const int rc = std::system((std::string(OVERLAPSIM_BINARY) + " " + args + " > /dev/full 2> " + err).c_str());
    REQUIRE(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 1);
    CHECK(slurp(err).find("overlapsim: error: could not write the result to standard output") != std::string::npos);
  }
  std::remove(err.c_str());
}

TEST_CASE("pass arguments, no-op passes and the op guard after a strategy") {
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  for (const char* spec : {"megatron+workload-partition:1", "megatron+workload-partition:65", "megatron+group-partition:"}) {
    CAPTURE(spec);
    const Run r = run_cli("run -q " + scenario + " --fidelity analytic -s " + spec);
    CHECK(r.status == 2);
    CHECK(r.output.find("--strategy") != std::string::npos);
  }
  // One node: nothing to split by node; the result says so instead of reading as "no gain".
  Run r = run_cli("run -q " + scenario + " --fidelity analytic -s megatron+group-partition:node");
  CHECK(r.status == 0);
  CHECK(r.output.find("group-partition:node: no collective's group spans") != std::string::npos);
  // The workload fits under --max-ops, its chunked schedule does not: refused from the estimate,
  // before its schedule (or the workload) is built (tests/max_ops_test.cpp; the pass's own guard,
  // OpBudget, is tested in passes_test.cpp).
  r = run_cli("run -q " + scenario + " --fidelity analytic -s megatron+workload-partition:64 --max-ops 20000");
  CHECK(r.status == 2);
  CHECK(r.output.find("refused 'megatron+workload-partition:64': its replay of all 4 micro-batches would hold about ") !=
        std::string::npos);
}

TEST_CASE("--strategy: a composition naming a pass twice where the second is meaningless is refused, naming both") {
  // (regression: megatron+workload-partition:64+workload-partition:64 made chunks of chunks)
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  Run r = run_cli("run -q " + scenario + " --fidelity analytic -s megatron+workload-partition:64+workload-partition:64");
  CHECK(r.status == 2);
  CHECK(r.output.find("<command line>: --strategy: composition 'megatron+workload-partition:64+workload-partition:64' "
                      "names pass 'workload-partition' twice: the second would cut the first's chunks (or ring steps) "
                      "into chunks again; expected it once") != std::string::npos);
  r = run_cli("run -q " + scenario + " --fidelity analytic -s megatron+group-partition+group-partition:node");
  CHECK(r.status == 2);
  CHECK(r.output.find("names pass 'group-partition:node' twice (as 'group-partition' and 'group-partition:node'): the "
                      "second would find nothing left to split") != std::string::npos);
  // Another argument rewrites other ops: accepted.
  r = run_cli("run -q " + scenario +
              " --fidelity analytic -s megatron+primitive-substitution:rs-ag/tp+primitive-substitution:ring/dp");
  CHECK(r.status == 0);
}

TEST_CASE("--strategy: a composition with an empty part says so, naming the composition") {
  // (regression: megatron+ said "unknown pass ''", +workload-partition:4 "unknown strategy ''")
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  const std::string rest = "; expected BASE+PASS[:ARG]+... with a name on each side of every '+', e.g. "
                           "megatron+workload-partition:4";
  const std::pair<const char*, const char*> cases[] = {
      {"megatron+", "after its last '+'"},
      {"+workload-partition:4", "before its first '+'"},
      {"megatron++workload-partition:4", "between two '+' (part 2)"},
      {"+", "before its first '+'"},
  };
  for (const auto& [composition, where] : cases) {
    CAPTURE(composition);
    const Run r = run_cli("run -q " + scenario + " --fidelity analytic -s '" + composition + "'");
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("<command line>: --strategy: composition '") + composition +
                        "' has an empty part " + where + rest) != std::string::npos);
  }
}

TEST_CASE("analytic: a GPU's kernels end even when the clock has outgrown their remaining time") {
  // Regression: with NVSwitch links of 10 B/s the small scenario's analytic run never ended —
  // late in the (simulated) years, now + left / rate == now, so the GPU's event did not move time.
  std::string topo = slurp(kSrc + "/topologies/dgx-a100.yaml");
  const std::string from = "bandwidth: 300GB/s";
  const size_t at = topo.find(from);
  REQUIRE(at != std::string::npos);
  topo.replace(at, from.size(), "bandwidth: 10B/s");
  const std::string topo_path = temp_path(".yaml");
  std::ofstream(topo_path) << topo;
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  sc.topology_path = topo_path;
  SimulateOptions o;
  o.fidelity = Fidelity::Analytic;
  o.strategies = {"serial"};
  const RunResult r = simulate(sc, o);
  REQUIRE(r.strategies.size() == 1);
  CHECK(std::isfinite(r.strategies[0].iteration_s));
  CHECK(r.strategies[0].iteration_s > 1e6);  // years: the TP collectives move MB at 10 B/s
  std::remove(topo_path.c_str());
}

TEST_CASE("the flow fidelity's SimGrid module is loaded only by a flow replay, and a missing one is named") {
  // OVERLAPSIM_FLOW_MODULE names the only file tried (sim/replay.cpp); run_cli's shell inherits it.
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  const std::string json = temp_path(".json");
  REQUIRE(::setenv("OVERLAPSIM_FLOW_MODULE", "/nonexistent/liboverlapsim_flow.so", 1) == 0);
  SUBCASE("analytic never loads it") {
    const Run r = run_cli("run -q " + scenario + " --fidelity analytic --json " + json);
    CHECK(r.status == 0);
    CHECK(slurp(json).find("\"iteration_s\"") != std::string::npos);
  }
  SUBCASE("flow says which file it could not load, and writes nothing") {
    const Run r = run_cli("run -q " + scenario + " --fidelity flow --json " + json);
    CHECK(r.status == 1);
    CHECK(r.output.find("the flow fidelity's module (liboverlapsim_flow.so, built beside overlapsim) could not be "
                        "loaded:\n  /nonexistent/liboverlapsim_flow.so: not found") != std::string::npos);
    CHECK(slurp(json).empty());
  }
  SUBCASE("a bare name is a file in the working folder, and the way out is named") {
    REQUIRE(::setenv("OVERLAPSIM_FLOW_MODULE", "liboverlapsim_flow.so", 1) == 0);
    const Run r = run_cli("run -q " + scenario + " --fidelity flow");
    CHECK(r.status == 1);
    CHECK(r.output.find("\n  ./liboverlapsim_flow.so: not found\n(set OVERLAPSIM_FLOW_MODULE to its file, or run with "
                        "--fidelity analytic, which does not need it)") != std::string::npos);
  }
  SUBCASE("a module built from other sources is refused before it is called") {
    REQUIRE(::setenv("OVERLAPSIM_FLOW_MODULE", OVERLAPSIM_STALE_FLOW_MODULE, 1) == 0);
    const Run r = run_cli("run -q " + scenario + " --fidelity flow");
    CHECK(r.status == 1);
    CHECK(r.output.find(std::string(OVERLAPSIM_STALE_FLOW_MODULE) +
                        ": built from other sources than this binary (layout 1 against ") != std::string::npos);
  }
  SUBCASE("a file that is not the module is refused with the loader's reason") {
    REQUIRE(::setenv("OVERLAPSIM_FLOW_MODULE", scenario.c_str(), 1) == 0);
    const Run r = run_cli("run -q " + scenario + " --fidelity flow");
    CHECK(r.status == 1);
    CHECK(r.output.find(scenario + ": ") != std::string::npos);
  }
  ::unsetenv("OVERLAPSIM_FLOW_MODULE");
  std::remove(json.c_str());
}
