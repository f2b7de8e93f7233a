// Kernel launch overhead, three ways, with an empty kernel:
//   host_launch_s    host time of one asynchronous launch (cudaLaunchKernel through <<<>>>), the
//                    median over batches of 1000 launches timed with the host clock: what the
//                    cost model's kernel.launch_overhead_s stands for;
//   gpu_kernel_s     GPU time per kernel when 1000 empty kernels run back to back from a CUDA
//                    graph (no host launch cost): the GPU-side start and tail of a kernel,
//                    kernel.fixed_overhead_s;
//   sync_roundtrip_s one launch followed by cudaStreamSynchronize (launch latency plus
//                    completion notification), for reference.
#include "calibrate/harness/harness.hpp"

#include <chrono>
#include <cstdio>

namespace overlapsim::harness {

namespace {
__global__ void empty_kernel() {}
constexpr int kBatch = 1000;
}  // namespace

void bench_launch(Context& ctx, JsonWriter& w) {
  using clock = std::chrono::steady_clock;
  const int repeats = ctx.options.timing.repeats;
  for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 32, 0, ctx.stream>>>();
  HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));

  std::vector<double> host;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock::now();
    for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 32, 0, ctx.stream>>>();
    host.push_back(std::chrono::duration<double>(clock::now() - t0).count() / kBatch);
    HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
  }
  HARNESS_CUDA(cudaGetLastError());

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  HARNESS_CUDA(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 32, 0, ctx.stream>>>();
  HARNESS_CUDA(cudaStreamEndCapture(ctx.stream, &graph));
  HARNESS_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  TimingPlan plan = ctx.options.timing;
  plan.max_inner = 1;  // one graph launch per sample: 1000 kernels
  const Summary graph_t = time_on_stream(ctx.stream, plan, [&] { HARNESS_CUDA(cudaGraphLaunch(exec, ctx.stream)); });
  Summary gpu = graph_t;
  for (double* v : {&gpu.median, &gpu.min, &gpu.max, &gpu.p10, &gpu.p90, &gpu.mean}) *v /= kBatch;
  HARNESS_CUDA(cudaGraphExecDestroy(exec));
  HARNESS_CUDA(cudaGraphDestroy(graph));

  std::vector<double> sync;
  for (int r = 0; r < repeats * 10; ++r) {
    const auto t0 = clock::now();
    empty_kernel<<<1, 32, 0, ctx.stream>>>();
    HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));
    sync.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }

  w.begin_object();
  w.field("kernel", "empty, 1 block of 32 threads");
  w.field("batch", kBatch);
  w.key("host_launch_s");
  write_summary(w, summarize(host));
  w.key("gpu_kernel_s");
  write_summary(w, gpu);
  w.key("sync_roundtrip_s");
  write_summary(w, summarize(sync));
  w.end_object();
  {
    char buf[200];
    std::snprintf(buf, sizeof buf, "launch   %.2f us host per launch, %.2f us GPU per back-to-back kernel, %.2f us launch+sync",
                  summarize(host).median * 1e6, gpu.median * 1e6, summarize(sync).median * 1e6);
    ctx.summary.push_back(buf);
  }
  ctx.progress("launch: host " + std::to_string(summarize(host).median * 1e6) + " us, GPU " +
               std::to_string(gpu.median * 1e6) + " us per kernel");
}

}  // namespace overlapsim::harness
