#include "sim/replay.hpp"

#include "sim/error.hpp"

#include <simgrid/s4u.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <sys/wait.h>
#include <unistd.h>

namespace sg4 = simgrid::s4u;

namespace overlapsim {

const char* to_string(Fidelity f) { return f == Fidelity::Flow ? "flow" : "analytic"; }

Fidelity parse_fidelity(const std::string& text) {
  if (text == "flow") return Fidelity::Flow;
  if (text == "analytic") return Fidelity::Analytic;
  throw std::invalid_argument("expected 'flow' or 'analytic', found '" + text + "'");
}

namespace {

/// Speed of a GPU host: a kernel of t seconds is t · kGpuSpeed units of work.
constexpr double kGpuSpeed = 1e9;

int ring_steps(CollectiveKind k, int n) {
  if (n <= 1) return 0;
  return k == CollectiveKind::AllReduce ? 2 * (n - 1) : n - 1;
}

/// What a SimGrid activity stands for.
struct Task {
  enum Kind : uint8_t { Kernel, CollStep, CollTimer, CollDelay, P2PFlow } kind;
  int rank_idx = -1;  ///< simulated rank (index into programs) the activity belongs to
  int op = -1;
  int64_t match = -1;
  int pos = -1;       ///< CollStep: ring position of the sender
  sg4::ActivityPtr activity;
  double started_s = 0;
};

struct Member {
  int rank_idx = -1;  ///< -1: a mirror (not simulated)
  int op = -1;
  bool active = false;  ///< its flows are simulated (every simulated member; mirrors of uneven rings)
  bool ready = false;
  bool done = false;
  int steps_started = 0;
  int steps_done = 0;
};

struct CollState {
  int steps = 0;
  uint64_t chunk_bytes = 0;
  int group = -1;
  int simulated = 0;      ///< simulated members
  int remaining = 0;      ///< simulated members not yet done
  int ready_count = 0;    ///< simulated members that reached the collective
  int in_flight = 0;      ///< flows started and not finished
  std::vector<Member> members;  ///< by ring position
};

struct P2PState {
  bool arrived = false;
  int recv_rank_idx = -1;
  int recv_op = -1;
  bool recv_ready = false;
};

class Replayer {
 public:
  Replayer(const Schedule& s, const Topology& topo, const ReplayOptions& opt) : s_(s), topo_(topo), opt_(opt) {}

  ReplayTimes run();

 private:
  void build();
  void on_ready(int ri, int oi);
  void complete(int ri, int oi);
  void drain();
  void on_activity_done(Task& t);
  void coll_ready(int ri, int oi);
  void coll_advance(CollState& c, int64_t match, int pos);
  void coll_check_done(CollState& c, int64_t match, int pos);
  void start_flow(Task::Kind kind, int src_rank, int dst_rank, uint64_t bytes, int ri, int oi, int64_t match,
                  int pos);
  void start_timer(double seconds, int ri, int oi, int64_t match);
  int rank_idx(int rank) const {
    auto it = rank_index_.find(rank);
    return it == rank_index_.end() ? -1 : it->second;
  }
  /// Bottleneck bandwidth (bytes/s, after efficiency) and total latency (s) of a route.
  std::pair<double, double> route_bw_lat(int src, int dst) const;
  /// Whether the ring hops of a group differ (then mirrors' flows are simulated too, since one
  /// representative's hop no longer stands for the slowest one).
  bool uneven_ring(int group);
  /// For a ring whose hops share one bottleneck bandwidth but differ in latency: the latency a
  /// representative's hop lacks against the slowest hop (seconds); 0 for even rings.
  double latency_gap(int group, int pos);
  void coll_maybe_erase(int64_t match);

  const Schedule& s_;
  const Topology& topo_;
  const ReplayOptions& opt_;
  Platform pf_;
  sg4::Host* timer_host_ = nullptr;
  std::unordered_map<int, int> rank_index_;
  std::vector<std::vector<int>> pending_;      // per rank, per op: unfinished predecessors
  std::vector<std::vector<int>> succ_begin_;   // CSR of successors
  std::vector<std::vector<int>> succ_;
  std::vector<int> ready_queue_rank_, ready_queue_op_;
  std::deque<Task> tasks_;
  std::vector<sg4::ActivityPtr> finished_;
  std::unordered_map<int64_t, CollState> colls_;
  std::vector<int8_t> uneven_;  // per group: -1 unknown, 0 even, 1 uneven
  std::vector<double> max_hop_latency_;  // per group, seconds (valid once uneven_ is known)
  std::unordered_map<int64_t, P2PState> p2p_;
  ReplayTimes times_;
  long long completed_ = 0, total_ops_ = 0;
};

std::pair<double, double> Replayer::route_bw_lat(int src, int dst) const {
  double bw = std::numeric_limits<double>::infinity(), lat = 0;
  for (const Hop& h : topo_.route(src, dst)) {
    const Link& l = topo_.link(h.link_id);
    bw = std::min(bw, l.bandwidth_Bps * opt_.link_efficiency.of(l.kind));
    lat += l.latency_s;
  }
  return {bw, lat};
}

bool Replayer::uneven_ring(int group) {
  if (uneven_.empty()) {
    uneven_.assign(s_.groups.size(), -1);
    max_hop_latency_.assign(s_.groups.size(), 0.0);
  }
  int8_t& u = uneven_[group];
  if (u >= 0) return u == 1;
  const auto& g = s_.groups[group].ranks;
  const int n = static_cast<int>(g.size());
  u = 0;
  if (n > 2) {
    const double bw0 = route_bw_lat(g[0], g[1]).first;
    for (int pos = 0; pos < n; ++pos) {
      const auto [bw, lat] = route_bw_lat(g[pos], g[(pos + 1) % n]);
      if (bw != bw0) u = 1;
      max_hop_latency_[group] = std::max(max_hop_latency_[group], lat);
    }
  }
  return u == 1;
}

double Replayer::latency_gap(int group, int pos) {
  if (uneven_ring(group)) return 0;
  const auto& g = s_.groups[group].ranks;
  const int n = static_cast<int>(g.size());
  if (n <= 2) return 0;
  return max_hop_latency_[group] - route_bw_lat(g[pos], g[(pos + 1) % n]).second;
}

void Replayer::build() {
  const int nr = static_cast<int>(s_.programs.size());
  std::vector<int> ranks;
  for (int i = 0; i < nr; ++i) {
    rank_index_[s_.programs[i].rank] = i;
    ranks.push_back(s_.programs[i].rank);
  }
  // Every (src, dst) pair a flow may use.
  std::vector<std::pair<int, int>> pairs;
  for (const auto& p : s_.programs)
    for (const auto& op : p.ops) {
      if (op.type == OpType::Collective) {
        const auto& g = s_.groups[op.group].ranks;
        const int n = static_cast<int>(g.size());
        if (n <= 1) continue;
        if (opt_.fidelity == Fidelity::Flow && uneven_ring(op.group)) {
          for (int pos = 0; pos < n; ++pos) pairs.emplace_back(g[pos], g[(pos + 1) % n]);
          continue;
        }
        for (int pos = 0; pos < n; ++pos)
          if (g[pos] == p.rank) {
            pairs.emplace_back(p.rank, g[(pos + 1) % n]);
            if (rank_idx(g[(pos + n - 1) % n]) < 0) pairs.emplace_back(g[(pos + n - 1) % n], p.rank);
          }
      } else if (op.type == OpType::Send) {
        pairs.emplace_back(p.rank, op.peer);
      } else if (op.type == OpType::Recv && rank_idx(op.peer) < 0) {
        pairs.emplace_back(op.peer, p.rank);
      }
    }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  pf_ = build_platform(topo_, ranks, pairs, opt_.link_efficiency, kGpuSpeed, true);
  timer_host_ = pf_.timer;

  pending_.resize(nr);
  succ_begin_.resize(nr);
  succ_.resize(nr);
  times_.start_s.resize(nr);
  times_.end_s.resize(nr);
  for (int ri = 0; ri < nr; ++ri) {
    const auto& p = s_.programs[ri];
    const int n = static_cast<int>(p.ops.size());
    total_ops_ += n;
    times_.start_s[ri].assign(n, -1.0);
    times_.end_s[ri].assign(n, -1.0);
    std::vector<int> count(n + 1, 0), last(p.num_streams, -1), next_in_stream(n, -1);
    pending_[ri].assign(n, 0);
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      int& prev = last[op.stream];
      if (prev >= 0) {
        next_in_stream[prev] = i;
        ++count[prev];
        ++pending_[ri][i];
      }
      prev = i;
      for (int d : op.deps) {
        ++count[d];
        ++pending_[ri][i];
      }
    }
    auto& begin = succ_begin_[ri];
    begin.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) begin[i + 1] = begin[i] + count[i];
    auto& list = succ_[ri];
    list.assign(begin[n], 0);
    std::vector<int> fill(begin.begin(), begin.end() - 1);
    for (int i = 0; i < n; ++i) {
      if (next_in_stream[i] >= 0) list[fill[i]++] = next_in_stream[i];
      for (int d : p.ops[i].deps) list[fill[d]++] = i;
    }
    for (int i = 0; i < n; ++i)
      if (pending_[ri][i] == 0) {
        ready_queue_rank_.push_back(ri);
        ready_queue_op_.push_back(i);
      }
  }
}

void Replayer::drain() {
  while (!ready_queue_rank_.empty()) {
    const int ri = ready_queue_rank_.back(), oi = ready_queue_op_.back();
    ready_queue_rank_.pop_back();
    ready_queue_op_.pop_back();
    on_ready(ri, oi);
  }
}

void Replayer::complete(int ri, int oi) {
  times_.end_s[ri][oi] = sg4::Engine::get_clock();
  ++completed_;
  const auto& begin = succ_begin_[ri];
  for (int k = begin[oi]; k < begin[oi + 1]; ++k) {
    const int j = succ_[ri][k];
    if (--pending_[ri][j] == 0) {
      ready_queue_rank_.push_back(ri);
      ready_queue_op_.push_back(j);
    }
  }
}

void Replayer::start_flow(Task::Kind kind, int src_rank, int dst_rank, uint64_t bytes, int ri, int oi,
                          int64_t match, int pos) {
  tasks_.push_back(Task{kind, ri, oi, match, pos, nullptr, sg4::Engine::get_clock()});
  Task& t = tasks_.back();
  sg4::CommPtr c = sg4::Comm::sendto_init(pf_.gpu_hosts.at(src_rank), pf_.gpu_hosts.at(dst_rank));
  c->set_payload_size(bytes);
  c->set_data(&t);
  t.activity = c;
  ++times_.activities;
  c->start();
}

void Replayer::start_timer(double seconds, int ri, int oi, int64_t match) {
  tasks_.push_back(Task{Task::CollTimer, ri, oi, match, -1, nullptr});
  Task& t = tasks_.back();
  sg4::ExecPtr x = sg4::Exec::init();
  x->set_flops_amount(seconds * kGpuSpeed);
  x->set_host(timer_host_);
  x->set_data(&t);
  t.activity = x;
  ++times_.activities;
  x->start();
}

void Replayer::on_ready(int ri, int oi) {
  const Op& op = s_.programs[ri].ops[oi];
  times_.start_s[ri][oi] = sg4::Engine::get_clock();
  switch (op.type) {
    case OpType::Compute: {
      const double seconds = std::max(op.duration_s, opt_.launch_overhead_s);
      if (seconds <= 0) {
        complete(ri, oi);
        return;
      }
      tasks_.push_back(Task{Task::Kernel, ri, oi, -1, -1, nullptr});
      Task& t = tasks_.back();
      sg4::ExecPtr x = sg4::Exec::init();
      x->set_flops_amount(seconds * kGpuSpeed);
      x->set_host(pf_.gpu_hosts.at(s_.programs[ri].rank));
      x->set_data(&t);
      t.activity = x;
      ++times_.activities;
      x->start();
      return;
    }
    case OpType::Collective:
      coll_ready(ri, oi);
      return;
    case OpType::Send:
      start_flow(Task::P2PFlow, s_.programs[ri].rank, op.peer, static_cast<uint64_t>(std::llround(op.bytes)), ri, oi,
                 op.match, -1);
      return;
    case OpType::Recv: {
      P2PState& st = p2p_[op.match];
      st.recv_rank_idx = ri;
      st.recv_op = oi;
      st.recv_ready = true;
      if (st.arrived) {
        p2p_.erase(op.match);
        complete(ri, oi);
      } else if (rank_idx(op.peer) < 0) {
        // The sender is a mirror: its data leaves when this receive is posted.
        start_flow(Task::P2PFlow, op.peer, s_.programs[ri].rank, static_cast<uint64_t>(std::llround(op.bytes)), -1,
                   -1, op.match, -1);
      }
      return;
    }
  }
}

void Replayer::coll_ready(int ri, int oi) {
  const Op& op = s_.programs[ri].ops[oi];
  const auto& g = s_.groups[op.group].ranks;
  const int n = static_cast<int>(g.size());
  auto [it, fresh] = colls_.try_emplace(op.match);
  CollState& c = it->second;
  if (fresh) {
    c.steps = ring_steps(op.collective, n);
    c.group = op.group;
    c.chunk_bytes = n > 0 ? static_cast<uint64_t>(std::llround(op.bytes / n)) : 0;
    c.members.resize(n);
    const bool mirrors = opt_.fidelity == Fidelity::Flow && c.steps > 0 && uneven_ring(op.group);
    for (int pos = 0; pos < n; ++pos) {
      Member& m = c.members[pos];
      m.rank_idx = rank_idx(g[pos]);
      m.active = m.rank_idx >= 0 || mirrors;
      if (m.rank_idx >= 0) ++c.simulated;
    }
    c.remaining = c.simulated;
  }
  int pos = 0;
  while (g[pos] != s_.programs[ri].rank) ++pos;
  Member& m = c.members[pos];
  OVERLAPSIM_CHECK(!m.ready, "collective " + op.name + " reached twice by one rank (duplicate match id)");
  m.op = oi;
  m.ready = true;
  ++c.ready_count;
  const int64_t match = op.match;
  if (c.steps == 0) {
    m.done = true;
    complete(ri, oi);
    --c.remaining;
    coll_maybe_erase(match);
    return;
  }
  if (opt_.fidelity == Fidelity::Analytic) {
    if (c.ready_count < c.simulated) return;  // wait for every simulated member
    // The ring advances at the pace of its slowest hop: the largest hop latency plus a chunk at
    // the smallest hop bandwidth (exact when the hops share one bandwidth).
    uneven_ring(op.group);
    double min_bw = std::numeric_limits<double>::infinity();
    for (int p = 0; p < n; ++p) {
      min_bw = std::min(min_bw, route_bw_lat(g[p], g[(p + 1) % n]).first);
      if (uneven_[op.group] == 0) break;
    }
    const double max_lat = n > 2 ? max_hop_latency_[op.group] : route_bw_lat(g[0], g[1]).second;
    const double step_s = max_lat + static_cast<double>(c.chunk_bytes) / min_bw;
    for (int p = 0; p < n; ++p) {
      const Member& mm = c.members[p];
      if (mm.rank_idx >= 0) start_timer(c.steps * step_s, mm.rank_idx, mm.op, match);
    }
    return;
  }
  if (c.ready_count == c.simulated) {
    // Every simulated member is here: the simulated mirrors start with them.
    for (int p = 0; p < n; ++p)
      if (c.members[p].active && c.members[p].rank_idx < 0) c.members[p].ready = true;
    for (int p = 0; p < n; ++p) coll_advance(c, match, p);
    return;
  }
  coll_advance(c, match, pos);
  coll_advance(c, match, (pos + n - 1) % n);
}

void Replayer::coll_advance(CollState& c, int64_t match, int pos) {
  const int n = static_cast<int>(c.members.size());
  Member& m = c.members[pos];
  if (!m.active || !m.ready || m.steps_started != m.steps_done || m.steps_started >= c.steps) return;
  if (m.rank_idx < 0 && c.remaining == 0) return;  // nobody simulated waits for this mirror any more
  const int k = m.steps_started;
  const Member& succ = c.members[(pos + 1) % n];
  const Member& pred = c.members[(pos + n - 1) % n];
  if (k == 0 && succ.active && !succ.ready) return;
  if (k >= 1 && pred.active && pred.steps_done < k) return;
  ++m.steps_started;
  ++c.in_flight;
  const auto& g = s_.groups[c.group].ranks;
  // A representative whose predecessor is a mirror would, in the real ring, wait for the slowest
  // hop's latency each step: add what its own hop lacks (bandwidth-uneven rings simulate the
  // mirrors' flows instead, so the gap is 0 there).
  const double gap = pred.active ? 0.0 : latency_gap(c.group, pos);
  if (gap > 0) {
    tasks_.push_back(Task{Task::CollDelay, m.rank_idx, m.op, match, pos, nullptr, sg4::Engine::get_clock()});
    Task& t = tasks_.back();
    sg4::ExecPtr x = sg4::Exec::init();
    x->set_flops_amount(gap * kGpuSpeed);
    x->set_host(timer_host_);
    x->set_data(&t);
    t.activity = x;
    ++times_.activities;
    x->start();
    return;
  }
  start_flow(Task::CollStep, g[pos], g[(pos + 1) % n], c.chunk_bytes, m.rank_idx, m.op, match, pos);
}

void Replayer::coll_check_done(CollState& c, int64_t, int pos) {
  const int n = static_cast<int>(c.members.size());
  Member& m = c.members[pos];
  if (m.rank_idx < 0 || m.done || m.steps_done < c.steps) return;
  const Member& pred = c.members[(pos + n - 1) % n];
  if (pred.active && pred.steps_done < c.steps) return;
  m.done = true;
  --c.remaining;
  complete(m.rank_idx, m.op);
}

void Replayer::coll_maybe_erase(int64_t match) {
  auto it = colls_.find(match);
  if (it != colls_.end() && it->second.remaining == 0 && it->second.in_flight == 0) colls_.erase(it);
}

void Replayer::on_activity_done(Task& t) {
  switch (t.kind) {
    case Task::Kernel:
      complete(t.rank_idx, t.op);
      break;
    case Task::CollTimer: {
      CollState& c = colls_.at(t.match);
      int pos = 0;
      const int rank = s_.programs[t.rank_idx].rank;
      const auto& g = s_.groups[c.group].ranks;
      while (g[pos] != rank) ++pos;
      c.members[pos].done = true;
      --c.remaining;
      complete(t.rank_idx, t.op);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::CollDelay: {
      const CollState& c = colls_.at(t.match);
      const auto& g = s_.groups[c.group].ranks;
      const int n = static_cast<int>(g.size());
      start_flow(Task::CollStep, g[t.pos], g[(t.pos + 1) % n], c.chunk_bytes, t.rank_idx, t.op, t.match, t.pos);
      break;
    }
    case Task::CollStep: {
      CollState& c = colls_.at(t.match);
      const int n = static_cast<int>(c.members.size());
      ++c.members[t.pos].steps_done;
      --c.in_flight;
      const int succ = (t.pos + 1) % n;
      coll_check_done(c, t.match, t.pos);
      coll_check_done(c, t.match, succ);
      coll_advance(c, t.match, t.pos);
      coll_advance(c, t.match, succ);
      coll_maybe_erase(t.match);
      break;
    }
    case Task::P2PFlow: {
      if (t.rank_idx >= 0) complete(t.rank_idx, t.op);  // the send op
      P2PState& st = p2p_[t.match];
      st.arrived = true;
      if (st.recv_ready) {
        const int ri = st.recv_rank_idx, oi = st.recv_op;
        // Waiting for the sender to start is idle time (a pipeline bubble), not communication.
        times_.start_s[ri][oi] = std::max(times_.start_s[ri][oi], t.started_s);
        p2p_.erase(t.match);
        complete(ri, oi);
      }
      break;
    }
  }
}

ReplayTimes Replayer::run() {
  build();
  sg4::Activity::on_completion_cb([this](const sg4::Activity& a) {
    auto* t = a.get_data<Task>();
    if (t == nullptr) return;
    // Keep the activity alive until SimGrid is done with it; drop older ones.
    if (finished_.size() > 4096) finished_.erase(finished_.begin(), finished_.end() - 1);
    finished_.push_back(std::move(t->activity));
    on_activity_done(*t);
    drain();
  });
  drain();
  sg4::Engine::get_instance()->run();
  if (completed_ != total_ops_) {
    for (size_t ri = 0; ri < s_.programs.size(); ++ri)
      for (size_t oi = 0; oi < s_.programs[ri].ops.size(); ++oi)
        if (times_.end_s[ri][oi] < 0)
          throw std::runtime_error("replay deadlock: rank " + std::to_string(s_.programs[ri].rank) + " op " +
                                   std::to_string(oi) + " (" + s_.programs[ri].ops[oi].name + ") never completed");
  }
  for (const auto& v : times_.end_s)
    for (double e : v) times_.makespan_s = std::max(times_.makespan_s, e);
  return times_;
}

// ---- child-process plumbing --------------------------------------------------------------

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) _exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

template <typename T>
void put(std::string& buf, const T& v) {
  buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(const std::string& buf, size_t& at) {
  if (at + sizeof(T) > buf.size()) throw std::runtime_error("replay: truncated result from the simulation process");
  T v;
  std::memcpy(&v, buf.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

}  // namespace

ReplayTimes replay_in_process(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  validate(schedule);
  int argc = 2;
  char arg0[] = "overlapsim";
  char arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_ideal_network();
  Replayer r(schedule, topo, options);
  return r.run();
}

ReplayTimes replay(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("replay: cannot create a pipe");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("replay: cannot fork the simulation process");
  if (pid == 0) {
    ::close(fds[0]);
    std::string buf;
    try {
      ReplayTimes t = replay_in_process(schedule, topo, options);
      put<int32_t>(buf, 0);
      put<double>(buf, t.makespan_s);
      put<long long>(buf, t.activities);
      for (size_t i = 0; i < t.start_s.size(); ++i) {
        put<uint64_t>(buf, t.start_s[i].size());
        buf.append(reinterpret_cast<const char*>(t.start_s[i].data()), t.start_s[i].size() * sizeof(double));
        buf.append(reinterpret_cast<const char*>(t.end_s[i].data()), t.end_s[i].size() * sizeof(double));
      }
    } catch (const std::exception& e) {
      buf.clear();
      put<int32_t>(buf, 1);
      buf += e.what();
    }
    write_all(fds[1], buf.data(), buf.size());
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  std::string buf;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    throw std::runtime_error("replay: the simulation process died (signal " + std::to_string(WTERMSIG(status)) + ")");
  size_t at = 0;
  const int32_t code = get<int32_t>(buf, at);
  if (code != 0) throw std::runtime_error(buf.substr(at));
  ReplayTimes t;
  t.makespan_s = get<double>(buf, at);
  t.activities = get<long long>(buf, at);
  t.start_s.resize(schedule.programs.size());
  t.end_s.resize(schedule.programs.size());
  for (size_t i = 0; i < schedule.programs.size(); ++i) {
    const auto n = get<uint64_t>(buf, at);
    if (at + 2 * n * sizeof(double) > buf.size()) throw std::runtime_error("replay: truncated result");
    t.start_s[i].resize(n);
    t.end_s[i].resize(n);
    std::memcpy(t.start_s[i].data(), buf.data() + at, n * sizeof(double));
    at += n * sizeof(double);
    std::memcpy(t.end_s[i].data(), buf.data() + at, n * sizeof(double));
    at += n * sizeof(double);
  }
  return t;
}

}  // namespace overlapsim
