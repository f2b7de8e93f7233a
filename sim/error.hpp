// Errors that reach the user.
//
// InputError is thrown for anything wrong in what the user gave us (a file, a key, a flag).
// Its message is one line: "FILE:LINE:COL: KEY: expected WHAT, found WHAT", with control bytes
// and bytes that are not UTF-8 (a binary file's, quoted) escaped as \n or \x01. The command
// line prints it and exits with status 2. Broken internal invariants are not InputErrors: they
// use OVERLAPSIM_CHECK, which stays on in release builds and aborts with the location.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace overlapsim {

/// Where in an input a value came from. line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;  ///< path as the user gave it (or "<command line>")
  int line = 0;
  int column = 0;
};

/// A user-facing input error: names the file, line, column, key and what was expected.
class InputError : public std::runtime_error {
 public:
  /// message: e.g. "expected a bandwidth such as 300GB/s, found '300'".
  InputError(const SourceLocation& where, const std::string& key, const std::string& message);
  /// For errors with no better location than a file (or none at all).
  explicit InputError(const std::string& message);

  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  /// The message without the location and key prefix.
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string message_;
};

/// Throws InputError if `path` is a directory or a device (a character or block file: /dev/zero
/// reads forever) or cannot be opened for reading; a pipe is read as a file. `what` names the
/// kind of file expected ("a scenario", "a topology", ...).
void require_readable_file(const std::string& path, const std::string& what);

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions), to suggest
/// the key a typo meant in an error message.
std::size_t edit_distance(const std::string& a, const std::string& b);

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace overlapsim

/// Internal invariant, on in every build: aborts with the expression and message.
#define OVERLAPSIM_CHECK(cond, msg)                                              \
  do {                                                                           \
    if (!(cond)) ::overlapsim::check_failed(#cond, __FILE__, __LINE__, (msg));   \
  } while (0)
