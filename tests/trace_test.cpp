// The Chrome/Perfetto trace writer (sim/trace.hpp) and `overlapsim run --trace`.
#include "sim/error.hpp"
#include "sim/trace.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

nlohmann::json load(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE("trace: a process per rank, a track per stream, a complete event per op") {
  Schedule s;
  s.world_size = 2;
  s.stream_names = {"compute", "tp-comm"};
  s.groups.push_back(Group{{0, 1}, CommPurpose::TensorParallel});
  for (int r = 0; r < 2; ++r) {
    RankProgram p{r, 2, {}};
    Op g;
    g.type = OpType::Compute;
    g.compute = ComputeKind::Gemm;
    g.name = "fc1 \"quoted\"";
    g.layer = 3;
    g.micro_batch = 1;
    g.flops = 2e9;
    g.gemm_m = g.gemm_n = g.gemm_k = 1000;
    g.gemm_batch = 1;
    Op c;
    c.type = OpType::Collective;
    c.collective = CollectiveKind::AllGather;
    c.group = 0;
    c.bytes = 4096;
    c.stream = 1;
    c.phase = Phase::Backward;
    c.name = "ag";
    p.ops = {g, c};
    s.programs.push_back(p);
  }
  ReplayTimes t;
  t.start_s = {{0.0, 1e-3}, {0.0, 1e-3}};
  t.end_s = {{2e-3, 1.5e-3}, {2e-3, 1.5e-3}};
  const std::string path = temp_path(".json");
  {
    std::ofstream old(path);
    old << "old content";
  }
  {
    TraceWriter w(path);
    w.add("megatron", s, t);
    CHECK(slurp(path) == "old content");  // replaced only on commit
    w.commit();
  }
  const nlohmann::json j = load(path);
  TraceWriter mem;
  mem.add("megatron", s, t);
  CHECK(nlohmann::json::parse(mem.json()) == j);
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  std::vector<nlohmann::json> events;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name");
    if (e.at("ph") == "X") events.push_back(e);
  }
  CHECK(processes == std::map<int, std::string>{{1, "megatron · rank 0"}, {2, "megatron · rank 1"}});
  CHECK(threads.at({1, 0}) == "compute");
  CHECK(threads.at({2, 1}) == "tp-comm");
  REQUIRE(events.size() == 4);
  const auto& e0 = events[0];
  CHECK(e0.at("name") == "fc1 \"quoted\"");
  CHECK(e0.at("cat") == "gemm");
  CHECK(e0.at("ts").get<double>() == 0.0);
  CHECK(e0.at("dur").get<double>() == doctest::Approx(2000.0));  // microseconds
  CHECK(e0.at("args").at("layer") == 3);
  CHECK(e0.at("args").at("micro_batch") == 1);
  CHECK(e0.at("args").at("phase") == "forward");
  const auto& e1 = events[1];
  CHECK(e1.at("tid") == 1);
  CHECK(e1.at("ts").get<double>() == doctest::Approx(1000.0));
  CHECK(e1.at("dur").get<double>() == doctest::Approx(500.0));
  CHECK(e1.at("args").at("kind") == "AllGather");
  CHECK(e1.at("args").at("bytes") == 4096);
  CHECK(e1.at("args").at("phase") == "backward");
  CHECK_FALSE(e1.at("args").contains("layer"));
  std::remove(path.c_str());
  {  // A trace never committed leaves nothing behind.
    TraceWriter w(path);
    w.add("megatron", s, t);
  }
  CHECK_FALSE(std::ifstream(path).good());
  CHECK_FALSE(std::ifstream(path + ".tmp").good());
  // An unwritable place is an input error naming the flag.
  CHECK_THROWS_AS(TraceWriter("/nonexistent-folder/t.json"), InputError);
}

TEST_CASE("overlapsim run --trace writes one trace with every strategy's ranks and streams") {
  const std::string trace = temp_path(".json");
  const std::string json = temp_path(".json");
  const std::string out = temp_path(".out");
  const std::string cmd = std::string(OVERLAPSIM_BINARY) + " run -q " + OVERLAPSIM_SOURCE_DIR +
                          "/tests/data/scenarios/small.yaml -s megatron -s te-overlap --trace " + trace + " --json " +
                          json + " > " + out + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const nlohmann::json t = load(trace);
  const nlohmann::json r = load(json);
  std::set<std::string> processes, threads;
  long long complete = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("name") == "process_name") processes.insert(e.at("args").at("name").get<std::string>());
    if (e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X") {
      ++complete;
      CHECK(e.at("dur").get<double>() >= 0);
    }
  }
  CHECK(processes == std::set<std::string>{"megatron · rank 0", "megatron · rank 4", "te-overlap · rank 0",
                                           "te-overlap · rank 4"});
  CHECK(threads.count("te-send (copy engine)") == 1);
  CHECK(threads.count("compute") == 1);
  long long ops = 0;
  for (const auto& s : r.at("strategies")) ops += s.at("ops").get<long long>();
  CHECK(complete == ops);
  std::remove(trace.c_str());
  std::remove(json.c_str());
  std::remove(out.c_str());

  const std::string bad = std::string(OVERLAPSIM_BINARY) + " run -q " + OVERLAPSIM_SOURCE_DIR +
                          "/tests/data/scenarios/small.yaml --trace /nonexistent-folder/x.json > " + out + " 2>&1";
  const int rc = std::system(bad.c_str());
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK(slurp(out).find("--trace") != std::string::npos);
  std::remove(out.c_str());
}
