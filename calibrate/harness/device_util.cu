// Device helpers: deterministic fills and owned device buffers.
#include "calibrate/harness/harness.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <utility>

namespace overlapsim::harness {

namespace {

__device__ __forceinline__ float hash_unit(uint64_t i, uint32_t seed) {
  // SplitMix64 finaliser: a cheap, well-mixed hash; the value lies in [-1, 1).
  uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

template <class T>
__global__ void fill_kernel(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = T(hash_unit(static_cast<uint64_t>(i), seed));
}

}  // namespace

void fill_random(void* ptr, int64_t count, DType d, uint32_t seed, cudaStream_t stream) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((count + threads - 1) / threads, 65535));
  if (count <= 0) return;
  switch (d) {
    case DType::BF16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), count, seed); break;
    case DType::FP16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__half*>(ptr), count, seed); break;
    case DType::FP8: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(ptr), count, seed); break;
  }
  HARNESS_CUDA(cudaGetLastError());
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { HARNESS_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes)); }

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}

}  // namespace overlapsim::harness
