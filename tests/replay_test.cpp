// Replay against closed forms (design §4), folding against unfolding, flow against analytic.
#include "sim/replay.hpp"

#include "calibrate/profile.hpp"
#include "sim/pass.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kStar8 = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/data/replay/star8.yaml";
constexpr double kB = 100e9;     // bytes/s of every route of star8
constexpr double kAlpha = 1e-6;  // seconds of every route of star8

/// One collective of `bytes` over ranks 0..n-1, on the simulated ranks `sim`.
Schedule one_collective(CollectiveKind kind, int n, double bytes, const std::vector<int>& sim) {
  Schedule s;
  s.world_size = 8;
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  const int g = s.intern_group(ranks, CommPurpose::TensorParallel);
  for (int r : sim) s.programs.push_back({r, 1, {collective_op(g, 7, bytes, "c", CollectiveAlgorithm::Auto, 0, kind)}});
  return s;
}

/// The textbook ring of design §4 (no NCCL protocol latencies), one channel.
ReplayOptions textbook() {
  ReplayOptions o;
  o.collectives.textbook = true;
  o.collectives.channels = 1;
  return o;
}

}  // namespace

TEST_CASE("ring AllReduce over n GPUs takes 2(n-1)/n S/B + 2(n-1) alpha") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    const double S = 1024.0 * 1024 * 1024;  // divisible by n: every step moves S/n whole bytes
    const double expected = 2.0 * (n - 1) / n * S / kB + 2.0 * (n - 1) * kAlpha;
    const ReplayTimes t = replay(one_collective(CollectiveKind::AllReduce, n, S, first(n)), topo, opt);
    CHECK(std::abs(t.makespan_s - expected) / expected < 1e-9);
    // Every rank finishes at the same time, and the flows are 2(n-1) per rank.
    for (const auto& e : t.end_s) CHECK(e[0] == testing::approx(expected).epsilon(1e-12));
    CHECK(t.activities == 2LL * (n - 1) * n);
  }
}

TEST_CASE("ring AllGather and ReduceScatter take (n-1)(S/n/B + alpha)") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  const int n = 8;
  const double S = 64.0 * 1024 * 1024;
  const double expected = (n - 1) * (S / n / kB + kAlpha);
  for (auto kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const ReplayTimes t = replay(one_collective(kind, n, S, first(n)), topo, opt);
    CHECK(std::abs(t.makespan_s - expected) / expected < 1e-9);
  }
}

TEST_CASE("a folded collective (one simulated member) times like the unfolded one") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  const double S = 256.0 * 1024 * 1024;
  const ReplayTimes all = replay(one_collective(CollectiveKind::AllReduce, 8, S, first(8)), topo, opt);
  const ReplayTimes one = replay(one_collective(CollectiveKind::AllReduce, 8, S, {0}), topo, opt);
  CHECK(one.makespan_s == testing::approx(all.makespan_s).epsilon(1e-12));
  CHECK(one.activities == 2 * 7);  // only the representative's flows
}

TEST_CASE("analytic: a folded collective's one simulated member holds its SMs and ends as the unfolded member") {
  // A DGX A100 AllReduce of 1 GiB beside a 1 ms kernel on every rank: replayed with all 8 ranks
  // (the collective's state shared by its members) and with rank 0 alone (timed on its own).
  const Topology topo = load_topology(std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-a100.yaml");
  ReplayOptions ro;
  ro.fidelity = Fidelity::Analytic;
  ro.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
  ro.sm_count = 108;
  const auto schedule = [](const std::vector<int>& sim) {
    Schedule s;
    s.world_size = 8;
    const int g = s.intern_group(first(8), CommPurpose::TensorParallel);
    for (int r : sim) {
      RankProgram p{r, 2, {}};
      Op k;
      k.type = OpType::Compute;
      k.duration_s = 0.001;
      k.name = "gemm";
      p.ops = {k, collective_op(g, 1, 1024.0 * 1024 * 1024, "ar", CollectiveAlgorithm::Auto, 1)};
      s.programs.push_back(p);
    }
    return s;
  };
  const ReplayTimes all = replay(schedule(first(8)), topo, ro);
  const ReplayTimes one = replay(schedule({0}), topo, ro);
  REQUIRE(all.end_s[0][1] > 0.002);
  CHECK(one.end_s[0][1] == testing::approx(all.end_s[0][1]).epsilon(1e-12));
  CHECK(one.end_s[0][0] == testing::approx(all.end_s[0][0]).epsilon(1e-12));
  CHECK(one.end_s[0][0] == testing::approx(0.001 * 108.0 / 84.0).epsilon(1e-9));  // 24 of 108 SMs held
  CHECK(one.activities == 2);  // the kernel and the collective's timer
}

TEST_CASE("a flow replay's heartbeat tells the seconds waited, every interval, and changes nothing") {
  // 100 AllReduces one after another on 8 simulated ranks: some tens of milliseconds of flows.
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  Schedule s;
  s.world_size = 8;
  const int g = s.intern_group(first(8), CommPurpose::TensorParallel);
  for (int r = 0; r < 8; ++r) {
    RankProgram p{r, 1, {}};
    for (int k = 0; k < 100; ++k) p.ops.push_back(collective_op(g, k, 1024.0 * 1024, "ar"));
    s.programs.push_back(p);
  }
  const ReplayTimes quiet = replay(s, topo, opt);
  std::vector<double> beats;
  opt.heartbeat = [&](double waited_s) { beats.push_back(waited_s); };
  opt.heartbeat_interval_s = 0.001;
  const ReplayTimes told = replay(s, topo, opt);
  REQUIRE_FALSE(beats.empty());
  CHECK(beats.front() >= 0.001);
  for (size_t i = 1; i < beats.size(); ++i) CHECK(std::floor(beats[i] / 0.001) > std::floor(beats[i - 1] / 0.001));
  CHECK(told.makespan_s == quiet.makespan_s);
  CHECK(told.activities == quiet.activities);
}

TEST_CASE("analytic fidelity equals flow fidelity without contention") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions flow, analytic;  // NCCL protocols on: both fidelities must still agree
  analytic.fidelity = Fidelity::Analytic;
  const double S = 100e6 * 8;
  const ReplayTimes a = replay(one_collective(CollectiveKind::AllReduce, 8, S, first(8)), topo, flow);
  const ReplayTimes b = replay(one_collective(CollectiveKind::AllReduce, 8, S, first(8)), topo, analytic);
  CHECK(b.makespan_s == testing::approx(a.makespan_s).epsilon(1e-9));
}

TEST_CASE("replays sharing a plan cache time as replays planning their own, one cache is of one topology") {
  // Two schedules of AllReduce, AllGather and ReduceScatter over 4 and 8 ranks, with sizes in
  // common: the second replay takes the first's plans from the cache (simulate() shares one so).
  const Topology topo = load_topology(kStar8);
  const auto mixed = [](double scale) {
    Schedule s;
    s.world_size = 8;
    const int g8 = s.intern_group(first(8), CommPurpose::TensorParallel);
    const int g4 = s.intern_group(first(4), CommPurpose::DataParallel);
    for (int r = 0; r < 8; ++r) {
      RankProgram p{r, 1, {}};
      p.ops.push_back(collective_op(g8, 1, 64e6, "a", CollectiveAlgorithm::Auto, 0, CollectiveKind::AllReduce));
      p.ops.push_back(collective_op(g8, 2, 8e6 * scale, "b", CollectiveAlgorithm::Auto, 0, CollectiveKind::AllGather));
      if (r < 4)
        p.ops.push_back(collective_op(g4, 3, 16e6, "c", CollectiveAlgorithm::Auto, 0, CollectiveKind::ReduceScatter));
      for (size_t i = 1; i < p.ops.size(); ++i) p.ops[i].deps = {static_cast<int32_t>(i - 1)};
      s.programs.push_back(p);
    }
    return s;
  };
  for (const Fidelity f : {Fidelity::Analytic, Fidelity::Flow}) {
    INFO("fidelity " << to_string(f));
    ReplayOptions own, shared;
    own.fidelity = shared.fidelity = f;
    shared.plan_cache = make_plan_cache();
    for (const double scale : {1.0, 3.0, 1.0}) {
      const Schedule s = mixed(scale);
      const ReplayTimes a = replay(s, topo, own), b = replay(s, topo, shared);
      CHECK(b.makespan_s == a.makespan_s);
      CHECK(b.end_s == a.end_s);
    }
  }
  ReplayOptions shared;
  shared.fidelity = Fidelity::Analytic;
  shared.plan_cache = make_plan_cache();
  (void)replay(mixed(1.0), topo, shared);
  const Topology other = load_topology(kStar8);
  CHECK_THROWS_WITH_AS(replay(mixed(1.0), other, shared), "replay: a plan cache shared by two topologies",
                       std::logic_error);
}

TEST_CASE("two collectives sharing the GPUs' links slow each other down") {
  // Two AllReduces over the same 4 GPUs at the same time on separate streams: every link carries
  // two flows, so each takes (nearly) twice as long as alone — the bandwidth term doubles.
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  const double S = 400e6;
  Schedule s = one_collective(CollectiveKind::AllReduce, 4, S, first(4));
  for (auto& p : s.programs) {
    p.num_streams = 2;
    Op second = p.ops[0];
    second.match = 8;
    second.stream = 1;
    p.ops.push_back(second);
  }
  const double alone = 2.0 * 3 / 4 * S / kB + 6 * kAlpha;
  const double shared = 2.0 * 3 / 4 * 2 * S / kB + 6 * kAlpha;
  const ReplayTimes t = replay(s, topo, opt);
  CHECK(t.makespan_s > 1.9 * alone);
  CHECK(t.makespan_s == testing::approx(shared).epsilon(1e-9));
}

namespace {
/// Runs validate(s) in a child process; returns its stderr, and whether it aborted.
std::pair<bool, std::string> validate_in_child(const Schedule& s) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    validate(s);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(k));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, err};
}
}  // namespace

TEST_CASE("validate: a dependency forward on another stream is fine, a cycle through stream order is refused") {
  Schedule s;
  s.world_size = 8;
  RankProgram p{3, 2, {}};
  Op a, b, c;
  a.name = "a";
  b.name = "b";
  c.name = "c";
  b.stream = 1;
  a.deps = {1};  // a waits for b on stream 1; c follows a on stream 0
  c.deps = {1};
  p.ops = {a, b, c};
  s.programs.push_back(p);
  const auto ok = validate_in_child(s);
  CHECK_FALSE(ok.first);
  CHECK(ok.second.empty());
  s.programs[0].ops[1].stream = 0;  // b now follows a on stream 0, while a waits for b
  const auto bad = validate_in_child(s);
  CHECK(bad.first);
  CHECK(bad.second.find("cycle in the schedule of rank 3") != std::string::npos);
  s.programs[0].ops[1].stream = 1;
  s.programs[0].ops[1].deps = {2};  // b waits for c, c for b: a cycle of dependencies alone
  const auto dep_cycle = validate_in_child(s);
  CHECK(dep_cycle.first);
  CHECK(dep_cycle.second.find("cycle in the schedule of rank 3") != std::string::npos);
}

TEST_CASE("compute kernels on two streams share the GPU, on one stream they queue") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  opt.every_kernel = true;  // each kernel's own end (kernel_run_test: the run a then c as one)
  Schedule s;
  s.world_size = 8;
  RankProgram p{0, 2, {}};
  Op k;
  k.type = OpType::Compute;
  k.duration_s = 0.010;
  k.name = "k";
  p.ops.push_back(k);
  k.stream = 1;
  p.ops.push_back(k);
  k.stream = 0;
  k.duration_s = 0.005;
  p.ops.push_back(k);
  s.programs.push_back(p);
  const ReplayTimes t = replay(s, topo, opt);
  // Two 10 ms kernels side by side finish at 20 ms; the 5 ms kernel then runs alone.
  CHECK(t.end_s[0][0] == testing::approx(0.020).epsilon(1e-12));
  CHECK(t.end_s[0][1] == testing::approx(0.020).epsilon(1e-12));
  CHECK(t.makespan_s == testing::approx(0.025).epsilon(1e-12));
}

TEST_CASE("a send pays NCCL's per-message latency, a copy-engine send the launch overhead") {
  // star8's routes are NVSwitch hops of alpha = 1 us; NCCL's tuning model charges a one-step ring
  // baseLat + max(alpha, hwLat(NVLink)): up to 16 KiB LL, 6.6 us + max(1, 0.6) us; above, Simple,
  // 8.4 us + max(1, 3.4) us.
  const Topology topo = load_topology(kStar8);
  auto one_send = [&](double bytes, int16_t num_sm, double launch) {
    Schedule s;
    s.world_size = 8;
    RankProgram a{0, 1, {}}, b{1, 1, {}};
    auto [send, recv] = testing::send_recv_ops(0, 1, bytes, -5);
    send.num_sm = recv.num_sm = num_sm;
    a.ops = {send};
    b.ops = {recv};
    s.programs = {a, b};
    ReplayOptions opt;
    opt.launch_overhead_s = launch;
    return replay(s, topo, opt).makespan_s;
  };
  CHECK(one_send(8192, -1, 0) == testing::approx(6.6e-6 + kAlpha + 8192 / kB).epsilon(1e-9));
  CHECK(one_send(1e8, -1, 0) == testing::approx(8.4e-6 + 3.4e-6 + 1e8 / kB).epsilon(1e-9));
  CHECK(one_send(1e8, 0, 5e-6) == testing::approx(5e-6 + kAlpha + 1e8 / kB).epsilon(1e-9));
  // The prediction the passes use agrees.
  const CostModel cost(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
  const StrategyContext ctx{topo, cost};
  CHECK(predict_p2p_step_s(topo, ctx, {{0, 1}}, 1e8) ==
        testing::approx(8.4e-6 + 3.4e-6 + 1e8 / (kB * cost.profile().nvlink_efficiency)).epsilon(1e-9));
}

TEST_CASE("a point-to-point send takes alpha + S/B and the receive waits for it") {
  const Topology topo = load_topology(kStar8);
  ReplayOptions opt = textbook();
  Schedule s;
  s.world_size = 8;
  RankProgram a{0, 1, {}}, b{1, 1, {}};
  Op send;
  send.type = OpType::Send;
  send.peer = 1;
  send.bytes = 1e9;
  send.match = -5;
  send.name = "send";
  Op recv = send;
  recv.type = OpType::Recv;
  recv.peer = 0;
  recv.name = "recv";
  Op k;
  k.type = OpType::Compute;
  k.duration_s = 0.001;
  k.name = "after";
  a.ops = {send};
  b.ops = {recv, k};
  s.programs = {a, b};
  const ReplayTimes t = replay(s, topo, opt);
  CHECK(t.end_s[1][0] == testing::approx(kAlpha + 1e9 / kB).epsilon(1e-12));
  CHECK(t.makespan_s == testing::approx(kAlpha + 1e9 / kB + 0.001).epsilon(1e-12));
}

TEST_CASE("a folded Broadcast or Reduce chain: each simulated member ends as in the unfolded run and the closed form") {
  // With some members simulated, a chain still simulates every member's flows (the others as
  // mirrors); every simulated member must end when it does with every member simulated, and when
  // the analytic fidelity has it end (regressions: representatives paced by a timer sent their
  // next slice once their last flow was done, each slice a route latency late, 15 us over 16
  // slices on star8; over 2 DGX A100 nodes a folded LL128 Reduce's root ended 16% late).
  struct Case {
    std::string topology;
    std::map<std::string, std::string> overrides;
    int n;
    std::vector<int> sim;
    double bytes;
  };
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  const std::vector<Case> cases{
      {"/tests/data/replay/star8.yaml", {}, 8, {0, 3, 6}, 8.0 * 1024 * 1024},  // 16 slices on one channel
      {"/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}}, 16, {0, 7, 8, 13}, 64.0 * 1024 * 1024},
  };
  for (const Case& c : cases) {
    const Topology topo = load_topology(src + c.topology, c.overrides);
    auto schedule = [&](CollectiveKind kind, const std::vector<int>& sim) {
      Schedule s;
      s.world_size = c.n;
      const int g = s.intern_group(first(c.n), CommPurpose::DataParallel);
      for (int r : sim) s.programs.push_back({r, 1, {collective_op(g, 7, c.bytes, "c", CollectiveAlgorithm::Auto, 0, kind)}});
      return s;
    };
    for (bool book : {true, false}) {
      ReplayOptions flow = book ? textbook() : ReplayOptions{};
      ReplayOptions analytic = flow;
      analytic.fidelity = Fidelity::Analytic;
      for (auto kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
        const ReplayTimes all = replay(schedule(kind, first(c.n)), topo, flow);
        const ReplayTimes some = replay(schedule(kind, c.sim), topo, flow);
        const ReplayTimes closed = replay(schedule(kind, first(c.n)), topo, analytic);
        for (size_t i = 0; i < c.sim.size(); ++i) {
          CAPTURE(c.topology);
          CAPTURE(book);
          CAPTURE(static_cast<int>(kind));
          CAPTURE(c.sim[i]);
          CHECK(some.end_s[i][0] == testing::approx(all.end_s[c.sim[i]][0]).epsilon(1e-6));
          CHECK(closed.end_s[c.sim[i]][0] == testing::approx(all.end_s[c.sim[i]][0]).epsilon(1e-5));
        }
      }
    }
  }
}
