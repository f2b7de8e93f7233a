// Runs of compute kernels replayed as one activity (ReplayOptions::every_kernel off): the same
// makespan, breakdown and communication times as one activity per kernel, in both fidelities and
// under every strategy; the members' times tile the run in proportion to their work.
#include "calibrate/profile.hpp"
#include "models/transformer.hpp"
#include "sim/replay.hpp"
#include "sim/result.hpp"
#include "sim/strategy.hpp"
#include "sim/topology.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

Op kernel(double seconds, int stream, std::vector<int32_t> deps = {}) {
  Op op;
  op.type = OpType::Compute;
  op.duration_s = seconds;
  op.flops = 1e9;
  op.stream = static_cast<int16_t>(stream);
  op.name = "k";
  op.deps.assign(deps.begin(), deps.end());
  return op;
}

}  // namespace

TEST_CASE("a run of kernels on one stream is one activity, its ops tiling it in proportion to their work") {
  const Topology topo = load_topology(kSrc + "/tests/data/replay/star8.yaml");
  Schedule s;
  s.world_size = 8;
  // Stream 0: a (10 ms) then c (5 ms), c waiting on a alone (by stream order and a dep on a);
  // stream 1: b (10 ms) beside a. The GPU is shared equally between the kernels it runs.
  RankProgram p{0, 2, {}};
  p.ops.push_back(kernel(0.010, 0));
  p.ops.push_back(kernel(0.010, 1));
  p.ops.push_back(kernel(0.005, 0, {0}));
  s.programs.push_back(p);
  ReplayOptions every;
  every.every_kernel = true;
  const ReplayTimes one = replay(s, topo, every);
  const ReplayTimes run = replay(s, topo, ReplayOptions{});
  // Each kernel alone: a and b share the GPU to 20 ms, then c runs alone to 25 ms.
  CHECK(one.activities == 3);
  CHECK(one.end_s[0][0] == approx(0.020).epsilon(1e-12));
  CHECK(one.end_s[0][2] == approx(0.025).epsilon(1e-12));
  // As a run a+c (15 ms of work): b ends at 20 ms as before, the run at 25 ms as c did; a's end is
  // placed at 10/15 of the run (its work's share), where the GPU's speed held it is exact.
  CHECK(run.activities == 2);
  CHECK(run.makespan_s == approx(0.025).epsilon(1e-12));
  CHECK(run.end_s[0][1] == approx(0.020).epsilon(1e-12));
  CHECK(run.end_s[0][2] == approx(0.025).epsilon(1e-12));
  CHECK(run.end_s[0][0] == approx(0.025 * 10 / 15).epsilon(1e-12));
  CHECK(run.start_s[0][2] == run.end_s[0][0]);
  CHECK(run.start_s[0][0] == 0);

  SUBCASE("an op another stream waits on ends a run") {
    s.programs[0].ops[1].deps = {0};  // b waits on a: a must end as itself
    const ReplayTimes r = replay(s, topo, ReplayOptions{});
    CHECK(r.activities == 3);
    CHECK(r.end_s[0][0] == approx(0.010).epsilon(1e-12));
    // b and c share the GPU from 10 ms: c's 5 ms end at 20 ms, b's 10 at 25 ms.
    CHECK(r.end_s[0][2] == approx(0.020).epsilon(1e-12));
    CHECK(r.makespan_s == approx(0.025).epsilon(1e-12));
  }
  SUBCASE("a kernel that waits on another stream starts a run of its own") {
    s.programs[0].ops[2].deps = {1};  // c waits on b
    const ReplayTimes r = replay(s, topo, ReplayOptions{});
    CHECK(r.activities == 3);
    CHECK(r.start_s[0][2] == approx(0.020).epsilon(1e-12));
  }
}

TEST_CASE("kernel runs leave every strategy's makespan, breakdown and communication times as they were") {
  // A GPT with four layers as TP 4 · PP 2 on one DGX A100 (TP AllReduces, pipeline sends), with the
  // shipped profile's launch overhead and SMs taken by communication kernels (their speed changes
  // inside runs), replayed with one activity per kernel and with runs.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const Profile profile = load_profile(default_profile_path("a100-sxm4-80gb"));
  const CostModel cost(device_spec("a100-sxm4-80gb"), profile);
  ModelConfig m = model_preset("megatron-18.4b");
  m.layers = 4;
  Parallelism par;
  par.tp = 4;
  par.pp = 2;
  par.dp = 1;
  par.micro_batch = 1;
  par.global_batch = 4;
  par.recompute = Recompute::Selective;
  par.sp = true;
  const Schedule w = build_iteration(m, par, cost);
  ReplayOptions ro;
  ro.link_efficiency = LinkEfficiency::of_profile(profile);
  ro.launch_overhead_s = profile.launch_overhead_s;
  ro.collectives.read_profile(profile);
  ro.sm_count = device_spec("a100-sxm4-80gb").sm_count;
  for (const Fidelity f : {Fidelity::Analytic, Fidelity::Flow})
    for (const auto& name : strategy_names()) {
      if (f == Fidelity::Flow && name != "megatron" && name != "te-overlap") continue;  // (flow: two suffice)
      CAPTURE(name);
      CAPTURE(to_string(f));
      const Schedule s = make_strategy(name)->apply(w, StrategyContext{topo, cost, &m, &par});
      ro.fidelity = f;
      ro.every_kernel = true;
      const ReplayTimes one = replay(s, topo, ro);
      ro.every_kernel = false;
      const ReplayTimes run = replay(s, topo, ro);
      CHECK(run.activities < one.activities);
      CHECK(run.makespan_s == approx(one.makespan_s).epsilon(1e-12));
      const Breakdown a = breakdown(s, one), b = breakdown(s, run);
      CHECK(std::abs(a.compute_s - b.compute_s) < 1e-12 * one.makespan_s);
      CHECK(std::abs(a.exposed_comm_s - b.exposed_comm_s) < 1e-12 * one.makespan_s);
      CHECK(std::abs(a.idle_s - b.idle_s) < 1e-12 * one.makespan_s);
      // Communication ops keep their times; compute ops lie inside the run and in program order.
      int comm_differs = 0, disorder = 0;
      for (size_t ri = 0; ri < s.programs.size(); ++ri) {
        const auto& ops = s.programs[ri].ops;
        for (size_t oi = 0; oi < ops.size(); ++oi) {
          if (run.start_s[ri][oi] > run.end_s[ri][oi]) ++disorder;
          if (ops[oi].type == OpType::Compute) continue;
          if (std::abs(run.start_s[ri][oi] - one.start_s[ri][oi]) > 1e-12 * one.makespan_s ||
              std::abs(run.end_s[ri][oi] - one.end_s[ri][oi]) > 1e-12 * one.makespan_s)
            ++comm_differs;
        }
      }
      CHECK(comm_differs == 0);
      CHECK(disorder == 0);
    }
}
