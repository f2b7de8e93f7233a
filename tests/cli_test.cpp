// The command line end to end: deterministic output, folding, and input errors.
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

TEST_CASE("bad scenarios fail with the file, the line and the key, exit status 2") {
  struct Case {
    const char* file;
    const char* expect_line;
    const char* expect_key;
    const char* flags = "";
  };
  const Case cases[] = {
      {"unknown-key.yaml", ":4:", "parallelism.micro_batchs: unknown key"},
      // A key given twice, by its full key (regression: "tp: duplicate key"), at the second.
      {"duplicate-key.yaml", ":5:", "parallelism.tp: duplicate key (first at line 4); expected each key once"},
      {"duplicate-override.yaml", ":6:", "topology_overrides.node.count: duplicate key (first at line 5)"},
      {"unknown-preset.yaml", ":2:", "model.preset"},
      {"empty-name.yaml", ":2:", "name: expected a non-empty name, found ''"},
      // Checks across keys name the line of the value they read (regression: the file alone).
      {"too-many-gpus.yaml", "too-many-gpus.yaml:4:14:", "parallelism: tp · pp · dp = 8 · 2 · 1 = 16 GPUs"},
      {"bad-strategy.yaml", ":5:", "magatron"},
      {"missing-topology.yaml", "nowhere.yaml", ""},
      {"duplicate-strategy.yaml", ":5:", "listed twice"},
      {"bad-composed-strategy.yaml", ":5:", "strategies: pass 'workload-partition:1'"},
      // (regression: chunks of chunks were built)
      {"repeated-pass.yaml", ":5:",
       "strategies: composition 'megatron+workload-partition:64+workload-partition:64' names pass "
       "'workload-partition' twice"},
      // Cross-field checks name the scenario file (regression: they used to say "<input>").
      {"micro-batch-too-large.yaml", "micro-batch-too-large.yaml:4:49:", "parallelism.micro_batch: 16 is larger than"},
      // A schedule too large to hold is refused before it is built (regression: it ran out of
      // memory), where all of it must be replayed.
      {"too-many-ops.yaml", "too-many-ops.yaml", "--max-ops", " --every-micro-batch"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.file) {
      const Run r = run_cli("run -q " + kSrc + "/tests/data/scenarios/bad/" + c.file + c.flags);
      CHECK(r.status == 2);
      CHECK(r.output.find(c.file == std::string("missing-topology.yaml") ? "nowhere.yaml" : c.file) != std::string::npos);
      CHECK(r.output.find(c.expect_line) != std::string::npos);
      CHECK(r.output.find(c.expect_key) != std::string::npos);
    }
  }
}

TEST_CASE("a scenario's missing topology is named by its absolute path and the folder a relative one is taken from") {
  // A scenario naming its topology as scenarios/default.yaml does, copied into a folder of /tmp:
  // its topology is looked for beside that folder, where there is none (regression: the message
  // said only "found no file at ../topologies/dgx-a100-superpod.yaml").
  namespace fs = std::filesystem;
  const fs::path root = temp_path("");
  const fs::path folder = root / "scenarios";
  REQUIRE(fs::create_directories(folder));
  const fs::path copy = folder / "default.yaml";
  { std::ofstream(copy) << "name: copy\nmodel: {preset: megatron-1.7b}\ntopology: ../topologies/dgx-a100-superpod.yaml\n"
                           "parallelism: {tp: 1, pp: 1, global_batch: 8}\n"; }
  const std::string expected =
      "default.yaml:3:11: topology: expected a readable topology file, found no file at " +
      (root / "topologies" / "dgx-a100-superpod.yaml").string() + " ('../topologies/dgx-a100-superpod.yaml' from " +
      folder.string() + ": a relative path is relative to the scenario file's folder)";
  Run r = run_cli("run -q " + copy.string());
  CHECK(r.status == 2);
  CHECK(r.output.find(copy.string() + ":3:11: ") != std::string::npos);
  CHECK(r.output.find(expected) != std::string::npos);
  // The scenario named by a relative path: the same absolute paths.
  r = run_cli("run -q " + fs::relative(copy).string());
  CHECK(r.status == 2);
  CHECK(r.output.find(expected) != std::string::npos);
  // An absolute path that is missing is named as it is, a folder as a folder.
  std::string text = slurp(copy.string());
  const auto at = text.find("topology: ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('\n', at) - at, "topology: " + folder.string());
  { std::ofstream(copy) << text; }
  r = run_cli("run -q " + copy.string());
  CHECK(r.status == 2);
  CHECK(r.output.find("topology: expected a readable topology file, found a folder at " + folder.string() + "\n") !=
        std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("a binary byte quoted from an input is printed escaped, UTF-8 as it is") {
  const std::string file = temp_path(".yaml");
  { std::ofstream(file) << "name: a\nmodel: {preset: \x01\x02\xc3\xa9}\n"; }
  const Run r = run_cli("run -q " + file);
  CHECK(r.status == 2);
  CHECK(r.output.find(":2:17: model.preset: expected a model preset (") != std::string::npos);
  CHECK(r.output.find("found '\\x01\\x02\xc3\xa9'") != std::string::npos);  // é stays é
  CHECK(r.output.find('\x01') == std::string::npos);
  // A byte that is not UTF-8 is refused where it is, in any text: it would have reached the
  // JSON writer after the whole simulation ("[json.exception.type_error.316]", no file or key).
  { std::ofstream(file) << "name: \"ok \xff\"\nmodel: {preset: gpt3-175b}\n"; }
  const Run bad = run_cli("run -q " + file);
  CHECK(bad.status == 2);
  CHECK(bad.output.find(":1:7: name: expected UTF-8 text, found the byte 0xFF at offset 3") != std::string::npos);
  std::remove(file.c_str());
  // Control bytes and stray bytes of an InputError's key and message alike; what() and message()
  // agree, so that one rewrapped in another (e.g. under --strategy) reads the same.
  const InputError e(SourceLocation{"x.yaml", 1, 2}, "k\x7f", "found 'a\tb\n\xe2\x82' and '\xe2\x82\xac'");
  CHECK(std::string(e.what()) == "x.yaml:1:2: k\\x7f: found 'a\\tb\\n\\xe2\\x82' and '\xe2\x82\xac'");
  CHECK(e.message() == "found 'a\\tb\\n\\xe2\\x82' and '\xe2\x82\xac'");
  CHECK(std::string(InputError(SourceLocation{}, "", e.message()).what()) == "<input>: " + e.message());
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

TEST_CASE("bad command-line values name the flag") {
  const std::string scenario = kSrc + "/tests/data/scenarios/small.yaml";
  SUBCASE("fidelity") {
    const Run r = run_cli("run -q " + scenario + " --fidelity exact");
    CHECK(r.status == 2);
    CHECK(r.output.find("--fidelity") != std::string::npos);
    CHECK(r.output.find("expected 'flow' or 'analytic', found 'exact'") != std::string::npos);
    // Any case, as the other names (ops, NCCL's algorithms) are taken.
    CHECK(run_cli("run -q " + scenario + " --fidelity ANALYTIC").status == 0);
  }
  SUBCASE("strategy") {
    const Run r = run_cli("run -q " + scenario + " --strategy nope");
    CHECK(r.status == 2);
    CHECK(r.output.find("nope") != std::string::npos);
  }
  SUBCASE("setting") {
    const Run r = run_cli("run -q " + scenario + " --set parallelism.tp=zero");
    CHECK(r.status == 2);
    CHECK(r.output.find("parallelism.tp") != std::string::npos);
    const Run avg = run_cli("run -q --fidelity analytic " + scenario + " --set parallelism.average_in_collective=maybe");
    CHECK(avg.status == 2);
    CHECK(avg.output.find("parallelism.average_in_collective") != std::string::npos);
    const Run on = run_cli("run -q --fidelity analytic " + scenario + " --set parallelism.average_in_collective=true");
    CHECK(on.status == 0);
    CHECK(on.output.find(", DP gradients averaged in NCCL") != std::string::npos);
  }
  SUBCASE("run takes a topology override through --set, and says so when given --override") {
    // (regression: CLI11's "The following arguments were not expected: node.count=4 --override")
    Run r = run_cli("run -q " + scenario + " --override node.count=4");
    CHECK(r.status == 2);
    CHECK(r.output.find("overlapsim: --override: run takes a topology override as --set "
                        "topology_overrides.KEY=VALUE: expected --set topology_overrides.node.count=4, found "
                        "--override node.count=4") != std::string::npos);
    r = run_cli("run -q " + scenario + " --override=node.count");
    CHECK(r.status == 2);
    CHECK(r.output.find("expected --set topology_overrides.node.count=VALUE, found --override node.count") !=
          std::string::npos);
    CHECK(run_cli("run --help").output.find("--override") == std::string::npos);  // not one of run's options
  }
  SUBCASE("a directory as the scenario") {
    const Run r = run_cli("run -q " + kSrc + "/tests/data");
    CHECK(r.status == 2);
    CHECK(r.output.find("is a directory") != std::string::npos);
  }
  SUBCASE("json onto a device is refused, before simulating") {
    // Regression: the temporary file used to be renamed over /dev/null.
    const Run r = run_cli("run " + scenario + " --json /dev/null");
    CHECK(r.status == 2);
    CHECK(r.output.find("not a regular file") != std::string::npos);
    CHECK(r.output.find("simulating") == std::string::npos);
  }
  SUBCASE("json through a symbolic link writes the link's target") {
    const std::string target = temp_path(".json");
    const std::string link = temp_path(".link.json");
    REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    CHECK(run_cli("run -q " + scenario + " --json " + link).status == 0);
    struct stat st{};
    CHECK(::lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    CHECK(slurp(target).find("\"iteration_s\"") != std::string::npos);
    std::remove(link.c_str());
    std::remove(target.c_str());
  }
  SUBCASE("an output file this user may not write is refused, not replaced; an empty --fidelity is refused") {
    const Run dash = run_cli("run -q " + scenario + " --fidelity analytic --json -");
    CHECK(dash.status == 2);
    CHECK(dash.output.find("--json: expected a file path, found '-'") != std::string::npos);
    const Run empty = run_cli("run -q " + scenario + " --fidelity ''");
    CHECK(empty.status == 2);
    CHECK(empty.output.find("--fidelity: expected flow or analytic, found an empty value") != std::string::npos);
    // (Root may write any file: the check is a user's.)
    if (::geteuid() != 0) {
      const std::string ro = temp_path(".json");
      { std::ofstream(ro) << "keep"; }
      ::chmod(ro.c_str(), 0444);
      const Run r = run_cli("run -q " + scenario + " --fidelity analytic --json " + ro);
      CHECK(r.status == 2);
      CHECK(r.output.find("exists and is not writable") != std::string::npos);
      CHECK(slurp(ro) == "keep");
      ::chmod(ro.c_str(), 0644);
      std::remove(ro.c_str());
    }
  }
  SUBCASE("outputs never replace the inputs or each other") {
    // Regressions: --trace over the scenario file destroyed it; --json and --trace on one path.
    // A copy of the scenario in /tmp whose topology is a copy too (regression: --trace over the
    // topology or a calibration profile replaced it).
    const std::string topo_copy = temp_path(".yaml");
    { std::ofstream(topo_copy) << slurp(kSrc + "/topologies/dgx-a100.yaml"); }
    std::string text = slurp(scenario);
    const auto at = text.find("topology: ");
    REQUIRE(at != std::string::npos);
    text.replace(at, text.find('\n', at) - at, "topology: " + topo_copy);
    const std::string copy = temp_path(".yaml");
    { std::ofstream(copy) << text; }
    const std::string original = slurp(copy), topo_original = slurp(topo_copy);
    Run r = run_cli("run -q " + copy + " --trace " + copy);
    CHECK(r.status == 2);
    CHECK(r.output.find("is also an input") != std::string::npos);
    CHECK(slurp(copy) == original);
    for (const std::string& flag : {"--trace ", "--json "}) {
      r = run_cli("run -q " + copy + " --fidelity analytic " + flag + topo_copy);
      CHECK(r.status == 2);
      CHECK(r.output.find("is also an input") != std::string::npos);
      CHECK(slurp(topo_copy) == topo_original);
    }
    const std::string profile = kSrc + "/calibrate/profiles/a100-sxm4-80gb.json";
    const std::string profile_original = slurp(profile);
    r = run_cli("run -q " + copy + " --fidelity analytic --trace " + profile);
    CHECK(r.status == 2);
    CHECK(r.output.find("is also an input") != std::string::npos);
    CHECK(slurp(profile) == profile_original);
    std::remove(topo_copy.c_str());
    const std::string out = temp_path(".json");
    r = run_cli("run -q " + scenario + " --json " + out + " --trace " + out);
    CHECK(r.status == 2);
    CHECK(r.output.find("same file as --json") != std::string::npos);
    std::remove(copy.c_str());
  }
  SUBCASE("a profile is never written over a non-regular file or over its input log") {
    // Regression: import-nccl-tests --out /dev/null replaced the device with a regular file.
    const std::string fifo = temp_path(".fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const std::string log = kSrc + "/tests/data/nccl-tests/all_reduce_perf_8xh100.log";
    Run r = run_cli("calibrate import-nccl-tests " + log + " --out " + fifo);
    CHECK(r.status == 2);
    CHECK(r.output.find("not a regular file") != std::string::npos);
    struct stat st{};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    std::remove(fifo.c_str());
    const std::string copy = temp_path(".log");
    { std::ofstream(copy) << slurp(log); }
    r = run_cli("calibrate import-nccl-tests " + copy + " --out " + copy);
    CHECK(r.status == 2);
    CHECK(slurp(copy) == slurp(log));
    std::remove(copy.c_str());
  }
  SUBCASE("a log measured at one size cannot be fitted") {
    const Run r = run_cli("calibrate import-nccl-tests " + kSrc + "/tests/data/nccl-tests/bad/all_reduce_perf_one_size.log --out " +
                          temp_path(".json"));
    CHECK(r.status == 2);
    CHECK(r.output.find("one message size") != std::string::npos);
  }
  SUBCASE("collective: one rank, zero ranks, fractional sizes, unfolding 2048 ranks") {
    const std::string topo = kSrc + "/topologies/dgx-a100.yaml";
    CHECK(run_cli("collective --op allreduce -t " + topo + " -n 1").status == 2);
    CHECK(run_cli("collective --op allreduce -t " + topo + " -n 0").status == 2);
    CHECK(run_cli("collective --op allreduce -t " + topo + " --sizes 1.5B:7B").status == 2);
    CHECK(run_cli("collective --op allreduce -t " + topo + " -n -1").status == 2);  // not "all"
    // A profile for another GPU is refused, naming the profile and its device.
    const Run other = run_cli("collective --op allreduce -t " + topo + " --sizes 1MiB:1MiB --calibration " + kSrc +
                              "/calibrate/profiles/h100-sxm5-80gb.json");
    CHECK(other.status == 2);
    CHECK(other.output.find("h100-sxm5-80gb.json: device") != std::string::npos);
    // Names in any case, as in profiles; a node of one GPU is named for what it is.
    CHECK(run_cli("collective --op allreduce -t " + topo + " --sizes 1MiB:1MiB --algo RING --protocol LL").status == 0);
    const Run one = run_cli("collective --op allreduce -t " + topo + " --override node.gpus.count=1");
    CHECK(one.status == 2);
    CHECK(one.output.find("a collective needs at least 2") != std::string::npos);
    const Run r = run_cli("collective --op allreduce -t " + kSrc +
                          "/topologies/dgx-a100-superpod.yaml --override node.count=256 --unfold --sizes 1MiB:1MiB");
    CHECK(r.status == 2);
    CHECK(r.output.find("--unfold") != std::string::npos);
    // A forced tree runs no ring: its unfolded flows are not refused for the ring's (regression:
    // 4.2 M ring flows refused --algo tree over 64 H100 nodes, which runs in 0.1 s).
    const Run tree = run_cli("collective --op allreduce -t " + kSrc +
                             "/topologies/dgx-h100-superpod.yaml --override node.count=64 --unfold --sizes 1MiB:1MiB "
                             "--algo tree --fidelity flow");
    CHECK(tree.status == 0);
    CHECK(tree.output.find("tree/LL128/8") != std::string::npos);
    // Above design §9's 16,384 GPUs one collective grows past any memory: the machine is refused
    // before it is built, whatever --ranks takes (regression: node.count=100000 built 800,000 GPUs,
    // 10 s and 1 GB, before a check after the load refused them).
    const Run big = run_cli("collective --op allreduce -t " + kSrc +
                            "/topologies/dgx-a100-superpod.yaml --override node.count=2049 --sizes 8B:8B");
    CHECK(big.status == 2);
    CHECK(big.output.find("dgx-a100-superpod.yaml:24:10: node.count: expected at most 16384 GPUs in the machine") !=
          std::string::npos);
    CHECK(big.output.find("found 2049 nodes of 8 GPUs = 16392 (from the topology override node.count=2049)") !=
          std::string::npos);
  }
  SUBCASE("collective, topo and run: a machine past 16,384 GPUs is refused before it is built, whatever --ranks") {
    const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml";
    const std::string expected = "dgx-h100-superpod.yaml:27:10: node.count: expected at most 16384 GPUs in the machine "
                                 "(the largest simulated: 2048 nodes of 8, scenarios/bench/gpt-405b-class-16384gpu.yaml), "
                                 "found 100000 nodes of 8 GPUs = 800000 (from the topology override node.count=100000)";
    const Run absurd =
        run_cli("collective --op allreduce -t " + h100 + " --override node.count=100000 --ranks 8 --sizes 8B:8B");
    CHECK(absurd.status == 2);
    CHECK(absurd.output.find(expected) != std::string::npos);
    const Run topo = run_cli("topo " + h100 + " --override node.count=100000");
    CHECK(topo.status == 2);
    CHECK(topo.output.find(expected) != std::string::npos);
    const Run run = run_cli("run -q " + kSrc + "/scenarios/bench/gpt-405b-class-16384gpu.yaml --set "
                            "topology_overrides.node.count=100000");
    CHECK(run.status == 2);
    CHECK(run.output.find("node.count: expected at most 16384 GPUs in the machine") != std::string::npos);
  }
  SUBCASE("unwritable json") {
    const Run r = run_cli("run -q " + scenario + " --json /nonexistent-dir/out.json");
    CHECK(r.status == 2);
    CHECK(r.output.find("/nonexistent-dir/out.json") != std::string::npos);
  }
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

TEST_CASE("command line: an unknown command and out-of-range options are one clear line, status 2") {
  const Run unknown = run_cli("frobnicate");
  CHECK(unknown.status == 2);
  CHECK(unknown.output.find("overlapsim: unknown command 'frobnicate'; expected run, topo, collective or calibrate") != std::string::npos);
  const Run max_ops = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml --max-ops 0");
  CHECK(max_ops.status == 2);
  CHECK(max_ops.output.find("overlapsim: --max-ops: expected a whole number of ops from 1 to 1099511627776 (2^40), "
                            "e.g. 20000000 or 2e7; found '0'") != std::string::npos);
  for (const char* bad : {"abc", "2.5", "1e13", "-3"}) {  // not a count, not an integer, over 2^40, negative
    CAPTURE(bad);
    const Run r = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml --max-ops " + bad);
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("expected a whole number of ops from 1 to 1099511627776 (2^40), e.g. 20000000 "
                                    "or 2e7; found '") + bad + "'") != std::string::npos);
  }
  // 2e4 is 20000 ops: the chunked schedule of the small scenario is refused at that limit.
  const Run sci = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic "
                          "-s megatron+workload-partition:64 --max-ops 2e4");
  CHECK(sci.status == 2);
  CHECK(sci.output.find("the limit is 20000 (--max-ops)") != std::string::npos);
  // A strategy named twice on the command line is refused, as in a scenario's list.
  const Run twice = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml -s megatron -s serial -s megatron");
  CHECK(twice.status == 2);
  CHECK(twice.output.find("--strategy: 'megatron' is given twice") != std::string::npos);
  // -s all: every built-in strategy, as a scenario's `strategies: all`; alone.
  const Run all = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic -s all");
  CHECK(all.status == 0);
  for (const std::string& name : strategy_names()) {
    CAPTURE(name);
    CHECK(all.output.find("\n" + name + " ") != std::string::npos);
  }
  const Run all_and = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml -s all -s serial");
  CHECK(all_and.status == 2);
  CHECK(all_and.output.find("--strategy: 'all' names every strategy; expected it alone") != std::string::npos);
  // A channel count is a whole number from 1 to 64, said in those words whatever is wrong with it
  // (CLI11 had said "not in range" for 65 and "Failed parsing abc as a INT").
  for (const char* bad : {"65", "0", "1.5", "abc"}) {
    CAPTURE(bad);
    const Run r = run_cli(std::string("collective --op allreduce -t ") + kSrc + "/topologies/dgx-a100.yaml --channels " + bad);
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("overlapsim: --channels: expected a whole number from 1 to 64, found '") + bad + "'") !=
          std::string::npos);
  }
  for (const char* bad : {"abc", "-1", "nan", "2e6"}) {  // --tolerance: a percentage from 0 to 10^6
    CAPTURE(bad);
    const Run r = run_cli(std::string("collective --op allreduce -t ") + kSrc + "/topologies/dgx-a100.yaml --tolerance " + bad);
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("overlapsim: --tolerance: expected a percentage from 0 to 1000000, found '") + bad +
                        "'") != std::string::npos);
  }
  // More ranks than GPUs: a topology with a fabric for more nodes names the override that fits.
  const Run nine = run_cli("collective --op allreduce -t " + kSrc +
                           "/topologies/dgx-h100-superpod.yaml --override node.count=1 --ranks 9 --sizes 1MiB:1MiB");
  CHECK(nine.status == 2);
  CHECK(nine.output.find("found 9; --override node.count=2 gives 16 GPUs") != std::string::npos);
  const Run nine_a100 = run_cli("collective --op allreduce -t " + kSrc + "/topologies/dgx-a100.yaml --ranks 9");
  CHECK(nine_a100.status == 2);
  CHECK(nine_a100.output.find("--override") == std::string::npos);  // one node, no fabric to grow
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
  // --op naming that unnamed run as another collective: the error says where its count came from.
  const Run wrong = run_cli("collective" + h100 + " --compare " + kSrc + "/tests/data/nccl-tests/bad/two_runs.log --op allreduce");
  CHECK(wrong.status == 2);
  CHECK(wrong.output.find("or of the collective the command line names (all_reduce): the run names none itself") !=
        std::string::npos);
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
      // Two runs of which the first names no collective: that run's error, at its first line.
      {"-t " + h100 + " --override node.count=1 --compare " + logs + "bad/two_runs.log",
       "two_runs.log:1: cannot tell which collective"},
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
  const Run star = run_cli("topo " + kSrc + "/tests/data/replay/star8.yaml");
  REQUIRE(star.status == 0);
  CHECK(star.output.find("nccl:") == std::string::npos);  // nothing stated
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

TEST_CASE("layout products past 32 bits are input errors, not a crash or a wrapped figure") {
  // Each value passes its own 1..2^30 check; their products did not fit an int (SIGFPE on
  // dp · micro_batch = 2^32, a negative product printed at 2^31, a wrapped world size).
  const std::string scenario = " " + kSrc + "/scenarios/default.yaml";
  struct Case {
    std::string set, says;
  };
  const Case cases[] = {
      {"--set parallelism.micro_batch=1073741824 --set parallelism.global_batch=1073741824",
       "parallelism.global_batch: 1073741824 is not divisible by dp · micro_batch = 17179869184"},
      {"--set parallelism.dp=8 --set parallelism.tp=1 --set parallelism.pp=1 --set parallelism.micro_batch=268435456 "
       "--set parallelism.global_batch=1073741824",
       "dp · micro_batch = 2147483648"},
      {"--set parallelism.dp=1073741824 --set parallelism.global_batch=1073741824",
       "parallelism: tp · pp · dp = 8 · 8 · 1073741824 = 68719476736 GPUs, but the topology 'dgx-a100-superpod' has 1024"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.set);
    const Run r = run_cli("run -q --fidelity analytic " + c.set + scenario);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
}

TEST_CASE("a key given twice on the command line is refused, not the last one taken silently") {
  const std::string a100 = kSrc + "/topologies/dgx-a100-superpod.yaml";
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"collective --op allreduce -t " + a100 + " --override node.count=2 --override node.count=4 --sizes 1MiB:1MiB",
       "--override: 'node.count' is given twice; expected each key once"},
      {"topo " + a100 + " --override node.count=2 --override node.count=2",
       "--override: 'node.count' is given twice; expected each key once"},
      {"run -q " + kSrc + "/scenarios/default.yaml --set parallelism.tp=4 --set parallelism.tp=8",
       "--set: 'parallelism.tp' is given twice; expected each setting once"},
      {"run -q " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic --set fidelity=flow",
       "--fidelity: 'analytic' beside --set fidelity=flow: both name the fidelity; expected one of them"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run r = run_cli(c.args);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
}

TEST_CASE("the memory of a layout that cannot fit by far reads in exponent form, the columns aligned, exit status 2") {
  // 2^29 sequences a micro-batch: about 3e7 GiB per GPU, written 3.09e+07 rather than 30900000.0.
  const Run r = run_cli("run -q --fidelity analytic --set parallelism.global_batch=1073741824 --set "
                        "parallelism.micro_batch=536870912 " + kSrc + "/tests/data/scenarios/small.yaml");
  REQUIRE(r.status == 2);  // nothing simulated: not a result a sweep or a CI gate may take as one
  CHECK(r.output.find("small.yaml: out of memory: no strategy simulated (why under the table)") != std::string::npos);
  CHECK(r.output.find("OOM") != std::string::npos);
  CHECK(r.output.find("e+07") != std::string::npos);
  // The OOM rows' reason, under the table: what needs the memory, on which stage, against what.
  CHECK(r.output.find("notes: out of memory: the layout needs ") != std::string::npos);
  CHECK(r.output.find("GiB per GPU on pipeline stage ") != std::string::npos);
  CHECK(r.output.find("so no strategy is simulated") != std::string::npos);
  std::istringstream in(r.output);
  std::vector<size_t> lengths;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("strategy", 0) == 0 || line.rfind("serial", 0) == 0 || line.rfind("megatron", 0) == 0)
      lengths.push_back(line.size());
  REQUIRE(lengths.size() == 3);
  for (size_t n : lengths) CHECK(n == lengths[0]);
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
