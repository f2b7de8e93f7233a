// ActivityBackend on SimGrid 3.32 (flow fidelity). Facts this relies on (design §7): activities
// started from maestro and from completion callbacks run without actors; a running activity must
// stay referenced until it completes; a host's power state can be changed from a callback.
//
// A plain timer (start_exec on kTimer) is a kernel timer (simgrid/kernel/Timer.hpp: a heap of
// dates whose callbacks the engine's loop runs from maestro once the clock reaches them), not an
// execution: every execution started from maestro joins maestro's list of activities, which
// SimGrid 3.32 scans whole (std::list::remove) each time one of them ends
// (src/kernel/activity/ExecImpl.cpp, ExecImpl::post), and each is a variable of its host's CPU
// constraint, which the solver visits at every start and end. A tree collective's per-slice
// slots and arrivals keep thousands of timers pending, and made every event cost their number.
#include "sim/activity_backend.hpp"

#include "sim/error.hpp"
#include "sim/platform.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include <cmath>

namespace sg4 = simgrid::s4u;

namespace overlapsim {

namespace {

class SimGridBackend final : public ActivityBackend {
 public:
  void build(const Topology& topo, const std::vector<int>& ranks, const std::vector<std::pair<int, int>>& pairs,
             const LinkEfficiency& eff, const std::vector<double>& speeds) override {
    pf_ = build_platform(topo, ranks, pairs, eff, speeds);
    timer_speed_ = speeds.at(0);
  }

  void start_exec(int rank, double work, void* tag) override {
    if (rank == kTimer) {
      simgrid::kernel::timer::Timer::set(now() + work / timer_speed_, [this, tag] { (*on_done_)(tag); });
      return;
    }
    sg4::ExecPtr x = sg4::Exec::init();
    x->set_flops_amount(work);
    x->set_host(pf_.gpu_hosts.at(rank));
    keep(x, tag);
    x->start();
  }

  void start_flow(int src_rank, int dst_rank, double bytes, void* tag) override {
    sg4::CommPtr c = sg4::Comm::sendto_init(pf_.gpu_hosts.at(src_rank), pf_.gpu_hosts.at(dst_rank));
    c->set_payload_size(static_cast<uint64_t>(std::llround(bytes)));
    keep(c, tag);
    c->start();
  }

  void set_state(int rank, int k) override { pf_.gpu_hosts.at(rank)->set_pstate(k); }

  double now() const override { return sg4::Engine::get_clock(); }

  void run(const std::function<void(void*)>& on_done) override {
    on_done_ = &on_done;
    sg4::Activity::on_completion_cb([this, &on_done](const sg4::Activity& a) {
      auto* slot = a.get_data<Slot>();
      if (slot == nullptr) return;
      void* tag = slot->tag;
      // Keep the activity alive until SimGrid is done with it; drop older ones.
      if (finished_.size() > 4096) finished_.erase(finished_.begin(), finished_.end() - 1);
      finished_.push_back(std::move(slot->activity));
      free_.push_back(slot);
      on_done(tag);
    });
    sg4::Engine::get_instance()->run();
  }

 private:
  struct Slot {
    void* tag = nullptr;
    sg4::ActivityPtr activity;
  };

  void keep(const sg4::ActivityPtr& a, void* tag) {
    Slot* s;
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      slots_.emplace_back();
      s = &slots_.back();
    }
    s->tag = tag;
    s->activity = a;
    a->set_data(s);
  }

  Platform pf_;
  double timer_speed_ = 1;  ///< work units per second of a timer (speeds[0])
  /// run()'s callback; timers only fire inside run(), so it is set whenever one does.
  const std::function<void(void*)>* on_done_ = nullptr;
  std::deque<Slot> slots_;
  std::vector<Slot*> free_;
  std::vector<sg4::ActivityPtr> finished_;
};

}  // namespace

std::unique_ptr<ActivityBackend> make_simgrid_backend() { return std::make_unique<SimGridBackend>(); }

}  // namespace overlapsim
