// Strict JSON reading with located errors (json_reader.hpp).
#include "calibrate/json_reader.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace overlapsim::calib {

namespace {

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

std::string join(const std::vector<const char*>& keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string idx(const std::string& base, std::size_t i) { return base + "[" + std::to_string(i) + "]"; }

json parse_json_file(const std::string& path, const std::string& what) {
  require_readable_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "", "expected a readable " + what + " file, found none");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "expected " + what + ", found " + (text.empty() ? "an empty file" : "only blanks"));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(locate(path, text, e.byte), "", std::string("expected valid JSON, found a syntax error (") + e.what() + ")");
  } catch (const json::out_of_range& e) {
    // nlohmann's parser reports a number beyond a double (1e400) as out_of_range 406, no position.
    throw InputError(SourceLocation{path, 0, 0}, "",
                     std::string("expected numbers a double can hold, found one beyond (") + e.what() + ")");
  }
}

void JsonReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(SourceLocation{path_, 0, 0}, key, message);
}

const json& JsonReader::get(const json& obj, const std::string& where, const char* key, const std::string& expected) const {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, "expected " + expected + ", found no such key");
  return *it;
}

void JsonReader::check_object(const json& s, const std::string& where, const std::vector<const char*>& keys,
                              bool strict) const {
  if (!s.is_object()) fail(where, "expected an object with keys " + join(keys) + ", found " + describe(s));
  if (!strict) return;
  for (auto it = s.begin(); it != s.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) fail(where + "." + it.key(), "expected one of the keys " + join(keys) + ", found an unknown key");
  }
}

const json& JsonReader::section(const json& root, const char* name, const std::vector<const char*>& keys,
                                bool strict) const {
  const json& s = get(root, name, name, "an object with keys " + join(keys));
  check_object(s, name, keys, strict);
  return s;
}

std::string JsonReader::string(const json& obj, const std::string& sec, const char* key) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  const json& v = get(obj, where, key, "a non-empty string");
  if (!v.is_string() || v.get<std::string>().empty()) fail(where, "expected a non-empty string, found " + describe(v));
  return v.get<std::string>();
}

double JsonReader::number(const json& obj, const std::string& sec, const char* key, double lo, double hi, bool lo_open,
                          const std::string& expected) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  return number_value(get(obj, where, key, expected), where, lo, hi, lo_open, expected);
}

double JsonReader::number_value(const json& v, const std::string& where, double lo, double hi, bool lo_open,
                                const std::string& expected) const {
  if (!v.is_number()) fail(where, "expected " + expected + ", found " + describe(v));
  const double x = v.get<double>();
  const bool ok = std::isfinite(x) && (lo_open ? x > lo : x >= lo) && x <= hi;
  if (!ok) fail(where, "expected " + expected + ", found " + describe(v));
  return x;
}

double JsonReader::efficiency(const json& obj, const std::string& sec, const char* key) const {
  return number(obj, sec, key, 0.0, 1.0, true, "a number in (0, 1]");
}

double JsonReader::seconds(const json& obj, const std::string& sec, const char* key) const {
  // More than an hour is a typo in an exponent, as for times with units (sim/units.hpp).
  return number(obj, sec, key, 0.0, 3600.0, false, "a number of seconds in [0, 3600]");
}

double JsonReader::positive(const json& obj, const std::string& sec, const char* key, const char* what) const {
  return number(obj, sec, key, 0.0, std::numeric_limits<double>::max(), true, std::string(what) + " > 0");
}

long long JsonReader::integer(const json& obj, const std::string& sec, const char* key, long long lo, long long hi) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  const std::string expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  const json& v = get(obj, where, key, expected);
  if (!v.is_number_integer()) fail(where, "expected " + expected + ", found " + describe(v));
  const auto x = v.get<long long>();
  if (x < lo || x > hi) fail(where, "expected " + expected + ", found " + describe(v));
  return x;
}

bool JsonReader::boolean(const json& obj, const std::string& sec, const char* key) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  const json& v = get(obj, where, key, "true or false");
  if (!v.is_boolean()) fail(where, "expected true or false, found " + describe(v));
  return v.get<bool>();
}

const json& JsonReader::array(const json& obj, const std::string& sec, const char* key, const std::string& of) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  const json& v = get(obj, where, key, "an array of " + of);
  if (!v.is_array()) fail(where, "expected an array of " + of + ", found " + describe(v));
  return v;
}

std::vector<int64_t> JsonReader::axis(const json& obj, const std::string& sec, const char* key) const {
  const std::string where = sec.empty() ? std::string(key) : sec + "." + key;
  const json& a = array(obj, sec, key, "ascending positive integers");
  if (a.empty()) fail(where, "expected a non-empty array of ascending positive integers, found an empty array");
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string at = idx(where, i);
    if (!a[i].is_number_integer() || a[i].get<long long>() < 1) fail(at, "expected a positive integer, found " + describe(a[i]));
    const int64_t x = a[i].get<int64_t>();
    if (!out.empty() && x <= out.back())
      fail(at, "expected a value above the previous one (" + std::to_string(out.back()) + "), found " + describe(a[i]));
    out.push_back(x);
  }
  return out;
}

}  // namespace overlapsim::calib
