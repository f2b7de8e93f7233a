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
  // One pass over each rank's ops (they are most of the replay's memory: one read of each):
  // stream order and dependencies counted, the communication ops noted for the scans below.
  pending_.resize(nr);
  succ_begin_.resize(nr);
  succ_.resize(nr);
  times_.start_s.resize(nr);
  times_.end_s.resize(nr);
  std::vector<std::vector<int>> comm_ops(nr), count(nr), next_in_stream(nr);
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    const int n = static_cast<int>(p.ops.size());
    total_ops_ += n;
    times_.start_s[ri].assign(n, -1.0);
    times_.end_s[ri].assign(n, -1.0);
    auto& cnt = count[ri];
    auto& nis = next_in_stream[ri];
    cnt.assign(n + 1, 0);
    nis.assign(n, -1);
    std::vector<int> last(p.num_streams, -1);
    auto& pend = pending_[ri];
    pend.assign(n, 0);
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      if (op.type != OpType::Compute) comm_ops[ri].push_back(i);
      int& prev = last[op.stream];
      if (prev >= 0) {
        nis[prev] = i;
        ++cnt[prev];
        ++pend[i];
      }
      prev = i;
      for (int d : op.deps) {
        ++cnt[d];
        ++pend[i];
      }
    }
  }
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
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    const int n = static_cast<int>(p.ops.size());
    const auto& cnt = count[ri];
    const auto& nis = next_in_stream[ri];
    auto& begin = succ_begin_[ri];
    begin.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) begin[i + 1] = begin[i] + cnt[i];
    auto& list = succ_[ri];
    list.assign(begin[n], 0);
    std::vector<int> fill(begin.begin(), begin.end() - 1);
    // Runs of compute kernels (ReplayOptions::every_kernel off) are found in the same pass.
    const bool runs = !opt_.every_kernel;
    std::vector<int>* next = nullptr;
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      if (nis[i] >= 0) list[fill[i]++] = nis[i];
      for (int d : op.deps) list[fill[d]++] = i;
      // (j joins i's run only where j waits on as many as wait on i: checked first, no op read.)
      if (runs && nis[i] >= 0 && pending_[ri][nis[i]] == cnt[i] && joins_run(ri, i, nis[i], cnt[i])) {
        if (next == nullptr) {
          chain_next_.resize(static_cast<size_t>(nr));
          next = &chain_next_[ri];
          next->assign(n, -1);
        }
        (*next)[i] = nis[i];
      }
    }
    for (int i = 0; i < n; ++i)
      if (pending_[ri][i] == 0) {
        ready_rank_.push_back(ri);
        ready_op_.push_back(i);
      }
  }
}

bool Replayer::joins_run(int ri, int i, int j, int successors) const {
  // j joins i's run when it waits only on i (its stream predecessor, and deps on i alone) and
  // nothing else waits on i: then j starts the instant i ends, on the same GPU beside the same
  // kernels.
  const auto& ops = s_.programs[ri].ops;
  if (ops[i].type != OpType::Compute || ops[j].type != OpType::Compute) return false;
  int on_i = 0;
  for (int d : ops[j].deps) on_i += d == i;
  return on_i == static_cast<int>(ops[j].deps.size()) && successors == 1 + on_i && pending_[ri][j] == 1 + on_i;
}

double Replayer::run_s(int ri, int oi) const {
  const auto& ops = s_.programs[ri].ops;
  const auto& next = chain_next_[ri];
  double sum = 0;
  for (int k = oi; k >= 0; k = next[k]) sum += kernel_s(ops[k]);
  return sum;
}

void Replayer::kernel_done(int ri, int oi) {
  if (!continues_run(ri, oi)) {
    complete(ri, oi);
    return;
  }
  // A run: its ops tile [its start, now] in proportion to their work.
  const auto& ops = s_.programs[ri].ops;
  const auto& next = chain_next_[ri];
  const double t0 = times_.start_s[ri][oi], span = be_.now() - t0, total = run_s(ri, oi);
  double done = 0;
  int k = oi;
  for (; next[k] >= 0; k = next[k]) {
    done += kernel_s(ops[k]);
    const double end = total > 0 ? t0 + span * (done / total) : t0;
    times_.end_s[ri][k] = end;
    times_.start_s[ri][next[k]] = end;
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
