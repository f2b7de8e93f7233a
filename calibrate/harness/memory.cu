// Memory-bound kernels over sizes: the bandwidth a transformer's elementwise, normalisation and
// softmax kernels reach. All on bf16 data; "bytes" counts the HBM traffic the kernel must make
// (each input read once, each output written once), so bytes / time is the achieved bandwidth.
//   copy       y = x                      2 · n · 2 bytes
//   add        z = x + y                  3 · n · 2 bytes
//   layernorm  rows of 4096 (a hidden size): y = (x − mean) / sqrt(var + eps); 2 · n · 2 bytes
//   softmax    rows of 2048 (a sequence):  y = softmax(x · scale);               2 · n · 2 bytes
// The kernels are plain, reasonably written CUDA (16-byte vector loads for copy/add, one block
// per row with a shared-memory reduction for the row kernels), not tuned library kernels: they
// stand for the framework's own elementwise kernels.
#include "calibrate/harness/harness.hpp"

#include <cuda_bf16.h>

#include <cstdio>

namespace overlapsim::harness {

namespace {

constexpr int kThreads = 256;

__global__ void copy_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n16) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

__global__ void add_kernel(const uint4* __restrict__ x, const uint4* __restrict__ y, uint4* __restrict__ z, int64_t n16) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint4 a = x[i], b = y[i], c;
    const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
    __nv_bfloat162* pc = reinterpret_cast<__nv_bfloat162*>(&c);
#pragma unroll
    for (int j = 0; j < 4; ++j) pc[j] = __hadd2(pa[j], pb[j]);
    z[i] = c;
  }
}

__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = (threadIdx.x < blockDim.x / 32) ? shared[threadIdx.x] : 0.0f;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__device__ float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = (threadIdx.x < blockDim.x / 32) ? shared[threadIdx.x] : -INFINITY;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

// One block per row; each thread keeps its elements in registers (cols <= 16 · blockDim).
template <int kPerThread>
__global__ void layernorm_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t cols) {
  __shared__ float sh[32];
  const __nv_bfloat16* row = x + blockIdx.x * cols;
  float v[kPerThread];
  float s = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t c = threadIdx.x + j * static_cast<int64_t>(blockDim.x);
    v[j] = c < cols ? __bfloat162float(row[c]) : 0.0f;
    s += v[j];
  }
  const float mean = block_sum(s, sh) / cols;
  float q = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t c = threadIdx.x + j * static_cast<int64_t>(blockDim.x);
    if (c < cols) q += (v[j] - mean) * (v[j] - mean);
  }
  const float inv = rsqrtf(block_sum(q, sh) / cols + 1e-5f);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t c = threadIdx.x + j * static_cast<int64_t>(blockDim.x);
    if (c < cols) y[blockIdx.x * cols + c] = __float2bfloat16((v[j] - mean) * inv);
  }
}

template <int kPerThread>
__global__ void softmax_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t cols, float scale) {
  __shared__ float sh[32];
  const __nv_bfloat16* row = x + blockIdx.x * cols;
  float v[kPerThread];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t c = threadIdx.x + j * static_cast<int64_t>(blockDim.x);
    v[j] = c < cols ? __bfloat162float(row[c]) * scale : -INFINITY;
    m = fmaxf(m, v[j]);
  }
  m = block_max(m, sh);
  float s = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    v[j] = __expf(v[j] - m);
    s += v[j];
  }
  const float inv = 1.0f / block_sum(s, sh);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t c = threadIdx.x + j * static_cast<int64_t>(blockDim.x);
    if (c < cols) y[blockIdx.x * cols + c] = __float2bfloat16(v[j] * inv);
  }
}

int grid_for(int64_t items) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int64_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<int64_t>(blocks, int64_t{sms} * 8));
}

}  // namespace

void launch_copy(const void* x, void* y, int64_t elements, cudaStream_t stream) {
  const int64_t n16 = elements * 2 / 16;
  copy_kernel<<<grid_for(n16), kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint4*>(y), n16);
}

void launch_add(const void* x, const void* y, void* z, int64_t elements, cudaStream_t stream) {
  const int64_t n16 = elements * 2 / 16;
  add_kernel<<<grid_for(n16), kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<const uint4*>(y),
                                                     static_cast<uint4*>(z), n16);
}

void launch_layernorm(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  // cols <= 16 · 256 = 4096 with the 16-element variant; longer rows are not used by the harness.
  if (cols > 16 * kThreads) throw HarnessError("layernorm: rows longer than 4096 are not supported");
  layernorm_kernel<16><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), cols);
}

void launch_softmax(const void* x, void* y, int64_t rows, int64_t cols, float scale, cudaStream_t stream) {
  const auto* in = static_cast<const __nv_bfloat16*>(x);
  auto* out = static_cast<__nv_bfloat16*>(y);
  const unsigned r = static_cast<unsigned>(rows);
  if (cols <= 4 * kThreads) softmax_kernel<4><<<r, kThreads, 0, stream>>>(in, out, cols, scale);
  else if (cols <= 8 * kThreads) softmax_kernel<8><<<r, kThreads, 0, stream>>>(in, out, cols, scale);
  else if (cols <= 16 * kThreads) softmax_kernel<16><<<r, kThreads, 0, stream>>>(in, out, cols, scale);
  else if (cols <= 32 * kThreads) softmax_kernel<32><<<r, kThreads, 0, stream>>>(in, out, cols, scale);
  else throw HarnessError("softmax: rows longer than 8192 are not supported");
}

void bench_memory(Context& ctx, JsonWriter& w) {
  const std::vector<int64_t> sizes = memory_sizes(ctx.options.quick);
  const int64_t max_n = sizes.back();
  DeviceBuffer X(size_t(2) * max_n), Y(size_t(2) * max_n), Z(size_t(2) * max_n);
  fill_random(X.get(), max_n, DType::BF16, 3, ctx.stream);
  fill_random(Y.get(), max_n, DType::BF16, 4, ctx.stream);
  HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));

  struct Kernel {
    const char* name;
    int accesses;  // element reads + writes per element
    int64_t row;   // row length for row kernels, 0 otherwise
  };
  const Kernel kernels[] = {{"copy", 2, 0}, {"add", 3, 0}, {"layernorm", 2, 4096}, {"softmax", 2, 2048}};

  w.begin_object();
  w.field("element_type", "bf16");
  w.key("points");
  w.begin_array();
  for (const Kernel& k : kernels) {
    int64_t largest_bytes = 0;
    double largest_s = 0;
    for (int64_t n : sizes) {
      const int64_t rows = k.row ? n / k.row : 0;
      auto launch = [&] {
        if (k.name[0] == 'c') launch_copy(X.get(), Z.get(), n, ctx.stream);
        else if (k.name[0] == 'a') launch_add(X.get(), Y.get(), Z.get(), n, ctx.stream);
        else if (k.name[0] == 'l') launch_layernorm(X.get(), Z.get(), rows, k.row, ctx.stream);
        else launch_softmax(X.get(), Z.get(), rows, k.row, 0.125f, ctx.stream);
      };
      int inner = 0;
      const Summary t = time_on_stream(ctx.stream, ctx.options.timing, launch, &inner);
      HARNESS_CUDA(cudaGetLastError());
      const int64_t bytes = int64_t{k.accesses} * n * 2;
      largest_bytes = bytes;
      largest_s = t.median;
      w.begin_object();
      w.field("kernel", k.name);
      w.field("elements", n);
      if (k.row) w.field("row", k.row);
      w.field("bytes", bytes);
      w.key("time_s");
      write_summary(w, t, inner);
      w.end_object();
    }
    ctx.progress(std::string("memory ") + k.name + ": " + std::to_string(sizes.size()) + " sizes");
    if (largest_s > 0) {
      const double bw = static_cast<double>(largest_bytes) / largest_s;
      char buf[200];
      std::snprintf(buf, sizeof buf, "memory %-9s %5lld MiB moved: %6.0f GB/s = %4.1f%% of %.0f GB/s (memory clock x bus width)",
                    k.name, static_cast<long long>(largest_bytes >> 20), bw / 1e9, 100 * bw / ctx.theoretical_memory_Bps(),
                    ctx.theoretical_memory_Bps() / 1e9);
      ctx.summary.push_back(buf);
    }
  }
  w.end_array();
  w.end_object();
}

}  // namespace overlapsim::harness
