// The unfused attention core, as Megatron-LM runs it without FlashAttention: a batched GEMM
// S = Q·Kᵀ (seq × seq × head_dim per head), a scaled softmax over each row of S, and a batched
// GEMM O = P·V (seq × head_dim × seq per head), bf16. The FLOPs are the two GEMMs', 4·b·h·s²·d
// (the same count as models/cost_model.cpp), so FLOPs / time is the attention throughput the
// cost model's attention efficiency stands for; the parts are recorded too.
#include "calibrate/harness/harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace overlapsim::harness {

void bench_attention(Context& ctx, JsonWriter& w) {
  const std::vector<AttentionShape> shapes = attention_grid(ctx.options.quick);
  size_t max_qkv = 0, max_s = 0;
  for (const AttentionShape& a : shapes) {
    max_qkv = std::max(max_qkv, size_t(a.batch * a.heads * a.seq * a.head_dim) * 2);
    max_s = std::max(max_s, size_t(a.batch * a.heads * a.seq * a.seq) * 2);
  }
  DeviceBuffer Q(max_qkv), K(max_qkv), V(max_qkv), O(max_qkv), S(max_s), P(max_s);
  for (auto [buf, seed] : {std::pair{&Q, 5u}, std::pair{&K, 6u}, std::pair{&V, 7u}})
    fill_random(buf->get(), static_cast<int64_t>(buf->bytes() / 2), DType::BF16, seed, ctx.stream);
  HARNESS_CUDA(cudaStreamSynchronize(ctx.stream));

  w.begin_object();
  w.field("dtype", "bf16");
  w.field("form", "unfused: batched GEMM QK^T, softmax, batched GEMM PV");
  w.key("points");
  w.begin_array();
  for (const AttentionShape& a : shapes) {
    const int64_t bh = a.batch * a.heads;
    // S[s×s] = Q·Kᵀ: in the TN form, m = n = seq, k = head_dim. O[s×d] = P·V: m = seq, n = d, k = seq.
    LtGemm qk(a.seq, a.seq, a.head_dim, DType::BF16, bh);
    LtGemm pv(a.seq, a.head_dim, a.seq, DType::BF16, bh);
    const float scale = 1.0f / std::sqrt(static_cast<float>(a.head_dim));
    auto run_qk = [&] { qk.run(Q.get(), K.get(), S.get(), ctx.stream); };
    auto run_sm = [&] { launch_softmax(S.get(), P.get(), bh * a.seq, a.seq, scale, ctx.stream); };
    auto run_pv = [&] { pv.run(P.get(), V.get(), O.get(), ctx.stream); };
    int inner = 0;
    const Summary all = time_on_stream(ctx.stream, ctx.options.timing, [&] { run_qk(); run_sm(); run_pv(); }, &inner);
    const Summary t_qk = time_on_stream(ctx.stream, ctx.options.timing, run_qk);
    const Summary t_sm = time_on_stream(ctx.stream, ctx.options.timing, run_sm);
    const Summary t_pv = time_on_stream(ctx.stream, ctx.options.timing, run_pv);
    HARNESS_CUDA(cudaGetLastError());
    w.begin_object();
    w.field("batch", a.batch);
    w.field("heads", a.heads);
    w.field("seq", a.seq);
    w.field("head_dim", a.head_dim);
    w.field("flops", a.flops());
    w.key("time_s");
    write_summary(w, all, inner);
    w.field("qk_s", t_qk.median);
    w.field("softmax_s", t_sm.median);
    w.field("pv_s", t_pv.median);
    w.end_object();
    {
      char buf[200];
      std::snprintf(buf, sizeof buf, "attention bf16 seq %5lld heads %3lld head_dim %3lld: %6.1f TFLOP/s (unfused, GEMMs %6.1f)",
                    static_cast<long long>(a.seq), static_cast<long long>(a.heads), static_cast<long long>(a.head_dim),
                    a.flops() / all.median / 1e12, a.flops() / (t_qk.median + t_pv.median) / 1e12);
      ctx.summary.push_back(buf);
    }
    ctx.progress("attention s=" + std::to_string(a.seq) + " h=" + std::to_string(a.heads) + " d=" +
                 std::to_string(a.head_dim) + ": " + std::to_string(a.flops() / all.median / 1e12) + " TFLOP/s");
  }
  w.end_array();
  w.end_object();
}

}  // namespace overlapsim::harness
