// `overlapsim collective --sizes`: each size is the one nccl-tests runs and prints for it (its
// element count's bytes: whole floats, a rank's for AllGather, ReduceScatter and AllToAll).
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace overlapsim::testing;

namespace {

/// The (size, count) of each result row of `collective` output.
std::vector<std::pair<long long, long long>> rows(const std::string& out) {
  std::vector<std::pair<long long, long long>> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.find("overlapsim:") == 0) continue;
    std::istringstream words(line);
    long long size = -1, count = -1;
    if (words >> size >> count) v.emplace_back(size, count);
  }
  return v;
}

}  // namespace

TEST_CASE("collective --sizes: nccl-tests' sizes, whole floats a rank for AllGather, sizes with none left out") {
  const std::string a100 = " -t " + std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-a100.yaml --fidelity analytic";
  SUBCASE("100 B of AllGather over 8 ranks runs and reads 96 B, 3 floats a rank") {
    const Run r = run_cli("collective --op allgather --sizes 100B:100B" + a100);
    REQUIRE(r.status == 0);
    CHECK(rows(r.output) == std::vector<std::pair<long long, long long>>{{96, 3}});
    // Said, not done silently (regression: 5B:17B of floats printed 4 and 8 B without a word).
    CHECK(r.output.find("# note: 100 B runs as 96 B: nccl-tests runs and prints whole multiples of 32 B for AllGather "
                        "of float over 8 ranks (whole elements a rank)") != std::string::npos);
    const Run odd = run_cli("collective --op allreduce --sizes 5B:17B" + a100);
    REQUIRE(odd.status == 0);
    CHECK(rows(odd.output) == std::vector<std::pair<long long, long long>>{{4, 1}, {8, 2}});
    CHECK(odd.output.find("# note: 5 B runs as 4 B, 10 B runs as 8 B: nccl-tests runs and prints whole multiples of 4 B "
                          "for AllReduce of float over 8 ranks (whole elements)") != std::string::npos);
  }
  SUBCASE("100 B of AllReduce is 25 floats") {
    const Run r = run_cli("collective --op allreduce --sizes 100B:100B" + a100);
    REQUIRE(r.status == 0);
    CHECK(rows(r.output) == std::vector<std::pair<long long, long long>>{{100, 25}});
  }
  SUBCASE("below one float a rank: left out with a note, or refused when nothing is left") {
    const Run some = run_cli("collective --op reducescatter --sizes 4B:128B" + a100);
    REQUIRE(some.status == 0);
    CHECK(some.output.find("# note: sizes below 32 B hold no float a rank for ReduceScatter over 8 ranks") !=
          std::string::npos);
    CHECK(rows(some.output) == std::vector<std::pair<long long, long long>>{{32, 1}, {64, 2}, {128, 4}});
    const Run none = run_cli("collective --op alltoall --sizes 4B:16B" + a100);
    CHECK(none.status == 2);
    CHECK(none.output.find("--sizes: expected a size of at least 32 B for AllToAll over 8 ranks (one float a rank), "
                           "found at most 16 B") != std::string::npos);
  }
}
