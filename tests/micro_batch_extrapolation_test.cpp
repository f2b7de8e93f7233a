// The steady-state extrapolation over micro-batches (sim/micro_batch_extrapolation.hpp): the
// collinearity check and the spacing filter themselves, and end to end that the extended figures
// are those of replaying every micro-batch, for every strategy, 1F1B and GPipe, with and without
// a pipeline, folded and unfolded, in both fidelities.
#include "sim/micro_batch_extrapolation.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

using namespace overlapsim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

/// A sample whose figures are affine in the micro-batches m: T = 2 + 0.25 m, and so on.
ReplaySample line_at(int m) {
  ReplaySample s;
  s.iteration_s = 2.0 + 0.25 * m;
  s.compute_s = 1.0 + 0.2 * m;
  s.exposed_comm_s = 0.5 + 0.03 * m;
  s.bubble_s = 0.5 + 0.02 * m;
  s.ops = 1000 + 480 * m;
  s.activities = 1200 + 500 * m;
  s.notes = {"wang-decomp: " + std::to_string(12 * m) + " sites decomposed on 2 simulated rank(s)"};
  OpPlan p;
  p.op = "ag.fc1";
  p.kind = "AllGather";
  p.bytes = 8e6;
  p.instances = 24 * m + 2;
  p.chosen = 1;
  p.alternatives = {{"keep", 1e-3, 5e-4}, {"chunks:4", 8e-4, 1e-4}};
  s.plan = {p};
  return s;
}

/// Runs `sc` twice (analytic fidelity unless `fidelity` says), extended and with every micro-batch
/// replayed, and checks
/// that every figure agrees and that the strategies `extended` (a prefix of `strategies`, all of
/// them by default) were extended; returns the extended run's notes.
std::string check_extended_equals_full(const Scenario& sc, const std::vector<std::string>& strategies,
                                       Folding folding = Folding::Representatives, size_t extended = SIZE_MAX,
                                       Fidelity fidelity = Fidelity::Analytic, double rel_tol = 1e-9) {
  SimulateOptions o;
  o.fidelity = fidelity;
  o.strategies = strategies;
  o.folding = folding;
  const RunResult ext = simulate(sc, o);
  o.every_micro_batch = true;
  const RunResult full = simulate(sc, o);
  REQUIRE(ext.strategies.size() == full.strategies.size());
  CHECK(full.notes.find("steady state") == std::string::npos);
  std::string named;
  for (size_t i = 0; i < std::min(extended, strategies.size()); ++i) named += (named.empty() ? "" : ", ") + strategies[i];
  if (named.empty())
    CHECK(ext.notes.find("steady state") == std::string::npos);
  else
    CHECK(ext.notes.find(named + ": the ") != std::string::npos);
  CHECK(ext.simulated_ranks == full.simulated_ranks);
  for (size_t i = 0; i < ext.strategies.size(); ++i) {
    const StrategyResult &e = ext.strategies[i], &f = full.strategies[i];
    CAPTURE(e.strategy);
    // Within rel_tol of the iteration time (a figure may be 0 in one run and 1e-18 in the other).
    const double tol = rel_tol * f.iteration_s;
    CHECK(std::abs(e.iteration_s - f.iteration_s) <= tol);
    CHECK(std::abs(e.compute_s - f.compute_s) <= tol);
    CHECK(std::abs(e.exposed_comm_s - f.exposed_comm_s) <= tol);
    CHECK(std::abs(e.bubble_s - f.bubble_s) <= tol);
    CHECK(e.mfu == testing::approx(f.mfu).epsilon(rel_tol));
    CHECK(e.ops == f.ops);
    // The activity count is extended unchecked (flow's pacing timers may differ by a few).
    CHECK(std::abs(e.activities - f.activities) <= f.activities / 1000);
    CHECK(e.notes == f.notes);
    REQUIRE(e.plan.size() == f.plan.size());
    for (size_t k = 0; k < e.plan.size(); ++k) {
      CHECK(e.plan[k].op == f.plan[k].op);
      CHECK(e.plan[k].instances == f.plan[k].instances);
      CHECK(e.plan[k].chosen == f.plan[k].chosen);
    }
  }
  return ext.notes;
}

}  // namespace

TEST_CASE("extrapolate_text extends the counts in a note and refuses anything else that differs") {
  CHECK(extrapolate_text("no sites", "no sites", "no sites", 4, 40) == std::string("no sites"));
  CHECK(extrapolate_text("48 sites on 2 ranks", "60 sites on 2 ranks", "72 sites on 2 ranks", 4, 40) ==
        std::string("480 sites on 2 ranks"));
  // Not affine: 48, 60, 73.
  CHECK_FALSE(extrapolate_text("48 sites", "60 sites", "73 sites", 4, 40));
  // Words differ.
  CHECK_FALSE(extrapolate_text("48 sites", "60 sites", "72 ops", 4, 40));
  // A decimal fraction's digits are not a count.
  CHECK_FALSE(extrapolate_text("0.25 s", "0.26 s", "0.27 s", 4, 40));
  // A count that would fall below zero.
  CHECK_FALSE(extrapolate_text("3 left", "2 left", "1 left", 4, 40));
}

TEST_CASE("extrapolate_micro_batches extends collinear samples exactly and refuses a kink") {
  const int m0 = 4;
  const std::array<ReplaySample, 3> s{line_at(m0), line_at(m0 + 1), line_at(m0 + 2)};
  const auto r = extrapolate_micro_batches(s, m0, 96);
  REQUIRE(r);
  const ReplaySample want = line_at(96);
  CHECK(r->iteration_s == testing::approx(want.iteration_s).epsilon(1e-12));
  CHECK(r->compute_s == testing::approx(want.compute_s).epsilon(1e-12));
  CHECK(r->exposed_comm_s == testing::approx(want.exposed_comm_s).epsilon(1e-12));
  CHECK(r->bubble_s == testing::approx(want.bubble_s).epsilon(1e-12));
  CHECK(r->ops == want.ops);
  CHECK(r->activities == want.activities);
  CHECK(r->notes == want.notes);
  REQUIRE(r->plan.size() == 1);
  CHECK(r->plan[0].instances == want.plan[0].instances);
  CHECK(r->plan[0].chosen == 1);

  SUBCASE("a bubble 0 in every sample but rounded below 0 on the line reads 0") {
    auto k = s;
    for (auto& x : k) x.bubble_s = 0;
    k[0].bubble_s = 1e-16;  // collinear within the tolerance; the line reaches -1.5e-15 at 96
    const auto e = extrapolate_micro_batches(k, m0, 96);
    REQUIRE(e);
    CHECK(e->bubble_s == 0);
  }
  SUBCASE("a figure whose line falls well below zero is no steady state") {
    auto k = s;
    k[0].bubble_s = 0.3, k[1].bubble_s = 0.2, k[2].bubble_s = 0.1;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
  SUBCASE("no extension to m0 + 2 or below") { CHECK_FALSE(extrapolate_micro_batches(s, m0, m0 + 2)); }
  SUBCASE("the third iteration time off the line by 1e-6 of it") {
    auto k = s;
    k[2].iteration_s *= 1 + 1e-6;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
  SUBCASE("the bubble still shrinking (a transient)") {
    auto k = s;
    k[0].bubble_s += 0.01;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
  SUBCASE("an op count not affine") {
    auto k = s;
    k[1].ops += 1;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
  SUBCASE("an activity count off by two is extended, not refused (what the replay cost)") {
    auto k = s;
    k[1].activities += 2;
    const auto e = extrapolate_micro_batches(k, m0, 96);
    REQUIRE(e);
    CHECK(e->activities == want.activities);
  }
  SUBCASE("a search that chose differently at another m") {
    auto k = s;
    k[2].plan[0].chosen = 0;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
  SUBCASE("a note that changed its words") {
    auto k = s;
    k[1].notes[0] = "wang-decomp: declined";
    CHECK_FALSE(extrapolate_micro_batches(k, m0, 96));
  }
}

TEST_CASE("extrapolate_micro_batches over a pipeline's period: exact on a periodic pattern, refused where the drift's estimate is too large") {
  // Samples 8 micro-batches apart (a pipeline of 8 stages): the line T = 2 + 0.25 m plus a pattern
  // of period 8 (equal at m0, m0 + 8, m0 + 16) is extended exactly to m = m0 + 8 k.
  const int m0 = 8, P = 8, m = 96;
  std::array<ReplaySample, 3> s{line_at(m0), line_at(m0 + P), line_at(m0 + 2 * P)};
  for (auto& x : s) x.iteration_s += 0.01;  // the period's offset at these m
  const auto r = extrapolate_micro_batches(s, m0, m, P);
  REQUIRE(r);
  CHECK(r->iteration_s == testing::approx(2.0 + 0.25 * m + 0.01).epsilon(1e-12));
  CHECK(r->compute_s == testing::approx(1.0 + 0.2 * m).epsilon(1e-12));
  CHECK(r->ops == 1000 + 480 * m);
  CHECK(r->notes[0] == "wang-decomp: " + std::to_string(12 * m) + " sites decomposed on 2 simulated rank(s)");
  CHECK(r->plan[0].instances == 24 * m + 2);
  SUBCASE("m off the samples' grid") { CHECK_FALSE(extrapolate_micro_batches(s, m0, m + 1, P)); }
  SUBCASE("a drift: second difference d, error estimated d k (k + 1) / 2 after k more periods") {
    // k = (96 − 24) / 8 = 9 periods: the estimate is 45 d; twice it is held to 1e-6 of T(96) = 26.01 s.
    auto k = s;
    k[2].compute_s += 2.5e-7;  // 2 · 45 · 2.5e-7 = 2.25e-5 s <= 2.601e-5: accepted
    CHECK(extrapolate_micro_batches(k, m0, m, P));
    k[2].compute_s += 0.5e-7;  // 2 · 45 · 3e-7 = 2.7e-5 s > 2.601e-5: refused
    CHECK_FALSE(extrapolate_micro_batches(k, m0, m, P));
  }
  SUBCASE("counts must still be exactly affine") {
    auto k = s;
    ++k[2].ops;
    CHECK_FALSE(extrapolate_micro_batches(k, m0, m, P));
  }
  SUBCASE("the consecutive check is unchanged: the same drift on consecutive samples is refused") {
    std::array<ReplaySample, 3> c{line_at(m0), line_at(m0 + 1), line_at(m0 + 2)};
    c[2].compute_s += 2.5e-7;
    CHECK_FALSE(extrapolate_micro_batches(c, m0, m));
  }
}

TEST_CASE("runs_periodically reads the spacing of the last stage's backward passes before the last") {
  // One rank (rank 8, the last stage's first), 6 micro-batches, a forward and a backward op each;
  // backward j starts at 10 + 2 j.
  Schedule s;
  s.programs.resize(1);
  s.programs[0].rank = 8;
  ReplayTimes t;
  t.start_s.resize(1);
  for (int j = 0; j < 6; ++j)
    for (Phase ph : {Phase::Forward, Phase::Backward}) {
      Op op;
      op.phase = ph;
      op.micro_batch = j;
      s.programs[0].ops.push_back(op);
      t.start_s[0].push_back(ph == Phase::Forward ? 0.5 * j * j : 10.0 + 2.0 * j);
    }
  // The forward passes (a warm-up: 0, 0.5, 2, 4.5, …) are not read.
  CHECK(runs_periodically(s, t, 8, 1e-12));
  SUBCASE("the last backward pass is not read either") {
    t.start_s[0][11] += 1;
    CHECK(runs_periodically(s, t, 8, 1e-12));
  }
  SUBCASE("backward 4 (one of micro-batches 2, 3, 4) late by more than the tolerance") {
    t.start_s[0][9] += 1e-9;
    CHECK_FALSE(runs_periodically(s, t, 8, 1e-10));
    CHECK(runs_periodically(s, t, 8, 1e-8));
  }
  SUBCASE("an earlier stage's rank is not read") {
    t.start_s[0][9] += 1;
    CHECK_FALSE(runs_periodically(s, t, 8, 1e-12));
    CHECK(runs_periodically(s, t, 9, 1e-12));
  }
}

TEST_CASE("analytic: the extended steady state equals replaying every micro-batch") {
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  sc.parallelism.global_batch = 64;  // 32 micro-batches per pipeline of 2 stages
  SUBCASE("1F1B, every strategy") {
    const std::string notes =
        check_extended_equals_full(sc, {"serial", "megatron", "te-overlap", "wang-decomp", "centauri"});
    CHECK(notes.find("the 32 micro-batches' steady state extended from replays of 4, 5 and 6") != std::string::npos);
  }
  SUBCASE("GPipe") {
    sc.parallelism.pipeline_schedule = PipelineSchedule::GPipe;
    CHECK(check_extended_equals_full(sc, {"megatron"}).find("steady state") != std::string::npos);
  }
  SUBCASE("no pipeline, ZeRO-3 (per-micro-batch gathers and reductions)") {
    sc.parallelism.pp = 1;
    sc.parallelism.dp = 4;
    sc.parallelism.zero_stage = 3;
    sc.parallelism.global_batch = 128;  // 32 micro-batches per replica
    CHECK(check_extended_equals_full(sc, {"megatron", "centauri"}).find("steady state") != std::string::npos);
  }
  SUBCASE("every rank simulated") {
    CHECK(check_extended_equals_full(sc, {"megatron"}, Folding::None).find("steady state") != std::string::npos);
  }
  SUBCASE("four stages, selective recomputation, DP reduction after the backward") {
    sc.model.layers = 8;
    sc.parallelism.pp = 4;
    sc.parallelism.dp = 1;
    sc.parallelism.global_batch = 40;
    sc.parallelism.recompute = Recompute::Selective;
    sc.parallelism.overlap_grad_reduce = false;
    CHECK(check_extended_equals_full(sc, {"serial", "megatron"}).find("replays of 4, 5 and 6") != std::string::npos);
  }
}

TEST_CASE("analytic: a strategy whose pipeline drifts is replayed in full, beside one extended") {
  // The default scenario with SP on over 25 Gb/s InfiniBand, 56 micro-batches: megatron's
  // pipeline sends and TP collectives on their own streams slow the GEMMs beside them in a pattern
  // that drifts (sim/micro_batch_extrapolation.hpp), serial's one stream does not.
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/default-sp-25g.yaml");
  sc.parallelism.global_batch = 896;
  const std::string notes = check_extended_equals_full(sc, {"serial", "megatron"}, Folding::Representatives, 1);
  CHECK(notes.find("serial: the 56 micro-batches' steady state extended from replays of 8, 9 and 10") !=
        std::string::npos);
  CHECK(notes.find("megatron: all 56 micro-batches replayed (the replays of 8, 9 and 10 were not") != std::string::npos);
}

TEST_CASE("a drift of the pipeline's period: extended from samples a period apart, within 1e-6 of replaying every micro-batch") {
  // The default scenario with SP on over 25 Gb/s InfiniBand (96 micro-batches, PP 8): te-overlap's
  // samples of 8, 9 and 10 micro-batches are not collinear (its spacing jumps every PP
  // micro-batches), those of 8, 16 and 24 are (micro_batch_extrapolation.hpp): the extension is
  // within 1e-6 of the full replay in both fidelities. (Megatron is replayed in full: `overlapsim
  // run tests/data/scenarios/default-sp-25g.yaml -s megatron`'s note.)
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/default-sp-25g.yaml");
  for (Fidelity f : {Fidelity::Analytic, Fidelity::Flow}) {
    CAPTURE(static_cast<int>(f));
    const std::string notes =
        check_extended_equals_full(sc, {"serial", "te-overlap"}, Folding::Representatives, 1, f, 1e-6);
    CHECK(notes.find("serial: the 96 micro-batches' steady state extended from replays of 8, 9 and 10") !=
          std::string::npos);
    CHECK(notes.find("te-overlap: the 96 micro-batches' steady state extended from replays of 8, 16 and 24, a "
                     "pipeline period apart") != std::string::npos);
  }
}

TEST_CASE("flow: the extended steady state equals replaying every micro-batch, contention included") {
  // The small scenario's pipeline sends, TP collectives and DP reduction share one node's NVSwitch.
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  sc.parallelism.global_batch = 64;
  CHECK(check_extended_equals_full(sc, {"serial", "megatron", "te-overlap"}, Folding::Representatives, SIZE_MAX,
                                   Fidelity::Flow)
            .find("replays of 4, 5 and 6") != std::string::npos);
}

TEST_CASE("few micro-batches, a trace and --every-micro-batch replay them all") {
  Scenario sc = load_scenario(kSrc + "/tests/data/scenarios/small.yaml");
  SimulateOptions o;
  o.strategies = {"megatron"};
  o.fidelity = Fidelity::Analytic;
  // 4 micro-batches: the samples (4 + 5 + 6) would replay more than all of them; 30 are needed.
  CHECK(simulate(sc, o).notes.find("steady state") == std::string::npos);
  sc.parallelism.global_batch = 58;  // 29 micro-batches
  CHECK(simulate(sc, o).notes.find("steady state") == std::string::npos);
  sc.parallelism.global_batch = 60;
  CHECK(simulate(sc, o).notes.find("steady state") != std::string::npos);
  o.every_micro_batch = true;
  CHECK(simulate(sc, o).notes.find("steady state") == std::string::npos);
  o.every_micro_batch = false;
  // A trace needs every op's times.
  o.on_replayed = [](const std::string&, const Schedule&, const ReplayTimes&, const Topology&) {};
  CHECK(simulate(sc, o).notes.find("steady state") == std::string::npos);
  o.on_replayed = nullptr;
  o.record_flows = true;
  CHECK(simulate(sc, o).notes.find("steady state") == std::string::npos);
}
