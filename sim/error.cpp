#include "sim/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace overlapsim {

namespace {
std::string format_input_error(const SourceLocation& where, const std::string& key,
                               const std::string& message) {
  std::string out = where.file.empty() ? std::string("<input>") : where.file;
  if (where.line > 0) {
    out += ":" + std::to_string(where.line);
    if (where.column > 0) out += ":" + std::to_string(where.column);
  }
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}
}  // namespace

InputError::InputError(const SourceLocation& where, const std::string& key, const std::string& message)
    : std::runtime_error(format_input_error(where, key, message)), where_(where), key_(key), message_(message) {}

InputError::InputError(const std::string& message) : std::runtime_error(message), message_(message) {}

void require_readable_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a directory; expected " + what + " file");
  std::ifstream f(path);
  if (!f) throw InputError(SourceLocation{path, 0, 0}, "", "cannot open the file; expected " + what + " file");
}

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "overlapsim: internal error at %s:%d: %s (%s)\n", file, line, msg.c_str(), expr);
  std::abort();
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace overlapsim
