// Strict reading of JSON inputs (profiles, raw measurements) with errors that name the file,
// the JSON path of the key (e.g. "gemm.tables[0].m[3]") and what was expected. Internal to
// calibrate/.
#pragma once

#include "sim/error.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace overlapsim::calib {

using nlohmann::json;

/// How a JSON value reads in an error message: numbers and strings as written, others by kind.
std::string describe(const json& v);

/// "a, b, c"
std::string join(const std::vector<const char*>& keys);

/// base[i]
std::string idx(const std::string& base, std::size_t i);

/// Reads and parses a JSON file. Throws InputError: unreadable file (naming `what`), or a
/// syntax error with its line and column.
json parse_json_file(const std::string& path, const std::string& what);

class JsonReader {
 public:
  explicit JsonReader(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  /// The value at obj[key] (JSON path `where`), or an error saying what was expected.
  const json& get(const json& obj, const std::string& where, const char* key, const std::string& expected) const;
  /// Checks that `s` (at path `where`) is an object; when strict, that all its keys are in `keys`.
  void check_object(const json& s, const std::string& where, const std::vector<const char*>& keys, bool strict) const;
  /// root[name], an object (see check_object).
  const json& section(const json& root, const char* name, const std::vector<const char*>& keys, bool strict) const;

  std::string string(const json& obj, const std::string& sec, const char* key) const;
  /// A number in [lo, hi] (or (lo, hi] when lo_open).
  double number(const json& obj, const std::string& sec, const char* key, double lo, double hi, bool lo_open,
                const std::string& expected) const;
  double number_value(const json& v, const std::string& where, double lo, double hi, bool lo_open,
                      const std::string& expected) const;
  double efficiency(const json& obj, const std::string& sec, const char* key) const;  ///< (0, 1]
  double seconds(const json& obj, const std::string& sec, const char* key) const;     ///< in [0, 3600]
  double positive(const json& obj, const std::string& sec, const char* key, const char* what) const;  ///< > 0
  long long integer(const json& obj, const std::string& sec, const char* key, long long lo, long long hi) const;
  bool boolean(const json& obj, const std::string& sec, const char* key) const;
  const json& array(const json& obj, const std::string& sec, const char* key, const std::string& of) const;
  /// A strictly ascending, non-empty array of positive integers (a table axis).
  std::vector<int64_t> axis(const json& obj, const std::string& sec, const char* key) const;

 private:
  std::string path_;
};

}  // namespace overlapsim::calib
