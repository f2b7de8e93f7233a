#include "sim/pass.hpp"

#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/link_efficiency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <tuple>
#include <unordered_map>

namespace overlapsim {

// ---- ProgramRewriter ---------------------------------------------------------------------------

ProgramRewriter::ProgramRewriter(const RankProgram& old)
    : old_(old), last_(old.ops.size(), -1), terminals_(old.ops.size()) {
  ops_.reserve(old.ops.size());
  old_deps_.reserve(old.ops.size());
}

int ProgramRewriter::keep(int old_index) {
  Op op = old_.ops.at(old_index);
  std::vector<int> deps(op.deps.begin(), op.deps.end());
  op.deps.clear();
  ops_.push_back(std::move(op));
  old_deps_.push_back(std::move(deps));
  last_[old_index] = size() - 1;
  return size() - 1;
}

int ProgramRewriter::emit(Op op, int of, const std::vector<int>& deps_new, const std::vector<int>& deps_old) {
  const int idx = size();
  for (int d : deps_new) OVERLAPSIM_CHECK(d >= 0 && d < idx, "a piece may only depend on pieces emitted before it");
  op.deps.assign(deps_new.begin(), deps_new.end());
  ops_.push_back(std::move(op));
  old_deps_.push_back(deps_old);
  if (of >= 0) last_.at(of) = idx;
  return idx;
}

void ProgramRewriter::set_terminals(int old_index, std::vector<int> new_indices) {
  terminals_.at(old_index) = std::move(new_indices);
}

RankProgram ProgramRewriter::finish() {
  for (size_t j = 0; j < ops_.size(); ++j) {
    auto& deps = ops_[j].deps;
    for (int d : old_deps_[j]) {
      const auto& t = terminals_.at(d);
      if (!t.empty()) {
        deps.insert(deps.end(), t.begin(), t.end());
      } else {
        OVERLAPSIM_CHECK(last_[d] >= 0, "dependency on an op the pass dropped: " + old_.ops[d].name);
        deps.push_back(last_[d]);
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    deps.erase(std::remove(deps.begin(), deps.end(), static_cast<int32_t>(j)), deps.end());
  }
  RankProgram p;
  p.rank = old_.rank;
  p.num_streams = old_.num_streams;
  for (const Op& op : ops_) p.num_streams = std::max<int>(p.num_streams, op.stream + 1);
  p.ops = std::move(ops_);
  ops_.clear();
  old_deps_.clear();
  return p;
}

// ---- OpBudget ----------------------------------------------------------------------------------

OpBudget::OpBudget(const Schedule& s, const PassContext& ctx, std::string pass)
    : limit_(ctx.max_ops), programs_(static_cast<int>(s.programs.size())), pass_(std::move(pass)) {
  for (const RankProgram& p : s.programs) old_total_ += static_cast<long long>(p.ops.size());
}

void OpBudget::rewritten(size_t old_ops, size_t new_ops) {
  old_seen_ += static_cast<long long>(old_ops);
  new_seen_ += static_cast<long long>(new_ops);
  ++seen_;
  if (limit_ <= 0 || old_seen_ == 0) return;
  const double growth = static_cast<double>(new_seen_) / static_cast<double>(old_seen_);
  const double projected = static_cast<double>(new_seen_) + growth * static_cast<double>(old_total_ - old_seen_);
  if (projected <= static_cast<double>(limit_)) return;
  const double ops = std::ceil(projected - 1e-6);
  throw OpBudgetExceeded(fmt::format("its pass '{}' would turn the iteration into about {:.0f} ops on {} simulated "
                                     "rank(s) (projected from the first {}, {:.2f}x their ops)",
                                     pass_, ops, programs_, seen_, growth),
                         limit_, static_cast<long long>(ops));
}

// ---- Ids, streams ------------------------------------------------------------------------------

namespace {
uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t hash_tag(std::string_view tag) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : tag) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
constexpr uint64_t kLow62 = (uint64_t{1} << 62) - 1;
constexpr uint64_t kBit62 = uint64_t{1} << 62;
}  // namespace

int64_t derive_collective_match(int64_t parent, std::string_view tag, int64_t piece, int group) {
  uint64_t h = mix(static_cast<uint64_t>(parent) ^ mix(hash_tag(tag)));
  h = mix(h ^ static_cast<uint64_t>(piece));
  h = mix(h ^ (static_cast<uint64_t>(group) + 0x51ed27u));
  return static_cast<int64_t>((h & kLow62) | kBit62);
}

int64_t derive_p2p_match(int64_t parent, std::string_view tag, int64_t step, int src, int dst) {
  uint64_t h = mix(static_cast<uint64_t>(parent) ^ mix(hash_tag(tag) + 1));
  h = mix(h ^ static_cast<uint64_t>(step));
  h = mix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32 | static_cast<uint32_t>(dst)));
  return -static_cast<int64_t>((h & kLow62) | kBit62);
}

int16_t intern_stream(Schedule& s, const std::string& name) {
  int max_streams = 0;
  for (const auto& p : s.programs) max_streams = std::max(max_streams, p.num_streams);
  while (static_cast<int>(s.stream_names.size()) < max_streams)
    s.stream_names.push_back("stream" + std::to_string(s.stream_names.size()));
  auto it = std::find(s.stream_names.begin(), s.stream_names.end(), name);
  int idx = static_cast<int>(it - s.stream_names.begin());
  if (it == s.stream_names.end()) s.stream_names.push_back(name);
  OVERLAPSIM_CHECK(idx < std::numeric_limits<int16_t>::max(), "too many streams");
  for (auto& p : s.programs) p.num_streams = std::max<int>(p.num_streams, static_cast<int>(s.stream_names.size()));
  return static_cast<int16_t>(idx);
}

void assign_overlap_streams(Schedule& s) {
  for (auto& p : s.programs)
    for (auto& op : p.ops) op.stream = op.overlap_stream;
}

// ---- Invariants ----------------------------------------------------------------------------------

double received_bytes(const Schedule& s, const Op& op) {
  switch (op.type) {
    case OpType::Compute:
    case OpType::Send:
      return 0;
    case OpType::Recv:
      return op.bytes;
    case OpType::Collective: {
      const double n = static_cast<double>(s.groups.at(op.group).ranks.size());
      if (n <= 1) return 0;
      const double share = (n - 1) / n * op.bytes;
      return op.collective == CollectiveKind::AllReduce ? 2 * share : share;
    }
  }
  return 0;
}

std::map<CommPurpose, double> received_bytes_by_purpose(const Schedule& s, int program_index) {
  std::map<CommPurpose, double> out;
  for (const Op& op : s.programs.at(program_index).ops)
    if (op.type != OpType::Compute) out[op.purpose] += received_bytes(s, op);
  return out;
}

namespace {
bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max({std::abs(a), std::abs(b), 1.0}); }

std::string structure_error(const Schedule& s) {
  for (const auto& p : s.programs) {
    const int n = static_cast<int>(p.ops.size());
    if (p.rank < 0 || p.rank >= s.world_size) return fmt::format("rank {} out of range", p.rank);
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      if (op.stream < 0 || op.stream >= p.num_streams)
        return fmt::format("rank {} op {} ({}): stream {} out of range", p.rank, i, op.name, op.stream);
      for (int d : op.deps)
        if (d < 0 || d >= i)
          return fmt::format("rank {} op {} ({}): dependency {} does not point to an earlier op", p.rank, i, op.name, d);
      if (op.type == OpType::Collective) {
        if (op.group < 0 || op.group >= static_cast<int>(s.groups.size()))
          return fmt::format("rank {} op {} ({}): bad group", p.rank, i, op.name);
        const auto& r = s.groups[op.group].ranks;
        if (std::find(r.begin(), r.end(), p.rank) == r.end())
          return fmt::format("rank {} op {} ({}): rank not in its group", p.rank, i, op.name);
        if (op.bytes < 0) return fmt::format("rank {} op {} ({}): negative size", p.rank, i, op.name);
      }
      if ((op.type == OpType::Send || op.type == OpType::Recv) &&
          (op.peer < 0 || op.peer >= s.world_size || op.peer == p.rank))
        return fmt::format("rank {} op {} ({}): bad peer", p.rank, i, op.name);
      if ((op.type == OpType::Send || op.type == OpType::Recv) && op.group >= 0) {
        if (op.group >= static_cast<int>(s.groups.size()))
          return fmt::format("rank {} op {} ({}): bad group", p.rank, i, op.name);
        const auto& r = s.groups[op.group].ranks;
        if (std::find(r.begin(), r.end(), p.rank) == r.end() || std::find(r.begin(), r.end(), op.peer) == r.end())
          return fmt::format("rank {} op {} ({}): send/recv outside its communicator's group", p.rank, i, op.name);
      }
      if (op.type == OpType::Compute && op.duration_s < 0)
        return fmt::format("rank {} op {} ({}): negative duration", p.rank, i, op.name);
    }
    // Dependencies all point backwards, and so does stream order: acyclic.
  }
  return "";
}
}  // namespace

std::string check_pass_invariants(const Schedule& before, const Schedule& after, const InvariantOptions& opt) {
  if (std::string e = structure_error(after); !e.empty()) return e;
  if (before.programs.size() != after.programs.size()) return "the simulated ranks changed";
  if (before.world_size != after.world_size) return "the world size changed";
  for (size_t i = 0; i < before.programs.size(); ++i) {
    const auto& pb = before.programs[i];
    const auto& pa = after.programs[i];
    if (pb.rank != pa.rank) return "the simulated ranks changed";
    double fb = 0, fa = 0;
    for (const Op& op : pb.ops) fb += op.type == OpType::Compute ? op.flops : 0;
    for (const Op& op : pa.ops) fa += op.type == OpType::Compute ? op.flops : 0;
    if (!close(fb, fa, opt.rel_tolerance))
      return fmt::format("rank {}: FLOPs changed from {:.17g} to {:.17g}", pa.rank, fb, fa);
    auto rb = received_bytes_by_purpose(before, static_cast<int>(i));
    auto ra = received_bytes_by_purpose(after, static_cast<int>(i));
    for (const auto& [purpose, bytes] : rb) ra.try_emplace(purpose, 0.0);
    for (const auto& [purpose, bytes] : ra) {
      const double b = rb.count(purpose) ? rb.at(purpose) : 0.0;
      const bool ok = close(b, bytes, opt.rel_tolerance) || (opt.bytes_may_decrease && bytes < b);
      if (!ok)
        return fmt::format("rank {}: bytes received for {} changed from {:.17g} to {:.17g}", pa.rank,
                           to_string(purpose), b, bytes);
    }
  }
  // Match ids: a collective id names one (group, kind, size) everywhere and occurs once per rank;
  // a point-to-point id occurs once per rank and direction, and both ends agree when simulated.
  std::unordered_map<int64_t, std::tuple<int, CollectiveKind, double>> colls;
  std::map<std::pair<int, int64_t>, const Op*> recvs;  // (rank, match) → Recv
  std::set<int> simulated;
  for (const auto& p : after.programs) simulated.insert(p.rank);
  for (const auto& p : after.programs) {
    std::set<int64_t> seen_coll;
    std::set<std::pair<int, int64_t>> seen_p2p;
    for (const Op& op : p.ops) {
      if (op.type == OpType::Collective) {
        if (!seen_coll.insert(op.match).second)
          return fmt::format("rank {}: collective id {} used twice ({})", p.rank, op.match, op.name);
        auto [it, fresh] = colls.try_emplace(op.match, op.group, op.collective, op.bytes);
        if (!fresh && it->second != std::make_tuple(op.group, op.collective, op.bytes))
          return fmt::format("collective id {} ({}) differs across ranks", op.match, op.name);
      } else if (op.type == OpType::Send || op.type == OpType::Recv) {
        if (!seen_p2p.insert({op.type == OpType::Send ? 0 : 1, op.match}).second)
          return fmt::format("rank {}: point-to-point id {} used twice ({})", p.rank, op.match, op.name);
        if (op.type == OpType::Recv) recvs[{p.rank, op.match}] = &op;
      }
    }
  }
  for (const auto& p : after.programs)
    for (const Op& op : p.ops) {
      if (op.type != OpType::Send || !simulated.count(op.peer)) continue;
      auto it = recvs.find({op.peer, op.match});
      if (it == recvs.end() || it->second->peer != p.rank || it->second->bytes != op.bytes)
        return fmt::format("rank {}: send {} to rank {} has no matching receive", p.rank, op.name, op.peer);
      if (it->second->group != op.group)
        return fmt::format("rank {}: send {} to rank {} and its receive name different communicators (groups {} and {})",
                           p.rank, op.name, op.peer, op.group, it->second->group);
    }
  return "";
}

// ---- GEMMs ------------------------------------------------------------------------------------------

const char* to_string(GemmDim d) {
  switch (d) {
    case GemmDim::None: return "none";
    case GemmDim::M: return "M";
    case GemmDim::N: return "N";
    case GemmDim::K: return "K";
  }
  return "?";
}

int64_t tokens_per_micro_batch(const PassContext& ctx) {
  if (ctx.model == nullptr || ctx.parallelism == nullptr) return 0;
  return static_cast<int64_t>(ctx.parallelism->micro_batch) * ctx.model->seq_len;
}

GemmDim token_dim(const Op& g, const PassContext& ctx, bool output_side) {
  if (g.type != OpType::Compute || g.compute != ComputeKind::Gemm || g.gemm_m <= 0) return GemmDim::None;
  const int64_t t = tokens_per_micro_batch(ctx);
  if (t == 0) return GemmDim::M;
  const bool wgrad = g.name.size() >= 5 && g.name.str().compare(g.name.size() - 5, 5, "wgrad") == 0;
  if (!output_side && g.gemm_k == t && (g.gemm_m != t || wgrad)) return GemmDim::K;
  if (g.gemm_m == t) return GemmDim::M;
  if (g.gemm_n == t) return GemmDim::N;
  return GemmDim::None;
}

int64_t gemm_extent(const Op& g, GemmDim d) {
  switch (d) {
    case GemmDim::M: return g.gemm_m;
    case GemmDim::N: return g.gemm_n;
    case GemmDim::K: return g.gemm_k;
    case GemmDim::None: return 0;
  }
  return 0;
}

DType gemm_dtype(const Op& g, const PassContext& ctx) {
  if (ctx.model != nullptr) return ctx.model->dtype;
  const int64_t batch = std::max<int64_t>(1, g.gemm_batch);
  for (DType d : {DType::FP16, DType::FP32, DType::TF32, DType::FP8}) {
    try {
      const double t = ctx.cost.gemm_time_s(g.gemm_m, g.gemm_n, g.gemm_k, d, batch);
      if (std::abs(t - g.duration_s) <= 1e-9 * g.duration_s) return d;
    } catch (const InputError&) {
      // the device lacks this dtype
    }
  }
  return DType::FP16;
}

Op gemm_chunk(const Op& g, GemmDim dim, int64_t extent, const PassContext& ctx) {
  OVERLAPSIM_CHECK(g.compute == ComputeKind::Gemm && g.gemm_m > 0, "not a GEMM with a shape: " + g.name);
  OVERLAPSIM_CHECK(extent >= 1, "empty GEMM chunk");
  Op c = g;
  switch (dim) {
    case GemmDim::M: c.gemm_m = extent; break;
    case GemmDim::N: c.gemm_n = extent; break;
    case GemmDim::K: c.gemm_k = extent; break;
    case GemmDim::None: OVERLAPSIM_CHECK(false, "no dimension to split " + g.name);
  }
  const int64_t batch = std::max<int64_t>(1, c.gemm_batch);
  c.flops = 2.0 * static_cast<double>(c.gemm_m) * static_cast<double>(c.gemm_n) * static_cast<double>(c.gemm_k) *
            static_cast<double>(batch);
  c.duration_s = ctx.cost.gemm_time_s(c.gemm_m, c.gemm_n, c.gemm_k, gemm_dtype(g, ctx), batch);
  return c;
}

std::vector<int64_t> split_extent(int64_t total, int k) {
  OVERLAPSIM_CHECK(k >= 1 && total >= k, "cannot split " + std::to_string(total) + " into " + std::to_string(k));
  std::vector<int64_t> out(k, total / k);
  for (int i = 0; i < total % k; ++i) ++out[i];
  return out;
}

Op memory_kernel(const std::string& name, double bytes, const PassContext& ctx) {
  Op op;
  op.type = OpType::Compute;
  op.compute = ComputeKind::MemoryBound;
  op.duration_s = ctx.cost.memory_bound_time_s(bytes);
  op.flops = 0;
  op.name = name;
  return op;
}

// ---- Predictions ----------------------------------------------------------------------------------

namespace {
LinkEfficiency efficiency(const PassContext& ctx) { return LinkEfficiency::of_profile(ctx.cost.profile()); }

CollectiveOptions collective_options(const PassContext& ctx) {
  if (ctx.collectives != nullptr) return *ctx.collectives;
  CollectiveOptions o;
  o.read_profile(ctx.cost.profile());  // the profile's measured rules and costs
  return o;
}

/// The replay's plan of a ring-kind collective (its options as simulate.cpp sets them) and its
/// closed form in seconds: +infinity where NCCL_ALGO's list leaves the automatic choice nothing
/// that can run (the plan's ring is then marked; NCCL 2.24 and later fail such a call, and
/// sim/nccl_algorithm_check.hpp refuses it). A forced algorithm that cannot run is not such a
/// case: the ring runs, as NCCL ran it.
std::pair<CollectivePlan, double> planned(const std::vector<int>& ranks, CollectiveKind kind, double bytes,
                                          const PassContext& ctx, int channels, CollectiveAlgorithm algorithm,
                                          ReduceOp reduce_op, DataType datatype) {
  CollectiveOptions o = collective_options(ctx);
  if (algorithm != CollectiveAlgorithm::Auto) o.algorithm = algorithm;
  o.reduce_op = reduce_op;
  o.datatype = datatype;
  CollectivePlan plan = plan_collective(ctx.topology, efficiency(ctx), ranks, kind, bytes, channels, o);
  const bool cannot_run = plan.fallback && o.algorithm == CollectiveAlgorithm::Auto;
  const double t = cannot_run ? std::numeric_limits<double>::infinity() : plan.closed_form_s();
  return {std::move(plan), t};
}
}  // namespace

double predict_collective_s(const Schedule& s, const Op& op, const PassContext& ctx) {
  OVERLAPSIM_CHECK(op.type == OpType::Collective, "not a collective: " + op.name);
  return predict_collective_s(s.groups.at(op.group).ranks, op.collective, op.bytes, ctx, op.channels, op.algorithm,
                              op.reduce_op, op.datatype);
}

double predict_collective_s(const std::vector<int>& ranks, CollectiveKind kind, double bytes, const PassContext& ctx,
                            int channels, CollectiveAlgorithm algorithm, ReduceOp reduce_op, DataType datatype) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return 0;
  if (kind == CollectiveKind::AllToAll) {
    std::vector<std::pair<int, int>> flows;
    for (int a : ranks)
      for (int b : ranks)
        if (a != b) flows.emplace_back(a, b);
    // Its pieces, and NCCL's n rounds of its p2p schedule (collective_plan.hpp, AllToAll as measured).
    return predict_p2p_step_s(ctx.topology, ctx, flows, bytes / n) + n * ctx.cost.profile().p2p_round_s;
  }
  return planned(ranks, kind, bytes, ctx, channels, algorithm, reduce_op, datatype).second;
}

int predict_collective_sms(const Schedule& s, const Op& op, const PassContext& ctx) {
  OVERLAPSIM_CHECK(op.type == OpType::Collective, "not a collective: " + op.name);
  if (op.num_sm >= 0) return op.num_sm;
  const std::vector<int>& ranks = s.groups.at(op.group).ranks;
  if (ranks.size() <= 1 || op.collective == CollectiveKind::AllToAll) return 0;
  return predict_collective(s, op, ctx).sms;
}

CollectivePrediction predict_collective(const Schedule& s, const Op& op, const PassContext& ctx) {
  OVERLAPSIM_CHECK(op.type == OpType::Collective, "not a collective: " + op.name);
  const std::vector<int>& ranks = s.groups.at(op.group).ranks;
  CollectivePrediction out;
  if (ranks.size() <= 1) {
    out.sms = op.num_sm >= 0 ? op.num_sm : 0;
    return out;
  }
  if (op.collective == CollectiveKind::AllToAll) {
    out.time_s = predict_collective_s(s, op, ctx);
    out.sms = op.num_sm >= 0 ? op.num_sm : 0;
    return out;
  }
  const auto [plan, t] = planned(ranks, op.collective, op.bytes, ctx, op.channels, op.algorithm, op.reduce_op,
                                   op.datatype);
  out.time_s = t;
  out.sms = op.num_sm >= 0 ? op.num_sm : plan.sm_blocks;
  return out;
}

double predict_p2p_step_s(const Topology& topo, const PassContext& ctx, const std::vector<std::pair<int, int>>& flows,
                          double bytes, bool copy_engine, const P2pCommunicator& comm) {
  const LinkEfficiency eff = efficiency(ctx);
  const CollectiveOptions opts = collective_options(ctx);
  std::vector<std::vector<Hop>> routes;
  std::map<std::pair<int, int>, int> load;  // (link, direction or 2 for half duplex) → flows
  for (const auto& [a, b] : flows) {
    routes.push_back(topo.route(a, b));
    for (const Hop& h : routes.back()) {
      const Link& l = topo.link(h.link_id);
      ++load[{h.link_id, l.full_duplex ? static_cast<int>(h.forward) : 2}];
    }
  }
  double worst = 0;
  for (size_t f = 0; f < routes.size(); ++f) {
    const auto& r = routes[f];
    double lat = p2p_extra_latency_s(topo, flows[f].first, flows[f].second, bytes, copy_engine,
                                     ctx.cost.launch_overhead_s());
    double bw = std::numeric_limits<double>::infinity();
    for (const Hop& h : r) {
      const Link& l = topo.link(h.link_id);
      lat += l.latency_s;
      const int users = load[{h.link_id, l.full_duplex ? static_cast<int>(h.forward) : 2}];
      bw = std::min(bw, l.bandwidth_Bps * eff.of(l.kind) / users);
    }
    // As the replay: no faster than NCCL's p2p channels for the message copy it (p2p_rate_cap_Bps).
    bw = std::min(bw, p2p_rate_cap_Bps(topo, flows[f].first, flows[f].second, bytes, copy_engine, comm, opts));
    worst = std::max(worst, lat + (r.empty() ? 0.0 : bytes / bw));
  }
  return worst;
}

// ---- Sites -------------------------------------------------------------------------------------------

std::vector<Site> find_sites(const Schedule& s, const RankProgram& p, const PassContext& ctx, CommPurpose purpose) {
  const int n = static_cast<int>(p.ops.size());
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (int d : p.ops[i].deps) consumers[d].push_back(i);
  std::vector<char> claimed(n, 0);
  std::vector<Site> out;
  auto is_gemm = [&](int j) {
    const Op& g = p.ops[j];
    return g.type == OpType::Compute && g.compute == ComputeKind::Gemm && g.gemm_m > 0 && !claimed[j];
  };
  for (int i = 0; i < n; ++i) {
    const Op& c = p.ops[i];
    if (c.type != OpType::Collective || c.purpose != purpose || s.groups.at(c.group).ranks.size() < 2) continue;
    if (c.collective == CollectiveKind::AllGather) {
      std::sort(consumers[i].begin(), consumers[i].end());
      for (int j : consumers[i]) {
        const Op& g = p.ops[j];
        if (g.type != OpType::Compute || g.compute != ComputeKind::Gemm) continue;
        if (is_gemm(j)) {
          const GemmDim d = token_dim(g, ctx, false);
          if (d != GemmDim::None && gemm_extent(g, d) >= 2) {
            out.push_back(Site{SiteKind::GatherGemm, i, j, d});
            claimed[j] = 1;
          }
        }
        break;  // only the first GEMM consumer
      }
    } else if ((c.collective == CollectiveKind::ReduceScatter || c.collective == CollectiveKind::AllReduce) &&
               c.deps.size() == 1 && is_gemm(c.deps[0])) {
      const Op& g = p.ops[c.deps[0]];
      const GemmDim d = token_dim(g, ctx, true);
      if ((d == GemmDim::M || d == GemmDim::N) && gemm_extent(g, d) >= 2) {
        out.push_back(Site{SiteKind::GemmReduce, i, c.deps[0], d});
        claimed[c.deps[0]] = 1;
      }
    }
  }
  return out;
}

// ---- Composition ---------------------------------------------------------------------------------------

namespace {
class ComposedStrategy final : public Strategy {
 public:
  ComposedStrategy(std::string name, std::string description, std::vector<std::unique_ptr<Pass>> passes,
                   std::unique_ptr<Strategy> scheduler)
      : name_(std::move(name)),
        description_(std::move(description)),
        passes_(std::move(passes)),
        scheduler_(std::move(scheduler)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  bool keeps_stream_placement() const override { return scheduler_->keeps_stream_placement(); }
  Schedule apply(Schedule s, const StrategyContext& ctx) const override {
    for (const auto& p : passes_) s = p->run(std::move(s), ctx);
    // A base that runs every op on one stream (serial) drops what a pass placed on other
    // streams, so a pass whose work is that placement changes nothing (a composition with
    // serial's figures and no word said, regression).
    if (!scheduler_->keeps_stream_placement() && !passes_.empty())
      ctx.note(name_ + ": " + scheduler_->name() + " runs every op on one stream in program order, so its passes' "
               "stream placement (layer-schedule's, the chunks' overlap) is not used; their ops and order are");
    return scheduler_->apply(std::move(s), ctx);
  }

 private:
  std::string name_, description_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::unique_ptr<Strategy> scheduler_;
};
}  // namespace

std::unique_ptr<Strategy> make_composed_strategy(std::string name, std::string description,
                                                 std::vector<std::unique_ptr<Pass>> passes,
                                                 std::unique_ptr<Strategy> scheduler) {
  return std::make_unique<ComposedStrategy>(std::move(name), std::move(description), std::move(passes),
                                            std::move(scheduler));
}

}  // namespace overlapsim
