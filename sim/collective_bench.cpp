#include "sim/collective_bench.hpp"

#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/measured_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

namespace overlapsim {

BenchOp parse_bench_op(const std::string& text) {
  std::string t;
  for (char ch : text)
    if (ch != '_' && ch != '-') t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t.size() > 4 && t.compare(t.size() - 4, 4, "perf") == 0) t.resize(t.size() - 4);
  if (t == "allreduce") return BenchOp::AllReduce;
  if (t == "allgather") return BenchOp::AllGather;
  if (t == "reducescatter") return BenchOp::ReduceScatter;
  if (t == "alltoall") return BenchOp::AllToAll;
  if (t == "broadcast") return BenchOp::Broadcast;
  if (t == "reduce") return BenchOp::Reduce;
  if (t == "sendrecv") return BenchOp::SendRecv;
  throw std::invalid_argument(
      "expected allreduce, allgather, reducescatter, alltoall, broadcast, reduce or sendrecv, found '" + text + "'");
}

const char* to_string(BenchOp op) {
  switch (op) {
    case BenchOp::AllReduce: return "AllReduce";
    case BenchOp::AllGather: return "AllGather";
    case BenchOp::ReduceScatter: return "ReduceScatter";
    case BenchOp::AllToAll: return "AllToAll";
    case BenchOp::Broadcast: return "Broadcast";
    case BenchOp::Reduce: return "Reduce";
    case BenchOp::SendRecv: return "SendRecv";
  }
  return "?";
}

int nccl_tests_count_ranks(BenchOp op, int ranks) {
  return op == BenchOp::AllGather || op == BenchOp::ReduceScatter || op == BenchOp::AllToAll ? ranks : 1;
}

CollectiveKind bench_collective_kind(BenchOp op) {
  switch (op) {
    case BenchOp::AllReduce: return CollectiveKind::AllReduce;
    case BenchOp::AllGather: return CollectiveKind::AllGather;
    case BenchOp::ReduceScatter: return CollectiveKind::ReduceScatter;
    case BenchOp::AllToAll: return CollectiveKind::AllToAll;
    case BenchOp::Broadcast: return CollectiveKind::Broadcast;
    case BenchOp::Reduce: return CollectiveKind::Reduce;
    case BenchOp::SendRecv: break;
  }
  OVERLAPSIM_CHECK(false, "bench_collective_kind: a SendRecv is point to point, no collective");
  return CollectiveKind::AllReduce;
}

double busbw_factor(BenchOp op, int n) {
  if (n <= 1) return op == BenchOp::AllReduce || op == BenchOp::AllGather || op == BenchOp::ReduceScatter ||
                             op == BenchOp::AllToAll
                         ? 0.0
                         : 1.0;
  switch (op) {
    case BenchOp::AllReduce: return 2.0 * (n - 1) / n;
    case BenchOp::AllGather:
    case BenchOp::ReduceScatter:
    case BenchOp::AllToAll: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

std::vector<double> size_range(double from, double to, double factor) {
  if (!(from > 0) || !(to >= from)) throw std::invalid_argument("expected 0 < first size <= last size");
  if (!(factor >= 2)) throw std::invalid_argument("expected a size factor >= 2");
  std::vector<double> out;
  for (double s = from; s <= to * (1 + 1e-12); s *= factor) out.push_back(s);
  return out;
}

std::vector<int> bench_members(const Topology& topo, int ranks, int ranks_per_node) {
  if (ranks < 1) throw std::invalid_argument(fmt::format("expected 1 or more ranks, found {}", ranks));
  if (ranks_per_node < 0)
    throw std::invalid_argument(fmt::format("expected 1 or more ranks per node, found {}", ranks_per_node));
  std::vector<int> members;
  if (ranks_per_node == 0 || (topo.gpus_per_node > 0 && ranks_per_node == topo.gpus_per_node)) {
    if (ranks > topo.num_gpus())
      throw std::invalid_argument(fmt::format("expected at most {} ranks (the GPUs of {}), found {}", topo.num_gpus(),
                                              topo.name, ranks));
    for (int r = 0; r < ranks; ++r) members.push_back(r);
    return members;
  }
  if (ranks_per_node > topo.gpus_per_node)
    throw std::invalid_argument(fmt::format("expected at most {} ranks per node (the GPUs of a node of {}), found {}",
                                            topo.gpus_per_node, topo.name, ranks_per_node));
  const int nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  if (nodes > topo.num_nodes)
    throw std::invalid_argument(fmt::format("{} ranks at {} per node need {} nodes; {} has {}", ranks, ranks_per_node,
                                            nodes, topo.name, topo.num_nodes));
  for (int r = 0; r < ranks; ++r) members.push_back(r / ranks_per_node * topo.gpus_per_node + r % ranks_per_node);
  return members;
}

namespace {

BenchRow bench_size(const Topology& topo, BenchOp op, const std::vector<int>& all, double size, BenchOptions opt);

}  // namespace

std::vector<BenchRow> run_collective_bench(const Topology& topo, BenchOp op, int ranks,
                                           const std::vector<double>& sizes, const BenchOptions& opt) {
  // Each size alone from time 0 (regression: run one after the other, a size started on some
  // ranks while others finished the previous one, so a Broadcast of 256 B "took" less than one
  // of 8 B): the time of one collective, whatever came before it.
  const std::vector<int> all = bench_members(topo, ranks, opt.ranks_per_node);
  std::vector<BenchRow> rows;
  for (double size : sizes) {
    rows.push_back(bench_size(topo, op, all, size, opt));
    if (opt.sizes_done) ++*opt.sizes_done;
    if (opt.on_row) opt.on_row(rows.size() - 1, rows.back());
  }
  return rows;
}

namespace {

BenchRow bench_size(const Topology& topo, BenchOp op, const std::vector<int>& given, double size, BenchOptions opt) {
  const int ranks = static_cast<int>(given.size());
  OVERLAPSIM_CHECK(ranks >= 1 && given.back() < topo.num_gpus(), "rank count out of range");
  Schedule s;
  s.world_size = *std::max_element(given.begin(), given.end()) + 1;
  s.stream_names = {"comm"};
  // A rooted collective, or an AllReduce run as a tree, ends at different times on different
  // ranks (the root first): time it on every rank, so that the slowest is seen whether or not
  // --unfold is given (a tree simulates every member's flows anyway).
  const bool rooted = op == BenchOp::Broadcast || op == BenchOp::Reduce;
  OVERLAPSIM_CHECK(opt.root >= 0 && opt.root < ranks, "root out of range (callers check it)");
  std::vector<int> all = given;  // the group in ring order, its root first
  if (rooted) std::rotate(all.begin(), all.begin() + opt.root, all.end());
  const int g = s.intern_group(all, CommPurpose::DataParallel);
  const CollectiveKind kind = op == BenchOp::SendRecv ? CollectiveKind::AllReduce : bench_collective_kind(op);
  // How the replay will run it (rings, chains, trees, NVLS; not AllToAll and SendRecv, which are
  // point-to-point): it decides the folding below and names the row.
  // The collective every simulated rank runs (not for SendRecv).
  Op c;
  c.type = OpType::Collective;
  c.group = g;
  c.bytes = size;
  c.match = 0;
  c.channels = static_cast<int16_t>(opt.channels);
  c.algorithm = opt.algorithm;
  c.reduce_op = opt.replay.collectives.reduce_op;
  c.datatype = opt.replay.collectives.datatype;
  c.purpose = CommPurpose::DataParallel;
  c.name = to_string(op);
  c.collective = kind;
  // Planned through the replay's cache, which the replay below then takes it from.
  if (!opt.replay.plan_cache) opt.replay.plan_cache = make_plan_cache();
  const CollectivePlan* plan = nullptr;
  if (op != BenchOp::SendRecv && op != BenchOp::AllToAll) plan = &cached_plan(opt.replay, topo, all, c);
  // A tree in bulk (kMaxTreeSliceFlows), or a tree or a chain too large for its flows
  // (kMaxTreeFlows) and timed by its closed form in both fidelities: rank 0 and the member that
  // ends last stand for it (regressions: 16,384 ranks of a tree unfolded grew past 24 GB and were
  // killed; a Broadcast over 1024 GPUs at three sizes took 71 s). A tree slice by slice simulates
  // every rank.
  int slowest = -1;
  if (plan && !opt.unfold) {
    if (plan->tree_in_bulk() || plan->tree_flows() > kMaxTreeFlows || plan->chain_flows() > kMaxTreeFlows) {
      const std::vector<double> ends = plan->member_ends_s();
      slowest = static_cast<int>(std::max_element(ends.begin(), ends.end()) - ends.begin());
    } else {
      opt.unfold = plan->algorithm == CollectiveAlgorithm::Tree;
    }
  }
  // One rank stands for the others only where they all see the same machine (design §9): not
  // for an AllToAll where the ranks fill their nodes unevenly (a short node's GPUs have NICs to
  // themselves: 9 ranks over 8 + 1 GPUs at 1 GiB took 4993 µs folded against 39791 µs) or inside
  // a node whose GPU pairs differ (NVLink pairs beside PCIe), and not for SendRecv, whose ranks'
  // sends and receives overlap (a mirror's send would start after the representative's). These
  // simulate every rank. Rings over ranks that fill their nodes unevenly (a short last node)
  // fold: their closed form covers every hop, and the representative's flows move no faster than
  // their share of links it does not see the other ranks load (Task::Step).
  if (!opt.unfold && (op == BenchOp::SendRecv ||
                      (op == BenchOp::AllToAll && (topo.node_shape(all).first == 0 || !topo.uniform_within_nodes(all)))))
    opt.unfold = true;
  std::vector<int> simulated{all[0]};
  if (slowest > 0) {
    simulated.push_back(all[static_cast<size_t>(slowest)]);
  } else if (opt.unfold || (rooted && slowest < 0)) {
    simulated = all;
  }
  std::vector<int> position(static_cast<size_t>(s.world_size), -1);
  for (int i = 0; i < ranks; ++i) position[static_cast<size_t>(all[static_cast<size_t>(i)])] = i;
  for (int r : simulated) {
    RankProgram p{r, 1, {}};
    const int i = position[static_cast<size_t>(r)];
    if (op == BenchOp::SendRecv && ranks >= 2) {
      // nccl-tests sendrecv_perf: every rank sends to the next and receives from the previous.
      Op send;
      send.type = OpType::Send;
      send.peer = all[static_cast<size_t>((i + 1) % ranks)];
      send.bytes = size;
      send.match = -2 - static_cast<int64_t>(r);
      send.name = "send";
      Op recv = send;
      recv.type = OpType::Recv;
      recv.peer = all[static_cast<size_t>((i + ranks - 1) % ranks)];
      recv.match = -2 - static_cast<int64_t>(recv.peer);
      recv.name = "recv";
      p.ops.push_back(send);
      p.ops.push_back(recv);
      p.ops.back().deps = {0};  // the receive ends the pair, after the send
    } else if (op != BenchOp::SendRecv) {
      p.ops.push_back(c);
    }
    s.programs.push_back(std::move(p));
  }
  BenchRow row;
  row.size_bytes = size;
  row.plan = "-";
  if (s.programs[0].ops.empty()) return row;
  // sendrecv_perf's pairs run on one communicator of all its ranks (NCCL's p2p channels), of
  // the channels forced for every size where --channels sets them (NCCL_MIN/MAX_NCHANNELS).
  opt.replay.collectives.p2p_comm = {std::max(2, ranks), node_count(topo, all), std::max(0, opt.channels),
                                     local_ranks(topo, all)};
  const ReplayTimes t = replay(s, topo, opt.replay);
  // The last rank's end (a send/recv pair: its receive), from the last rank's start.
  double begin = 0, end = 0;
  for (size_t r = 0; r < t.start_s.size(); ++r) {
    begin = std::max(begin, t.start_s[r].front());
    end = std::max(end, t.end_s[r].back());
  }
  row.time_s = end - begin;
  row.algbw_Bps = row.time_s > 0 ? size / row.time_s : 0;
  row.busbw_Bps = row.algbw_Bps * busbw_factor(op, ranks);
  // Point to point: the channels NCCL's kernel runs on (a SendRecv's send and receive share a
  // base, so its message's; an AllToAll's, every piece's).
  const int p2p_channels = ranks < 2 ? 1
                           : op == BenchOp::SendRecv
                               ? p2p_split(topo, all[0], all[1], size, opt.replay.collectives.p2p_comm).channels
                               : alltoall_kernel_channels(topo, all, size, opt.replay.collectives.p2p_comm);
  row.plan = fmt::format("p2p/{}", p2p_channels);
  row.fallback = plan && plan->fallback;
  if (op != BenchOp::SendRecv && opt.replay.fidelity == Fidelity::Analytic &&
      find_measured(opt.replay.measured, c, topo, all, opt.replay.collectives, plan)) {
    row.plan = "measured";
  } else if (plan) {
    row.plan = fmt::format("{}/{}/{}", plan->chain ? "chain" : to_string(plan->algorithm), to_string(plan->protocol),
                           plan->channels);
  }
  return row;
}

}  // namespace

}  // namespace overlapsim
