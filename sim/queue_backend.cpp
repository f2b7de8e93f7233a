// ActivityBackend without SimGrid (analytic fidelity): a binary-heap event queue.
#include "sim/activity_backend.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

namespace overlapsim {

namespace {

class QueueBackend final : public ActivityBackend {
 public:
  void build(const Topology& topo, const std::vector<int>& ranks, const std::vector<std::pair<int, int>>& pairs,
             const LinkEfficiency& eff, const std::vector<double>& speeds) override {
    speeds_ = speeds;
    for (int r : ranks) {
      OVERLAPSIM_CHECK(r >= 0, "queue backend: negative rank");
      if (static_cast<size_t>(r) >= gpu_index_.size()) gpu_index_.resize(static_cast<size_t>(r) + 1, -1);
      gpu_index_[r] = static_cast<int>(gpus_.size());
      gpus_.emplace_back();
    }
    for (const auto& [s, d] : pairs) {
      double bw = std::numeric_limits<double>::infinity(), lat = 0;
      for (const Hop& h : topo.route(s, d)) {
        const Link& l = topo.link(h.link_id);
        bw = std::min(bw, l.bandwidth_Bps * eff.of(l.kind));
        lat += l.latency_s;
      }
      routes_[pair_key(s, d)] = {bw, lat};
    }
  }

  void start_exec(int rank, double work, void* tag) override {
    if (rank == kTimer) {
      push(now_ + work / speeds_[0], tag);
      return;
    }
    const int g = gpu_of(rank);
    advance(g);
    gpus_[g].running.push_back(Kernel{work, tag});
    reschedule(g);
  }

  void start_flow(int src_rank, int dst_rank, double bytes, void* tag) override {
    const auto it = routes_.find(pair_key(src_rank, dst_rank));
    OVERLAPSIM_CHECK(it != routes_.end(), "queue backend: a flow between ranks without a route");
    const auto& [bw, lat] = it->second;
    push(now_ + lat + bytes / bw, tag);
  }

  void set_state(int rank, int k) override {
    const int g = gpu_of(rank);
    advance(g);
    gpus_[g].state = k;
    reschedule(g);
  }

  double now() const override { return now_; }

  void run(const std::function<void(void*)>& on_done) override {
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (e.gpu >= 0) {
        Gpu& gpu = gpus_[e.gpu];
        if (e.version != gpu.version) continue;  // the GPU's kernels changed since
        now_ = e.time;
        advance(e.gpu);
        // Every kernel whose work is (numerically) done finishes now.
        std::vector<void*>& done = done_;  // kept between events: no allocation per event
        done.clear();
        // A kernel is done when a nanosecond of work at full speed is left, or when what is left
        // would end within the clock's resolution (late in a long simulation, on a very slow
        // GPU, now + left / rate == now: the event would never move time on).
        const double eps = 1e-9 * speeds_[0];
        const double r = rate(gpu);
        auto& run = gpu.running;
        for (size_t i = 0; i < run.size();)
          if (run[i].remaining <= eps || now_ + run[i].remaining / r <= now_) {
            done.push_back(run[i].tag);
            run.erase(run.begin() + static_cast<long>(i));
          } else {
            ++i;
          }
        reschedule(e.gpu);
        for (void* t : done) on_done(t);  // (which may start kernels, never touching done_)
        continue;
      }
      now_ = e.time;
      on_done(e.tag);
    }
  }

 private:
  static int64_t pair_key(int src, int dst) { return (static_cast<int64_t>(src) << 32) | static_cast<uint32_t>(dst); }
  int gpu_of(int rank) const {
    OVERLAPSIM_CHECK(rank >= 0 && static_cast<size_t>(rank) < gpu_index_.size() && gpu_index_[rank] >= 0,
                     "queue backend: a rank without a GPU");
    return gpu_index_[rank];
  }

  struct Kernel {
    double remaining;  // work units
    void* tag;
  };
  struct Gpu {
    std::vector<Kernel> running;
    int state = 0;
    double updated = 0;
    long long version = 0;
  };
  struct Event {
    double time;
    long long seq;
    int gpu;  // -1: a timer or flow
    long long version;
    void* tag;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  double rate(const Gpu& g) const { return g.running.empty() ? 0 : speeds_[g.state] / g.running.size(); }

  void advance(int gi) {
    Gpu& g = gpus_[gi];
    const double r = rate(g), dt = now_ - g.updated;
    if (dt > 0)
      for (Kernel& k : g.running) k.remaining -= r * dt;
    g.updated = now_;
  }

  void reschedule(int gi) {
    Gpu& g = gpus_[gi];
    ++g.version;
    if (g.running.empty()) return;
    double least = std::numeric_limits<double>::infinity();
    for (const Kernel& k : g.running) least = std::min(least, k.remaining);
    events_.push(Event{now_ + std::max(0.0, least) / rate(g), seq_++, gi, g.version, nullptr});
  }

  void push(double time, void* tag) { events_.push(Event{time, seq_++, -1, 0, tag}); }

  std::vector<double> speeds_;
  std::vector<int> gpu_index_;  // global rank → index in gpus_ (-1: none)
  std::vector<Gpu> gpus_;
  std::unordered_map<int64_t, std::pair<double, double>> routes_;  // pair_key(src, dst) → (bytes/s, s)
  std::vector<void*> done_;  // run()'s kernels finished by one event
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  double now_ = 0;
  long long seq_ = 0;
};

}  // namespace

std::unique_ptr<ActivityBackend> make_queue_backend() { return std::make_unique<QueueBackend>(); }

}  // namespace overlapsim
