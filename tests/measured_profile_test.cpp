// The shipped measured H200 profile (calibrate/profiles/h200-measured.json): it is exactly the
// fit of the raw measurements shipped beside it, and the cost model gives back what was measured.
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include "calibrate/fit.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_measurements.hpp"
#include "models/cost_model.hpp"
#include "models/device_catalog.hpp"

#include <cmath>
#include <string>

using namespace overlapsim;
using overlapsim::testing::approx;
using overlapsim::testing::slurp;

namespace {
const std::string kProfiles = std::string(OVERLAPSIM_SOURCE_DIR) + "/calibrate/profiles/";
}

TEST_CASE("measured H200 profile: refitting its raw measurements writes the shipped file byte for byte") {
  const RawMeasurements raw = load_raw_measurements(kProfiles + "h200-measured.raw.json");
  FitResult fit = fit_profile(raw);
  // The fit records the raw file as it was named; the shipped profile names it from the source tree.
  fit.profile.provenance_extra["raw"] = "calibrate/profiles/h200-measured.raw.json";
  CHECK(profile_to_json(fit.profile) == slurp(kProfiles + "h200-measured.json"));
}

TEST_CASE("measured H200 profile: provenance and the figures of the run") {
  const RawMeasurements raw = load_raw_measurements(kProfiles + "h200-measured.raw.json");
  CHECK(raw.gpu == "NVIDIA H200");
  CHECK(raw.sm_count == 132);
  CHECK(raw.gpu_count == 1);
  CHECK_FALSE(raw.quick);
  CHECK(raw.gemm.size() == 3 * (512 + 16));  // bf16, fp16, fp8: the full grid and the key shapes

  const Profile p = load_profile(kProfiles + "h200-measured.json");
  CHECK(p.device == "h200-sxm-141gb");
  CHECK(p.provenance_kind == "measured");
  CHECK(p.provenance_extra.at("gpu") == "NVIDIA H200");
  CHECK(p.provenance_extra.at("driver") == "580.159.04");
  CHECK(p.collectives.empty());  // one GPU: no collective was measured, the datasheet's network is kept
  REQUIRE(p.gemm_table("bf16") != nullptr);
  REQUIRE(p.gemm_table("fp8") != nullptr);
  CHECK(p.gemm_key_shapes.size() == 3 * 16);
  CHECK(p.launch_overhead_s == approx(4.800749e-6));
  CHECK(p.interference.size() == 6);
  CHECK(p.sm_interference > 1.0);  // beside a copy kernel, a GEMM loses more than the copy's SMs
}

TEST_CASE("measured H200 profile: at a grid point the cost model's GEMM time is the measured median") {
  const RawMeasurements raw = load_raw_measurements(kProfiles + "h200-measured.raw.json");
  const Profile p = load_profile(kProfiles + "h200-measured.json");
  const DeviceSpec& dev = device_spec(p.device);
  const CostModel cost(dev, p);
  int checked = 0;
  for (const RawGemmPoint& g : raw.gemm) {
    if (!g.label.empty() || g.dtype != "bf16") continue;
    if (g.m < 2048 || g.n < 2048 || g.k < 2048) continue;  // compute-bound: no memory floor
    const double t = cost.gemm_time_s(g.m, g.n, g.k, DType::BF16);
    CHECK(t == approx(g.time.median + p.kernel_fixed_overhead_s).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked == 4 * 5 * 5);  // M 2048..16384, N and K 2048..32768
}

TEST_CASE("run: a measured profile through --set calibration, the GPU through topology_overrides.node.gpus.model") {
  using overlapsim::testing::run_cli;
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  const std::string scenario = src + "/tests/data/scenarios/small.yaml";  // DGX A100
  const std::string h200 = " --set topology_overrides.node.gpus.model=h200-sxm-141gb";
  const std::string measured = " --set calibration=" + kProfiles + "h200-measured.json";

  const auto run = [&](const std::string& args) { return run_cli("run -q --fidelity analytic " + scenario + args); };
  const auto iteration_s = [](const std::string& out) {  // megatron's iteration time, seconds
    const size_t at = out.find("\nmegatron ");
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(at + 10));
  };
  const auto sheet = run(h200);
  REQUIRE(sheet.status == 0);
  CHECK(sheet.output.find("calibrate/profiles/h200-sxm-141gb.json") != std::string::npos);
  const auto meas = run(h200 + measured);
  REQUIRE(meas.status == 0);
  CHECK(meas.output.find("h200-measured.json (measured: overlapsim calibrate: NVIDIA H200") != std::string::npos);
  CHECK(iteration_s(meas.output) != iteration_s(sheet.output));  // the profile is used, not only named

  SUBCASE("the profile must be of the topology's GPU") {
    const auto r = run(measured);
    CHECK(r.status == 2);
    CHECK(r.output.find("profile is for 'h200-sxm-141gb' but the topology's GPUs are 'a100-sxm4-80gb'") !=
          std::string::npos);
  }
  SUBCASE("a missing profile, an empty path, an unknown GPU") {
    auto r = run(" --set calibration=" + src + "/no-such-profile.json");
    CHECK(r.status == 2);
    CHECK(r.output.find("calibration: expected a readable calibration profile, found no file at " + src +
                        "/no-such-profile.json") != std::string::npos);
    r = run(" --set calibration=");
    CHECK(r.status == 2);
    CHECK(r.output.find("expected the path of a calibration profile (JSON), found ''") != std::string::npos);
    r = run(" --set topology_overrides.node.gpus.model=h999");
    CHECK(r.status == 2);
    CHECK(r.output.find("node.gpus.model: unknown GPU model 'h999' (from the topology override node.gpus.model)") !=
          std::string::npos);
  }
}

TEST_CASE("attention efficiency from measured points: bilinear in log2 (batch·heads) and log2 seq, nearest head_dim") {
  // A 2 × 2 grid at head_dim 128 and one point at head_dim 64.
  const std::vector<AttentionPoint> pts = {
      {1, 8, 1024, 128, 1e-4, 0.2}, {1, 8, 4096, 128, 1e-4, 0.4},  {1, 32, 1024, 128, 1e-4, 0.3},
      {1, 32, 4096, 128, 1e-4, 0.5}, {1, 8, 1024, 64, 1e-4, 0.1}};
  CHECK(attention_efficiency_at(pts, 8, 1024, 128) == approx(0.2));     // a measured point
  CHECK(attention_efficiency_at(pts, 16, 1024, 128) == approx(0.25));   // halfway in log2 heads
  CHECK(attention_efficiency_at(pts, 16, 2048, 128) == approx(0.35));   // the centre of the cell
  CHECK(attention_efficiency_at(pts, 2, 16, 128) == approx(0.2));      // clamped to (8, 1024)
  CHECK(attention_efficiency_at(pts, 4096, 1 << 20, 256) == approx(0.5));  // clamped, nearest dim 128
  CHECK(attention_efficiency_at(pts, 1, 1, 64) == approx(0.1));         // head_dim 64: its one point
  CHECK(attention_efficiency_at(pts, 1, 1, 90) == approx(0.1));         // 90: nearer 64 in log2 (6.49)
  CHECK(attention_efficiency_at(pts, 1, 1, 96) == approx(0.2));         // 96: nearer 128 (6.58)
  CHECK(attention_efficiency_at({}, 8, 1024, 128) == 0);                // none: the caller keeps its own
  // Not a full grid (a cell missing, or two points in one cell): 0, the profile's single value.
  CHECK(attention_efficiency_at({pts[0], pts[1], pts[2]}, 8, 1024, 128) == 0);
  CHECK(attention_efficiency_at({pts[0], {2, 4, 1024, 128, 1e-4, 0.9}}, 8, 1024, 128) == 0);
}

TEST_CASE("measured H200 profile: attention runs at the measured efficiency of its shape") {
  const Profile p = load_profile(kProfiles + "h200-measured.json");
  const CostModel cost(device_spec(p.device), p);
  // GPT-3 175B under TP 8: 96 / 8 = 12 heads, seq 2048, head_dim 128, micro-batch 1; between the
  // measured 8 and 16 heads at seq 2048, far above the 24 shapes' median (the profile's single value).
  const double e = attention_efficiency_at(p.attention_points, 12, 2048, 128);
  double e8 = 0, e16 = 0;
  for (const AttentionPoint& a : p.attention_points)
    if (a.seq == 2048 && a.head_dim == 128 && a.batch == 1) {
      if (a.heads == 8) e8 = a.efficiency;
      if (a.heads == 16) e16 = a.efficiency;
    }
  REQUIRE(e8 > 0);
  REQUIRE(e16 > 0);
  CHECK(e == approx(e8 + (e16 - e8) * (std::log2(12.0) - 3)));
  CHECK(e > p.attention_efficiency);
  const DeviceSpec& dev = device_spec(p.device);
  const double scores = 12.0 * 2048 * 2048;
  const double expect = 4 * scores * 128 / (dev.peak_flops(DType::BF16) * e) +
                        2 * scores * 2 / (dev.hbm_bandwidth_Bps * p.memory_efficiency) + p.kernel_fixed_overhead_s;
  CHECK(cost.attention_time_s(1, 12, 2048, 128, DType::BF16, false) == approx(expect).epsilon(1e-12));
}
