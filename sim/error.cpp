#include "sim/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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

}  // namespace overlapsim
