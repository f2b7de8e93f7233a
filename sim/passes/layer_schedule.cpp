// The layer-tier scheduler (Centauri, ASPLOS'24 §5.2): reorder the independent ops of one
// layer's forward or backward pass so that computation fills the time its collectives take.
//
// Megatron-LM issues a layer's ops in the order of the code: a tensor-parallel collective that
// blocks the compute stream leaves the GPU idle even where an independent GEMM is ready (the
// weight gradient of a GEMM whose input gradient is being reduced, or of the previous GEMM while
// the next one's input is gathered). This pass:
//  1. moves every collective of the selected purposes off the compute stream onto `comm_stream`
//     (its consumers already wait for it through their data dependencies);
//  2. per segment — a maximal run of consecutive ops with the same micro-batch, direction
//     (forward; or backward with its recomputation) and layer — list-schedules the ops with
//     their predicted durations: kernels and collectives on other streams run in their program
//     order as soon as their dependencies and stream allow; on the compute stream, of the
//     kernels that are ready when the stream frees, the one with the longest path to the end of
//     the segment runs first (the critical path; Graham's list scheduling with HLFET priorities,
//     Adam, Chandy & Dickson, CACM 1974). Communication ops left on the compute stream (receives)
//     keep their order among themselves and run as soon as they are ready;
//  3. writes the segment back in the order of the scheduled start times.
// Durations: a kernel's stand-alone time (at least the launch overhead); a collective's
// contention-free closed form (predict_collective_s); a send or receive its route time
// (predict_p2p_step_s), which counts a pipeline receive as if its sender were ready (the other
// stage's timing is not known to one rank's scheduler).
//
// Invariants: ops are only reordered inside a segment and only in an order that keeps every
// dependency before its dependent, so FLOPs, bytes and acyclicity hold; collectives and
// point-to-point ops keep their relative order on every stream, so members of a group (whose
// programs are alike) issue them in the same order and nothing can deadlock. The decision depends
// on the program's ops only, never on the rank. Memory: a kernel moves by at most the length of
// one layer's pass, so no activation is held beyond its layer.
#include "sim/passes/passes.hpp"

#include "sim/collective_plan.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <tuple>

namespace overlapsim {

namespace {

bool backward_direction(Phase p) { return p == Phase::Backward || p == Phase::Recompute; }

class LayerSchedule final : public Pass {
 public:
  explicit LayerSchedule(LayerScheduleOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "layer-schedule"; }
  std::string description() const override {
    return "layer tier: collectives off the compute stream, each layer's pass list-scheduled by critical path";
  }

  Schedule run(Schedule s, const PassContext& ctx) const override {
    const int16_t comm = intern_stream(s, o_.comm_stream);
    DurationCache durations(s, ctx);
    long long moved = 0, reordered = 0;
    for (auto& p : s.programs) {
      for (auto& op : p.ops)
        if (op.type == OpType::Collective && op.overlap_stream == 0 && selected(op.purpose)) {
          op.overlap_stream = comm;
          ++moved;
        }
      reordered += schedule_program(p, durations);
    }
    if (o_.stats != nullptr) {
      o_.stats->collectives_moved += moved;
      o_.stats->kernels_moved += reordered;
    }
    return s;
  }

 private:
  bool selected(CommPurpose p) const {
    return std::find(o_.purposes.begin(), o_.purposes.end(), p) != o_.purposes.end();
  }

  /// Predicted durations, cached by what determines them (collectives by group, kind, size,
  /// channels and algorithm; point-to-point by route and size).
  class DurationCache {
   public:
    DurationCache(const Schedule& s, const PassContext& ctx) : s_(s), ctx_(ctx) {}
    double of(const RankProgram& p, const Op& op) {
      const double lo = ctx_.cost.launch_overhead_s();
      switch (op.type) {
        case OpType::Compute:
          return std::max(op.duration_s, lo);
        case OpType::Collective: {
          const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes, op.channels,
                                           take_op_key(op));
          auto it = coll_.find(key);
          if (it == coll_.end()) it = coll_.emplace(key, predict_collective_s(s_, op, ctx_)).first;
          return it->second;
        }
        case OpType::Send:
        case OpType::Recv: {
          const int src = op.type == OpType::Send ? p.rank : op.peer, dst = op.type == OpType::Send ? op.peer : p.rank;
          const auto key = std::make_tuple(src, dst, op.bytes, op.num_sm == 0, op.group);
          auto it = p2p_.find(key);
          if (it == p2p_.end()) {
            // Its communicator: its group's (Op::group), else a two-rank one.
            const P2pCommunicator comm =
                op.group >= 0 ? group_communicator(ctx_.topology, s_.groups.at(op.group).ranks) : P2pCommunicator{};
            it = p2p_.emplace(key, predict_p2p_step_s(ctx_.topology, ctx_, {{src, dst}}, op.bytes, op.num_sm == 0, comm))
                     .first;
          }
          return it->second;
        }
      }
      return 0;
    }

   private:
    const Schedule& s_;
    const PassContext& ctx_;
    std::map<std::tuple<int, int, double, int, int>, double> coll_;
    std::map<std::tuple<int, int, double, bool, int>, double> p2p_;
  };

  /// Reorders every segment of `p`; returns how many kernels changed position.
  long long schedule_program(RankProgram& p, DurationCache& dur) const {
    const int n = static_cast<int>(p.ops.size());
    std::vector<int> order;  // new position → old index
    order.reserve(n);
    long long moved = 0;
    for (int a = 0; a < n;) {
      int b = a + 1;
      const Op& head = p.ops[a];
      while (b < n && p.ops[b].micro_batch == head.micro_batch && p.ops[b].layer == head.layer &&
             backward_direction(p.ops[b].phase) == backward_direction(head.phase))
        ++b;
      moved += schedule_segment(p, a, b, dur, order);
      a = b;
    }
    if (moved == 0) return 0;
    std::vector<int> new_of(n);
    for (int i = 0; i < n; ++i) new_of[order[i]] = i;
    std::vector<Op> ops;
    ops.reserve(n);
    for (int i = 0; i < n; ++i) {
      Op op = std::move(p.ops[order[i]]);
      for (auto& d : op.deps) d = new_of[d];
      ops.push_back(std::move(op));
    }
    p.ops = std::move(ops);
    return moved;
  }

  /// List-schedules ops [a, b) and appends their old indices to `order` in start order.
  long long schedule_segment(const RankProgram& p, int a, int b, DurationCache& dur, std::vector<int>& order) const {
    const int m = b - a;
    if (m <= 2) {
      for (int i = a; i < b; ++i) order.push_back(i);
      return 0;
    }
    std::vector<double> d(m), level(m, 0.0), finish(m, -1.0), start(m, 0.0);
    std::vector<std::vector<int>> succ(m);
    std::vector<int> waiting(m, 0);
    for (int i = 0; i < m; ++i) {
      d[i] = dur.of(p, p.ops[a + i]);
      for (int dep : p.ops[a + i].deps)
        if (dep >= a && dep < b) {
          succ[dep - a].push_back(i);
          ++waiting[i];
        }
    }
    // Longest path from an op to the segment's end, the op included (deps point backwards).
    for (int i = m - 1; i >= 0; --i) {
      double best = 0;
      for (int j : succ[i]) best = std::max(best, level[j]);
      level[i] = d[i] + best;
    }
    // Streams: the compute stream chooses; the others (and the compute stream's communication
    // ops, among themselves) keep program order.
    std::map<int, std::vector<int>> fifo;  // stream → its ops in order (compute stream: comm ops)
    for (int i = 0; i < m; ++i) {
      const Op& op = p.ops[a + i];
      if (op.overlap_stream != 0 || op.type != OpType::Compute) fifo[op.overlap_stream].push_back(i);
    }
    std::map<int, size_t> head;
    std::map<int, double> free_at;
    std::vector<int> ready_kernels;  // compute-stream kernels whose deps are all scheduled
    for (int i = 0; i < m; ++i)
      if (waiting[i] == 0 && p.ops[a + i].overlap_stream == 0 && p.ops[a + i].type == OpType::Compute)
        ready_kernels.push_back(i);
    std::vector<std::pair<double, int>> started;  // (start, sequence) per op, for the final order
    started.assign(m, {0.0, 0});
    int seq = 0, done = 0;
    auto ready_time = [&](int i) {
      double t = 0;
      for (int dep : p.ops[a + i].deps)
        if (dep >= a && dep < b) t = std::max(t, finish[dep - a]);
      return t;
    };
    auto commit = [&](int i, int stream) {
      start[i] = std::max(free_at[stream], ready_time(i));
      finish[i] = start[i] + d[i];
      free_at[stream] = finish[i];
      started[i] = {start[i], seq++};
      ++done;
      for (int j : succ[i])
        if (--waiting[j] == 0 && p.ops[a + j].overlap_stream == 0 && p.ops[a + j].type == OpType::Compute)
          ready_kernels.push_back(j);
    };
    while (done < m) {
      // Every stream head whose dependencies are scheduled runs as soon as it can.
      bool progress = true;
      while (progress) {
        progress = false;
        for (auto& [stream, q] : fifo) {
          size_t& h = head[stream];
          while (h < q.size() && waiting[q[h]] == 0) {
            // A compute-stream communication op waits its turn among the kernels: it runs when
            // the stream frees, before any kernel chosen later (it keeps program order with them
            // only through its dependencies).
            commit(q[h], stream);
            ++h;
            progress = true;
          }
        }
      }
      if (ready_kernels.empty()) {
        OVERLAPSIM_CHECK(done == m, "layer-schedule: no op can run in a segment of " + std::to_string(p.rank));
        break;
      }
      // Of the kernels ready by the time the compute stream frees (or the earliest ready one
      // later), the one on the longest path.
      double earliest = std::numeric_limits<double>::infinity();
      for (int i : ready_kernels) earliest = std::min(earliest, ready_time(i));
      const double t0 = std::max(free_at[0], earliest);
      int pick = -1;
      for (int i : ready_kernels) {
        if (ready_time(i) > t0) continue;
        if (pick < 0 || level[i] > level[pick] || (level[i] == level[pick] && i < pick)) pick = i;
      }
      ready_kernels.erase(std::find(ready_kernels.begin(), ready_kernels.end(), pick));
      commit(pick, 0);
    }
    std::vector<int> idx(m);
    for (int i = 0; i < m; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](int x, int y) { return started[x] < started[y]; });
    long long moved = 0;  // kernels that now run after an op that used to follow them
    int latest = -1;
    for (int i = 0; i < m; ++i) {
      order.push_back(a + idx[i]);
      if (idx[i] < latest && p.ops[a + idx[i]].type == OpType::Compute) ++moved;
      latest = std::max(latest, idx[i]);
    }
    return moved;
  }

  LayerScheduleOptions o_;
};

}  // namespace

std::unique_ptr<Pass> make_layer_schedule(LayerScheduleOptions opt) { return std::make_unique<LayerSchedule>(std::move(opt)); }

}  // namespace overlapsim
