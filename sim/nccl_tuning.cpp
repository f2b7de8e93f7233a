#include "sim/nccl_tuning.hpp"

#include "sim/error.hpp"

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

bool parse_algorithm(const std::string& text, CollectiveAlgorithm* out) {
  const std::string t = ascii_lower(text);
  if (t == "auto") *out = CollectiveAlgorithm::Auto;
  else if (t == "ring") *out = CollectiveAlgorithm::Ring;
  else if (t == "tree") *out = CollectiveAlgorithm::Tree;
  else if (t == "nvls") *out = CollectiveAlgorithm::Nvls;
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

}  // namespace overlapsim
