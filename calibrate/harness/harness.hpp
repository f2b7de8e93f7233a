// The calibration harness: shared driver state and the entry point of each measured thing
// (nccl-tests style: one file per measured thing, one driver, main.cpp).
//
// Built from CUDA, cuBLASLt, NCCL and the C++ standard library only (design §7b); it writes the
// raw measurements as JSON (format in calibrate/README.md, "Raw measurements"). Fitting them into
// a profile happens in the main overlapsim binary (calibrate/fit.cpp).
//
// Every benchmark function writes one JSON member (its section) through the writer and returns;
// a CUDA, cuBLASLt or NCCL failure throws HarnessError, which the driver records in "notes" and
// the section as {"skipped": reason} before going on with the next benchmark.
#pragma once

#include "calibrate/harness/grid.hpp"
#include "calibrate/harness/json_writer.hpp"
#include "calibrate/harness/stats.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlapsim::harness {

/// A failure of the CUDA runtime, cuBLASLt or NCCL, with the call and its message.
class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);

#define HARNESS_CUDA(call)                                                                      \
  do {                                                                                          \
    cudaError_t harness_e_ = (call);                                                            \
    if (harness_e_ != cudaSuccess) ::overlapsim::harness::throw_cuda(harness_e_, #call, __FILE__, __LINE__); \
  } while (0)

/// Element types of the measured kernels.
enum class DType { BF16, FP16, FP8 };
const char* to_string(DType d);
int dtype_bytes(DType d);

/// Options of one harness run (from the command line).
struct Options {
  std::string out;            ///< raw-measurement JSON file to write
  bool quick = false;         ///< the short grids (< 5 minutes on one H200)
  int device = 0;             ///< CUDA device of the single-GPU measurements
  int max_gpus = 0;           ///< collectives: use at most this many GPUs (0: all)
  std::vector<std::string> only;  ///< sections to run (empty: all)
  TimingPlan timing;
};

/// What every benchmark needs: the options, the device, one stream, a log for progress lines.
struct Context {
  Options options;
  cudaDeviceProp prop{};
  std::string pci_bus_id;  ///< of the measured GPU, e.g. "00000000:1B:00.0" (NVML finds it by this)
  int device_count = 0;
  cudaStream_t stream = nullptr;
  std::vector<std::string> notes;  ///< skipped parts and why; written to the raw file's "notes"
  std::vector<std::string> summary;  ///< headline figures, printed at the end of the run (gpu-check.sh)

  /// One progress line on stderr, e.g. "gemm bf16: 12/64".
  void progress(const std::string& line) const;
  /// Records a skipped part (also printed).
  void note(const std::string& line);
  /// Dense tensor-core peak of this GPU for a dtype, FLOP/s, from the datasheet figures of
  /// models/device_catalog.cpp (H100 SXM / H200: 989.4 TFLOP/s bf16, 1978.9 fp8; A100: 312;
  /// RTX A6000: 154.8); 0 for a GPU not in that table.
  double datasheet_peak_flops(DType d) const;
  /// Theoretical memory bandwidth from the memory clock and bus width (2 transfers per clock), B/s.
  double theoretical_memory_Bps() const;
  bool fp8_supported() const { return prop.major > 8 || (prop.major == 8 && prop.minor >= 9); }
};

/// The GPU's state at one moment, through NVML (gpu_state.cpp); a field is 0 where NVML is missing
/// or does not answer. A GEMM's time scales with the SM clock, which the driver lowers when the GPU
/// reaches its power limit: the clock beside each point tells apart shape effects from clock ones.
struct GpuState {
  unsigned sm_clock_mhz = 0;
  double power_w = 0;
  unsigned temperature_c = 0;
};
GpuState read_gpu_state(const std::string& pci_bus_id);

/// Two CUDA events, destroyed with the object (also when a timed launch throws).
struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
  EventPair() {
    HARNESS_CUDA(cudaEventCreate(&a));
    HARNESS_CUDA(cudaEventCreate(&b));
  }
  ~EventPair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  /// Seconds between the two events. REQUIRES: both recorded; waits for b.
  double seconds() const {
    HARNESS_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    HARNESS_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e-3;
  }
};

/// Times `launch` (which enqueues one run on `stream`) with CUDA events: warm-up, one timed run
/// to choose `inner`, then `repeats` samples of `inner` runs each; returns per-run seconds.
template <class Launch>
Summary time_on_stream(cudaStream_t stream, const TimingPlan& plan, Launch&& launch, int* inner_out = nullptr) {
  EventPair ev;
  for (int i = 0; i < plan.warmup; ++i) launch();
  HARNESS_CUDA(cudaEventRecord(ev.a, stream));
  launch();
  HARNESS_CUDA(cudaEventRecord(ev.b, stream));
  const int inner = choose_inner(ev.seconds(), plan.target_sample_s, plan.max_inner);
  std::vector<double> samples;
  for (int r = 0; r < plan.repeats; ++r) {
    HARNESS_CUDA(cudaEventRecord(ev.a, stream));
    for (int i = 0; i < inner; ++i) launch();
    HARNESS_CUDA(cudaEventRecord(ev.b, stream));
    samples.push_back(ev.seconds() / inner);
  }
  if (inner_out) *inner_out = inner;
  return summarize(samples);
}

/// Host wall-clock timing for work spread over several GPUs: `launch` enqueues one run on every
/// GPU, `sync` waits for all of them (nccl-tests times collectives the same way).
template <class Launch, class Sync>
Summary time_on_host(const TimingPlan& plan, Launch&& launch, Sync&& sync, int* inner_out = nullptr) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < plan.warmup; ++i) launch();
  sync();
  auto t0 = clock::now();
  launch();
  sync();
  const double single = std::chrono::duration<double>(clock::now() - t0).count();
  const int inner = choose_inner(single, 10 * plan.target_sample_s, plan.max_inner);
  std::vector<double> samples;
  for (int r = 0; r < plan.repeats; ++r) {
    t0 = clock::now();
    for (int i = 0; i < inner; ++i) launch();
    sync();
    samples.push_back(std::chrono::duration<double>(clock::now() - t0).count() / inner);
  }
  if (inner_out) *inner_out = inner;
  return summarize(samples);
}

/// Writes a Summary as a JSON object {median, min, max, p10, p90, mean, spread, n[, inner]}.
void write_summary(JsonWriter& w, const Summary& s, int inner = 0);

// --- device helpers (device_util.cu) ---
/// Fills `count` elements of type `d` at `ptr` with values in [-1, 1) from a hash of the index.
void fill_random(void* ptr, int64_t count, DType d, uint32_t seed, cudaStream_t stream);
/// A device buffer freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// --- cuBLASLt GEMM (gemm.cpp), shared by the GEMM, attention and interference benchmarks ---
/// One configured cuBLASLt matmul, "TN": D[m×n] = op(A)ᵀ[m×k]·B[k×n], column-major, A stored
/// k×m, B k×n, D m×n, `batch` problems at fixed strides. FP8 (E4M3 inputs, BF16 output) needs
/// compute capability 8.9 or higher and, on Hopper, the TN layout used here.
class LtGemm {
 public:
  LtGemm(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch = 1);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  /// Enqueues one GEMM. a, b, d: device buffers large enough for the problem (batch included).
  void run(const void* a, const void* b, void* d, cudaStream_t stream) const;
  /// The heuristic's predicted waves count of the chosen algorithm (cuBLASLt's "wavesCount").
  float waves() const { return waves_; }
  static size_t a_bytes(int64_t m, int64_t k, DType d, int64_t batch = 1);
  static size_t b_bytes(int64_t k, int64_t n, DType d, int64_t batch = 1);
  static size_t d_bytes(int64_t m, int64_t n, DType d, int64_t batch = 1);  ///< BF16 output for FP8

 private:
  struct Impl;
  void configure(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch);
  Impl* impl_;
  float waves_ = 0;
};

// --- memory-bound kernels (memory.cu) ---
void launch_copy(const void* x, void* y, int64_t elements, cudaStream_t stream);  ///< bf16
void launch_add(const void* x, const void* y, void* z, int64_t elements, cudaStream_t stream);
void launch_layernorm(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t stream);
void launch_softmax(const void* x, void* y, int64_t rows, int64_t cols, float scale, cudaStream_t stream);

// --- the benchmarks: each writes one section ---
void bench_gemm(Context& ctx, JsonWriter& w);          // gemm.cpp
void bench_memory(Context& ctx, JsonWriter& w);        // memory.cu
void bench_attention(Context& ctx, JsonWriter& w);     // attention.cpp
void bench_launch(Context& ctx, JsonWriter& w);        // launch.cu
void bench_collectives(Context& ctx, JsonWriter& w);   // collectives.cpp
void bench_interference(Context& ctx, JsonWriter& w);  // interference.cu

/// NCCL version "2.28.9", or "none" when built without NCCL (collectives.cpp).
std::string nccl_version();

}  // namespace overlapsim::harness
