// Scenario settings with a range of their own: the message names the range, from the scenario
// file (its line) and from --set alike.
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace overlapsim::testing;

TEST_CASE("zero_stage outside 0-3 names the ZeRO stages, from the file and from --set") {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  for (const char* v : {"4", "4294967296", "-1"}) {
    CAPTURE(v);
    const Run set = run_cli("run -q " + src + "/scenarios/default.yaml --set parallelism.zero_stage=" + v);
    CHECK(set.status == 2);
    CHECK(set.output.find(std::string("parallelism.zero_stage: expected an integer from 0 to 3, found '") + v + "'") !=
          std::string::npos);
    const std::string path = temp_path(".yaml");
    std::ofstream(path) << "name: z\nmodel: {preset: gpt3-175b}\ntopology: " << src
                        << "/topologies/dgx-a100-superpod.yaml\nparallelism: {tp: 8, pp: 8, micro_batch: 1, "
                           "global_batch: 1536,\n  zero_stage: "
                        << v << "}\n";
    const Run file = run_cli("run -q " + path);
    CHECK(file.status == 2);
    CHECK(file.output.find(path + ":5:") != std::string::npos);  // the zero_stage line
    CHECK(file.output.find(std::string("expected 0, 1, 2 or 3 (the ZeRO stage), found ") + v) != std::string::npos);
  }
}

TEST_CASE("--set takes an integer as the scenario file does: digits, no sign '+', no blanks") {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  for (const char* v : {"+2", " 2", "2 ", "0x2", "2.0", ""}) {
    CAPTURE(v);
    const Run r = run_cli("run -q " + src + "/scenarios/default.yaml --set 'parallelism.zero_stage=" + v + "'");
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("parallelism.zero_stage: expected an integer from 0 to 3, found '") + v + "'") !=
          std::string::npos);
  }
  CHECK(run_cli("run -q " + src + "/scenarios/default.yaml --fidelity analytic -s megatron --set parallelism.zero_stage=02")
            .status == 0);
}

TEST_CASE("an input error of a scenario changed by --set names the settings with the file") {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  const Run r = run_cli("run -q " + src + "/scenarios/default.yaml --set parallelism.global_batch=02");
  CHECK(r.status == 2);
  CHECK(r.output.find("parallelism.global_batch: 2 is not divisible by dp · micro_batch = 16 (the scenario as "
                      "changed by --set parallelism.global_batch=02)") != std::string::npos);
}
