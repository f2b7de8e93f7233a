// Interference: GEMM throughput while another kernel occupies `num_sm` SMs beside it on another
// stream (design §4: "while a communication kernel runs, compute on that GPU slows by the
// calibrated interference factor"). Two companions:
//   copy             an HBM-to-HBM copy kernel of exactly num_sm blocks, one per SM (each block
//                    asks for more than half an SM's shared memory, so no two share an SM and no
//                    GEMM block fits beside it), running until the GEMMs are done. It stands for
//                    an NCCL kernel's SM and memory traffic on a single-GPU machine.
//   nccl_all_reduce  (2 or more GPUs) a 256 MiB AllReduce over all GPUs in a loop, with NCCL held
//                    to num_sm CTAs (ncclConfig_t minCTAs = maxCTAs = num_sm, NCCL >= 2.17).
// The GEMM is bf16 8192×8192×8192 (about 1.1 TFLOP; milliseconds on any data-centre GPU).
// Recorded per num_sm: the GEMM's time alone and beside the companion (medians over samples),
// and the companion's own throughput meanwhile. slowdown = beside / alone.
#include "calibrate/harness/harness.hpp"

#ifdef OVERLAPSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cstdio>
#include <utility>

namespace overlapsim::harness {

namespace {

constexpr int64_t kGemm = 8192;
constexpr size_t kCopyBytes = size_t{512} << 20;  // far beyond any L2
constexpr unsigned long long kTimeoutNs = 20ull * 1000 * 1000 * 1000;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void sm_copy_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n16_per_block,
                               const volatile int* stop, int* started, unsigned long long* bytes) {
  extern __shared__ char reserve[];  // only reserves shared memory: one block per SM
  if (threadIdx.x == 0) {
    reserve[0] = 0;
    atomicAdd(started, 1);
  }
  const uint4* src = x + blockIdx.x * n16_per_block;
  uint4* dst = y + blockIdx.x * n16_per_block;
  const unsigned long long t0 = global_ns();
  unsigned long long loops = 0;
  for (;;) {
    for (int64_t i = threadIdx.x; i < n16_per_block; i += blockDim.x) dst[i] = src[i];
    ++loops;
    int s = 0;
    if (threadIdx.x == 0) s = (*stop != 0) || (global_ns() - t0 > kTimeoutNs);
    if (__syncthreads_or(s)) break;
  }
  if (threadIdx.x == 0) atomicAdd(bytes, loops * static_cast<unsigned long long>(n16_per_block) * 32ull);
}

/// Spins (one thread) until `expected` companion blocks have started, or the timeout.
__global__ void wait_started_kernel(const volatile int* started, int expected) {
  const unsigned long long t0 = global_ns();
  while (*started < expected && global_ns() - t0 < kTimeoutNs) {
  }
}

__global__ void set_flag_kernel(int* flag) { *flag = 1; }

struct Flags {
  int stop;
  int started;
  unsigned long long bytes;
};

}  // namespace

void bench_interference(Context& ctx, JsonWriter& w) {
  const TimingPlan& plan = ctx.options.timing;
  const std::vector<int> sm_counts = interference_sm_counts(ctx.prop.multiProcessorCount, ctx.options.quick);
  LtGemm gemm(kGemm, kGemm, kGemm, DType::BF16);
  DeviceBuffer A(LtGemm::a_bytes(kGemm, kGemm, DType::BF16)), B(LtGemm::b_bytes(kGemm, kGemm, DType::BF16)),
      D(LtGemm::d_bytes(kGemm, kGemm, DType::BF16));
  fill_random(A.get(), kGemm * kGemm, DType::BF16, 8, ctx.stream);
  fill_random(B.get(), kGemm * kGemm, DType::BF16, 9, ctx.stream);
  DeviceBuffer X(kCopyBytes), Y(kCopyBytes), F(sizeof(Flags));
  HARNESS_CUDA(cudaMemsetAsync(X.get(), 0, kCopyBytes, ctx.stream));
  HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
  auto run_gemm = [&] { gemm.run(A.get(), B.get(), D.get(), ctx.stream); };

  int inner = 0;
  const Summary alone = time_on_stream(ctx.stream, plan, run_gemm, &inner);
  // Samples of at least 5 ms: long against the companion's start.
  inner = std::max(inner, choose_inner(alone.median, 5e-3, 1000));

  cudaStream_t side;
  HARNESS_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t a, b, sa, sb;
  for (cudaEvent_t* e : {&a, &b, &sa, &sb}) HARNESS_CUDA(cudaEventCreate(e));
  const size_t reserve = std::min<size_t>(ctx.prop.sharedMemPerBlockOptin, ctx.prop.sharedMemPerMultiprocessor / 2 + 1024);
  HARNESS_CUDA(cudaFuncSetAttribute(sm_copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(reserve)));
  Flags* flags = static_cast<Flags*>(F.get());

  w.begin_object();
  w.key("gemm");
  w.begin_object();
  w.field("dtype", "bf16");
  w.field("m", kGemm);
  w.field("n", kGemm);
  w.field("k", kGemm);
  w.end_object();
  w.key("alone_s");
  write_summary(w, alone, inner);
  w.key("points");
  w.begin_array();

  for (int sms : sm_counts) {
    std::vector<double> with, companion_Bps;
    const int64_t n16 = static_cast<int64_t>(kCopyBytes / 16 / sms);
    for (int r = 0; r < plan.warmup + plan.repeats; ++r) {
      HARNESS_CUDA(cudaMemsetAsync(flags, 0, sizeof(Flags), ctx.stream));
      HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
      HARNESS_CUDA(cudaEventRecord(sa, side));
      sm_copy_kernel<<<sms, 1024, reserve, side>>>(static_cast<const uint4*>(X.get()), static_cast<uint4*>(Y.get()), n16,
                                                    &flags->stop, &flags->started, &flags->bytes);
      HARNESS_CUDA(cudaGetLastError());
      HARNESS_CUDA(cudaEventRecord(sb, side));
      wait_started_kernel<<<1, 1, 0, ctx.stream>>>(&flags->started, sms);
      HARNESS_CUDA(cudaEventRecord(a, ctx.stream));
      for (int i = 0; i < inner; ++i) run_gemm();
      HARNESS_CUDA(cudaEventRecord(b, ctx.stream));
      set_flag_kernel<<<1, 1, 0, ctx.stream>>>(&flags->stop);
      HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
      HARNESS_CUDA(cudaStreamSynchronize(side));
      if (r < plan.warmup) continue;
      float ms = 0, side_ms = 0;
      HARNESS_CUDA(cudaEventElapsedTime(&ms, a, b));
      HARNESS_CUDA(cudaEventElapsedTime(&side_ms, sa, sb));
      Flags host{};
      HARNESS_CUDA(cudaMemcpy(&host, flags, sizeof host, cudaMemcpyDeviceToHost));
      with.push_back(ms * 1e-3 / inner);
      // The copy reads and writes each byte: HBM traffic is twice the bytes copied.
      if (side_ms > 0) companion_Bps.push_back(2.0 * static_cast<double>(host.bytes) / (side_ms * 1e-3));
    }
    const Summary s = summarize(with);
    w.begin_object();
    w.field("companion", "copy");
    w.field("num_sm", sms);
    w.key("gemm_s");
    write_summary(w, s, inner);
    w.field("companion_bytes_per_s", summarize(companion_Bps).median);
    w.end_object();
    {
      char buf[200];
      std::snprintf(buf, sizeof buf, "interference copy kernel on %2d SMs: GEMM slowdown %.3f (copy %.0f GB/s)", sms,
                    s.median / alone.median, summarize(companion_Bps).median / 1e9);
      ctx.summary.push_back(buf);
    }
    ctx.progress("interference copy on " + std::to_string(sms) + " SMs: GEMM slowdown " +
                 std::to_string(s.median / alone.median));
  }

#ifdef OVERLAPSIM_HAVE_NCCL
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 17, 0)
  int gpus = ctx.device_count;
  if (ctx.options.max_gpus > 0) gpus = std::min(gpus, ctx.options.max_gpus);
  if (gpus >= 2 && ctx.options.device < gpus) {
    const size_t bytes = size_t{256} << 20;
    for (int sms : sm_counts) {
      ncclUniqueId id;
      auto nccl = [](ncclResult_t rc, const char* what) {
        if (rc != ncclSuccess) throw HarnessError(std::string(what) + " failed: " + ncclGetErrorString(rc));
      };
      nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::vector<ncclComm_t> comms(gpus);
      std::vector<cudaStream_t> streams(gpus);
      std::vector<DeviceBuffer> bufs(gpus);
      nccl(ncclGroupStart(), "ncclGroupStart");
      for (int i = 0; i < gpus; ++i) {
        HARNESS_CUDA(cudaSetDevice(i));
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.minCTAs = sms;
        config.maxCTAs = sms;
        nccl(ncclCommInitRankConfig(&comms[i], gpus, id, i, &config), "ncclCommInitRankConfig");
      }
      nccl(ncclGroupEnd(), "ncclGroupEnd");
      for (int i = 0; i < gpus; ++i) {
        HARNESS_CUDA(cudaSetDevice(i));
        HARNESS_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
        bufs[i] = DeviceBuffer(bytes);
        HARNESS_CUDA(cudaMemsetAsync(bufs[i].get(), 0, bytes, streams[i]));
      }
      auto all_reduce = [&] {
        nccl(ncclGroupStart(), "ncclGroupStart");
        for (int i = 0; i < gpus; ++i)
          nccl(ncclAllReduce(bufs[i].get(), bufs[i].get(), bytes / 2, ncclBfloat16, ncclSum, comms[i], streams[i]), "ncclAllReduce");
        nccl(ncclGroupEnd(), "ncclGroupEnd");
      };
      auto sync_all = [&] {
        for (int i = 0; i < gpus; ++i) {
          HARNESS_CUDA(cudaSetDevice(i));
          HARNESS_CUDA(cudaStreamSynchronize(streams[i]));
        }
        HARNESS_CUDA(cudaSetDevice(ctx.options.device));
      };
      TimingPlan one = plan;
      one.repeats = 3;
      const Summary ar = time_on_host(one, all_reduce, sync_all);
      // Enough AllReduces to outlast the GEMMs even if they slow down twofold.
      const int loops = static_cast<int>(std::min(10000.0, 2.0 * inner * alone.median / ar.median + 2));
      std::vector<double> with, busbw;
      for (int r = 0; r < plan.warmup + plan.repeats; ++r) {
        HARNESS_CUDA(cudaSetDevice(ctx.options.device));
        HARNESS_CUDA(cudaEventRecord(sa, streams[ctx.options.device]));
        for (int l = 0; l < loops; ++l) all_reduce();
        HARNESS_CUDA(cudaSetDevice(ctx.options.device));
        HARNESS_CUDA(cudaEventRecord(sb, streams[ctx.options.device]));
        HARNESS_CUDA(cudaEventRecord(a, ctx.stream));
        for (int i = 0; i < inner; ++i) run_gemm();
        HARNESS_CUDA(cudaEventRecord(b, ctx.stream));
        HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
        sync_all();
        if (r < plan.warmup) continue;
        float ms = 0, side_ms = 0;
        HARNESS_CUDA(cudaEventElapsedTime(&ms, a, b));
        HARNESS_CUDA(cudaEventElapsedTime(&side_ms, sa, sb));
        with.push_back(ms * 1e-3 / inner);
        if (side_ms > 0) busbw.push_back(2.0 * (gpus - 1) / gpus * bytes * loops / (side_ms * 1e-3));
      }
      const Summary s = summarize(with);
      w.begin_object();
      w.field("companion", "nccl_all_reduce");
      w.field("num_sm", sms);
      w.field("ranks", gpus);
      w.key("gemm_s");
      write_summary(w, s, inner);
      w.field("companion_bytes_per_s", summarize(busbw).median);
      w.end_object();
      {
        char buf[200];
        std::snprintf(buf, sizeof buf, "interference NCCL AllReduce on %2d CTAs (%d GPUs): GEMM slowdown %.3f (busbw %.0f GB/s)",
                      sms, gpus, s.median / alone.median, summarize(busbw).median / 1e9);
        ctx.summary.push_back(buf);
      }
      ctx.progress("interference NCCL AllReduce on " + std::to_string(sms) + " CTAs: GEMM slowdown " +
                   std::to_string(s.median / alone.median));
      for (int i = 0; i < gpus; ++i) {
        HARNESS_CUDA(cudaSetDevice(i));
        HARNESS_CUDA(cudaStreamDestroy(streams[i]));
        ncclCommDestroy(comms[i]);
      }
      HARNESS_CUDA(cudaSetDevice(ctx.options.device));
    }
  } else {
    ctx.note("interference beside NCCL skipped: needs at least 2 GPUs, the measured one among them (measured beside the copy kernel only)");
  }
#else
  ctx.note("interference beside NCCL skipped: NCCL older than 2.17 cannot limit its CTAs (ncclConfig_t)");
#endif
#else
  ctx.note("interference beside NCCL skipped: the harness was built without NCCL");
#endif

  w.end_array();
  w.end_object();
  for (cudaEvent_t e : {a, b, sa, sb}) cudaEventDestroy(e);
  cudaStreamDestroy(side);
}

}  // namespace overlapsim::harness
