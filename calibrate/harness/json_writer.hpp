// A small streaming JSON writer, standard library only (the harness must build without any JSON
// library; design §7b). Output is indented, keys in the order written; numbers are written with
// 17 significant digits when they are not integers, so a double round-trips; NaN and infinities
// (which JSON cannot hold) are written as null.
//
//   JsonWriter w(out);
//   w.begin_object(); w.key("m"); w.value(int64_t{4096}); w.key("time_s"); w.value(1.5e-3); w.end_object();
//
// Misuse (a value where a key is expected, unbalanced ends) is a programming error: it throws
// std::logic_error.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlapsim::harness {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void begin_object() { open('{', true); }
  void end_object() { close('}', true); }
  void begin_array() { open('[', false); }
  void end_array() { close(']', false); }

  /// Writes `"name":`; the next call must write its value.
  void key(const std::string& name) {
    if (stack_.empty() || !stack_.back().object || key_pending_) throw std::logic_error("JsonWriter: key outside an object");
    separate();
    out_ << quote(name) << ": ";
    key_pending_ = true;
  }

  void value(const std::string& s) { scalar(quote(s)); }
  void value(const char* s) { scalar(quote(s)); }
  void value(bool b) { scalar(b ? "true" : "false"); }
  void value(int v) { scalar(std::to_string(v)); }
  void value(int64_t v) { scalar(std::to_string(v)); }
  void value(uint64_t v) { scalar(std::to_string(v)); }
  void value(double v) { scalar(number(v)); }
  void null() { scalar("null"); }
  /// Writes an already-rendered JSON value (e.g. another JsonWriter's complete output),
  /// re-indented to this level. REQUIRES: `json_text` is one valid JSON value.
  void raw(std::string json_text) {
    while (!json_text.empty() && (json_text.back() == '\n' || json_text.back() == ' ')) json_text.pop_back();
    const std::string pad(2 * stack_.size(), ' ');
    std::string indented;
    for (char c : json_text) {
      indented += c;
      if (c == '\n') indented += pad;
    }
    scalar(indented);
  }

  /// key + value in one call.
  template <class T>
  void field(const std::string& name, const T& v) {
    key(name);
    value(v);
  }

  /// True once the top-level value is complete.
  bool done() const { return stack_.empty() && wrote_root_; }

  /// The JSON text of a string (quotes and escapes).
  static std::string quote(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
      switch (c) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\r': o += "\\r"; break;
        case '\t': o += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            o += buf;
          } else {
            o += static_cast<char>(c);
          }
      }
    }
    return o + "\"";
  }

  /// The JSON text of a number: integers exactly, others with 17 significant digits; null if
  /// not finite.
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", v);
      return buf;
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }

 private:
  struct Level {
    bool object;
    int count;
  };

  void separate() {
    if (!stack_.empty()) {
      if (stack_.back().count++ > 0) out_ << ",";
      out_ << "\n" << std::string(2 * stack_.size(), ' ');
    }
  }

  void before_value() {
    if (stack_.empty()) {
      if (wrote_root_) throw std::logic_error("JsonWriter: second top-level value");
      wrote_root_ = true;
      return;
    }
    if (stack_.back().object) {
      if (!key_pending_) throw std::logic_error("JsonWriter: value in an object without a key");
      key_pending_ = false;
    } else {
      separate();
    }
  }

  void scalar(const std::string& text) {
    before_value();
    out_ << text;
  }

  void open(char c, bool object) {
    before_value();
    out_ << c;
    stack_.push_back(Level{object, 0});
  }

  void close(char c, bool object) {
    if (stack_.empty() || stack_.back().object != object || key_pending_)
      throw std::logic_error("JsonWriter: unbalanced end");
    const bool empty = stack_.back().count == 0;
    stack_.pop_back();
    if (!empty) out_ << "\n" << std::string(2 * stack_.size(), ' ');
    out_ << c;
    if (stack_.empty()) out_ << "\n";
  }

  std::ostream& out_;
  std::vector<Level> stack_;
  bool key_pending_ = false;
  bool wrote_root_ = false;
};

}  // namespace overlapsim::harness
