// One strict parser for quantities with units (design §3). A bare number where a unit is
// required is an error. Decimal prefixes k M G T P are powers of 1000; binary Ki Mi Gi Ti are
// powers of 1024. "B" is a byte, "b" a bit.
//   bandwidth: 300GB/s, 56.25GB/s, 200Gb/s, 25GiB/s              → bytes per second
//   time:      0.7us, 1.5us, 10ns, 3ms, 2s                        → seconds ("µs" accepted)
//   size:      80GiB, 40GB, 512MiB, 8B, 1KiB                      → bytes
//   compute:   312TFLOP/s, 19.5TFLOP/s                            → FLOP per second
// Each throws std::invalid_argument whose what() says what was expected, e.g.
// "expected a bandwidth such as 300GB/s or 200Gb/s, found '300GB'". Negative values, NaN and
// infinities are rejected; zero is allowed only where the caller allows it. Implausible values
// are rejected too: a non-zero bandwidth outside 1 B/s … 1 PB/s, a time of more than an hour.
#pragma once

#include <string>

namespace overlapsim {

double parse_bandwidth_Bps(const std::string& text);
double parse_time_s(const std::string& text);
double parse_bytes(const std::string& text);
double parse_flops_per_s(const std::string& text);

}  // namespace overlapsim
