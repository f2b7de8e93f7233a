// The nccl-tests log reader checks the count column against the size and the type: nccl-tests
// prints a rank's elements per call, so size = count · type size, times the ranks for AllGather,
// ReduceScatter and AllToAll.
#include "calibrate/nccl_tests.hpp"
#include "sim/error.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace overlapsim;

namespace {

const std::string kLogs = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/data/nccl-tests/";

/// `log` with the count of its row of `size` bytes replaced by `count`.
std::stringstream with_count(const std::string& log, const std::string& size, const std::string& count) {
  std::ifstream f(kLogs + log);
  std::stringstream edited;
  for (std::string line; std::getline(f, line);) {
    std::istringstream words(line);
    std::string first, second;
    words >> first >> second;
    if (first == size) line.replace(line.find(second, line.find(first) + first.size()), second.size(), count);
    edited << line << "\n";
  }
  return edited;
}

bool any_contains(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("nccl-tests logs: a count that disagrees with size and type is warned, the size is read") {
  SUBCASE("every shipped log agrees") {
    for (const auto& e : std::filesystem::directory_iterator(kLogs)) {
      if (e.path().extension() != ".log" || e.path().filename().string().find("wrong") != std::string::npos) continue;
      CAPTURE(e.path().string());
      for (const NcclTestsLog& l : read_nccl_tests_logs(e.path().string()))
        CHECK_FALSE(any_contains(l.warnings, ": count "));
    }
  }
  SUBCASE("AllGather: a rank's share, over 8 ranks") {
    std::stringstream s = with_count("all_gather_perf_8xh100.log", "1024", "33");
    const NcclTestsLog l = parse_nccl_tests_log("all_gather_perf.log", s);
    REQUIRE(l.ranks == 8);
    CHECK(any_contains(l.warnings, ": count 33 of float (4 B) on each of 8 ranks is 1056 B, not the size 1024 B; the "
                                   "row is read by its size"));
    CHECK(l.rows.front().size_bytes == 1024);
  }
  SUBCASE("a count past 2^62 bytes, or past 2^63 (read as written, not saturated)") {
    for (const char* huge : {"4611686018427387904", "9223372036854775807", "99999999999999999999"}) {
      CAPTURE(huge);
      std::stringstream s = with_count("all_gather_perf_8xh100.log", "1048576", huge);
      const NcclTestsLog l = parse_nccl_tests_log("all_gather_perf.log", s);
      CHECK(any_contains(l.warnings, std::string(": count ") + huge + " of float (4 B) on each of 8 ranks is past 2^62 B, "
                                     "not the size 1048576 B"));
    }
  }
  SUBCASE("the count as written, in the row and in collective --compare's table") {
    std::stringstream s = with_count("all_reduce_perf_8xh100.log", "1048576", "99999999999999999999");
    const std::string text = s.str();
    const NcclTestsLog l = parse_nccl_tests_log("all_reduce_perf.log", s);
    bool found = false;
    for (const auto& r : l.rows) found |= r.size_bytes == 1048576 && r.count_text == "99999999999999999999";
    CHECK(found);
    const std::string path = testing::temp_path("_all_reduce_perf.log");
    std::ofstream(path) << text;
    const testing::Run cmp = testing::run_cli("collective -t " + std::string(OVERLAPSIM_SOURCE_DIR) +
                                              "/topologies/dgx-h100-superpod.yaml --override node.count=1 --fidelity "
                                              "analytic --compare " + path);
    CHECK(cmp.status == 0);
    CHECK(cmp.output.find("1048576 99999999999999999999    float") != std::string::npos);
  }
  SUBCASE("a size past 2^62 by one byte is refused, not rounded to 2^62") {
    std::ifstream f(kLogs + "all_reduce_perf_8xh100.log");
    std::stringstream edited;
    for (std::string line; std::getline(f, line);) {
      const auto at = line.find("     1048576 ");
      if (at != std::string::npos) line.replace(at, 13, " 4611686018427387905 ");
      edited << line << "\n";
    }
    CHECK_THROWS_WITH_AS(parse_nccl_tests_log("all_reduce_perf.log", edited),
                         doctest::Contains("expected a size of at most 2^62 bytes, found '4611686018427387905'"),
                         InputError);
  }
  SUBCASE("AllReduce: the whole buffer") {
    std::stringstream s = with_count("all_reduce_perf_8xh100.log", "8", "1");
    const NcclTestsLog l = parse_nccl_tests_log("all_reduce_perf.log", s);
    CHECK(any_contains(l.warnings, ": count 1 of float (4 B) is 4 B, not the size 8 B"));
  }
}
