// --max-ops (sim/op_estimate.hpp): the estimate made before any schedule is built against the
// schedules built, refusals that come before the work, and a refused strategy leaving the
// others' figures (table, JSON, exit status 2).
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "models/transformer.hpp"
#include "sim/op_estimate.hpp"
#include "sim/scenario.hpp"
#include "sim/simulate.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// Every strategy of the small scenario and a composition that multiplies the ops, replayed in
// full (so that `ops` is the schedule built, not an extension).
RunResult run_all(const std::string& scenario, Folding folding, int global_batch) {
  Scenario sc = load_scenario(scenario);
  apply_setting(sc, "parallelism.global_batch", std::to_string(global_batch));
  SimulateOptions opt;
  opt.strategies = {"serial", "megatron", "te-overlap", "wang-decomp", "centauri", "megatron+workload-partition:4"};
  opt.fidelity = Fidelity::Analytic;
  opt.folding = folding;
  opt.every_micro_batch = true;
  return simulate(sc, opt);
}

}  // namespace

TEST_CASE("--max-ops's estimate equals the ops of the schedule built, folded and unfolded") {
  for (const Folding folding : {Folding::Representatives, Folding::None})
    for (const int gb : {2, 8, 36}) {  // 1, 4 and 18 micro-batches: fewer, as many and more than PP probes
      CAPTURE(gb);
      CAPTURE(folding == Folding::None);
      const RunResult r = run_all(kSrc + "/tests/data/scenarios/small.yaml", folding, gb);
      for (const StrategyResult& s : r.strategies) {
        CAPTURE(s.strategy);
        REQUIRE(!s.refusal);
        CHECK(s.ops > 0);
        CHECK(s.estimated_ops == s.ops);
      }
    }
}

TEST_CASE("--max-ops refuses a strategy before building its schedule, the others' figures kept, exit status 2") {
  const std::string json = temp_path(".json");
  // The workload fits under 20000 ops; the composition's 64 chunks per site do not. Before, the
  // whole run was refused from the pass, after the workload was built, and megatron's figures lost.
  const Run r = run_cli("run -q " + kSrc + "/tests/data/scenarios/small.yaml --fidelity analytic -s megatron "
                        "-s megatron+workload-partition:64 --max-ops 2e4 --json " + json);
  CHECK(r.status == 2);
  CHECK(r.output.find("refused 'megatron+workload-partition:64': its replay of all 4 micro-batches would hold about ") !=
        std::string::npos);
  CHECK(r.output.find("estimated before building it; the limit is 20000 (--max-ops): raise --max-ops to at least ") !=
        std::string::npos);
  CHECK(r.output.find(", or lower global_batch or raise micro_batch (4 micro-batches now)") != std::string::npos);
  CHECK(r.output.find("megatron+workload-partition:64     refused") != std::string::npos);
  CHECK(r.output.find("--max-ops: 1 of 2 strategies refused (megatron+workload-partition:64; why under the table), "
                      "the others' figures kept") != std::string::npos);
  // The JSON is the whole result: megatron's figures, the refused strategy named with why.
  REQUIRE(std::filesystem::exists(json));
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  CHECK(j["refused"] == nlohmann::json::array({"megatron+workload-partition:64"}));
  REQUIRE(j["strategies"].size() == 2);
  const auto& meg = j["strategies"][0];
  CHECK(meg["strategy"] == "megatron");
  CHECK(meg["iteration_s"].get<double>() > 0);
  CHECK(!meg.contains("refused"));
  const auto& wp = j["strategies"][1];
  CHECK(!wp.contains("iteration_s"));
  CHECK(wp["refused"]["max_ops"] == 20000);
  CHECK(wp["refused"]["ops"].get<long long>() > 20000);
  CHECK(wp["refused"]["ops"] == wp["estimated_ops"]);
  CHECK(wp["refused"]["replays_before"] == 0);  // refused before any replay of it
  CHECK(wp["refused"]["reason"].get<std::string>().find("estimated before building it") != std::string::npos);
  std::filesystem::remove(json);
}

TEST_CASE("--max-ops refuses an unfolded strategy from its estimate, before the workload of every rank is built") {
  // 256 ranks: the workload of one micro-batch holds about 300 k ops, under the limit, and was
  // built for every rank before wang-decomp's pass stopped after the first rank's program.
  const std::string scenario = kSrc + "/scenarios/gpt3-175b-h100-tp8.yaml";
  const Run r = run_cli("run -q " + scenario + " --fidelity analytic -s wang-decomp --unfold "
                        "--set parallelism.global_batch=8 --max-ops 4e5");
  CHECK(r.status == 2);
  CHECK(r.output.find("refused 'wang-decomp': its replay of all 1 micro-batches would hold about ") != std::string::npos);
  CHECK(r.output.find("on 256 simulated rank(s), estimated before building it; the limit is 400000 (--max-ops)") !=
        std::string::npos);
  CHECK(r.output.find("or drop --unfold (about ") != std::string::npos);
  CHECK(r.output.find("--max-ops: 1 of 1 strategy refused (wang-decomp; why under the table)\n") != std::string::npos);
  CHECK(r.output.find("its pass") == std::string::npos);  // not the pass's guard, after the build
}

TEST_CASE("--max-ops on the steady-state path: samples refused before they are built, a drifting strategy before its period samples") {
  const std::string scenario = kSrc + "/tests/data/scenarios/default-sp-25g.yaml";
  Scenario sc = load_scenario(scenario);
  SimulateOptions opt;
  opt.strategies = {"serial", "megatron"};
  opt.fidelity = Fidelity::Analytic;
  // The ops of 10 micro-batches (m0 + 2, the first round's largest sample) by a full replay.
  Scenario ten = sc;
  apply_setting(ten, "parallelism.global_batch", std::to_string(10 * sc.parallelism.dp * sc.parallelism.micro_batch));
  SimulateOptions every = opt;
  every.every_micro_batch = true;
  const RunResult r10 = simulate(ten, every);
  REQUIRE(r10.strategies.size() == 2);
  const long long sample_ops = std::max(r10.strategies[0].ops, r10.strategies[1].ops);
  REQUIRE(sample_ops > 0);

  SUBCASE("below the first round's largest sample: both refused, nothing replayed") {
    opt.max_ops = sample_ops - 1;
    const RunResult r = simulate(sc, opt);
    for (const auto& s : r.strategies) {
      CAPTURE(s.strategy);
      REQUIRE(s.refusal);
      CHECK(s.refusal->replays == 0);
      CHECK(s.refusal->why.find("its steady state's largest sample (10 of the ") != std::string::npos);
    }
  }
  SUBCASE("above it: serial extended; megatron, which drifts, refused before its samples a period apart") {
    opt.max_ops = sample_ops + sample_ops / 5;
    const RunResult r = simulate(sc, opt);
    REQUIRE(r.strategies.size() == 2);
    CHECK(!r.strategies[0].refusal);
    CHECK(r.strategies[0].iteration_s > 0);
    REQUIRE(r.strategies[1].refusal);
    // One replay of it (its largest sample, whose spacing showed the drift), none of the next round.
    CHECK(r.strategies[1].refusal->replays == 1);
    CHECK(r.strategies[1].refusal->why.find("'megatron': its steady state drifts (its samples of 8, 9 and 10 "
                                            "micro-batches are not collinear), and its largest sample a pipeline "
                                            "period apart (") != std::string::npos);
    CHECK(r.strategies[1].iteration_s == 0);
  }
}

TEST_CASE("--max-ops with --every-micro-batch: the refusal names it as a way past") {
  const Run r = run_cli("run -q -s megatron --fidelity analytic " + kSrc +
                        "/tests/data/scenarios/bad/too-many-ops.yaml --every-micro-batch");
  CHECK(r.status == 2);
  CHECK(r.output.find("refused 'megatron': its replay of all 1000000 micro-batches (--every-micro-batch) would hold "
                      "about ") != std::string::npos);
  CHECK(r.output.find("drop --every-micro-batch (the steady state replays only a few)") != std::string::npos);
}

TEST_CASE("format_ops rounds to the nearest unit shown and moves up where that unit would read 1000") {
  CHECK(format_ops(412) == "412");
  CHECK(format_ops(999) == "999");
  CHECK(format_ops(1'000) == "1 k");
  CHECK(format_ops(38'400) == "38 k");  // nearest, not up
  CHECK(format_ops(38'500) == "39 k");
  CHECK(format_ops(999'499) == "999 k");
  CHECK(format_ops(999'500) == "1.0 M");  // not "1000 k"
  CHECK(format_ops(9'200'000) == "9.2 M");
  CHECK(format_ops(999'949'999) == "999.9 M");
  CHECK(format_ops(999'950'000) == "1.0 G");  // not "1000.0 M"
  CHECK(format_ops(36'009'472) == "36.0 M");
}

TEST_CASE("--max-ops: a probe stopped past 8 times the limit says that limit, and the ops it projected") {
  Scenario sc = load_scenario(kSrc + "/scenarios/gpt3-175b-h100-tp8.yaml");
  SimulateOptions opt;
  // The probe's workload (13,654 ops at 4 micro-batches) is within the limit (past it, every
  // strategy is refused from its projection before the probe is built); 64 chunks per site of
  // the partition pass are not, by far.
  opt.strategies = {"megatron", "megatron+workload-partition:64"};
  opt.fidelity = Fidelity::Analytic;
  opt.max_ops = 14000;
  const RunResult r = simulate(sc, opt);
  REQUIRE(r.strategies.size() == 2);
  const auto& refused = r.strategies[1].refusal;
  REQUIRE(refused);
  CAPTURE(refused->why);
  CHECK(refused->why.find("'megatron+workload-partition:64': even its probe (one rank per pipeline stage, ") == 0);
  CHECK(refused->why.find("was stopped past 8 times --max-ops (14000), where the probe's passes stop: its pass "
                          "'workload-partition'") != std::string::npos);
  // Not the probe's own limit as if it were the user's.
  CHECK(refused->why.find("the limit is 112000") == std::string::npos);
  CHECK(refused->ops > 112000);
  CHECK(refused->why.find("raise --max-ops to more than " + std::to_string(refused->ops)) != std::string::npos);
}

TEST_CASE("--max-ops: the workload projected from four small builds equals the workload built") {
  const CostModel cost(device_spec("a100-sxm4-80gb"), load_profile(default_profile_path("a100-sxm4-80gb")));
  ModelConfig m = model_preset("gpt3-175b");
  for (const int pp : {1, 4, 8})
    for (const int layers_per_stage : {1, 2, 3, 12})
      for (const PipelineSchedule ps : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe})
        for (const Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full})
          for (const int zero : {0, 1, 3}) {
            m.layers = layers_per_stage * pp;
            Parallelism p;
            p.tp = 8;
            p.pp = pp;
            p.dp = 4;
            p.sp = zero == 1;
            p.pipeline_schedule = ps;
            p.recompute = rc;
            p.zero_stage = zero;
            p.overlap_grad_reduce = zero != 3;
            const OpLine line = projected_workload(m, p, cost);
            for (const int mb : {1, 2, 3, 7, 2 * pp + 1}) {
              CAPTURE(pp);
              CAPTURE(layers_per_stage);
              CAPTURE(static_cast<int>(ps));
              CAPTURE(static_cast<int>(rc));
              CAPTURE(zero);
              CAPTURE(mb);
              p.global_batch = mb * p.dp * p.micro_batch;
              CHECK(line.at(mb) == count_ops(build_iteration(m, p, cost, Folding::Representatives)));
            }
          }
}

TEST_CASE("--max-ops: a workload too large to probe is refused from its projection, before any build") {
  // 10^6 layers in 32 stages: the probe alone held about 768 M ops, and building it took 24 GB
  // before any strategy could be refused.
  const std::string scenario = temp_path(".yaml");
  {
    std::ofstream f(scenario);
    f << "name: huge-layers\nmodel: {layers: 1000000, hidden: 64, heads: 1, seq_len: 16, vocab: 64}\n"
         "topology: " << kSrc << "/topologies/dgx-a100-superpod.yaml\ntopology_overrides: {node.count: 4}\n"
         "parallelism: {tp: 1, pp: 32, dp: 1, global_batch: 32}\nstrategies: [megatron, centauri]\n";
  }
  const Run r = run_cli("run -q " + scenario + " --fidelity analytic");
  CHECK(r.status == 2);
  CHECK(r.output.find("refused 'megatron': its workload alone, at 32 micro-batch(es) (fewer than its replays hold; "
                      "projected from workloads of one and two layers per stage) would hold about 768004290 ops "
                      "(768.0 M) on 32 simulated rank(s), estimated before building it; the limit is 20000000") !=
        std::string::npos);
  CHECK(r.output.find("refused 'centauri': its workload alone") != std::string::npos);
  CHECK(r.output.find("--max-ops: 2 of 2 strategies refused") != std::string::npos);
  std::filesystem::remove(scenario);
}
