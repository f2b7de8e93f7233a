#include "sim/nccl_tuning.hpp"

#include "sim/error.hpp"
#include "sim/nccl_constants.hpp"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>

namespace overlapsim {

std::string ascii_lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

bool parse_protocol(const std::string& text, Protocol* out) {
  const std::string t = ascii_lower(text);
  if (t == "ll") *out = Protocol::LL;
  else if (t == "ll128") *out = Protocol::LL128;
  else if (t == "simple") *out = Protocol::Simple;
  else return false;
  return true;
}

bool parse_reduce_op(const std::string& text, ReduceOp* out) {
  const std::string t = ascii_lower(text);
  for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum})
    if (t == to_string(r)) {
      *out = r;
      return true;
    }
  return false;
}

bool parse_datatype(const std::string& text, DataType* out) {
  const std::string t = ascii_lower(text);
  for (int i = 0; i <= static_cast<int>(DataType::Float8e5m2); ++i)
    if (t == to_string(static_cast<DataType>(i))) {
      *out = static_cast<DataType>(i);
      return true;
    }
  static const std::pair<const char*, DataType> kOther[] = {
      {"fp16", DataType::Float16},          {"float16", DataType::Float16},   {"fp32", DataType::Float32},
      {"float32", DataType::Float32},       {"fp64", DataType::Float64},      {"float64", DataType::Float64},
      {"bf16", DataType::Bfloat16},         {"fp8e4m3", DataType::Float8e4m3}, {"float8e4m3", DataType::Float8e4m3},
      {"fp8e5m2", DataType::Float8e5m2},    {"float8e5m2", DataType::Float8e5m2}, {"char", DataType::Int8},
      {"int", DataType::Int32}};
  for (const auto& [name, type] : kOther)
    if (t == name) {
      *out = type;
      return true;
    }
  return false;
}

bool parse_algorithm(const std::string& text, CollectiveAlgorithm* out) {
  const std::string t = ascii_lower(text);
  if (t == "auto") *out = CollectiveAlgorithm::Auto;
  else if (t == "ring") *out = CollectiveAlgorithm::Ring;
  else if (t == "tree") *out = CollectiveAlgorithm::Tree;
  else if (t == "nvls") *out = CollectiveAlgorithm::Nvls;
  else if (t == "nvlstree" || t == "nvls_tree") *out = CollectiveAlgorithm::NvlsTree;
  else if (t == "pat") *out = CollectiveAlgorithm::Pat;
  else if (t == "collnetdirect" || t == "collnet_direct") *out = CollectiveAlgorithm::CollnetDirect;
  else if (t == "collnetchain" || t == "collnet_chain") *out = CollectiveAlgorithm::CollnetChain;
  else return false;
  return true;
}

namespace {

// src/include/device.h.
constexpr int kSimpleMaxThreads = 512;  // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLLMaxThreads = 512;      // NCCL_LL_MAX_NTHREADS
constexpr int kLL128MaxThreads = 640;   // NCCL_LL128_MAX_NTHREADS
// src/include/comm.h.
constexpr double kSimpleThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr double kLLThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD
constexpr double kLL128Threshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
// src/graph/topo.h: PCI Gen3 x16, GB/s.
constexpr double kPciBw = 12e9;

}  // namespace

NcclLaunch nccl_launch(CollectiveAlgorithm alg, Protocol proto, double bytes, int ranks, int max_channels,
                       double ring_bw_Bps) {
  OVERLAPSIM_CHECK(alg != CollectiveAlgorithm::Auto, "nccl_launch needs an algorithm");
  OVERLAPSIM_CHECK(ranks >= 1 && max_channels >= 1, "nccl_launch: ranks and channels must be >= 1");
  int nt = 0;
  double threshold = 0;
  switch (proto) {
    case Protocol::Simple:
      nt = alg == CollectiveAlgorithm::Ring && ring_bw_Bps <= kPciBw ? 256 : kSimpleMaxThreads;
      threshold = kSimpleThreshold;
      break;
    case Protocol::LL:
      nt = kLLMaxThreads;
      threshold = kLLThreshold * (alg == CollectiveAlgorithm::Ring ? ranks : 1);
      break;
    case Protocol::LL128:
      nt = kLL128MaxThreads;
      threshold = kLL128Threshold;
      break;
  }
  int nc = max_channels;
  while (bytes < static_cast<double>(nc) * nt * threshold && nc >= 2) --nc;
  while (bytes < static_cast<double>(nc) * nt * threshold && nt % 128 == 0) nt /= 2;
  return {nc, nt};
}

NcclP2pSplit nccl_p2p_split(double bytes, int comm_ranks, bool one_node, int comm_channels, int peer_channels,
                            double chunk_bytes) {
  OVERLAPSIM_CHECK(bytes >= 0 && comm_ranks >= 1 && comm_channels >= 1 && peer_channels >= 1 && chunk_bytes > 0,
                   "nccl_p2p_split: bad arguments");
  auto next_pow2 = [](int v) {
    int p = 1;
    while (p < v) p <<= 1;
    return p;
  };
  constexpr int kMaxChannels = 32;  // MAXCHANNELS, src/include/device.h
  const int p2p_channels = next_pow2(std::min(comm_channels, kMaxChannels));
  const int per_peer = next_pow2(std::min({comm_channels, kMaxChannels, peer_channels}));
  int n_min = per_peer, n_max = per_peer;
  if (one_node) {
    while (n_min * comm_ranks > p2p_channels && n_min > 1) n_min /= 2;
    while (n_max * comm_ranks > 4 * p2p_channels && n_max > 1) n_max /= 2;
  }
  const double min_size = chunk_bytes / 8;
  const double max_size = one_node ? chunk_bytes * 32 : chunk_bytes;
  double size = std::max(min_size, std::ceil(bytes / n_min));
  int n = n_min;
  while (size > max_size && n <= n_max / 2) {
    n *= 2;
    size = std::ceil(bytes / n);
  }
  const double chunk = std::ceil(size / min_size) * min_size;
  return {std::max(1, static_cast<int>(std::ceil(bytes / chunk))), std::min(chunk, bytes), p2p_channels};
}

int nccl_alltoall_kernel_channels(int local_ranks, int nodes, int p2p_channels, int parts) {
  OVERLAPSIM_CHECK(local_ranks >= 1 && nodes >= 1 && p2p_channels >= 1 && p2p_channels <= 32 &&
                       (p2p_channels & (p2p_channels - 1)) == 0 && parts >= 1 && parts <= p2p_channels,
                   "nccl_alltoall_kernel_channels: bad arguments");
  int bits = 0;
  while ((1 << bits) < p2p_channels) ++bits;
  auto mirror = [bits](int x) {  // mirrorBits(x, 2^bits)
    int r = 0;
    for (int b = 0; b < bits; ++b)
      if (x & (1 << b)) r |= 1 << (bits - 1 - b);
    return r;
  };
  using nccl::kP2pGroupSize;
  uint32_t mask = 0;
  // Bases repeat mod P, so at most P distinct ones matter.
  const int max_base = nodes > 1 ? (nodes - 1) + (local_ranks - 1) / kP2pGroupSize : local_ranks - 1;
  for (int base = 0; base <= std::min(max_base, p2p_channels - 1); ++base)
    for (int c = 0; c < parts; ++c) mask |= uint32_t{1} << ((mirror(base) + c) % p2p_channels);
  return __builtin_popcount(mask);
}

const TuningRule* find_tuning_rule(const std::vector<TuningRule>& table, CollectiveKind kind, int ranks, int nodes,
                                   double bytes) {
  const TuningRule* best = nullptr;
  for (const TuningRule& r : table) {
    if (r.kind != kind || ranks < r.min_ranks || ranks > r.max_ranks || nodes < r.min_nodes || nodes > r.max_nodes ||
        bytes > r.max_bytes)
      continue;
    if (!best || r.max_bytes < best->max_bytes) best = &r;
  }
  return best;
}

namespace {

/// NCCL's ring busBw for `proto` (ncclTopoTuneModel: Simple B; LL min(llMaxBw, B/2); LL128
/// min(0.92 B, C · perChMaxRingLL128Bw)), bytes/s.
double ring_busbw(Protocol proto, const NcclTunerInputs& in) {
  const int N = in.nodes;
  const int by_nodes = nccl::nodes_index(N);
  const double ll_max = nccl::ll_max_busbw(in.cc_index, in.amd_cpu, N);
  const double B = in.graph_busbw_Bps, C = in.graph_channels;
  return proto == Protocol::LL      ? std::min(ll_max, B * 0.5)
         : proto == Protocol::LL128 ? std::min(B * 0.92, C * nccl::kPerChRingLL128[in.cc_index][by_nodes])
                                    : B;
}

/// NCCL's ring latency for `steps` steps of which `inter_steps` cross nodes (ncclTopoTuneModel):
/// baseLat + (steps − inter_steps) · max(hwLat_intra, net overhead: 1 µs, AMD 2 µs, Simple ×3,
/// across nodes) + inter_steps · hwLat_net (the tree's when ppn = 1), seconds.
double ring_latency_s(Protocol proto, int steps, int inter_steps, const NcclTunerInputs& in) {
  const int p = static_cast<int>(proto);
  const int N = in.nodes;
  double intra_lat = nccl::kHwLatRing[in.intra_pcie ? 1 : 0][p];
  if (N > 1) intra_lat = std::max(intra_lat, (in.amd_cpu ? 2e-6 : 1e-6) * (proto == Protocol::Simple ? 3 : 1));
  const double inter_lat = in.ranks == N ? nccl::kHwLatTree[2][p] : nccl::kHwLatRing[2][p];
  if (N == 1) inter_steps = 0;
  return nccl::kBaseLatRing[p] + (steps - inter_steps) * intra_lat + inter_steps * inter_lat;
}

}  // namespace

double nccl_model_allreduce_s(CollectiveAlgorithm alg, Protocol proto, double bytes, const NcclTunerInputs& in) {
  OVERLAPSIM_CHECK((alg == CollectiveAlgorithm::Ring || alg == CollectiveAlgorithm::Tree ||
                    alg == CollectiveAlgorithm::Nvls || alg == CollectiveAlgorithm::NvlsTree ||
                    alg == CollectiveAlgorithm::CollnetDirect ||
                    alg == CollectiveAlgorithm::CollnetChain) &&
                       in.ranks >= 2 &&
                       bytes >= 0 && in.graph_busbw_Bps > 0 && in.graph_channels >= 1 && in.comm_channels >= 1 &&
                       in.nodes >= 1 && in.cc_index >= 0 && in.cc_index <= 3,
                   "nccl_model_allreduce_s: bad arguments");
  if (proto == Protocol::LL128 && !in.ll128) return std::numeric_limits<double>::infinity();
  const int p = static_cast<int>(proto);
  const int n = in.ranks, N = in.nodes;
  const int by_nodes = nccl::nodes_index(N);
  const double ll_max = nccl::ll_max_busbw(in.cc_index, in.amd_cpu, N);
  const double B = in.graph_busbw_Bps, C = in.graph_channels;
  const int intra = in.intra_pcie ? 1 : 0;
  const int log2_nodes = nccl::log2i(N);
  const double ppn = static_cast<double>(n) / N;
  double bus = 0, ratio = 0, lat = 0;
  if (alg == CollectiveAlgorithm::NvlsTree) {
    if (!in.nvls_tree || proto != Protocol::Simple || in.nvls_heads < 2 || in.nvls_intra_Bps <= 0 ||
        in.nvls_inter_Bps <= 0 || nccl::kNvlsEfficiency[in.cc_index] <= 0)
      return std::numeric_limits<double>::infinity();
    const double h = in.nvls_heads;
    const double intra = in.nvls_intra_Bps / h * nccl::kNvlsEfficiency[in.cc_index] * (h - 1) / h * 2;
    const double inter = in.nvls_inter_Bps / h * (N <= 2 ? 2 : 1);
    bus = h * std::min({intra, inter, nccl::kPerChNvlsTree[in.cc_index][by_nodes]});
    ratio = static_cast<double>(n) / (2 * (n - 1));
    lat = nccl::nvls_tree_latency_s(N);
    return lat + bytes / (bus * ratio);
  }
  if (alg == CollectiveAlgorithm::Nvls) {
    // Across nodes only: inside one node the closed forms decide (collective_choice.cpp).
    if (!in.nvls || N < 2 || proto != Protocol::Simple || in.nvls_heads < 2 || in.nvls_intra_Bps <= 0 ||
        in.nvls_inter_Bps <= 0 || nccl::kNvlsEfficiency[in.cc_index] <= 0)
      return std::numeric_limits<double>::infinity();
    const double h = in.nvls_heads;
    const double intra = in.nvls_intra_Bps / h * nccl::kNvlsEfficiency[in.cc_index] * (h - 1) / h * 2;
    bus = h * std::min(intra, in.nvls_inter_Bps / h);
    ratio = static_cast<double>(n) / (2 * (n - 1));
    return nccl::kNvlsCollNetLatency + bytes / (bus * ratio);
  }
  if (alg == CollectiveAlgorithm::CollnetDirect || alg == CollectiveAlgorithm::CollnetChain) {
    if (!in.collnet || proto != Protocol::Simple || in.collnet_heads < 1 || in.collnet_intra_Bps <= 0 || N < 2)
      return std::numeric_limits<double>::infinity();
    const bool direct = alg == CollectiveAlgorithm::CollnetDirect;
    bus = in.collnet_intra_Bps;
    if (direct) {
      double f = ppn / in.collnet_heads;  // GPU/NIC ratio
      f -= (f - 1) / 2;
      bus /= f;
      if (in.cc_index >= 2) bus *= nccl::kCollNetDirectHopperFactor;
    }
    return nccl::collnet_latency_s(direct, ppn) + bytes / (bus * 0.5);
  }
  if (alg == CollectiveAlgorithm::Ring) {
    bus = ring_busbw(proto, in);
    const int steps = 2 * (n - 1);
    ratio = static_cast<double>(n) / steps;
    lat = ring_latency_s(proto, steps, 2 * (N - 1), in);
    if (proto == Protocol::Simple && N > 1 && bytes / (static_cast<double>(in.comm_channels) * n) >= 64)
      lat *= in.cc_index == 0 ? 1.9 : 1.4;
  } else {
    const double tree = std::min(B * 0.92, C * nccl::kPerChTree[in.cc_index][by_nodes]);
    bus = proto == Protocol::LL ? std::min(tree / 3.8, ll_max)
          : proto == Protocol::LL128
              ? std::min(tree * (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), C * nccl::kPerChTreeLL128[in.cc_index][by_nodes])
              : tree;
    ratio = 0.5;
    lat = nccl::kBaseLatTree[p] + 2 * ((ppn - 1) * nccl::kHwLatTree[intra][p] + log2_nodes * nccl::kHwLatTree[2][p]);
    const int log_size = nccl::log2i(std::floor(bytes / 64));  // log2i(nBytes >> 6)
    if (log_size < 23) bus *= nccl::kTreeCorrection[p][log_size];
  }
  return lat + bytes / (bus * ratio);
}

namespace {

using AlgorithmModel = double (*)(CollectiveAlgorithm, Protocol, double, const NcclTunerInputs&);

/// The least `model` time of `alg` over the protocols in.protocols enables (in.only_protocol's
/// alone where set), tried in NCCL's order LL, LL128, Simple (a tie goes to the earlier), seconds;
/// +inf where none is finite. `*best` is set to that protocol (left as it is where none is finite).
double least_protocol_s(AlgorithmModel model, CollectiveAlgorithm alg, double bytes, const NcclTunerInputs& in,
                        std::optional<Protocol>* best) {
  double best_s = std::numeric_limits<double>::infinity();
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    if (in.only_protocol && p != *in.only_protocol) continue;
    if (!(in.protocols & (1u << static_cast<unsigned>(p)))) continue;
    const double t = model(alg, p, bytes, in);
    if (t < best_s) {
      best_s = t;
      *best = p;
    }
  }
  return best_s;
}

/// The first of `algorithms` (NCCL's order: a tie goes to the earlier) of least `model` time over
/// the enabled protocols (least_protocol_s), of those in.algorithms enables (the first enabled
/// when none has a finite time).
CollectiveAlgorithm least_time(std::initializer_list<CollectiveAlgorithm> algorithms, AlgorithmModel model,
                               double bytes, const NcclTunerInputs& in) {
  const auto enabled = [&](CollectiveAlgorithm a) { return (in.algorithms & (1u << static_cast<unsigned>(a))) != 0; };
  CollectiveAlgorithm best = *algorithms.begin();
  for (CollectiveAlgorithm a : algorithms)
    if (enabled(a)) {
      best = a;
      break;
    }
  double best_s = std::numeric_limits<double>::infinity();
  for (CollectiveAlgorithm a : algorithms) {
    if (!enabled(a)) continue;
    std::optional<Protocol> protocol;
    const double t = least_protocol_s(model, a, bytes, in, &protocol) *
                     (a == CollectiveAlgorithm::Ring && in.fp8_ring_relegated ? nccl::kFp8RingRelegation : 1.0);
    if (t < best_s) {
      best_s = t;
      best = a;
    }
  }
  return best;
}

}  // namespace

CollectiveAlgorithm nccl_model_allreduce_algorithm(double bytes, const NcclTunerInputs& in) {
  return least_time({CollectiveAlgorithm::Tree, CollectiveAlgorithm::Ring, CollectiveAlgorithm::CollnetDirect,
                     CollectiveAlgorithm::CollnetChain, CollectiveAlgorithm::Nvls, CollectiveAlgorithm::NvlsTree},
                    nccl_model_allreduce_s, bytes, in);
}

double nccl_model_allgather_s(CollectiveAlgorithm alg, Protocol proto, double bytes, const NcclTunerInputs& in) {
  OVERLAPSIM_CHECK((alg == CollectiveAlgorithm::Ring || alg == CollectiveAlgorithm::Nvls ||
                    alg == CollectiveAlgorithm::Pat || alg == CollectiveAlgorithm::CollnetDirect) &&
                       in.ranks >= 2 &&
                       bytes >= 0 && in.graph_busbw_Bps > 0 && in.graph_channels >= 1 && in.comm_channels >= 1 &&
                       in.nodes >= 1 && in.cc_index >= 0 && in.cc_index <= 3,
                   "nccl_model_allgather_s: bad arguments");
  const int n = in.ranks;
  if (alg == CollectiveAlgorithm::Pat) {
    if (proto != Protocol::Simple || in.nodes != n) return std::numeric_limits<double>::infinity();
    return nccl::pat_latency_s(n) + bytes / (nccl::kPatBusBwFactor * in.graph_busbw_Bps);
  }
  if (alg == CollectiveAlgorithm::CollnetDirect) {
    // src/graph/tuning.cc: busBw = ppn · min(bwIntra, 0.9 · bwInter), left as algbw, and none
    // where a node has more local ranks than heads.
    const int ppn = n / std::max(1, in.nodes);
    if (!in.collnet || proto != Protocol::Simple || in.nodes < 2 || in.collnet_heads < ppn || in.collnet_heads < 1 ||
        in.collnet_intra_Bps <= 0 || in.collnet_inter_Bps <= 0)
      return std::numeric_limits<double>::infinity();
    const double bus = ppn * std::min(in.collnet_intra_Bps / in.collnet_heads, 0.9 * in.collnet_inter_Bps);
    return nccl::collnet_latency_s(true, ppn) + bytes / bus;
  }
  if (alg == CollectiveAlgorithm::Nvls && in.nodes > 1) {
    // Across nodes, with CollNet's AllGather or ReduceScatter (src/graph/tuning.cc): busBw =
    // h · min(intra · η · (h − 1)/h · (ppn − 1)/ppn, inter), not converted, and none where a node
    // has more local ranks than CollNet's heads; lat = hwLat NVLink 25 µs + network 18 µs.
    const int ppn = n / in.nodes;
    if (!in.nvls || !in.collnet || proto != Protocol::Simple || in.nvls_heads < 2 || in.nvls_intra_Bps <= 0 ||
        in.nvls_inter_Bps <= 0 || in.collnet_heads < ppn || ppn < 2 || nccl::kNvlsEfficiency[in.cc_index] <= 0)
      return std::numeric_limits<double>::infinity();
    const double h = in.nvls_heads;
    const double bus =
        std::min(in.nvls_intra_Bps * nccl::kNvlsEfficiency[in.cc_index] * (h - 1) / h * (ppn - 1.0) / ppn,
                 in.nvls_inter_Bps);
    return nccl::kNvlsCollNetLatency + bytes / bus;
  }
  if (alg == CollectiveAlgorithm::Nvls) {
    if (!in.nvls || proto != Protocol::Simple || in.nodes != 1 || in.nvls_heads < 2 || in.nvls_intra_Bps <= 0 ||
        nccl::kNvlsEfficiency[in.cc_index] <= 0)
      return std::numeric_limits<double>::infinity();
    const double h = in.nvls_heads;
    const double bus = in.nvls_intra_Bps * nccl::kNvlsEfficiency[in.cc_index] * (h - 1) / h * (n - 1.0) / n;
    return nccl::kHwLatNvlsNvlink + bytes / bus;
  }
  if (proto == Protocol::LL128 && !in.ll128) return std::numeric_limits<double>::infinity();
  const double bw = ring_busbw(proto, in) * n / (n - 1.0);
  return ring_latency_s(proto, n - 1, in.nodes - 1, in) + bytes / bw;
}

std::optional<Protocol> nccl_model_protocol(CollectiveKind kind, CollectiveAlgorithm alg, double bytes,
                                            const NcclTunerInputs& in) {
  OVERLAPSIM_CHECK(kind == CollectiveKind::AllReduce || kind == CollectiveKind::AllGather ||
                       kind == CollectiveKind::ReduceScatter,
                   "nccl_model_protocol: NCCL's tuner model here covers AllReduce, AllGather and ReduceScatter");
  std::optional<Protocol> best;
  least_protocol_s(kind == CollectiveKind::AllReduce ? nccl_model_allreduce_s : nccl_model_allgather_s, alg, bytes,
                   in, &best);
  return best;
}

CollectiveAlgorithm nccl_model_allgather_algorithm(double bytes, const NcclTunerInputs& in) {
  return least_time({CollectiveAlgorithm::Ring, CollectiveAlgorithm::CollnetDirect, CollectiveAlgorithm::Nvls,
                     CollectiveAlgorithm::Pat},
                    nccl_model_allgather_s, bytes, in);
}

}  // namespace overlapsim
