// NCCL collectives over sizes and group sizes, in one process with ncclCommInitAll (NCCL
// documentation, "Creating a communicator with ncclCommInitAll" / "Example 1: Single Process,
// Single Thread, Multiple Devices"), the way nccl-tests runs with -g N.
//
// Sizes follow nccl-tests' conventions (NVIDIA/nccl-tests src/*.cu, doc/PERFORMANCE.md) so that
// the fitted α and bus bandwidth mean the same as an imported nccl-tests log's:
//   size S (bytes)  AllReduce: the buffer; AllGather: the gathered output; ReduceScatter: the
//                   input; AllToAll: the whole send buffer; Broadcast: the buffer; SendRecv: the
//                   bytes each rank sends to its ring successor (and receives from its predecessor)
//   busbw = S / t · factor, factor = 2(n−1)/n (AllReduce), (n−1)/n (AllGather, ReduceScatter,
//                   AllToAll), 1 (Broadcast, SendRecv)
// Times are host wall-clock over a batch of launches on every GPU followed by a synchronisation of
// all of them (nccl-tests' method), bf16 data, sum reduction.
// NCCL picks the algorithm and protocol itself unless NCCL_ALGO / NCCL_PROTO are set in the
// environment; the raw file records them ("auto" when unset).
#include "calibrate/harness/harness.hpp"

#ifdef OVERLAPSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace overlapsim::harness {

#ifndef OVERLAPSIM_HAVE_NCCL

std::string nccl_version() { return "none"; }

void bench_collectives(Context& ctx, JsonWriter& w) {
  const std::string why = "the harness was built without NCCL (OVERLAPSIM_HARNESS_NCCL=OFF)";
  ctx.note("collectives skipped: " + why);
  w.begin_object();
  w.field("skipped", why);
  w.end_object();
}

#else

namespace {

void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw HarnessError(std::string(call) + " failed: " + ncclGetErrorString(r));
}
#define HARNESS_NCCL(call) check_nccl((call), #call)

/// One collective, nccl-tests style: element counts for a size and how to run it.
struct Collective {
  const char* name;
  /// From nccl-tests' size S in elements and n ranks: per-rank send and receive element counts and
  /// the count argument of the NCCL call (0: the size is too small for this group).
  void (*counts)(size_t elems, int n, size_t* send, size_t* recv, size_t* param);
  void (*run)(void* send, void* recv, size_t param, int rank, int n, ncclComm_t comm, cudaStream_t s);
};

const Collective kCollectives[] = {
    {"all_reduce",
     [](size_t e, int, size_t* s, size_t* r, size_t* p) { *s = *r = *p = e; },
     [](void* s, void* r, size_t c, int, int, ncclComm_t comm, cudaStream_t st) {
       HARNESS_NCCL(ncclAllReduce(s, r, c, ncclBfloat16, ncclSum, comm, st));
     }},
    {"all_gather",
     [](size_t e, int n, size_t* s, size_t* r, size_t* p) { *p = *s = e / n; *r = *p * n; },
     [](void* s, void* r, size_t c, int, int, ncclComm_t comm, cudaStream_t st) {
       HARNESS_NCCL(ncclAllGather(s, r, c, ncclBfloat16, comm, st));
     }},
    {"reduce_scatter",
     [](size_t e, int n, size_t* s, size_t* r, size_t* p) { *p = *r = e / n; *s = *p * n; },
     [](void* s, void* r, size_t c, int, int, ncclComm_t comm, cudaStream_t st) {
       HARNESS_NCCL(ncclReduceScatter(s, r, c, ncclBfloat16, ncclSum, comm, st));
     }},
    {"alltoall",
     [](size_t e, int n, size_t* s, size_t* r, size_t* p) { *p = e / n; *s = *r = *p * n; },
     [](void* s, void* r, size_t c, int, int n, ncclComm_t comm, cudaStream_t st) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
       (void)n;
       HARNESS_NCCL(ncclAlltoAll(s, r, c, ncclBfloat16, comm, st));
#else
       // Before NCCL 2.28 there is no ncclAlltoAll: grouped point-to-point, as nccl-tests does.
       HARNESS_NCCL(ncclGroupStart());
       for (int peer = 0; peer < n; ++peer) {
         HARNESS_NCCL(ncclSend(static_cast<char*>(s) + peer * c * 2, c, ncclBfloat16, peer, comm, st));
         HARNESS_NCCL(ncclRecv(static_cast<char*>(r) + peer * c * 2, c, ncclBfloat16, peer, comm, st));
       }
       HARNESS_NCCL(ncclGroupEnd());
#endif
     }},
    {"broadcast",
     [](size_t e, int, size_t* s, size_t* r, size_t* p) { *s = *r = *p = e; },
     [](void* s, void* r, size_t c, int, int, ncclComm_t comm, cudaStream_t st) {
       HARNESS_NCCL(ncclBroadcast(s, r, c, ncclBfloat16, 0, comm, st));
     }},
    {"sendrecv",
     [](size_t e, int, size_t* s, size_t* r, size_t* p) { *s = *r = *p = e; },
     [](void* s, void* r, size_t c, int rank, int n, ncclComm_t comm, cudaStream_t st) {
       HARNESS_NCCL(ncclGroupStart());
       HARNESS_NCCL(ncclSend(s, c, ncclBfloat16, (rank + 1) % n, comm, st));
       HARNESS_NCCL(ncclRecv(r, c, ncclBfloat16, (rank + n - 1) % n, comm, st));
       HARNESS_NCCL(ncclGroupEnd());
     }},
};

std::string env_or_auto(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "auto";
}

}  // namespace

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION_CODE: major·10000 + minor·100 + patch since 2.9, major·1000 + minor·100 + patch before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  const int patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void bench_collectives(Context& ctx, JsonWriter& w) {
  int gpus = ctx.device_count;
  if (ctx.options.max_gpus > 0) gpus = std::min(gpus, ctx.options.max_gpus);
  w.begin_object();
  if (gpus < 2) {
    const std::string why = "this machine has " + std::to_string(ctx.device_count) +
                            " GPU(s) usable; collectives need at least 2 (the rest is measured)";
    ctx.note("collectives skipped: " + why);
    w.field("skipped", why);
    w.end_object();
    return;
  }
  const std::vector<int64_t> all_sizes = collective_sizes(ctx.options.quick);
  w.field("dtype", "bf16");
  w.field("algorithm", env_or_auto("NCCL_ALGO"));
  w.field("protocol", env_or_auto("NCCL_PROTO"));
  w.field("nodes", 1);
  w.field("timing", "host clock over a batch of launches on every GPU, then synchronise all");
  w.key("groups");
  w.begin_array();
  for (int n : collective_group_sizes(gpus)) {
    std::vector<int> devs(n);
    for (int i = 0; i < n; ++i) devs[i] = i;
    std::vector<ncclComm_t> comms(n);
    HARNESS_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
    // Largest size that fits: send + receive buffers at most a third of the smallest free memory.
    size_t free_min = SIZE_MAX;
    for (int d : devs) {
      size_t f = 0, t = 0;
      HARNESS_CUDA(cudaSetDevice(d));
      HARNESS_CUDA(cudaMemGetInfo(&f, &t));
      free_min = std::min(free_min, f);
    }
    std::vector<int64_t> sizes;
    for (int64_t s : all_sizes)
      if (static_cast<size_t>(s) * 2 <= free_min / 3) sizes.push_back(s);
    if (sizes.empty()) throw HarnessError("collectives: too little free device memory for any message size");
    const size_t max_bytes = static_cast<size_t>(sizes.back());
    std::vector<cudaStream_t> streams(n);
    std::vector<DeviceBuffer> send(n), recv(n);
    for (int i = 0; i < n; ++i) {
      HARNESS_CUDA(cudaSetDevice(devs[i]));
      HARNESS_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      send[i] = DeviceBuffer(max_bytes);
      recv[i] = DeviceBuffer(max_bytes);
      fill_random(send[i].get(), static_cast<int64_t>(max_bytes / 2), DType::BF16, 10 + i, streams[i]);
    }
    auto sync = [&] {
      for (int i = 0; i < n; ++i) {
        HARNESS_CUDA(cudaSetDevice(devs[i]));
        HARNESS_CUDA(cudaStreamSynchronize(streams[i]));
      }
    };
    sync();
    for (const Collective& c : kCollectives) {
      w.begin_object();
      w.field("collective", c.name);
      w.field("ranks", n);
      w.key("points");
      w.begin_array();
      int64_t last_bytes = 0;
      double last_s = 0;
      for (int64_t size : sizes) {
        size_t se = 0, re = 0, param = 0;
        c.counts(static_cast<size_t>(size) / 2, n, &se, &re, &param);
        if (param == 0) continue;
        auto launch = [&] {
          HARNESS_NCCL(ncclGroupStart());
          for (int i = 0; i < n; ++i) c.run(send[i].get(), recv[i].get(), param, i, n, comms[i], streams[i]);
          HARNESS_NCCL(ncclGroupEnd());
        };
        int inner = 0;
        const Summary t = time_on_host(ctx.options.timing, launch, sync, &inner);
        w.begin_object();
        last_bytes = static_cast<int64_t>(std::max(se, re) * 2);
        last_s = t.median;
        w.field("size_bytes", last_bytes);
        w.field("count", static_cast<int64_t>(param));
        w.key("time_s");
        write_summary(w, t, inner);
        w.end_object();
      }
      w.end_array();
      w.end_object();
      if (last_s > 0) {
        const double f = std::string(c.name) == "all_reduce" ? 2.0 * (n - 1) / n
                         : (std::string(c.name) == "broadcast" || std::string(c.name) == "sendrecv") ? 1.0
                                                                                                   : double(n - 1) / n;
        char buf[200];
        std::snprintf(buf, sizeof buf, "nccl %-15s %d GPUs, %6lld MiB: %7.1f us, busbw %6.1f GB/s", c.name, n,
                      static_cast<long long>(last_bytes >> 20), last_s * 1e6, last_bytes * f / last_s / 1e9);
        ctx.summary.push_back(buf);
      }
      ctx.progress(std::string("collectives ") + c.name + " on " + std::to_string(n) + " GPUs: " +
                   std::to_string(sizes.size()) + " sizes");
    }
    for (int i = 0; i < n; ++i) {
      HARNESS_CUDA(cudaSetDevice(devs[i]));
      HARNESS_CUDA(cudaStreamDestroy(streams[i]));
      ncclCommDestroy(comms[i]);
    }
  }
  HARNESS_CUDA(cudaSetDevice(ctx.options.device));
  w.end_array();
  w.end_object();
}

#endif  // OVERLAPSIM_HAVE_NCCL

}  // namespace overlapsim::harness
