// YAML accessors that report file:line:column and the key of every problem (design §3).
//
// yaml-cpp's Mark is 0-based; SourceLocation is 1-based, 0 meaning "unknown". Scalars are read
// from their text, not through yaml-cpp's lenient conversions: "8.0" is not an integer, "yes"
// is not a boolean, "300" is not a bandwidth.
#include "sim/yaml_input.hpp"

#include "sim/units.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <vector>

namespace overlapsim {

namespace {

/// What a node is, for "found ..." in messages.
std::string describe(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  switch (node.Type()) {
    case YAML::NodeType::Null: return "an empty value";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "an undefined value";
  }
}

const std::string& scalar_or_fail(const YamlFile& f, const YAML::Node& value, const std::string& key,
                                  const char* expected) {
  if (!value.IsDefined() || !value.IsScalar())
    fail(f, value, key, std::string("expected ") + expected + ", found " + describe(value));
  return value.Scalar();
}

}  // namespace

YamlFile load_yaml_file(const std::string& path) {
  YamlFile f;
  f.path = path;
  require_readable_file(path, "a YAML");
  try {
    // Every document, so that a second one is refused, not silently left unread.
    const std::vector<YAML::Node> docs = YAML::LoadAllFromFile(path);
    if (docs.size() > 1) {
      const YAML::Mark m = docs[1].Mark();
      throw InputError(SourceLocation{path, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1}, "",
                       "a second YAML document (after '---'); expected one document per file");
    }
    f.root = docs.empty() ? YAML::Node() : docs.front();
  } catch (const YAML::BadFile&) {
    throw InputError(SourceLocation{path, 0, 0}, "", "cannot open the file");
  } catch (const YAML::ParserException& e) {
    SourceLocation where{path, e.mark.is_null() ? 0 : e.mark.line + 1,
                         e.mark.is_null() ? 0 : e.mark.column + 1};
    throw InputError(where, "", "YAML syntax error: " + e.msg);
  }
  return f;
}

SourceLocation location_of(const YamlFile& f, const YAML::Node& node) {
  SourceLocation where{f.path, 0, 0};
  if (!node.IsDefined()) return where;  // also covers a missing key (an invalid node)
  YAML::Mark m = node.Mark();
  if (node.IsNull())
    for (const auto& [value, key_mark] : f.empty_values)
      if (value.is(node)) m = key_mark;
  if (m.is_null()) return where;
  where.line = m.line + 1;
  where.column = m.column + 1;
  return where;
}

void fail(const YamlFile& f, const YAML::Node& node, const std::string& key, const std::string& message) {
  throw InputError(location_of(f, node), key, message);
}

YAML::Node require(const YamlFile& f, const YAML::Node& map, const std::string& key, const std::string& full_key) {
  const std::string& named = full_key.empty() ? key : full_key;
  if (!map.IsDefined() || !map.IsMap())
    fail(f, map, named, "expected a map with key '" + key + "', found " + describe(map));
  const YAML::Node value = map[key];
  if (!value.IsDefined()) fail(f, map, named, "missing key '" + key + "'");
  return value;
}

void check_keys(const YamlFile& f, const YAML::Node& map, std::initializer_list<const char*> allowed,
                const std::string& path) {
  if (!map.IsDefined() || !map.IsMap()) fail(f, map, path, "expected a map, found " + describe(map));
  std::map<std::string, YAML::Node> seen;  // each key's first node, for a duplicate's message
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key_node = it->first;
    if (!key_node.IsScalar()) fail(f, key_node, path, "expected a plain key, found " + describe(key_node));
    const std::string& name = key_node.Scalar();
    const std::string key = path.empty() ? name : path + "." + name;
    if (const auto first = seen.find(name); first != seen.end()) {
      const int line = location_of(f, first->second).line;
      fail(f, key_node, key,
           "duplicate key" + (line > 0 ? " (first at line " + std::to_string(line) + ")" : std::string()) +
               "; expected each key once");
    }
    seen.emplace(name, key_node);
    if (it->second.IsNull()) f.empty_values.emplace_back(it->second, key_node.Mark());
    const bool known = std::any_of(allowed.begin(), allowed.end(),
                                   [&](const char* a) { return name == a; });
    if (known) continue;
    std::string msg = "unknown key";
    std::string best;
    std::size_t best_d = 3;  // suggest only close matches
    std::string list;
    for (const char* a : allowed) {
      list += list.empty() ? "" : ", ";
      list += a;
      const std::size_t d = edit_distance(name, a);
      if (d < best_d) best_d = d, best = a;
    }
    if (!best.empty()) msg += " (did you mean '" + best + "'?)";
    msg += "; expected one of: " + list;
    fail(f, key_node, key, msg);
  }
}

std::string as_string(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  const std::string& s = scalar_or_fail(f, value, key, "a string");
  // Every string may reach the JSON result or trace, whose writer refuses invalid UTF-8 (after
  // the whole simulation, as "[json.exception.type_error.316]"): refused here, where it is.
  for (std::size_t i = 0; i < s.size();) {
    // RFC 3629, as nlohmann::json checks it: no overlong forms, no surrogates, at most U+10FFFF.
    const auto at = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
    const unsigned c = at(i);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c < 0x80) n = 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = n > 0 && (n == 1 || (at(i + 1) >= lo && at(i + 1) <= hi));
    for (std::size_t k = 2; ok && k < n; ++k) ok = at(i + k) >= 0x80 && at(i + k) <= 0xBF;
    if (!ok) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", c);
      fail(f, value, key, std::string("expected UTF-8 text, found the byte ") + byte + " at offset " + std::to_string(i));
    }
    i += n;
  }
  return s;
}

long long as_int(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  const std::string& s = scalar_or_fail(f, value, key, "an integer");
  long long v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  const auto res = std::from_chars(b, e, v);  // decimal, optional '-', no '+', no spaces
  if (s.empty() || res.ec != std::errc() || res.ptr != e)
    fail(f, value, key, "expected an integer, found '" + s + "'");
  return v;
}

double as_double(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  const std::string& s = scalar_or_fail(f, value, key, "a number");
  double v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  const auto res = std::from_chars(b, e, v, std::chars_format::general);
  if (s.empty() || res.ec != std::errc() || res.ptr != e || !std::isfinite(v))
    fail(f, value, key, "expected a number, found '" + s + "'");
  return v;
}

bool as_bool(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  const std::string& s = scalar_or_fail(f, value, key, "true or false");
  if (s == "true") return true;
  if (s == "false") return false;
  fail(f, value, key, "expected true or false, found '" + s + "'");
}

namespace {
template <typename Parse>
double as_quantity(const YamlFile& f, const YAML::Node& value, const std::string& key,
                   const char* expected, Parse parse) {
  const std::string& s = scalar_or_fail(f, value, key, expected);
  try {
    return parse(s);
  } catch (const std::invalid_argument& e) {
    fail(f, value, key, e.what());
  }
}
}  // namespace

double as_bandwidth_Bps(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  return as_quantity(f, value, key, "a bandwidth such as 300GB/s or 200Gb/s", parse_bandwidth_Bps);
}

double as_time_s(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  return as_quantity(f, value, key, "a time such as 0.7us", parse_time_s);
}

double as_bytes(const YamlFile& f, const YAML::Node& value, const std::string& key) {
  return as_quantity(f, value, key, "a size such as 80GiB", parse_bytes);
}

}  // namespace overlapsim
