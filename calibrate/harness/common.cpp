// Host-side helpers shared by the benchmarks: errors, dtypes, progress, summaries.
#include "calibrate/harness/harness.hpp"

#include <iostream>

namespace overlapsim::harness {

void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw HarnessError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

const char* to_string(DType d) {
  switch (d) {
    case DType::BF16: return "bf16";
    case DType::FP16: return "fp16";
    case DType::FP8: return "fp8";
  }
  return "?";
}

int dtype_bytes(DType d) { return d == DType::FP8 ? 1 : 2; }

void Context::progress(const std::string& line) const { std::cerr << "  " << line << "\n" << std::flush; }

void Context::note(const std::string& line) {
  std::cerr << "  note: " << line << "\n" << std::flush;
  notes.push_back(line);
}

double Context::datasheet_peak_flops(DType d) const {
  const std::string name = prop.name;
  auto has = [&](const char* x) { return name.find(x) != std::string::npos; };
  double bf16 = 0, fp8 = 0;
  if (has("H200") || (has("H100") && (has("HBM3") || has("SXM")))) {
    bf16 = 989.4e12;
    fp8 = 1978.9e12;
  } else if (has("A100")) {
    bf16 = 312e12;
  } else if (has("RTX A6000")) {
    bf16 = 154.8e12;
  }
  return d == DType::FP8 ? fp8 : bf16;
}

double Context::theoretical_memory_Bps() const {
  int khz = 0, bits = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, options.device);
  cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, options.device);
  return 2.0 * khz * 1e3 * bits / 8.0;
}

void write_summary(JsonWriter& w, const Summary& s, int inner) {
  w.begin_object();
  w.field("median", s.median);
  w.field("min", s.min);
  w.field("max", s.max);
  w.field("p10", s.p10);
  w.field("p90", s.p90);
  w.field("mean", s.mean);
  w.field("spread", s.spread);
  w.field("n", s.n);
  if (inner > 0) w.field("inner", inner);
  w.end_object();
}

}  // namespace overlapsim::harness
