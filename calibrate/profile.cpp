// Strict loading of calibration profiles (format in profile.hpp).
//
// Every error is an InputError naming the file, the JSON path of the offending key (e.g.
// "gemm.max_efficiency") and what was expected. Required keys are all those listed in
// profile.hpp; inside the known sections (provenance excepted, whose extra keys record where a
// measurement came from) an unknown key is an error, so that a typo cannot silently fall back to
// a default. Unknown top-level sections are ignored: they belong to other readers (e.g. measured
// collective tables) of a version-1 profile.
#include "calibrate/profile.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

namespace overlapsim {

namespace {

using nlohmann::json;

constexpr const char* kSchema = "overlapsim-profile";
constexpr int kVersion = 1;

/// How a JSON value reads in an error message: numbers and strings as written, others by kind.
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    default: break;
  }
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string join(std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(SourceLocation{path_, 0, 0}, key, message);
  }

  /// The value at obj[key] (JSON path `where`), or an error saying what was expected.
  const json& get(const json& obj, const std::string& where, const char* key,
                  const std::string& expected) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, "expected " + expected + ", found no such key");
    return *it;
  }

  const json& section(const json& root, const char* name,
                      std::initializer_list<const char*> keys, bool strict) const {
    const json& s = get(root, name, name, "an object with keys " + join(keys));
    if (!s.is_object()) fail(name, "expected an object with keys " + join(keys) + ", found " + describe(s));
    if (strict) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        bool known = false;
        for (const char* k : keys) known = known || it.key() == k;
        if (!known)
          fail(std::string(name) + "." + it.key(),
               "expected one of the keys " + join(keys) + ", found an unknown key");
      }
    }
    return s;
  }

  std::string string(const json& obj, const std::string& sec, const char* key) const {
    const std::string where = sec + "." + key;
    const json& v = get(obj, where, key, "a non-empty string");
    if (!v.is_string() || v.get<std::string>().empty())
      fail(where, "expected a non-empty string, found " + describe(v));
    return v.get<std::string>();
  }

  double efficiency(const json& obj, const std::string& sec, const char* key) const {
    const std::string where = sec + "." + key;
    const char* expected = "a number in (0, 1]";
    const json& v = get(obj, where, key, expected);
    if (!v.is_number()) fail(where, std::string("expected ") + expected + ", found " + describe(v));
    const double x = v.get<double>();
    if (!(x > 0.0 && x <= 1.0)) fail(where, std::string("expected ") + expected + ", found " + describe(v));
    return x;
  }

  double seconds(const json& obj, const std::string& sec, const char* key) const {
    const std::string where = sec + "." + key;
    const char* expected = "a number of seconds >= 0";
    const json& v = get(obj, where, key, expected);
    if (!v.is_number()) fail(where, std::string("expected ") + expected + ", found " + describe(v));
    const double x = v.get<double>();
    if (!(x >= 0.0 && std::isfinite(x)))
      fail(where, std::string("expected ") + expected + ", found " + describe(v));
    return x;
  }

  int tile(const json& obj, const std::string& sec, const char* key) const {
    const std::string where = sec + "." + key;
    const char* expected = "an integer in [1, 4096]";  // 4096: a sanity bound, tiles are <= 256
    const json& v = get(obj, where, key, expected);
    if (!v.is_number_integer()) fail(where, std::string("expected ") + expected + ", found " + describe(v));
    const auto x = v.get<long long>();
    if (x < 1 || x > 4096) fail(where, std::string("expected ") + expected + ", found " + describe(v));
    return static_cast<int>(x);
  }

 private:
  std::string path_;
};

/// 1-based line and column of a byte offset in `text`.
SourceLocation locate(const std::string& path, const std::string& text, std::size_t byte) {
  SourceLocation where{path, 1, 1};
  for (std::size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
    if (text[i] == '\n') {
      ++where.line;
      where.column = 1;
    } else {
      ++where.column;
    }
  }
  return where;
}

}  // namespace

Profile load_profile(const std::string& path) {
  require_readable_file(path, "a calibration profile (JSON)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "", "expected a readable profile file, found none");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(locate(path, text, e.byte), "", std::string("expected valid JSON, found a syntax error (") + e.what() + ")");
  }

  Reader r(path);
  if (!root.is_object()) r.fail("", "expected a JSON object at the top level, found " + describe(root));

  Profile p;
  p.path = path;

  const json& schema = r.get(root, "schema", "schema", std::string("\"") + kSchema + "\"");
  if (!schema.is_string() || schema.get<std::string>() != kSchema)
    r.fail("schema", std::string("expected \"") + kSchema + "\", found " + describe(schema));

  const json& version = r.get(root, "version", "version", "1");
  if (!version.is_number_integer() || version.get<long long>() != kVersion)
    r.fail("version", "expected " + std::to_string(kVersion) + ", found " + describe(version));

  const json& device = r.get(root, "device", "device", "a device model");
  if (!device.is_string() || !is_known_device(device.get<std::string>())) {
    std::string known;
    for (const auto& m : device_models()) known += (known.empty() ? "" : ", ") + m;
    r.fail("device", "expected a known device model (" + known + "), found " + describe(device));
  }
  p.device = device.get<std::string>();

  // provenance: kind and source required, date optional; other keys (gpu, driver, ...) allowed.
  const json& prov = r.section(root, "provenance", {"kind", "source", "date"}, /*strict=*/false);
  p.provenance_kind = r.string(prov, "provenance", "kind");
  if (p.provenance_kind != "datasheet" && p.provenance_kind != "measured" && p.provenance_kind != "imported")
    r.fail("provenance.kind", "expected \"datasheet\", \"measured\" or \"imported\", found " + describe(prov["kind"]));
  p.provenance_source = r.string(prov, "provenance", "source");
  if (prov.contains("date")) r.string(prov, "provenance", "date");

  const json& gemm = r.section(root, "gemm", {"max_efficiency", "tile_m", "tile_n", "source"}, true);
  p.gemm_max_efficiency = r.efficiency(gemm, "gemm", "max_efficiency");
  p.gemm_tile_m = r.tile(gemm, "gemm", "tile_m");
  p.gemm_tile_n = r.tile(gemm, "gemm", "tile_n");
  r.string(gemm, "gemm", "source");

  const json& memory = r.section(root, "memory", {"efficiency", "source"}, true);
  p.memory_efficiency = r.efficiency(memory, "memory", "efficiency");
  r.string(memory, "memory", "source");

  const json& kernel = r.section(root, "kernel", {"launch_overhead_s", "fixed_overhead_s", "source"}, true);
  p.launch_overhead_s = r.seconds(kernel, "kernel", "launch_overhead_s");
  p.kernel_fixed_overhead_s = r.seconds(kernel, "kernel", "fixed_overhead_s");
  r.string(kernel, "kernel", "source");

  const json& network = r.section(
      root, "network", {"nvlink_efficiency", "network_efficiency", "pcie_efficiency", "source"}, true);
  p.nvlink_efficiency = r.efficiency(network, "network", "nvlink_efficiency");
  p.network_efficiency = r.efficiency(network, "network", "network_efficiency");
  p.pcie_efficiency = r.efficiency(network, "network", "pcie_efficiency");
  r.string(network, "network", "source");

  const json& attention = r.section(root, "attention", {"efficiency", "source"}, true);
  p.attention_efficiency = r.efficiency(attention, "attention", "efficiency");
  r.string(attention, "attention", "source");

  return p;
}

std::string default_profile_path(const std::string& device_model) {
  const std::filesystem::path file =
      std::filesystem::path(OVERLAPSIM_SOURCE_DIR) / "calibrate" / "profiles" / (device_model + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw InputError("expected a default calibration profile for device '" + device_model + "' at " +
                     file.string() + ", found no such file");
  return file.string();
}

}  // namespace overlapsim
