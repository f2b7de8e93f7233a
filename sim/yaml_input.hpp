// Reading YAML inputs with errors that name file:line:column and the key (design §3).
// Every accessor throws InputError on a missing key, a wrong type or a bad unit; check_keys
// rejects unknown keys (a typo must not be silently ignored).
#pragma once

#include "sim/error.hpp"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace overlapsim {

struct YamlFile {
  std::string path;  ///< as given by the user
  YAML::Node root;
  /// Empty values (`key:` with nothing after it) met by check_keys, with their key's position:
  /// yaml-cpp marks an empty value where the next token starts (the next line, or past the end
  /// of the file), so location_of reports the key's line instead.
  mutable std::vector<std::pair<YAML::Node, YAML::Mark>> empty_values;
};

/// Parses a file. Throws InputError (with the line of a syntax error) if it cannot be read or parsed.
YamlFile load_yaml_file(const std::string& path);

/// 1-based location of a node inside the file.
SourceLocation location_of(const YamlFile& f, const YAML::Node& node);

[[noreturn]] void fail(const YamlFile& f, const YAML::Node& node, const std::string& key,
                       const std::string& message);

/// The value at map[key]; throws "missing key" pointing at the map when absent, named
/// `full_key` (e.g. "model.layers") where given, else `key`.
YAML::Node require(const YamlFile& f, const YAML::Node& map, const std::string& key, const std::string& full_key = "");
/// Throws on any key of `map` not in `allowed`, or given twice, naming the key and listing the
/// allowed ones. `path` is the map's own key ("parallelism", "links[0]"; "" at the root): a key
/// is named by its full path, e.g. parallelism.tp.
void check_keys(const YamlFile& f, const YAML::Node& map, std::initializer_list<const char*> allowed,
                const std::string& path);

std::string as_string(const YamlFile& f, const YAML::Node& value, const std::string& key);
long long as_int(const YamlFile& f, const YAML::Node& value, const std::string& key);
double as_double(const YamlFile& f, const YAML::Node& value, const std::string& key);
bool as_bool(const YamlFile& f, const YAML::Node& value, const std::string& key);
double as_bandwidth_Bps(const YamlFile& f, const YAML::Node& value, const std::string& key);
double as_time_s(const YamlFile& f, const YAML::Node& value, const std::string& key);
double as_bytes(const YamlFile& f, const YAML::Node& value, const std::string& key);

}  // namespace overlapsim
