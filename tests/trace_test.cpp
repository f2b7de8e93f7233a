// The Chrome/Perfetto trace writer (sim/trace.hpp), its link tracks (sim/link_trace.hpp) and
// `overlapsim run --trace`.
#include "sim/error.hpp"
#include "sim/link_trace.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"
#include "sim/trace.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <cmath>
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

const std::string kStar8 = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/data/replay/star8.yaml";
constexpr double kB = 100e9;     // bytes/s of every GPU → switch → GPU route of star8
constexpr double kAlpha = 1e-6;  // seconds of such a route (two links of 0.5 µs)

/// One AllReduce of `bytes` over ranks 0..n-1, with programs for the simulated ranks `sim`.
Schedule one_allreduce(int n, double bytes, const std::vector<int>& sim) {
  Schedule s;
  s.world_size = 8;
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  const int g = s.intern_group(ranks, CommPurpose::DataParallel);
  for (int r : sim) {
    RankProgram p{r, 1, {}};
    Op op;
    op.type = OpType::Collective;
    op.collective = CollectiveKind::AllReduce;
    op.group = g;
    op.bytes = bytes;
    op.match = 7;
    op.name = "ar";
    p.ops.push_back(op);
    s.programs.push_back(p);
  }
  return s;
}

/// The textbook ring (every step costs its route's latency plus its bytes over B), one channel,
/// flows recorded.
ReplayOptions recording_textbook() {
  ReplayOptions o;
  o.collectives.textbook = true;
  o.collectives.channels = 1;
  o.record_flows = true;
  return o;
}

/// A trace's events split by process: pid → name, and the links process's tracks and events.
struct Parsed {
  std::map<int, std::string> processes;
  int links_pid = -1;
  std::map<int, std::string> link_tracks;                       // tid → name
  std::map<std::string, std::vector<nlohmann::json>> segments;  // track name → X events
  std::map<std::string, std::vector<nlohmann::json>> counters;  // track name → C events
  std::vector<nlohmann::json> other;                            // every event outside the links process
};

Parsed parse(const nlohmann::json& j) {
  Parsed p;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      p.processes[e.at("pid")] = e.at("args").at("name");
      const std::string name = e.at("args").at("name");
      if (name.size() > 6 && name.substr(name.size() - 6) == " links") p.links_pid = e.at("pid");
    }
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("pid") != p.links_pid) {
      p.other.push_back(e);
      continue;
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") p.link_tracks[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X") p.segments[p.link_tracks.at(e.at("tid"))].push_back(e);
    if (e.at("ph") == "C") p.counters[e.at("name")].push_back(e);
  }
  return p;
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
  CHECK(e0.at("dur").get<double>() == testing::approx(2000.0));  // microseconds
  CHECK(e0.at("args").at("layer") == 3);
  CHECK(e0.at("args").at("micro_batch") == 1);
  CHECK(e0.at("args").at("phase") == "forward");
  const auto& e1 = events[1];
  CHECK(e1.at("tid") == 1);
  CHECK(e1.at("ts").get<double>() == testing::approx(1000.0));
  CHECK(e1.at("dur").get<double>() == testing::approx(500.0));
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
  long long complete = 0, link_events = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("name") == "process_name") processes.insert(e.at("args").at("name").get<std::string>());
    if (e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X") {
      CHECK(e.at("dur").get<double>() >= 0);
      if (e.at("cat") == "link") ++link_events;
      else ++complete;
    }
  }
  CHECK(processes == std::set<std::string>{"megatron · rank 0", "megatron · rank 4", "megatron · links",
                                           "te-overlap · rank 0", "te-overlap · rank 4", "te-overlap · links"});
  CHECK(link_events > 0);
  CHECK(threads.count("n0.gpu0 → n0.nvswitch") + threads.count("gpu0 → nvswitch") == 1);
  CHECK(threads.count("te-send (copy engine)") == 1);
  CHECK(threads.count("compute") == 1);
  long long ops = 0;
  for (const auto& s : r.at("strategies")) ops += s.at("ops").get<long long>();
  CHECK(complete == ops);
  // Ops of one stream in turn do not overlap on its track, to the printed nanosecond (regression:
  // start and duration rounded each on its own overlapped 1 ns, which viewers may nest).
  std::map<std::pair<long long, long long>, std::vector<std::pair<long long, long long>>> tracks;  // ns
  for (const auto& e : t.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("cat") != "link") {
      const long long ts = std::llround(e.at("ts").get<double>() * 1e3);
      tracks[{e.at("pid").get<long long>(), e.at("tid").get<long long>()}].push_back(
          {ts, ts + std::llround(e.at("dur").get<double>() * 1e3)});
    }
  long long overlaps = 0;
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) overlaps += spans[i].first < spans[i - 1].second;
  }
  CHECK(overlaps == 0);
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

TEST_CASE("trace: a ring AllReduce has a track per link of the ring, spanning its flows, with the bytes it moved") {
  const Topology topo = load_topology(kStar8);
  const int n = 4;
  const double S = 1e8;
  const Schedule s = one_allreduce(n, S, {0, 1, 2, 3});
  const ReplayTimes t = replay(s, topo, recording_textbook());
  // 2(n−1) steps of S/n bytes from every member.
  REQUIRE(t.flows.size() == static_cast<size_t>(n * 2 * (n - 1)));
  const double T = 2.0 * (n - 1) / n * S / kB + 2 * (n - 1) * kAlpha;  // the ring's closed form
  REQUIRE(t.end_s[0][0] == testing::approx(T));

  TraceWriter w;
  w.add("ring", s, t, &topo);
  const Parsed p = parse(nlohmann::json::parse(w.json()));
  CHECK(p.processes.at(p.links_pid) == "ring · links");
  // Every member sends over its link to the switch and receives over the switch's link to it.
  std::set<std::string> names;
  for (const auto& [tid, name] : p.link_tracks) names.insert(name);
  std::set<std::string> expected;
  for (int r = 0; r < n; ++r) {
    expected.insert("gpu" + std::to_string(r) + " → sw");
    expected.insert("sw → gpu" + std::to_string(r));
  }
  CHECK(names == expected);
  for (const std::string& name : expected) {
    CAPTURE(name);
    const auto& segs = p.segments.at(name);
    // Steps follow each other without a gap: one interval from the first flow to the last.
    REQUIRE(segs.size() == 1);
    const auto& e = segs[0];
    CHECK(e.at("cat") == "link");
    CHECK(e.at("ts").get<double>() == testing::approx(0.0));
    CHECK(e.at("dur").get<double>() == testing::approx(T * 1e6).epsilon(1e-6));
    CHECK(e.at("args").at("bytes").get<double>() == testing::approx(2.0 * (n - 1) / n * S));
    CHECK(e.at("args").at("flows") == 2 * (n - 1));
    CHECK(e.at("args").at("max_concurrent_flows") == 1);
    // The sender's flows: "gpuK → sw" carries rank K's; "sw → gpuK" its ring predecessor's.
    const auto& ops = e.at("args").at("ops");
    REQUIRE(ops.size() == 1);
    const std::string op = ops[0];
    if (name.rfind("gpu", 0) == 0) CHECK(op == name.substr(3, 1) + ":ar");
    CHECK(e.at("name") == op);
    // Counter: one flow at a time at (S/n) / (α + S/(n·B)) bytes/s, none after the last.
    const auto& c = p.counters.at(name);
    REQUIRE(c.size() >= 2);
    CHECK(c.front().at("ts").get<double>() == testing::approx(0.0));
    CHECK(c.front().at("args").at("flows") == 1);
    CHECK(c.front().at("args").at("bytes_per_s").get<double>() ==
          testing::approx(S / n / (kAlpha + S / n / kB)).epsilon(1e-5));
    CHECK(c.back().at("ts").get<double>() == testing::approx(T * 1e6).epsilon(1e-6));
    CHECK(c.back().at("args").at("flows") == 0);
  }
  // The rank and stream tracks are those of a trace without flows, event for event.
  ReplayTimes plain = t;
  plain.flows.clear();
  TraceWriter w0;
  w0.add("ring", s, plain);
  CHECK(nlohmann::json::parse(w0.json()).at("traceEvents") == nlohmann::json(p.other));
}

TEST_CASE("trace: a folded ring shows only the representative's links") {
  const Topology topo = load_topology(kStar8);
  const Schedule s = one_allreduce(4, 1e8, {0});
  const ReplayTimes t = replay(s, topo, recording_textbook());
  TraceWriter w;
  w.add("ring", s, t, &topo);
  const Parsed p = parse(nlohmann::json::parse(w.json()));
  REQUIRE(p.link_tracks.size() == 2);  // rank 0's hop: gpu0 → sw → its successor
  CHECK(p.link_tracks.begin()->second == "gpu0 → sw");
  for (const auto& [name, segs] : p.segments)
    for (const auto& e : segs) CHECK(e.at("args").at("ops") == nlohmann::json::array({"0:ar"}));

  // A send from a mirrored rank is replayed for its simulated receiver: the mirror's flow,
  // labelled with the mirror's rank and the op's name.
  Schedule r;
  r.world_size = 8;
  Op recv;
  recv.type = OpType::Recv;
  recv.peer = 5;
  recv.bytes = 1e6;
  recv.match = -9;
  recv.purpose = CommPurpose::Pipeline;
  recv.name = "recv.act";
  r.programs.push_back(RankProgram{2, 1, {recv}});
  const ReplayTimes tr = replay(r, topo, recording_textbook());
  TraceWriter wr;
  wr.add("p2p", r, tr, &topo);
  const Parsed pr = parse(nlohmann::json::parse(wr.json()));
  CHECK(pr.segments.size() == 2);  // gpu5 → sw → gpu2
  CHECK(pr.segments.at("gpu5 → sw").at(0).at("name") == "5:recv.act");
}

TEST_CASE("trace: overlapping sends on one link cut it where the set of ops changes") {
  const Topology topo = load_topology(kStar8);
  Schedule s;
  s.world_size = 8;
  s.stream_names = {"a", "b"};
  const double bytes_a = 1e8, bytes_b = 3e8;
  auto p2p = [](OpType type, int peer, double bytes, int stream, int64_t match, const char* name) {
    Op op;
    op.type = type;
    op.peer = peer;
    op.bytes = bytes;
    op.stream = stream;
    op.match = match;
    op.name = name;
    op.purpose = CommPurpose::Pipeline;
    return op;
  };
  s.programs.push_back(RankProgram{0, 2, {p2p(OpType::Send, 1, bytes_a, 0, 1, "a"), p2p(OpType::Send, 2, bytes_b, 1, 2, "b")}});
  s.programs.push_back(RankProgram{1, 1, {p2p(OpType::Recv, 0, bytes_a, 0, 1, "a")}});
  s.programs.push_back(RankProgram{2, 1, {p2p(OpType::Recv, 0, bytes_b, 0, 2, "b")}});
  const ReplayTimes t = replay(s, topo, recording_textbook());
  REQUIRE(t.flows.size() == 2);
  const FlowRecord& fa = t.flows[0].op == 0 ? t.flows[0] : t.flows[1];
  const FlowRecord& fb = t.flows[0].op == 0 ? t.flows[1] : t.flows[0];
  REQUIRE(fa.end_s < fb.end_s);  // they share gpu0 → sw; b is larger
  TraceWriter w;
  w.add("p2p", s, t, &topo);
  const Parsed p = parse(nlohmann::json::parse(w.json()));
  CHECK(p.link_tracks.size() == 3);  // gpu0 → sw, sw → gpu1, sw → gpu2
  const auto& shared = p.segments.at("gpu0 → sw");
  REQUIRE(shared.size() == 2);
  CHECK(shared[0].at("name") == "2 ops");
  std::vector<std::string> both = shared[0].at("args").at("ops");  // in the order they started
  std::sort(both.begin(), both.end());
  CHECK(both == std::vector<std::string>{"0:a", "0:b"});
  CHECK(shared[0].at("args").at("max_concurrent_flows") == 2);
  CHECK(shared[0].at("ts").get<double>() == testing::approx(0.0));
  CHECK(shared[0].at("dur").get<double>() == testing::approx(fa.end_s * 1e6));
  // b's bytes are shared pro rata of its time in each interval.
  const double b_first = bytes_b * (fa.end_s - fb.start_s) / (fb.end_s - fb.start_s);
  CHECK(shared[0].at("args").at("bytes").get<double>() == testing::approx(bytes_a + b_first));
  CHECK(shared[1].at("args").at("ops") == nlohmann::json::array({"0:b"}));
  CHECK(shared[1].at("args").at("flows") == 1);
  CHECK(shared[1].at("ts").get<double>() == testing::approx(fa.end_s * 1e6));
  CHECK(shared[1].at("dur").get<double>() == testing::approx((fb.end_s - fa.end_s) * 1e6));
  CHECK(shared[1].at("args").at("bytes").get<double>() == testing::approx(bytes_b - b_first));
  CHECK(p.segments.at("sw → gpu1").at(0).at("args").at("bytes").get<double>() == testing::approx(bytes_a));
  // The counter climbs to two flows, drops to one when a arrives, then to none.
  std::vector<int> flows;
  for (const auto& c : p.counters.at("gpu0 → sw")) flows.push_back(c.at("args").at("flows"));
  CHECK(flows == std::vector<int>{2, 1, 0});
}

TEST_CASE("trace: a schedule without communication has no link tracks") {
  const Topology topo = load_topology(kStar8);
  Schedule s;
  s.world_size = 8;
  Op k;
  k.type = OpType::Compute;
  k.duration_s = 1e-3;
  k.name = "gemm";
  s.programs.push_back(RankProgram{0, 1, {k}});
  const ReplayTimes t = replay(s, topo, recording_textbook());
  CHECK(t.flows.empty());
  TraceWriter w;
  w.add("compute", s, t, &topo);
  const nlohmann::json j = nlohmann::json::parse(w.json());
  const Parsed p = parse(j);
  CHECK(p.links_pid == -1);
  CHECK(p.processes == std::map<int, std::string>{{1, "compute · rank 0"}});
  for (const auto& e : j.at("traceEvents")) CHECK(e.value("cat", "") != "link");
}
