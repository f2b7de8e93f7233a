#include "sim/replay.hpp"

#include "sim/error.hpp"

#include "sim/replay_engine.hpp"

#include <simgrid/s4u.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include <csignal>
#include <sys/prctl.h>
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

static_assert(std::is_trivially_copyable_v<FlowRecord>, "flows cross the pipe as raw bytes");

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

/// Fills `v` (already sized) from buf at `at`, and moves `at` past it. An empty `v` copies nothing
/// (its data() may be null, which memcpy may not be given even for 0 bytes).
template <typename T>
void copy_out(std::vector<T>& v, const std::string& buf, size_t& at) {
  const size_t bytes = v.size() * sizeof(T);
  if (bytes > 0) std::memcpy(static_cast<void*>(v.data()), buf.data() + at, bytes);
  at += bytes;
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
  auto backend = make_simgrid_backend();
  return run_replay_engine(schedule, topo, options, *backend);
}

ReplayTimes replay(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  if (options.fidelity == Fidelity::Analytic) {
    // No SimGrid: the event-queue backend runs in this process.
    validate(schedule);
    auto backend = make_queue_backend();
    return run_replay_engine(schedule, topo, options, *backend);
  }
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("replay: cannot create a pipe");
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("replay: cannot fork the simulation process");
  if (pid == 0) {
    // The simulation dies with the process that asked for it (a SIGTERM to overlapsim left it
    // running, re-parented to init); if that process is already gone, stop now.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
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
      put<uint64_t>(buf, t.flows.size());
      buf.append(reinterpret_cast<const char*>(t.flows.data()), t.flows.size() * sizeof(FlowRecord));
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
    throw std::runtime_error("replay: the simulation process died (signal " + std::to_string(WTERMSIG(status)) + ")" +
                             (WTERMSIG(status) == SIGKILL ? "; killed, most likely for lack of memory" : ""));
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
    copy_out(t.start_s[i], buf, at);
    copy_out(t.end_s[i], buf, at);
  }
  const auto nf = get<uint64_t>(buf, at);
  if (at + nf * sizeof(FlowRecord) > buf.size()) throw std::runtime_error("replay: truncated result");
  t.flows.resize(nf);
  copy_out(t.flows, buf, at);
  return t;
}

}  // namespace overlapsim
