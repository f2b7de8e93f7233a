// Strict unit parsing (sim/units.hpp): every accepted form, and one SUBCASE per rejected input.
#include "sim/units.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using namespace overlapsim;

namespace {

/// The what() of the std::invalid_argument `parse(text)` throws; FAILs if it does not throw.
template <typename Parse>
std::string rejection(Parse parse, const std::string& text) {
  try {
    const double v = parse(text);
    FAIL_CHECK("'" << text << "' was accepted as " << v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("units: bandwidth accepted forms") {
  CHECK(parse_bandwidth_Bps("300GB/s") == testing::approx(300e9));
  CHECK(parse_bandwidth_Bps("56.25GB/s") == testing::approx(56.25e9));
  CHECK(parse_bandwidth_Bps("200Gb/s") == testing::approx(25e9));
  CHECK(parse_bandwidth_Bps("400Gb/s") == testing::approx(50e9));
  CHECK(parse_bandwidth_Bps("25GiB/s") == testing::approx(25.0 * 1024 * 1024 * 1024));
  CHECK(parse_bandwidth_Bps("1kB/s") == testing::approx(1e3));
  CHECK(parse_bandwidth_Bps("1MB/s") == testing::approx(1e6));
  CHECK(parse_bandwidth_Bps("1TB/s") == testing::approx(1e12));
  CHECK(parse_bandwidth_Bps("1PB/s") == testing::approx(1e15));
  CHECK(parse_bandwidth_Bps("1KiB/s") == testing::approx(1024));
  CHECK(parse_bandwidth_Bps("1MiB/s") == testing::approx(1024.0 * 1024));
  CHECK(parse_bandwidth_Bps("1TiB/s") == testing::approx(1024.0 * 1024 * 1024 * 1024));
  CHECK(parse_bandwidth_Bps("8b/s") == testing::approx(1));
  CHECK(parse_bandwidth_Bps("16B/s") == testing::approx(16));
  CHECK(parse_bandwidth_Bps("1e3MB/s") == testing::approx(1e9));
  CHECK(parse_bandwidth_Bps(".5GB/s") == testing::approx(0.5e9));
  CHECK(parse_bandwidth_Bps("300 GB/s") == testing::approx(300e9));   // one space allowed
  CHECK(parse_bandwidth_Bps("  300GB/s ") == testing::approx(300e9));  // surrounding blanks
  CHECK(parse_bandwidth_Bps("0GB/s") == 0);                            // zero: the caller decides
}

TEST_CASE("units: time accepted forms") {
  CHECK(parse_time_s("0.7us") == testing::approx(0.7e-6));
  CHECK(parse_time_s("1.5us") == testing::approx(1.5e-6));
  CHECK(parse_time_s("10ns") == testing::approx(10e-9));
  CHECK(parse_time_s("130ns") == testing::approx(130e-9));
  CHECK(parse_time_s("3ms") == testing::approx(3e-3));
  CHECK(parse_time_s("2s") == testing::approx(2.0));
  CHECK(parse_time_s("5\u00b5s") == testing::approx(5e-6));  // micro sign
  CHECK(parse_time_s("5\u03bcs") == testing::approx(5e-6));  // Greek mu
  CHECK(parse_time_s("250ps") == testing::approx(250e-12));
  CHECK(parse_time_s("0s") == 0);
}

TEST_CASE("units: size accepted forms") {
  CHECK(parse_bytes("80GiB") == testing::approx(80.0 * 1024 * 1024 * 1024));
  CHECK(parse_bytes("40GB") == testing::approx(40e9));
  CHECK(parse_bytes("512MiB") == testing::approx(512.0 * 1024 * 1024));
  CHECK(parse_bytes("8B") == testing::approx(8));
  CHECK(parse_bytes("1KiB") == testing::approx(1024));
  CHECK(parse_bytes("1kB") == testing::approx(1000));
  CHECK(parse_bytes("2TiB") == testing::approx(2.0 * 1024 * 1024 * 1024 * 1024));
}

TEST_CASE("units: compute accepted forms") {
  CHECK(parse_flops_per_s("312TFLOP/s") == testing::approx(312e12));
  CHECK(parse_flops_per_s("19.5TFLOP/s") == testing::approx(19.5e12));
  CHECK(parse_flops_per_s("989.4TFLOP/s") == testing::approx(989.4e12));
  CHECK(parse_flops_per_s("1PFLOP/s") == testing::approx(1e15));
  CHECK(parse_flops_per_s("5GFLOP/s") == testing::approx(5e9));
}

TEST_CASE("units: the message says what was expected and what was found") {
  CHECK(rejection(parse_bandwidth_Bps, "300GB") ==
        "expected a bandwidth such as 300GB/s or 200Gb/s, found '300GB'");
  CHECK(rejection(parse_time_s, "0.7").find("expected a time") == 0);
  CHECK(rejection(parse_bytes, "80G").find("expected a size") == 0);
  CHECK(rejection(parse_flops_per_s, "312TFLOPS").find("expected a compute rate") == 0);
  CHECK(rejection(parse_bandwidth_Bps, "-1GB/s").find("negative") != std::string::npos);
  CHECK(rejection(parse_bandwidth_Bps, "300").find("a unit is required") != std::string::npos);
}

TEST_CASE("units: rejected bandwidths") {
  // One SUBCASE per bad input, so that a failure names the input.
  const char* bad[] = {
      "300GB",       // a size, not a bandwidth: the typo the design calls out
      "300",         // bare number
      "",            // empty
      "   ",         // blank
      "GB/s",        // no number
      "-1GB/s",      // negative
      "+1GB/s",      // explicit sign
      "300gb/s",     // units are case-sensitive
      "300GBps",     // not our spelling
      "300GB/sec",   // not our spelling
      "300KB/s",     // 'K' is not a prefix ('k' and 'Ki' are)
      "300GB/s/s",   // trailing junk
      "300GB/s x",   // trailing junk
      "300  GB/s",   // two spaces
      "3.GB/s",      // a dot needs digits after it
      "1e999GB/s",   // overflows
      "infGB/s",     // not a number
      "nanGB/s",     // not a number
      "0x10GB/s",    // no hexadecimal
      "300TFLOP/s",  // a compute rate
      "1,5GB/s",     // decimal comma
      "1e-300GB/s",  // implausibly slow (a flow would take eons)
      "0.5B/s",      // implausibly slow
      "2PB/s",       // implausibly fast
  };
  for (const char* text : bad) {
    SUBCASE(text) {
      CHECK_THROWS_AS(parse_bandwidth_Bps(text), std::invalid_argument);
    }
  }
}

TEST_CASE("units: the plausible range's ends are accepted") {
  CHECK(parse_bandwidth_Bps("1B/s") == 1);
  CHECK(parse_bandwidth_Bps("1PB/s") == 1e15);
  CHECK(parse_bandwidth_Bps("0GB/s") == 0);  // zero: the caller decides
  CHECK(parse_time_s("3600s") == 3600);
}

TEST_CASE("units: rejected times") {
  const char* bad[] = {"0.7", "0.7u", "1h", "1min", "-1us", "1 us us", "1US", "1Ms", "us", "1e400s",
                       "1e12s", "3601s", "1e10ms"};  // more than an hour: implausible
  for (const char* text : bad) {
    SUBCASE(text) {
      CHECK_THROWS_AS(parse_time_s(text), std::invalid_argument);
    }
  }
}

TEST_CASE("units: rejected sizes") {
  const char* bad[] = {"80", "80G", "80Gi", "80GiB/s", "80gib", "-8B", "8 B B", "8KB", "8iB"};
  for (const char* text : bad) {
    SUBCASE(text) {
      CHECK_THROWS_AS(parse_bytes(text), std::invalid_argument);
    }
  }
}

TEST_CASE("units: rejected compute rates") {
  const char* bad[] = {"312", "312T", "312TFLOPS", "312TFLOP", "312Tflop/s", "312TB/s", "-1TFLOP/s"};
  for (const char* text : bad) {
    SUBCASE(text) {
      CHECK_THROWS_AS(parse_flops_per_s(text), std::invalid_argument);
    }
  }
}
