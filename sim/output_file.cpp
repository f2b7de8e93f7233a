#include "sim/output_file.hpp"

#include "sim/error.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

namespace overlapsim {

namespace fs = std::filesystem;

std::string resolve_output_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) break;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return fs::weakly_canonical(p, ec).string();
}

void check_output_path(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs) {
  const SourceLocation where{path, 0, 0};
  if (path.empty()) throw InputError(SourceLocation{"<command line>", 0, 0}, flag, "expected a file path, found ''");
  // "-" is standard output to most tools, which the table holds here (regression: --json - wrote
  // a file named "-" in the working folder).
  if (path == "-")
    throw InputError(SourceLocation{"<command line>", 0, 0}, flag,
                     "expected a file path, found '-' (standard output holds the table; give a file, e.g. out.json)");
  std::error_code ec;
  // What the path is as the kernel follows its links (one stat serves both checks):
  // - a device or pipe (/dev/stdout, /dev/null, a FIFO): refused as such (regression:
  //   /dev/stdout resolved to a pipe's name in /proc/PID/fd and was refused as "cannot create a
  //   file in folder /proc/PID/fd");
  // - the file standard output or error is redirected to: the result would replace what is written
  //   there (regression: `run ... --json /dev/stdout > out.txt` left out.txt the JSON alone).
  if (struct stat given {}; ::stat(path.c_str(), &given) == 0) {
    if (!S_ISREG(given.st_mode) && !S_ISDIR(given.st_mode))
      throw InputError(where, flag,
                       "exists and is not a regular file (a device or pipe); expected a file path to write (standard "
                       "output holds the table; give a file, e.g. out.json)");
    if (S_ISREG(given.st_mode))
      for (const int fd : {1, 2}) {
        struct stat stream {};
        if (::fstat(fd, &stream) == 0 && stream.st_dev == given.st_dev && stream.st_ino == given.st_ino)
          throw InputError(where, flag,
                           std::string("is the file standard ") + (fd == 1 ? "output" : "error") +
                               " is written to; expected another file (the result would replace what is written "
                               "there)");
      }
  }
  const fs::path target = resolve_output_path(path);
  if (target.empty()) throw InputError(where, flag, "cannot resolve the path");
  // The file standard output (or error) is redirected to: the result would replace the table
  // written there (regression: `run ... --json /dev/stdout > out.txt` left out.txt the JSON alone).
  {
    struct stat file {};
    if (::stat(path.c_str(), &file) == 0 && S_ISREG(file.st_mode))
      for (const int fd : {1, 2}) {
        struct stat stream {};
        if (::fstat(fd, &stream) == 0 && stream.st_dev == file.st_dev && stream.st_ino == file.st_ino)
          throw InputError(where, flag,
                           std::string("is the file standard ") + (fd == 1 ? "output" : "error") +
                               " is written to; expected another file (the result would replace what is written "
                               "there)");
      }
  }
  const fs::file_status st = fs::status(target, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(where, flag, "exists and is not a regular file; expected a file path to write");
  const fs::path dir = target.parent_path();
  if (!fs::is_directory(dir, ec)) throw InputError(where, flag, "folder " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) throw InputError(where, flag, "folder " + dir.string() + " is not writable");
  // The file is written as a temporary beside it, renamed at the end: that must be possible now,
  // not found impossible after the simulation (--json /dev/stdout resolves to a pipe's name in
  // /proc/PID/fd, where no file can be made).
  {
    std::string probe = (dir / ".overlapsim-probe-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
      throw InputError(where, flag,
                       "cannot create a file in folder " + dir.string() + " (" + std::strerror(errno) +
                           "); expected a path to a regular file in a writable folder");
    ::close(fd);
    ::unlink(probe.c_str());
  }
  // An existing file the user may not write is refused, not replaced by the rename (regression: a
  // read-only result was replaced and its mode became 0644).
  if (fs::exists(st) && ::access(target.c_str(), W_OK) != 0)
    throw InputError(where, flag, "exists and is not writable; expected a file path this user may write");
  if (fs::exists(st))
    for (const std::string& in : inputs)
      if (fs::equivalent(target, in, ec))
        throw InputError(where, flag, "is also an input (" + in + "); expected a file to write the result to");
}

namespace {

// Temporary files being written, removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP)
// or aborts (SIGABRT: an internal check failed, sim/error.hpp) so that a killed run leaves no
// half-written file. Fixed storage: the handler may only call
// async-signal-safe functions (unlink, signal, raise).
constexpr int kMaxTemps = 8;
char g_temps[kMaxTemps][4096];
volatile sig_atomic_t g_temp_used[kMaxTemps];

extern "C" void remove_temps_and_reraise(int sig) {
  for (int i = 0; i < kMaxTemps; ++i)
    if (g_temp_used[i]) ::unlink(g_temps[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void track_temp(const std::string& path) {
  static const bool installed = [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGABRT}) std::signal(sig, remove_temps_and_reraise);
    return true;
  }();
  (void)installed;
  if (path.size() >= sizeof g_temps[0]) return;
  for (int i = 0; i < kMaxTemps; ++i)
    if (!g_temp_used[i]) {
      std::memcpy(g_temps[i], path.c_str(), path.size() + 1);
      g_temp_used[i] = 1;
      return;
    }
}

void forget_temp(const std::string& path) {
  for (int i = 0; i < kMaxTemps; ++i)
    if (g_temp_used[i] && path == g_temps[i]) g_temp_used[i] = 0;
}

}  // namespace

void discard_temp(const std::string& tmp) {
  std::remove(tmp.c_str());
  forget_temp(tmp);
}

void commit_temp(const std::string& tmp, const std::string& target, bool written, const std::string& path,
                 const std::string& flag) {
  if (!written) {
    discard_temp(tmp);
    throw InputError(SourceLocation{path, 0, 0}, flag, "write failed");
  }
  const bool renamed = std::rename(tmp.c_str(), target.c_str()) == 0;
  if (!renamed) std::remove(tmp.c_str());
  forget_temp(tmp);
  if (!renamed) throw InputError(SourceLocation{path, 0, 0}, flag, "cannot replace the file");
}

std::string create_temp_beside(const std::string& target, const std::string& flag) {
  std::string name = target + ".tmp-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw InputError(SourceLocation{target, 0, 0}, flag, "cannot create a temporary file beside it");
  // mkstemp creates 0600; an output file gets the usual mode (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  track_temp(name);
  return name;
}

void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag) {
  check_output_path(path, flag);
  const std::string target = resolve_output_path(path);
  const std::string tmp = create_temp_beside(target, flag);
  bool written = false;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
    f.flush();
    written = static_cast<bool>(f);
  }
  commit_temp(tmp, target, written, path, flag);
}

}  // namespace overlapsim
