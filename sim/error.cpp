#include "sim/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace overlapsim {

namespace {
/// `text` with what a terminal would not show as itself escaped: control bytes as \n, \t, \r or
/// \xNN, and bytes that are not valid UTF-8 as \xNN (a binary byte in an input stays one
/// visible token of the one-line message). Valid UTF-8 passes unchanged.
std::string escape_unprintable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [&out](unsigned char c) {
    const char* digits = "0123456789abcdef";
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else if (c < 0x20 || c == 0x7f) hex(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its lead byte gives the length; continuation bytes are 10xxxxxx, no
    // overlong form, no surrogate, nothing above U+10FFFF.
    const std::size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = n > 0 && i + n <= text.size();
    for (std::size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (valid && n >= 3) {
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      valid = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) && !(c == 0xf0 && c1 < 0x90) &&
              !(c == 0xf4 && c1 >= 0x90);
    }
    if (!valid) {
      hex(c);
      ++i;
      continue;
    }
    out.append(text, i, n);
    i += n;
  }
  return out;
}

std::string format_input_error(const SourceLocation& where, const std::string& key,
                               const std::string& message) {
  std::string out = where.file.empty() ? std::string("<input>") : escape_unprintable(where.file);
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

// The key and message are kept escaped, so that one rewrapped in another InputError (message())
// reads the same.
InputError::InputError(const SourceLocation& where, const std::string& key, const std::string& message)
    : std::runtime_error(format_input_error(where, escape_unprintable(key), escape_unprintable(message))),
      where_(where),
      key_(escape_unprintable(key)),
      message_(escape_unprintable(message)) {}

InputError::InputError(const std::string& message)
    : std::runtime_error(escape_unprintable(message)), message_(escape_unprintable(message)) {}

void require_readable_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a directory; expected " + what + " file");
  // A device reads forever or nothing (regression: /dev/zero was read for 1 GB before its error);
  // a pipe (a shell's <(...)) is read as a file.
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_character_file(st) || std::filesystem::is_block_file(st))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a device; expected " + what + " file");
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
