// `overlapsim run --timings`: where a run's host time went, on stderr, never in the result.
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <string>

using namespace overlapsim::testing;

TEST_CASE("run --timings prints the command's time and each strategy's replays and their time, not in the JSON") {
  const std::string scenario = small_h100_scenario("");
  const std::string json = temp_path(".json");
  const Run r = run_cli("run -q --timings -s megatron -s serial --json " + json + " " + scenario);
  CHECK(r.status == 0);
  CAPTURE(r.output);
  const std::regex total(R"(overlapsim: timings: ([0-9.]+) s from the command's start to its result \(analytic fidelity\))");
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, total));
  const double whole = std::stod(m[1]);
  CHECK(whole > 0);
  for (const char* name : {"megatron", "serial"}) {
    CAPTURE(name);
    const std::regex line(std::string("overlapsim: timings: ") + name +
                          R"(: ([0-9]+) replay\(s\), ([0-9.]+) s in the replay engine)");
    REQUIRE(std::regex_search(r.output, m, line));
    CHECK(std::stoi(m[1]) == 1);  // 8 micro-batches on one stage: replayed once, whole
    CHECK(std::stod(m[2]) > 0);
    CHECK(std::stod(m[2]) < whole);
  }
  CHECK(slurp(json).find("replay") == std::string::npos);
  // Without the flag: no timings.
  CHECK(run_cli("run -q " + scenario).output.find("timings") == std::string::npos);
}
