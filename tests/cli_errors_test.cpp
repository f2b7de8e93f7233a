// overlapsim on bad input: each error names the file, line and key (or the flag) and exits 2; nothing half-written.
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
      // An override's bad value at the scenario's line, the topology's beside it (regression: the
      // topology file's line 24 alone).
      {"bad-override-value.yaml", "bad-override-value.yaml:4:34:",
       "topology_overrides.node.count: expected a positive count, found 'abc'"},
      {"two-documents.yaml", "two-documents.yaml:7:1:", "a second YAML document (after '---'); expected one"},
      // A missing key by its full name, as the other model keys (regression: "layers: missing key").
      {"missing-layers.yaml", "missing-layers.yaml:2:8:", "model.layers: missing key 'layers'"},
      {"ffn-hidden-overflow.yaml", "ffn-hidden-overflow.yaml:4:28:",
       "model.hidden: ffn_hidden defaults to 4 * hidden = 2147483648, above 2^30"},
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
  SUBCASE("a repeatable flag takes one value: the scenario after it stays the scenario") {
    // (regression: CLI11 let -s, --set and --override take the words after them, so that
    // `-s megatron scenario.yaml --json F` said "scenario is required")
    const std::string json = temp_path(".json");
    const Run r = run_cli("run -q --fidelity analytic -s megatron " + scenario + " --json " + json);
    CHECK(r.status == 0);
    CHECK(std::filesystem::exists(json));
    std::filesystem::remove(json);
    CHECK(run_cli("run -q --set parallelism.global_batch=4 " + scenario + " -s megatron --fidelity analytic").status == 0);
    CHECK(run_cli("topo --override node.count=2 " + kSrc + "/topologies/dgx-a100-superpod.yaml").status == 0);
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
    // /dev/stdout, whose links end at a pipe's name in /proc/PID/fd (regression: "cannot create a
    // file in folder /proc/PID/fd"): said to be a device or pipe, standard output the table's.
    // (Through a pipe, as a user's shell gives it; run_cli's standard output is a file.)
    const std::string captured = temp_path(".out");
    const int rc = std::system(("bash -c 'set -o pipefail; " + std::string(OVERLAPSIM_BINARY) + " run " + scenario +
                                " --json /dev/stdout 2>&1 | cat > " + captured + "'")
                                   .c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 2);
    CHECK(slurp(captured).find("/dev/stdout: --json: exists and is not a regular file (a device or pipe); expected a "
                               "file path to write (standard output holds the table") != std::string::npos);
    std::filesystem::remove(captured);
    // The file standard output is redirected to, by its own name or /dev/stdout (regression: the
    // JSON replaced the table there, status 0).
    const std::string redirected = temp_path(".out");
    for (const std::string& target : {std::string("/dev/stdout"), redirected}) {
      CAPTURE(target);
      const int st = std::system((std::string(OVERLAPSIM_BINARY) + " run " + scenario + " --json " + target + " > " +
                                  redirected + " 2> " + redirected + ".err")
                                     .c_str());
      CHECK(WEXITSTATUS(st) == 2);
      CHECK(slurp(redirected + ".err").find("--json: is the file standard output is written to; expected another file") !=
            std::string::npos);
      std::filesystem::remove(redirected + ".err");
    }
    std::filesystem::remove(redirected);
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

TEST_CASE("strategy names in any case, all alone in a scenario list, one strategy spelt twice refused") {
  const std::string small = kSrc + "/tests/data/scenarios/small.yaml";
  // (regression: -s Megatron was unknown while --fidelity ANALYTIC was taken)
  const Run upper = run_cli("run -q " + small + " -s Megatron --fidelity analytic");
  CHECK(upper.status == 0);
  CHECK(upper.output.find("\nmegatron ") != std::string::npos);
  // (regression: the same composition spelt :4 and :04 ran twice)
  const Run twice = run_cli("run -q " + small +
                            " --fidelity analytic -s megatron+workload-partition:4 -s megatron+workload-partition:04");
  CHECK(twice.status == 2);
  CHECK(twice.output.find("--strategy: 'megatron+workload-partition:04' is 'megatron+workload-partition:4' again; "
                          "expected each strategy once") != std::string::npos);
  const auto scenario_with = [&](const std::string& list) {
    const std::string path = temp_path(".yaml");
    std::ofstream(path) << "name: s\nmodel: {name: tiny-gpt, layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, "
                           "seq_len: 1024, vocab: 32768, dtype: fp16}\ntopology: "
                        << kSrc << "/topologies/dgx-a100.yaml\nparallelism: {tp: 2, pp: 2, dp: 2, global_batch: 8}\n"
                        << "strategies: " << list << "\n";
    return path;
  };
  // (regression: `strategies: [all]` was refused, though the list takes what --strategy takes)
  const std::string all = scenario_with("[all]");
  const Run every = run_cli("run -q " + all + " --fidelity analytic");
  CHECK(every.status == 0);
  CHECK(every.output.find("\ncentauri ") != std::string::npos);
  const std::string beside = scenario_with("[megatron, all]");
  const Run refused = run_cli("run -q " + beside + " --fidelity analytic");
  CHECK(refused.status == 2);
  CHECK(refused.output.find(":5:24: strategies: 'all' names every strategy; expected it alone") != std::string::npos);
  const std::string again = scenario_with("[megatron, MEGATRON]");
  CHECK(run_cli("run -q " + again + " --fidelity analytic").output.find("'megatron' is listed twice") !=
        std::string::npos);
  for (const std::string& p : {all, beside, again}) std::filesystem::remove(p);
  // serial with a pass whose work is stream placement: its figures are serial's, and said why
  // (regression: no word).
  const Run composed = run_cli("run -q " + small + " -s serial+layer-schedule --fidelity analytic");
  CHECK(composed.status == 0);
  CHECK(composed.output.find("serial+layer-schedule: serial runs every op on one stream in program order, so its "
                             "passes' stream placement") != std::string::npos);
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
  // 2^29 sequences a micro-batch: about 1e7 GiB per GPU (flash attention keeps no s² scores),
  // written 9.98e+06 rather than 9977857.3.
  const Run r = run_cli("run -q --fidelity analytic --set parallelism.global_batch=1073741824 --set "
                        "parallelism.micro_batch=536870912 " + kSrc + "/tests/data/scenarios/small.yaml");
  REQUIRE(r.status == 2);  // nothing simulated: not a result a sweep or a CI gate may take as one
  CHECK(r.output.find("small.yaml: out of memory: no strategy simulated (why under the table)") != std::string::npos);
  CHECK(r.output.find("OOM") != std::string::npos);
  CHECK(r.output.find("9.98e+06") != std::string::npos);
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
