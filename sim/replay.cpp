#include "sim/replay.hpp"

#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"

#include "sim/replay_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include <csignal>
#include <dlfcn.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace overlapsim {

const char* to_string(Fidelity f) { return f == Fidelity::Flow ? "flow" : "analytic"; }

Fidelity parse_fidelity(const std::string& text) {
  const std::string lower = ascii_lower(text);  // any case, as NCCL's names are taken
  if (lower == "flow") return Fidelity::Flow;
  if (lower == "analytic") return Fidelity::Analytic;
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

// ---- the flow module (sim/flow_replay.cpp) -------------------------------------------------

using FlowReplayFn = void (*)(const Schedule&, const Topology&, const ReplayOptions&, ReplayTimes&);

/// Where the flow module is looked for: the file the environment variable OVERLAPSIM_FLOW_MODULE
/// names, when set (and only there); else beside the running binary (the build folder holds
/// overlapsim, overlapsim_tests and liboverlapsim_flow.so), then where this build put it.
std::vector<std::string> flow_module_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("OVERLAPSIM_FLOW_MODULE"); env != nullptr && *env != '\0') {
    // A file, as named: a bare name is in the working folder (dlopen would search the library
    // path for it instead).
    const std::string path = env;
    return {path.find('/') == std::string::npos ? "./" + path : path};
  }
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    out.push_back(dir + "liboverlapsim_flow.so");
  }
  out.push_back(OVERLAPSIM_FLOW_MODULE);
  return out;
}

/// The module's entry, loaded once per process (before any fork, so that replays' children
/// inherit it). Throws std::runtime_error naming every path tried and the loader's reason.
FlowReplayFn flow_replay_entry() {
  static FlowReplayFn fn = nullptr;
  if (fn != nullptr) return fn;
  std::string tried;
  for (const std::string& path : flow_module_candidates()) {
    if (::access(path.c_str(), F_OK) != 0) {
      tried += fmt::format("\n  {}: not found", path);
      continue;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += fmt::format("\n  {}: {}", path, ::dlerror());
      continue;
    }
    void* sym = ::dlsym(handle, "overlapsim_flow_replay");
    void* abi = ::dlsym(handle, "overlapsim_flow_abi");
    if (sym == nullptr || abi == nullptr) {
      tried += fmt::format("\n  {}: no overlapsim_flow_replay in it", path);
      ::dlclose(handle);
      continue;
    }
    const unsigned long long theirs = reinterpret_cast<unsigned long long (*)()>(abi)();
    if (theirs != kFlowModuleAbi) {
      tried += fmt::format("\n  {}: built from other sources than this binary (layout {} against {}): rebuild both",
                           path, theirs, kFlowModuleAbi);
      ::dlclose(handle);
      continue;
    }
    fn = reinterpret_cast<FlowReplayFn>(sym);
    return fn;
  }
  throw std::runtime_error("the flow fidelity's module (liboverlapsim_flow.so, built beside overlapsim) could not "
                           "be loaded:" + tried +
                           "\n(set OVERLAPSIM_FLOW_MODULE to its file, or run with --fidelity analytic, which does not "
                           "need it)");
}

}  // namespace

ReplayTimes replay_in_process(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  validate(schedule);
  ReplayTimes t;
  flow_replay_entry()(schedule, topo, options, t);
  return t;
}

ReplayTimes replay(const Schedule& schedule, const Topology& topo, const ReplayOptions& options) {
  if (options.fidelity == Fidelity::Analytic) {
    // No SimGrid: the event-queue backend runs in this process.
    validate(schedule);
    auto backend = make_queue_backend();
    return run_replay_engine(schedule, topo, options, *backend);
  }
  (void)flow_replay_entry();  // loaded here, before the fork: every replay's child inherits it
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
  // The child writes its result when done: until then the parent waits, telling the heartbeat
  // (ReplayOptions::heartbeat) how long it has waited every heartbeat_interval_s.
  const auto began = std::chrono::steady_clock::now();
  double next_beat = options.heartbeat_interval_s;
  for (;;) {
    if (options.heartbeat && options.heartbeat_interval_s > 0) {
      pollfd pfd{fds[0], POLLIN, 0};
      const auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
      // (Rounded up to poll's milliseconds: never told before its time.)
      const int ms = static_cast<int>(std::ceil(std::clamp((next_beat - waited()) * 1e3, 0.0, 1e9)));
      const int ready = ::poll(&pfd, 1, ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        const double now = waited();
        if (now < next_beat) continue;
        options.heartbeat(now);
        next_beat = (std::floor(now / options.heartbeat_interval_s) + 1) * options.heartbeat_interval_s;
        continue;
      }
    }
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
