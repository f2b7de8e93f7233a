// Strict parsing of quantities with units (see units.hpp for the accepted forms).
//
// Grammar (whitespace around the whole text is ignored; one optional space may separate the
// number from the unit, "300 GB/s"):
//   quantity := number unit
//   number   := digits [ "." digits ] [ ("e"|"E") ["+"|"-"] digits ]  |  "." digits [...]
// No sign: a leading '-' is reported as a negative value, a leading '+' as a malformed number.
// "inf", "nan" and hexadecimal floats are not numbers here. The unit must match exactly
// (case-sensitive): "300gb/s", "300GB", "300GBps" and a bare "300" are all rejected.
#include "sim/units.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

namespace overlapsim {

namespace {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Length of the longest prefix of `s` that is a number in the grammar above; 0 if none.
std::size_t scan_number(std::string_view s) {
  std::size_t i = 0;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = i + 1;
    std::size_t frac = 0;
    while (j < s.size() && is_digit(s[j])) ++j, ++frac;
    if (frac > 0 || digits > 0) {
      // "3." is accepted like C does only when followed by digits; keep it strict: require them.
      if (frac == 0) return 0;
      i = j;
      digits += frac;
    }
  }
  if (digits == 0) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    std::size_t exp_digits = 0;
    while (j < s.size() && is_digit(s[j])) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;  // otherwise the 'e' is not part of the number
  }
  return i;
}

/// A prefix multiplier: decimal (k M G T P) or binary (Ki Mi Gi Ti Pi).
struct Prefix {
  std::string_view text;
  double factor;
};

constexpr Prefix kDecimalPrefixes[] = {{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
constexpr Prefix kBinaryPrefixes[] = {{"Ki", 1024.0},
                                      {"Mi", 1024.0 * 1024},
                                      {"Gi", 1024.0 * 1024 * 1024},
                                      {"Ti", 1024.0 * 1024 * 1024 * 1024},
                                      {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024}};

/// If `unit` is exactly (prefix)(base) for some prefix (or none), returns the prefix factor.
/// Binary prefixes are tried first so that "Gi" is not read as "G" + "iB".
bool match_prefixed(std::string_view unit, std::string_view base, double* factor) {
  if (unit == base) {
    *factor = 1.0;
    return true;
  }
  if (unit.size() <= base.size() || unit.substr(unit.size() - base.size()) != base) return false;
  const std::string_view prefix = unit.substr(0, unit.size() - base.size());
  for (const auto& p : kBinaryPrefixes)
    if (prefix == p.text) return *factor = p.factor, true;
  for (const auto& p : kDecimalPrefixes)
    if (prefix == p.text) return *factor = p.factor, true;
  return false;
}

[[noreturn]] void reject(const char* expected, const std::string& text, const char* why = nullptr) {
  std::string msg = std::string("expected ") + expected + ", found '" + text + "'";
  if (why) msg += std::string(" (") + why + ")";
  throw std::invalid_argument(msg);
}

/// Splits `text` into a finite, non-negative number and the unit text; rejects anything else.
/// `expected` is the phrase used in error messages.
double split_quantity(const std::string& text, const char* expected, std::string_view* unit) {
  const std::string_view s = trim(text);
  if (s.empty()) reject(expected, text, "empty value");
  if (s[0] == '-') reject(expected, text, "must not be negative");
  const std::size_t n = scan_number(s);
  if (n == 0) reject(expected, text);
  double value = 0;
  const auto res = std::from_chars(s.data(), s.data() + n, value);
  if (res.ec != std::errc() || res.ptr != s.data() + n) reject(expected, text, "number out of range");
  if (!std::isfinite(value)) reject(expected, text, "number out of range");
  std::string_view rest = s.substr(n);
  if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  if (rest.empty()) reject(expected, text, "a unit is required");
  *unit = rest;
  return value;
}

double finite_or_reject(double v, const char* expected, const std::string& text) {
  if (!std::isfinite(v)) reject(expected, text, "number out of range");
  return v;
}

}  // namespace

double parse_bandwidth_Bps(const std::string& text) {
  static const char* kExpected = "a bandwidth such as 300GB/s or 200Gb/s";
  std::string_view unit;
  const double v = split_quantity(text, kExpected, &unit);
  double factor = 0;
  double bps = 0;
  if (match_prefixed(unit, "B/s", &factor)) bps = finite_or_reject(v * factor, kExpected, text);
  else if (match_prefixed(unit, "b/s", &factor)) bps = finite_or_reject(v * factor / 8.0, kExpected, text);
  else reject(kExpected, text);
  // No link, NIC or memory of a machine this simulates is slower than 1 B/s or faster than
  // 1 PB/s; a value outside is a typo in a unit or an exponent, and would time flows in eons.
  if (bps != 0 && (bps < 1 || bps > 1e15)) reject(kExpected, text, "outside 1B/s to 1PB/s");
  return bps;
}

double parse_time_s(const std::string& text) {
  static const char* kExpected = "a time such as 0.7us, 10ns, 3ms or 2s";
  std::string_view unit;
  const double v = split_quantity(text, kExpected, &unit);
  struct TimeUnit {
    std::string_view text;
    double factor;
  };
  static constexpr TimeUnit kUnits[] = {{"s", 1.0},   {"ms", 1e-3},        {"us", 1e-6},
                                        {"µs", 1e-6}, {"\u03bcs", 1e-6},   {"ns", 1e-9},
                                        {"ps", 1e-12}};
  for (const auto& u : kUnits)
    if (unit == u.text) {
      // A latency, overhead or duration of more than an hour is a typo in a unit or an exponent.
      if (v * u.factor > 3600) reject(kExpected, text, "more than an hour");
      return v * u.factor;
    }
  reject(kExpected, text);
}

double parse_bytes(const std::string& text) {
  static const char* kExpected = "a size such as 80GiB, 40GB or 512MiB (prefixes k M G T P, Ki Mi Gi Ti Pi)";
  std::string_view unit;
  const double v = split_quantity(text, kExpected, &unit);
  double factor = 0;
  if (match_prefixed(unit, "B", &factor)) return finite_or_reject(v * factor, kExpected, text);
  reject(kExpected, text);
}

double parse_flops_per_s(const std::string& text) {
  static const char* kExpected = "a compute rate such as 312TFLOP/s";
  std::string_view unit;
  const double v = split_quantity(text, kExpected, &unit);
  double factor = 0;
  if (match_prefixed(unit, "FLOP/s", &factor)) return finite_or_reject(v * factor, kExpected, text);
  reject(kExpected, text);
}

}  // namespace overlapsim
