// The replay engine's build (sim/replay_engine.cpp): each rank's dependency lists (successors,
// pending counts), the flow pairs the backend routes, the mirrors' partner sends, and the runs of
// compute kernels replayed as one activity (ReplayOptions::every_kernel). State in
// replay_engine_state.hpp.
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/replay_engine_state.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace overlapsim::detail {

void Replayer::build() {
  const int nr = static_cast<int>(s_.programs.size());
  std::vector<int> ranks;
  rank_index_.assign(static_cast<size_t>(std::max(0, s_.world_size)), -1);
  for (int i = 0; i < nr; ++i) {
    const int r = s_.programs[i].rank;
    if (static_cast<size_t>(r) >= rank_index_.size()) rank_index_.resize(static_cast<size_t>(r) + 1, -1);
    rank_index_[static_cast<size_t>(r)] = i;
    ranks.push_back(s_.programs[i].rank);
  }
  // One pass over each rank's ops, the one read of them (they are most of the replay's memory):
  // stream order and dependencies counted and noted, the communication ops noted for the scans
  // below. A second over what it noted: each op's successors (in the order a walk of the ops
  // would list them: an op's next on its stream, then the ops depending on it, by index) and
  // the runs of compute kernels.
  size_t total = 0;
  op_base_.resize(static_cast<size_t>(nr));
  for (int ri = 0; ri < nr; ++ri) {
    op_base_[ri] = total;
    total += s_.programs[ri].ops.size();
  }
  ops_.assign(total + 1, OpState{});
  succ_.clear();
  succ_.reserve(2 * total);  // about an edge of stream order and one dependency per op
  times_.start_s.resize(nr);
  times_.end_s.resize(nr);
  start_.resize(static_cast<size_t>(nr));
  end_.resize(static_cast<size_t>(nr));
  for (int ri = 0; ri < nr; ++ri) {
    times_.start_s[ri].assign(s_.programs[ri].ops.size(), -1.0);
    times_.end_s[ri].assign(s_.programs[ri].ops.size(), -1.0);
    start_[ri] = times_.start_s[ri].data();
    end_[ri] = times_.end_s[ri].data();
  }
  std::vector<std::vector<int>> comm_ops(nr);
  // By op of the rank at hand: successors counted, next op on its stream, deps, its one dependency
  // (-1: none, -2: more than one op); its deps, op by op.
  std::vector<int> count, next_in_stream, num_deps, sole_dep, dep_src, last, fill;
  std::vector<char> in_run;  // by op: it follows another in a kernel run
  const bool runs = !opt_.every_kernel;
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    const int n = static_cast<int>(p.ops.size());
    OpState* st = &ops_[op_base_[ri]];
    count.assign(n, 0);
    next_in_stream.assign(n, -1);
    num_deps.resize(n);
    sole_dep.resize(n);
    dep_src.clear();
    last.assign(p.num_streams, -1);
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      st[i].bits = static_cast<uint32_t>(op.type) << 24;
      if (op.type == OpType::Compute) st[i].run_s = kernel_s(op);
      else comm_ops[ri].push_back(i);
      int& prev = last[op.stream];
      if (prev >= 0) {
        next_in_stream[prev] = i;
        ++count[prev];
        ++st[i].bits;
      }
      prev = i;
      int sole = -1;
      for (int d : op.deps) {
        ++count[d];
        dep_src.push_back(d);
        sole = sole == -1 || sole == d ? d : -2;
      }
      num_deps[i] = static_cast<int>(op.deps.size());
      if (num_deps[i] + 1 >= static_cast<int>(OpState::kPendingMask))
        throw std::runtime_error("replay: op " + std::to_string(i) + " of rank " + std::to_string(p.rank) + " (" +
                                 p.ops[i].name.str() + ") has " + std::to_string(num_deps[i]) +
                                 " dependencies; the replay counts at most 2^24 - 2");
      st[i].bits += static_cast<uint32_t>(num_deps[i]);
      sole_dep[i] = sole;
    }
    const int base = static_cast<int>(succ_.size());
    fill.resize(n);
    in_run.assign(n, 0);
    int at = base;
    for (int i = 0; i < n; ++i) {
      st[i].succ_begin = fill[i] = at;
      at += count[i];
    }
    succ_.resize(static_cast<size_t>(at));
    for (int i = 0, e = 0; i < n; ++i) {
      const int j = next_in_stream[i];
      if (j >= 0) succ_[fill[i]++] = j;
      for (const int end = e + num_deps[i]; e < end; ++e) succ_[fill[dep_src[e]]++] = i;
      // Runs of compute kernels (ReplayOptions::every_kernel off): j, next after i on its stream,
      // joins i's run when both are compute ops, j waits on i alone (its stream predecessor, and
      // deps on i only) and nothing else waits on i: then j starts the instant i ends, on the
      // same GPU beside the same kernels.
      if (runs && j >= 0 && st[i].type() == OpType::Compute && st[j].type() == OpType::Compute &&
          (num_deps[j] == 0 || sole_dep[j] == i) && count[i] == 1 + num_deps[j] && st[j].pending() == 1 + num_deps[j]) {
        st[i].bits |= OpState::kRunGoesOn;  // (j, its stream's next, is its first successor: run_next)
        in_run[j] = 1;
      }
    }
    // A run's first op (no run leads to it) holds the run's summed time, summed from its first;
    // a later op keeps its own kernel_s (Replayer::kernel_done).
    for (int i = 0; i < n; ++i)
      if (st[i].run_goes_on() && !in_run[i]) {
        double sum = 0;
        for (int k = i; k >= 0; k = run_next(st, k)) sum += st[k].run_s;
        st[i].run_s = sum;
      }
    for (int i = 0; i < n; ++i)
      if (st[i].pending() == 0) {
        ready_rank_.push_back(ri);
        ready_op_.push_back(i);
      }
  }
  ops_[total].succ_begin = static_cast<int>(succ_.size());
  // Every (src, dst) pair a flow may use. A send names its pair once per message (millions
  // with collective matmul's ring permutes): each pair is kept once as it comes, not sorted
  // out of a list of them all.
  std::vector<std::pair<int, int>> pairs;
  std::unordered_set<int64_t> seen;
  const auto add = [&](int src, int dst) {
    if (!pairs.empty() && pairs.back() == std::pair<int, int>{src, dst}) return;
    if (seen.insert((int64_t{src} << 32) | static_cast<uint32_t>(dst)).second) pairs.emplace_back(src, dst);
  };
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    for (const int i : comm_ops[ri]) {
      const Op& op = p.ops[i];
      if (op.type == OpType::Collective) {
        const auto& g = s_.groups[op.group].ranks;
        const int n = static_cast<int>(g.size());
        if (n <= 1) continue;
        if (op.collective == CollectiveKind::AllToAll) {
          for (int j = 0; j < n; ++j)
            if (g[j] != p.rank) {
              add(p.rank, g[j]);
              if (rank_idx(g[j]) < 0) add(g[j], p.rank);
            }
          continue;
        }
        if (opt_.fidelity == Fidelity::Analytic) continue;
        const CollectivePlan& plan = plan_of(op).plan;
        for (const auto& ch : plan.rings)
          for (const Hop2& h : ch.hops) add(g[h.src_pos], g[h.dst_pos]);
        for (const auto& tp : plan.trees)
          for (int v = 0; v < n; ++v)
            if (v != tp.root) {
              add(g[v], g[tp.parent[v]]);
              add(g[tp.parent[v]], g[v]);
            }
        for (const CollectivePlan::BulkFlow& f : plan.bulk) add(g[f.src_pos], g[f.dst_pos]);
      } else if (op.type == OpType::Send) {
        add(p.rank, op.peer);
      } else if (op.type == OpType::Recv && rank_idx(op.peer) < 0) {
        add(op.peer, p.rank);
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  // Power state k of a GPU: its speed while communication kernels hold k of its SMs.
  std::vector<double> speeds{kGpuSpeed};
  for (int k = 1; k <= opt_.sm_count; ++k)
    speeds.push_back(kGpuSpeed * std::max(1e-3, 1.0 - std::min(1.0, opt_.sm_interference * k / opt_.sm_count)));
  be_.build(topo_, ranks, pairs, opt_.link_efficiency, speeds);
  held_sms_.assign(nr, 0);

  mirror_partner_.resize(nr);
  mirror_partner_send_.resize(nr);
  for (int ri = 0; ri < nr; ++ri) mirror_partners(ri, comm_ops[ri]);
}

void Replayer::kernel_done(int ri, int oi) {
  OpState* st = &ops_[op_base_[static_cast<size_t>(ri)]];
  if (!st[oi].run_goes_on()) {
    complete(ri, oi);
    return;
  }
  // A run: its ops tile [its start, now] in proportion to their work.
  const auto& ops = s_.programs[ri].ops;
  const double t0 = start_of(ri, oi), span = be_.now() - t0, total = st[oi].run_s;
  double done = 0;
  int k = oi;
  for (; st[k].run_goes_on(); k = run_next(st, k)) {
    // (The first op's run_s is the run's; a later one's its own kernel_s, OpState.)
    done += k == oi ? kernel_s(ops[k]) : st[k].run_s;
    const double end = total > 0 ? t0 + span * (done / total) : t0;
    end_of(ri, k) = end;
    start_of(ri, run_next(st, k)) = end;
    ++completed_;
  }
  complete(ri, k);
}

void Replayer::mirror_partners(int ri, const std::vector<int>& comm_ops) {
  const auto& ops = s_.programs[ri].ops;
  std::map<int, std::vector<int>> sends, recvs;  // peer → op indices in program order
  for (const int i : comm_ops) {
    if (ops[i].type == OpType::Send && rank_idx(ops[i].peer) < 0) sends[ops[i].peer].push_back(i);
    if (ops[i].type == OpType::Recv && rank_idx(ops[i].peer) < 0) recvs[ops[i].peer].push_back(i);
  }
  for (const auto& [p, rv] : recvs) {
    int q = -1;
    if (sends.size() == 1) {
      q = sends.begin()->first;
    } else if (sends.size() == 2 && sends.count(p)) {
      q = sends.begin()->first == p ? std::next(sends.begin())->first : sends.begin()->first;
    }
    if (q < 0 || sends[q].size() != rv.size()) continue;
    if (mirror_partner_[ri].empty()) {
      mirror_partner_[ri].assign(ops.size(), -1);
      mirror_partner_send_[ri].assign(ops.size(), -1);
    }
    for (size_t k = 0; k < rv.size(); ++k) {
      mirror_partner_[ri][sends[q][k]] = rv[k];
      mirror_partner_send_[ri][rv[k]] = sends[q][k];
    }
  }
}

}  // namespace overlapsim::detail
