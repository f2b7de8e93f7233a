// Strict reading of the harness's raw measurements (format in raw_measurements.hpp and
// calibrate/README.md). Unknown keys are allowed (a newer harness may record more); missing or
// malformed ones are errors naming the JSON path.
#include "calibrate/raw_measurements.hpp"

#include "calibrate/json_reader.hpp"

#include <limits>

namespace overlapsim {

namespace {

using calib::describe;
using calib::idx;
using calib::json;
using Reader = calib::JsonReader;

constexpr double kMax = std::numeric_limits<double>::max();

RawTiming timing(const Reader& r, const json& obj, const std::string& sec, const char* key) {
  const std::string where = sec + "." + key;
  const json& t = r.get(obj, where, key, "a timing summary {median, min, max, p10, p90, spread, n}");
  r.check_object(t, where, {"median", "min", "max", "p10", "p90", "mean", "spread", "n", "inner"}, false);
  RawTiming out;
  out.median = r.positive(t, where, "median", "a time in seconds");
  out.min = r.positive(t, where, "min", "a time in seconds");
  out.max = r.positive(t, where, "max", "a time in seconds");
  out.p10 = r.positive(t, where, "p10", "a time in seconds");
  out.p90 = r.positive(t, where, "p90", "a time in seconds");
  out.spread = r.number(t, where, "spread", 0.0, kMax, false, "a number >= 0");
  out.n = static_cast<int>(r.integer(t, where, "n", 1, 1 << 30));
  if (out.min > out.median || out.median > out.max)
    r.fail(where, "expected min <= median <= max, found " + std::to_string(out.min) + ", " + std::to_string(out.median) +
                      ", " + std::to_string(out.max));
  return out;
}

/// The section's "skipped" reason, or "" when it holds measurements.
std::string skipped(const Reader& r, const json& root, const char* name) {
  const json& s = r.get(root, name, name, "an object (measurements, or {\"skipped\": reason})");
  if (!s.is_object()) r.fail(name, "expected an object, found " + describe(s));
  if (s.contains("skipped")) return r.string(s, name, "skipped");
  return "";
}

std::string opt_string(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

void read_gemm(const Reader& r, const json& g, RawMeasurements& raw) {
  const json& axes = r.get(g, "gemm.axes", "axes", "an object {m, n, k}");
  r.check_object(axes, "gemm.axes", {"m", "n", "k"}, true);
  raw.gemm_m = r.axis(axes, "gemm.axes", "m");
  raw.gemm_n = r.axis(axes, "gemm.axes", "n");
  raw.gemm_k = r.axis(axes, "gemm.axes", "k");
  const json& pts = r.array(g, "gemm", "points", "GEMM measurements");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("gemm.points", i);
    r.check_object(pts[i], sec, {}, false);
    RawGemmPoint p;
    p.dtype = r.string(pts[i], sec, "dtype");
    if (p.dtype != "bf16" && p.dtype != "fp16" && p.dtype != "fp8")
      r.fail(sec + ".dtype", "expected \"bf16\", \"fp16\" or \"fp8\", found \"" + p.dtype + "\"");
    p.m = r.integer(pts[i], sec, "m", 1, 1LL << 40);
    p.n = r.integer(pts[i], sec, "n", 1, 1LL << 40);
    p.k = r.integer(pts[i], sec, "k", 1, 1LL << 40);
    p.label = opt_string(pts[i], "label");
    p.time = timing(r, pts[i], sec, "time_s");
    if (pts[i].contains("sm_clock_mhz"))
      p.sm_clock_mhz = static_cast<int>(r.integer(pts[i], sec, "sm_clock_mhz", 1, 100000));
    raw.gemm.push_back(p);
  }
}

void read_memory(const Reader& r, const json& m, RawMeasurements& raw) {
  const json& pts = r.array(m, "memory", "points", "memory-bound kernel measurements");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("memory.points", i);
    r.check_object(pts[i], sec, {}, false);
    RawMemoryPoint p;
    p.kernel = r.string(pts[i], sec, "kernel");
    p.elements = r.integer(pts[i], sec, "elements", 1, 1LL << 50);
    p.bytes = r.positive(pts[i], sec, "bytes", "a byte count");
    p.time = timing(r, pts[i], sec, "time_s");
    raw.memory.push_back(p);
  }
}

void read_attention(const Reader& r, const json& a, RawMeasurements& raw) {
  const json& pts = r.array(a, "attention", "points", "attention measurements");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("attention.points", i);
    r.check_object(pts[i], sec, {}, false);
    RawAttentionPoint p;
    p.batch = r.integer(pts[i], sec, "batch", 1, 1LL << 30);
    p.heads = r.integer(pts[i], sec, "heads", 1, 1LL << 30);
    p.seq = r.integer(pts[i], sec, "seq", 1, 1LL << 30);
    p.head_dim = r.integer(pts[i], sec, "head_dim", 1, 1LL << 30);
    p.flops = r.positive(pts[i], sec, "flops", "a FLOP count");
    p.time = timing(r, pts[i], sec, "time_s");
    p.qk_s = r.positive(pts[i], sec, "qk_s", "a time in seconds");
    p.softmax_s = r.positive(pts[i], sec, "softmax_s", "a time in seconds");
    p.pv_s = r.positive(pts[i], sec, "pv_s", "a time in seconds");
    raw.attention.push_back(p);
  }
}

void read_collectives(const Reader& r, const json& c, RawMeasurements& raw) {
  raw.collective_algorithm = r.string(c, "collectives", "algorithm");
  raw.collective_protocol = r.string(c, "collectives", "protocol");
  raw.collective_nodes = static_cast<int>(r.integer(c, "collectives", "nodes", 1, 1 << 20));
  const json& groups = r.array(c, "collectives", "groups", "collective measurements");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string sec = idx("collectives.groups", i);
    r.check_object(groups[i], sec, {}, false);
    RawCollectiveGroup g;
    g.collective = r.string(groups[i], sec, "collective");
    g.ranks = static_cast<int>(r.integer(groups[i], sec, "ranks", 2, 1 << 24));
    const json& pts = r.array(groups[i], sec, "points", "(size, time) measurements");
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const std::string ps = idx(sec + ".points", j);
      r.check_object(pts[j], ps, {}, false);
      RawCollectivePoint p;
      p.size_bytes = r.positive(pts[j], ps, "size_bytes", "a byte count");
      p.time = timing(r, pts[j], ps, "time_s");
      g.points.push_back(p);
    }
    raw.collectives.push_back(std::move(g));
  }
}

void read_interference(const Reader& r, const json& s, RawMeasurements& raw) {
  const json& g = r.get(s, "interference.gemm", "gemm", "an object {dtype, m, n, k}");
  r.check_object(g, "interference.gemm", {}, false);
  raw.interference_gemm = r.string(g, "interference.gemm", "dtype") + " " +
                          std::to_string(r.integer(g, "interference.gemm", "m", 1, 1LL << 40)) + "x" +
                          std::to_string(r.integer(g, "interference.gemm", "n", 1, 1LL << 40)) + "x" +
                          std::to_string(r.integer(g, "interference.gemm", "k", 1, 1LL << 40));
  raw.interference_alone = timing(r, s, "interference", "alone_s");
  const json& pts = r.array(s, "interference", "points", "interference measurements");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const std::string sec = idx("interference.points", i);
    r.check_object(pts[i], sec, {}, false);
    RawInterferencePoint p;
    p.companion = r.string(pts[i], sec, "companion");
    p.num_sm = static_cast<int>(r.integer(pts[i], sec, "num_sm", 1, 1 << 16));
    p.gemm = timing(r, pts[i], sec, "gemm_s");
    p.companion_bytes_per_s = r.number(pts[i], sec, "companion_bytes_per_s", 0.0, kMax, false, "a bandwidth >= 0");
    raw.interference.push_back(p);
  }
}

}  // namespace

RawMeasurements load_raw_measurements(const std::string& path) {
  const json root = calib::parse_json_file(path, "raw measurements (JSON)");
  Reader r(path);
  if (!root.is_object()) r.fail("", "expected a JSON object at the top level, found " + describe(root));
  const json& schema = r.get(root, "schema", "schema", "\"overlapsim-raw-measurements\"");
  if (!schema.is_string() || schema.get<std::string>() != "overlapsim-raw-measurements")
    r.fail("schema", "expected \"overlapsim-raw-measurements\", found " + describe(schema));
  const json& version = r.get(root, "version", "version", "1");
  if (!version.is_number_integer() || version.get<long long>() != 1) r.fail("version", "expected 1, found " + describe(version));

  RawMeasurements raw;
  raw.path = path;
  const json& h = r.section(root, "harness", {}, false);
  raw.command = r.string(h, "harness", "command");
  raw.quick = r.boolean(h, "harness", "quick");
  const json& p = r.section(root, "provenance", {}, false);
  raw.host = r.string(p, "provenance", "host");
  raw.date = r.string(p, "provenance", "date");
  raw.gpu = r.string(p, "provenance", "gpu");
  raw.driver = r.string(p, "provenance", "driver");
  raw.cuda_driver = r.string(p, "provenance", "cuda_driver");
  raw.cuda_runtime = r.string(p, "provenance", "cuda_runtime");
  raw.cublaslt = r.string(p, "provenance", "cublaslt");
  raw.nccl = r.string(p, "provenance", "nccl");
  raw.compute_capability = r.string(p, "provenance", "compute_capability");
  raw.sm_count = static_cast<int>(r.integer(p, "provenance", "sm_count", 1, 1 << 16));
  raw.gpu_count = static_cast<int>(r.integer(p, "provenance", "gpu_count", 1, 1 << 16));

  // Sections absent from the file (a run with --only) read as skipped.
  auto section = [&](const char* name, std::string* why, auto read) {
    if (!root.contains(name)) {
      *why = "not measured in this run";
      return;
    }
    *why = skipped(r, root, name);
    if (why->empty()) read(r, root[name], raw);
  };
  section("gemm", &raw.gemm_skipped, read_gemm);
  section("memory", &raw.memory_skipped, read_memory);
  section("attention", &raw.attention_skipped, read_attention);
  section("launch", &raw.launch_skipped, [](const Reader& rr, const json& l, RawMeasurements& out) {
    out.host_launch = timing(rr, l, "launch", "host_launch_s");
    out.gpu_kernel = timing(rr, l, "launch", "gpu_kernel_s");
    out.sync_roundtrip = timing(rr, l, "launch", "sync_roundtrip_s");
  });
  section("collectives", &raw.collectives_skipped, read_collectives);
  section("interference", &raw.interference_skipped, read_interference);
  if (root.contains("notes")) {
    const json& notes = r.array(root, "", "notes", "strings");
    for (std::size_t i = 0; i < notes.size(); ++i) {
      if (!notes[i].is_string()) r.fail(idx("notes", i), "expected a string, found " + describe(notes[i]));
      raw.notes.push_back(notes[i].get<std::string>());
    }
  }
  return raw;
}

}  // namespace overlapsim
