// GEMM throughput with cuBLASLt over the shape grid of grid.hpp, for bf16, fp16 and (compute
// capability >= 8.9) fp8.
//
// cuBLASLt usage follows NVIDIA's cuBLAS documentation (§"cuBLASLt API": cublasLtMatmulDescCreate,
// cublasLtMatrixLayoutCreate, cublasLtMatmulAlgoGetHeuristic, cublasLtMatmul) and the
// CUDALibrarySamples LtSgemm / LtFp8Matmul samples: column-major layouts, the "TN" form (A
// transposed, B not) that FP8 requires on Hopper, FP32 accumulation (CUBLAS_COMPUTE_32F, FP32
// scale), a 32 MiB workspace (the size cuBLAS documents for Hopper), and the heuristic's first
// algorithm — what a framework calling cuBLASLt without autotuning gets. FP8 uses E4M3 inputs,
// BF16 output and fast accumulation (Transformer Engine's forward-pass setting).
#include "calibrate/harness/harness.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

namespace overlapsim::harness {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

void check_lt(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw HarnessError(std::string(call) + " failed: cuBLAS status " + std::to_string(static_cast<int>(s)));
}
#define HARNESS_LT(call) check_lt((call), #call)

cudaDataType_t input_type(DType d) {
  switch (d) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::FP16: return CUDA_R_16F;
    case DType::FP8: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}
cudaDataType_t output_type(DType d) { return d == DType::FP16 ? CUDA_R_16F : CUDA_R_16BF; }

/// One cuBLASLt handle and workspace per process (cuBLASLt handles are thread-safe to share).
struct Shared {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  int device = -1;
};
Shared& shared() {
  static Shared s;
  int dev = 0;
  HARNESS_CUDA(cudaGetDevice(&dev));
  if (s.handle == nullptr) HARNESS_LT(cublasLtCreate(&s.handle));
  if (s.device != dev) {
    if (s.workspace) cudaFree(s.workspace);
    HARNESS_CUDA(cudaMalloc(&s.workspace, kWorkspaceBytes));
    s.device = dev;
  }
  return s;
}

}  // namespace

struct LtGemm::Impl {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1.0f, beta = 0.0f;
  cublasLtHandle_t handle = nullptr;  // the process's, for this device (no look-up per launch)
  void* workspace = nullptr;

  ~Impl() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

size_t LtGemm::a_bytes(int64_t m, int64_t k, DType d, int64_t batch) { return size_t(m) * k * dtype_bytes(d) * batch; }
size_t LtGemm::b_bytes(int64_t k, int64_t n, DType d, int64_t batch) { return size_t(k) * n * dtype_bytes(d) * batch; }
size_t LtGemm::d_bytes(int64_t m, int64_t n, DType, int64_t batch) { return size_t(m) * n * 2 * batch; }

LtGemm::LtGemm(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) : impl_(new Impl) {
  try {
    configure(m, n, k, dtype, batch);
  } catch (...) {
    delete impl_;  // the destructor does not run when the constructor throws
    throw;
  }
}

void LtGemm::configure(int64_t m, int64_t n, int64_t k, DType dtype, int64_t batch) {
  Shared& sh = shared();
  Impl& I = *impl_;
  I.handle = sh.handle;
  I.workspace = sh.workspace;
  HARNESS_LT(cublasLtMatmulDescCreate(&I.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  HARNESS_LT(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  HARNESS_LT(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (dtype == DType::FP8) {
    const int8_t fast = 1;
    HARNESS_LT(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  }
  // A is stored k×m (transposed in the product), B k×n, C = D m×n; all column-major.
  HARNESS_LT(cublasLtMatrixLayoutCreate(&I.a, input_type(dtype), k, m, k));
  HARNESS_LT(cublasLtMatrixLayoutCreate(&I.b, input_type(dtype), k, n, k));
  HARNESS_LT(cublasLtMatrixLayoutCreate(&I.c, output_type(dtype), m, n, m));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t sa = k * m, sb = k * n, sc = m * n;
    for (auto [layout, stride] : {std::pair{I.a, sa}, std::pair{I.b, sb}, std::pair{I.c, sc}}) {
      HARNESS_LT(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      HARNESS_LT(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  HARNESS_LT(cublasLtMatmulPreferenceCreate(&I.pref));
  const size_t ws = kWorkspaceBytes;
  HARNESS_LT(cublasLtMatmulPreferenceSetAttribute(I.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  HARNESS_LT(cublasLtMatmulAlgoGetHeuristic(sh.handle, I.desc, I.a, I.b, I.c, I.c, I.pref, 1, &result, &found));
  if (found == 0)
    throw HarnessError("cuBLASLt has no algorithm for " + std::string(to_string(dtype)) + " " + std::to_string(m) +
                       "x" + std::to_string(n) + "x" + std::to_string(k));
  I.algo = result.algo;
  waves_ = result.wavesCount;
}

LtGemm::~LtGemm() { delete impl_; }

void LtGemm::run(const void* a, const void* b, void* d, cudaStream_t stream) const {
  const Impl& I = *impl_;
  HARNESS_LT(cublasLtMatmul(I.handle, I.desc, &I.alpha, a, I.a, b, I.b, &I.beta, d, I.c, d, I.c, &I.algo, I.workspace,
                            kWorkspaceBytes, stream));
}

namespace {

std::string tflops_line(const Context& ctx, DType d, const GemmShape& s, double median_s) {
  const double tf = s.flops() / median_s / 1e12;
  const double peak = ctx.datasheet_peak_flops(d) / 1e12;
  char buf[200];
  std::snprintf(buf, sizeof buf, "gemm %-4s %-28s %5lldx%5lldx%5lld %7.1f TFLOP/s", to_string(d),
                s.label.empty() ? "best grid shape" : s.label.c_str(), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), tf);
  std::string line = buf;
  if (peak > 0) {
    std::snprintf(buf, sizeof buf, " = %4.1f%% of the %.1f TFLOP/s dense peak", 100 * tf / peak, peak);
    line += buf;
  }
  return line;
}

void measure_shapes(Context& ctx, JsonWriter& w, DType d, const std::vector<GemmShape>& shapes,
                    const DeviceBuffer& A, const DeviceBuffer& B, DeviceBuffer& D, const char* what,
                    unsigned& clock_lo, unsigned& clock_hi) {
  int done = 0;
  GemmShape best;
  double best_s = 0;
  for (const GemmShape& s : shapes) {
    ++done;
    if (LtGemm::a_bytes(s.m, s.k, d) > A.bytes() || LtGemm::b_bytes(s.k, s.n, d) > B.bytes() ||
        LtGemm::d_bytes(s.m, s.n, d) > D.bytes())
      continue;  // buffers were sized for the largest shape that fits in memory
    try {
      LtGemm g(s.m, s.n, s.k, d);
      int inner = 0;
      const Summary t = time_on_stream(ctx.stream, ctx.options.timing, [&] { g.run(A.get(), B.get(), D.get(), ctx.stream); }, &inner);
      w.begin_object();
      w.field("dtype", to_string(d));
      w.field("m", s.m);
      w.field("n", s.n);
      w.field("k", s.k);
      if (!s.label.empty()) w.field("label", s.label);
      w.field("waves", static_cast<double>(g.waves()));
      w.key("time_s");
      write_summary(w, t, inner);
      // The state the point ended in: its time is that clock's (power limit and temperature).
      const GpuState st = read_gpu_state(ctx.pci_bus_id);
      if (st.sm_clock_mhz > 0) {
        w.field("sm_clock_mhz", static_cast<int64_t>(st.sm_clock_mhz));
        w.field("power_w", st.power_w);
        w.field("temperature_c", static_cast<int64_t>(st.temperature_c));
        clock_lo = clock_lo == 0 ? st.sm_clock_mhz : std::min(clock_lo, st.sm_clock_mhz);
        clock_hi = std::max(clock_hi, st.sm_clock_mhz);
      }
      w.end_object();
      if (!s.label.empty() && d != DType::FP16) ctx.summary.push_back(tflops_line(ctx, d, s, t.median));
      if (s.label.empty() && (best_s == 0 || s.flops() / t.median > best.flops() / best_s)) {
        best = s;
        best_s = t.median;
      }
      if (done % 16 == 0 || done == static_cast<int>(shapes.size()))
        ctx.progress(std::string("gemm ") + to_string(d) + " " + what + ": " + std::to_string(done) + "/" +
                     std::to_string(shapes.size()) + " (last " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                     std::to_string(s.k) + ": " + std::to_string(s.flops() / t.median / 1e12) + " TFLOP/s)");
    } catch (const HarnessError& e) {
      ctx.note(std::string("gemm ") + to_string(d) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
               std::to_string(s.k) + " skipped: " + e.what());
      cudaGetLastError();
    }
  }
  if (best_s > 0) ctx.summary.push_back(tflops_line(ctx, d, best, best_s));
}

/// Runs 8192×8192×8192 GEMMs (or the largest square the buffers hold) back to back for `seconds`,
/// so that the grid after it starts at the clock of a GPU under sustained load.
void heat_up(Context& ctx, DType d, const DeviceBuffer& A, const DeviceBuffer& B, DeviceBuffer& D, double seconds) {
  if (!(seconds > 0)) return;
  int64_t s = 8192;
  while (s > 256 && (LtGemm::a_bytes(s, s, d) > A.bytes() || LtGemm::b_bytes(s, s, d) > B.bytes() ||
                     LtGemm::d_bytes(s, s, d) > D.bytes()))
    s /= 2;
  const LtGemm g(s, s, s, d);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  while (std::chrono::duration<double>(clock::now() - t0).count() < seconds) {
    for (int i = 0; i < 8; ++i) g.run(A.get(), B.get(), D.get(), ctx.stream);
    HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
  }
}

}  // namespace

void bench_gemm(Context& ctx, JsonWriter& w) {
  const bool quick = ctx.options.quick;
  const GemmAxes axes = gemm_axes(quick);
  const std::vector<GemmShape> grid = gemm_grid(axes);
  const std::vector<GemmShape> keys = key_gemm_shapes(quick);

  std::vector<DType> dtypes = {DType::BF16, DType::FP16};
  if (ctx.fp8_supported()) dtypes.push_back(DType::FP8);
  else ctx.note("gemm fp8 skipped: compute capability " + std::to_string(ctx.prop.major) + "." +
                std::to_string(ctx.prop.minor) + " has no FP8 tensor cores (needs 8.9 or higher)");

  // One set of buffers for the largest problem (2-byte inputs), smaller if memory is short.
  int64_t max_mk = 0, max_kn = 0, max_mn = 0;
  for (const auto* list : {&grid, &keys})
    for (const GemmShape& s : *list) {
      max_mk = std::max(max_mk, s.m * s.k);
      max_kn = std::max(max_kn, s.k * s.n);
      max_mn = std::max(max_mn, s.m * s.n);
    }
  size_t free_b = 0, total_b = 0;
  HARNESS_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t want = size_t(2) * (max_mk + max_kn + max_mn);
  if (want > free_b * 8 / 10) {
    const double f = static_cast<double>(free_b) * 0.8 / static_cast<double>(want);
    max_mk = static_cast<int64_t>(max_mk * f);
    max_kn = static_cast<int64_t>(max_kn * f);
    max_mn = static_cast<int64_t>(max_mn * f);
    ctx.note("gemm: device memory allows buffers of " + std::to_string(static_cast<int>(f * 100)) +
             "% of the largest grid shape; larger shapes are skipped");
  }
  DeviceBuffer A(size_t(2) * max_mk), B(size_t(2) * max_kn), D(size_t(2) * max_mn);

  w.begin_object();
  w.field("layout", "TN");
  w.field("accumulate", "fp32");
  w.field("algorithm", "cublasLt heuristic, first result, 32 MiB workspace");
  w.field("heat_up_s", ctx.options.timing.heat_up_s);
  w.key("axes");
  w.begin_object();
  for (auto [name, v] : {std::pair{"m", &axes.m}, std::pair{"n", &axes.n}, std::pair{"k", &axes.k}}) {
    w.key(name);
    w.begin_array();
    for (int64_t x : *v) w.value(x);
    w.end_array();
  }
  w.end_object();
  w.key("dtypes");
  w.begin_array();
  for (DType d : dtypes) w.value(to_string(d));
  w.end_array();
  w.key("points");
  w.begin_array();
  for (DType d : dtypes) {
    fill_random(A.get(), static_cast<int64_t>(A.bytes() / dtype_bytes(d)), d, 1, ctx.stream);
    fill_random(B.get(), static_cast<int64_t>(B.bytes() / dtype_bytes(d)), d, 2, ctx.stream);
    HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
    heat_up(ctx, d, A, B, D, ctx.options.timing.heat_up_s);
    unsigned lo = 0, hi = 0;
    measure_shapes(ctx, w, d, grid, A, B, D, "grid", lo, hi);
    measure_shapes(ctx, w, d, keys, A, B, D, "key shapes", lo, hi);
    if (hi > 0)
      ctx.summary.push_back(std::string("gemm ") + to_string(d) + " SM clock " + std::to_string(lo) + "-" +
                            std::to_string(hi) + " MHz over its points (NVML, read after each point)");
  }
  w.end_array();
  w.end_object();
}

}  // namespace overlapsim::harness
