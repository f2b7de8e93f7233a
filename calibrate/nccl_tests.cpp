// nccl-tests log reader (format and rules in nccl_tests.hpp; the importer: nccl_tests_import.cpp).
#include "calibrate/nccl_tests.hpp"

#include "calibrate/gpu_names.hpp"
#include "calibrate/nccl_tests_rows.hpp"
#include "sim/collective_bench.hpp"
#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace overlapsim {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool is_unsigned(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool parse_double(const std::string& s, double* out) {
  // Decimal digits, sign, point and exponent only: strtod also reads hex ("0x10" as 16), which
  // nccl-tests never prints (regression: a time of 0x10 was read as 16 us).
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

/// "2.28.9" from an NCCL version code (major·10000 + minor·100 + patch since 2.9, major·1000 + ... before).
std::string version_from_code(long code) {
  const long major = code >= 10000 ? code / 10000 : code / 1000;
  const long minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

/// Column positions, read from the header line.
struct Layout {
  int line = 0;               ///< header line number
  std::string text;           ///< the header's column names, for messages
  int columns = 0;            ///< tokens a result row must have
  int type = -1, redop = -1, root = -1;  ///< meta columns, -1 when absent
  struct Half {
    int time = -1, algbw = -1, busbw = -1, wrong = -1;
  } half[2];
  bool wrong_counts = true;   ///< "#wrong" (a count of wrong elements) rather than the old "error"
};

Layout parse_header(const std::string& path, int line, const std::vector<std::string>& cols) {
  Layout l;
  l.line = line;
  for (const auto& c : cols) l.text += (l.text.empty() ? "" : " ") + c;
  std::vector<int> times;
  for (int i = 0; i < static_cast<int>(cols.size()); ++i)
    if (cols[i] == "time" || cols[i] == "cputime") times.push_back(i);
  if (cols.size() < 2 || cols[0] != "size" || cols[1] != "count" || times.size() != 2)
    throw InputError(SourceLocation{path, line, 0}, "",
                     "expected a column header \"size count ... time algbw busbw #wrong time algbw busbw #wrong\" "
                     "(out-of-place and in-place halves), found \"" + l.text + "\"");
  const int width = times[1] - times[0];
  for (int i = 2; i < times[0]; ++i) {
    if (cols[i] == "type") l.type = i;
    if (cols[i] == "redop") l.redop = i;
    if (cols[i] == "root") l.root = i;
  }
  for (int h = 0; h < 2; ++h) {
    const int start = times[h];
    l.half[h].time = start;
    for (int i = start; i < start + width && i < static_cast<int>(cols.size()); ++i) {
      if (cols[i] == "algbw") l.half[h].algbw = i;
      if (cols[i] == "busbw") l.half[h].busbw = i;
      if (cols[i] == "#wrong" || cols[i] == "error") {
        l.half[h].wrong = i;
        l.wrong_counts = cols[i] == "#wrong";
      }
    }
    if (l.half[h].algbw < 0 || l.half[h].busbw < 0)
      throw InputError(SourceLocation{path, line, 0}, "",
                       "expected algbw and busbw columns in both halves of the header, found \"" + l.text + "\"");
  }
  // The in-place half is as wide as the out-of-place one; -S adds a timestamp (date and time).
  l.columns = times[1] + width;
  for (int i = l.columns; i < static_cast<int>(cols.size()); ++i)
    if (cols[i] == "timestamp") l.columns += 2;
  return l;
}

/// The least time (µs) a result half may hold to be used (parse_half).
constexpr double kMinMeasuredTimeUs = 1.0;

NcclTestsHalf parse_half(const std::string& path, int line, const std::vector<std::string>& tok, const Layout& l, int h) {
  const char* name = h == 0 ? "out-of-place" : "in-place";
  NcclTestsHalf out;
  auto number = [&](int col, const char* what, double* v) {
    if (!parse_double(tok[col], v) || *v < 0)
      throw InputError(SourceLocation{path, line, 0}, "",
                       std::string("expected a number >= 0 in the ") + name + " " + what + " column (column " +
                           std::to_string(col + 1) + "), found '" + tok[col] + "'");
  };
  number(l.half[h].time, "time", &out.time_us);
  // nccl-tests prints µs; a collective of more than an hour is a corrupted row.
  if (out.time_us > 3.6e9)
    throw InputError(SourceLocation{path, line, 0}, "",
                     std::string("expected a time in µs of at most an hour (3.6e9) in the ") + name +
                         " time column (column " + std::to_string(l.half[h].time + 1) + "), found '" +
                         tok[l.half[h].time] + "'");
  number(l.half[h].algbw, "algbw", &out.algbw_GBps);
  number(l.half[h].busbw, "busbw", &out.busbw_GBps);
  if (l.half[h].wrong >= 0) {
    out.wrong = tok[l.half[h].wrong];
    double w = 0;
    if (out.wrong != "N/A" && !parse_double(out.wrong, &w))
      throw InputError(SourceLocation{path, line, 0}, "",
                       std::string("expected a number or N/A in the ") + name + (l.wrong_counts ? " #wrong" : " error") +
                           " column (column " + std::to_string(l.half[h].wrong + 1) + "), found '" + out.wrong + "'");
    if (l.wrong_counts && w > 0) out.usable = false;
  }
  // nccl-tests' times hold at least one kernel launch, a few µs: below 1 µs (0.00, or 1e-300
  // written by hand) a time is no measurement, and its busbw would be any size over nothing.
  if (!(out.time_us >= kMinMeasuredTimeUs)) out.usable = false;
  return out;
}

/// The collective named in a file name, or "".
std::string collective_from_file_name(const std::string& path) {
  const std::string base = ascii_lower(std::filesystem::path(path).filename().string());
  auto has = [&](const char* s) { return base.find(s) != std::string::npos; };
  if (has("alltoallv") || has("hypercube") || (has("scatter_perf") && !has("reduce_scatter"))) return "";
  if (has("reduce_scatter") || has("reducescatter") || has("reduce-scatter")) return "reduce_scatter";
  if (has("all_reduce") || has("allreduce") || has("all-reduce")) return "all_reduce";
  if (has("all_gather") || has("allgather") || has("all-gather")) return "all_gather";
  if (has("alltoall") || has("all_to_all") || has("all-to-all")) return "alltoall";
  if (has("sendrecv") || has("send_recv")) return "sendrecv";
  if (has("broadcast") || has("bcast")) return "broadcast";
  if (has("reduce_perf")) return "reduce";
  return "";
}

/// Reads an NCCL TUNING line's words (after "NCCL INFO "); false when it is not one.
/// `function` gets the collective it names ("" in the oldest format), `per_rank` whether the
/// size is count · type size (the newest format).
bool parse_tuning_words(const std::vector<std::string>& w, NcclTuningLine* out, std::string* function, bool* per_rank) {
  std::size_t i = 1;
  while (i < w.size() && w[i] != "Bytes") ++i;
  if (i + 5 >= w.size() || w[i + 1] != "->" || w[i + 2] != "Algo" || w[i + 4] != "proto" || !is_unsigned(w[i - 1]))
    return false;
  out->bytes = std::strtod(w[i - 1].c_str(), nullptr);
  *function = i >= 2 ? w[i - 2] : "";
  if (!function->empty() && function->back() == ':') function->pop_back();
  static const char* const algos[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  static const char* const protos[] = {"LL", "LL128", "Simple"};
  const std::string& a = w[i + 3];
  const std::string& p = w[i + 5];
  *per_rank = !is_unsigned(a);
  if (is_unsigned(a)) {
    const int k = std::atoi(a.c_str());
    if (k < 0 || k > 6) return false;
    out->algorithm = algos[k];
  } else {
    out->algorithm = ascii_lower(a);
  }
  if (is_unsigned(p)) {
    const int k = std::atoi(p.c_str());
    if (k < 0 || k > 2) return false;
    out->protocol = protos[k];
  } else {
    const std::string lp = ascii_lower(p);
    if (lp == "ll") out->protocol = "LL";
    else if (lp == "ll128") out->protocol = "LL128";
    else if (lp == "simple") out->protocol = "Simple";
    else return false;
  }
  return true;
}

struct RankLine {
  int rank = -1, group = 0;
  std::string host, gpu;
  int line = 0;  ///< in the file
};

/// "#  Rank  0 Group  0 Pid  28307 on      gpu59 device  0 [0000:16:00] NVIDIA H100 80GB HBM3"
/// (older: no "Group"); tokens after "#".
bool parse_rank_line(const std::vector<std::string>& t, const std::string& raw, RankLine* out) {
  if (t.size() < 8 || t[0] != "Rank" || !is_unsigned(t[1])) return false;
  std::size_t i = 2;
  out->rank = std::atoi(t[1].c_str());
  if (t[i] == "Group" && i + 1 < t.size()) {
    out->group = std::atoi(t[i + 1].c_str());
    i += 2;
  }
  for (; i + 1 < t.size(); ++i)
    if (t[i] == "on") {
      out->host = t[i + 1];
      break;
    }
  const auto close = raw.find(']');
  if (close != std::string::npos) {
    std::string name = raw.substr(close + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t\r") + 1);
    out->gpu = name;
  }
  return !out->host.empty();
}

}  // namespace

std::string nccl_tests_collective(const std::string& name) {
  std::string n = ascii_lower(name);
  const auto perf = n.find("_perf");
  if (perf != std::string::npos) n = n.substr(0, perf);
  static const std::map<std::string, std::string> names = {
      {"all_reduce", "all_reduce"},     {"allreduce", "all_reduce"},     {"all_gather", "all_gather"},
      {"allgather", "all_gather"},      {"reduce_scatter", "reduce_scatter"}, {"reducescatter", "reduce_scatter"},
      {"alltoall", "alltoall"},         {"all_to_all", "alltoall"},      {"sendrecv", "sendrecv"},
      {"send_recv", "sendrecv"},        {"broadcast", "broadcast"},      {"reduce", "reduce"}};
  const auto it = names.find(n);
  return it == names.end() ? "" : it->second;
}

namespace {

/// Throws where a run names its collective (`from_program`, from `program`, its "Collective test
/// starting" line) and the command line's `collective` names another; `at`: the line to name.
void check_command_line_collective(const std::string& path, int at, const std::string& program,
                                   const std::string& from_program, const std::string& collective) {
  const std::string from_flag = collective.empty() ? "" : nccl_tests_collective(collective);
  if (!from_program.empty() && !from_flag.empty() && from_program != from_flag)
    throw InputError(SourceLocation{path, at, 0}, "",
                     "the log is from " + program + " but the command line names " + collective);
}

/// parse_nccl_tests_log from line `first_line` of the file on. With `next_run` null a second run
/// is an error; else the parse stops there and *next_run is its first line (0: none followed).
/// `collective_default`: `collective` names the run only where the run names none (a file of
/// several runs, one of them picked by the collective), not contradicting one that names another.
NcclTestsLog parse_run(const std::string& path, std::istream& in, const std::string& collective, int first_line,
                       int* next_run, bool collective_default = false);

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& path, std::istream& in, const std::string& collective) {
  return parse_run(path, in, collective, 1, nullptr);
}

std::vector<NcclTestsLog> read_nccl_tests_logs(const std::string& path, const std::string& collective) {
  require_readable_file(path, "an nccl-tests log");
  std::ifstream file(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string l; std::getline(file, l);) lines.push_back(l);
  // The runs that name their collective ("# Collective test starting: X_perf"), by line.
  static const std::string kStarting = "Collective test starting:";
  std::vector<std::pair<int, std::string>> named;
  for (size_t i = 0; i < lines.size(); ++i)
    if (const auto at = lines[i].find(kStarting); at != std::string::npos && lines[i][0] == '#') {
      const std::vector<std::string> t = split(lines[i].substr(at + kStarting.size()));
      if (!t.empty()) named.emplace_back(static_cast<int>(i) + 1, nccl_tests_collective(t.back()));
    }
  const std::string want = collective.empty() ? "" : nccl_tests_collective(collective);
  std::vector<NcclTestsLog> runs;
  int start = 1;  // 1-based line where the next run starts
  while (start > 0 && start <= static_cast<int>(lines.size())) {
    std::string rest;
    for (size_t i = static_cast<size_t>(start - 1); i < lines.size(); ++i) rest += lines[i] + "\n";
    std::istringstream in(rest);
    int next = 0;
    try {
      runs.push_back(parse_run(path, in, collective, start, &next, /*collective_default=*/true));
    } catch (const InputError&) {
      // A run that names no collective, before runs that do (regression: --op allreduce read an
      // unnamed AllGather run as an AllReduce and failed there, though the file's second run is
      // a named all_reduce_perf): skipped where a later run names the collective asked for;
      // without one asked for, the later runs are listed for --op to pick.
      const bool this_named = std::any_of(named.begin(), named.end(), [&](const auto& n) {
        return n.first >= start && n.first <= start + 2;
      });
      const auto later = std::find_if(named.begin(), named.end(), [&](const auto& n) {
        return n.first > start + 2 && (want.empty() || n.second == want);
      });
      if (this_named || later == named.end()) throw;
      if (want.empty()) {
        std::string listed;
        for (const auto& [line, coll] : named)
          if (line > start + 2) listed += fmt::format("{}{} from line {}", listed.empty() ? "" : ", ", coll, line);
        throw InputError(SourceLocation{path, start, 0}, "",
                         "this run names no collective (no \"# Collective test starting\" line) and the file holds "
                         "more runs (" + listed + "): expected --op to pick one");
      }
      // From the later run's first line ("# nccl-tests version", where it precedes the name).
      start = later->first;
      if (start >= 2 && lines[static_cast<size_t>(start - 2)].find("nccl-tests version") != std::string::npos) --start;
      continue;
    }
    start = next;
  }
  // One run: the collective given must be the one it names, as parse_nccl_tests_log has it;
  // among several it names the runs that name none (regression: --op allgather on a file of an
  // unnamed AllGather run and an AllReduce run was refused at the AllReduce run).
  if (runs.size() == 1 && !runs.front().program.empty())
    check_command_line_collective(path, 0, runs.front().program, runs.front().collective, collective);
  // An empty file (no line, so no run parsed to say what it lacks).
  if (runs.empty())
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "no nccl-tests results in it: expected the output of a nccl-tests binary (e.g. "
                     "all_reduce_perf), with its '#  size  count  type ...' header and one row per size");
  return runs;
}

namespace {

NcclTestsLog parse_run(const std::string& path, std::istream& in, const std::string& collective, int first_line,
                       int* next_run, bool collective_default) {
  if (next_run) *next_run = 0;
  NcclTestsLog log;
  log.path = path;
  std::vector<RankLine> ranks;
  struct RawTuning {
    NcclTuningLine line;
    std::string function;
    bool per_rank = false;
  };
  std::vector<RawTuning> tuning;
  bool have_layout = false;
  bool footer = false;  // the closing "Avg bus bandwidth" line was read
  // nccl-tests' footer lines, with or without '#' (older nccl-tests, its MPI_SUPPORT-era
  // common.cu, print them without): true where `text` is one.
  const auto read_footer = [&](const std::string& text, int at) {
    if (text.find("Avg bus bandwidth") != std::string::npos) {
      footer = true;  // (its value may be nan, where nccl-tests divided by no size)
      const auto colon = text.find(':');
      const std::vector<std::string> v = split(colon == std::string::npos ? "" : text.substr(colon + 1));
      double x = 0;
      if (!v.empty() && parse_double(v[0], &x)) log.avg_busbw_GBps = x;
      return true;
    }
    if (text.find("Out of bounds values") != std::string::npos && text.find("FAILED") != std::string::npos) {
      log.warnings.push_back(path + ":" + std::to_string(at) + ": nccl-tests reports out-of-bounds values (FAILED)");
      return true;
    }
    return false;
  };
  Layout layout;
  std::string line;
  int number = first_line - 1;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      const std::string rest = line.substr(first + 1);
      const std::vector<std::string> t = split(rest);
      if (t.empty()) continue;
      RankLine rl;
      const bool run_start = rest.find("Collective test starting:") != std::string::npos ||
                             (t[0] == "nThread" && t.size() >= 4 && t[2] == "nGpus") ||
                             (next_run && t.size() >= 2 && t[0] == "nccl-tests" && t[1] == "version");
      if (!log.rows.empty() && run_start && next_run) {
        *next_run = number;  // the next run's first line (a sweep's logs one after another)
        break;
      }
      if (t.size() >= 2 && t[0] == "nccl-tests" && t[1] == "version") {
        for (const auto& w : t)
          if (w.rfind("nccl-library=", 0) == 0) log.nccl_version = version_from_code(std::atol(w.c_str() + 13));
      } else if (!log.rows.empty() && (rest.find("Collective test starting:") != std::string::npos ||
                                        (t[0] == "nThread" && t.size() >= 4 && t[2] == "nGpus"))) {
        // Two runs pasted into one file would be read as one curve (of the first's collective).
        throw InputError(SourceLocation{path, number, 0}, "",
                         "expected one nccl-tests run per file, found a second one starting here (the first's rows "
                         "end at line " + std::to_string(log.rows.back().line) + ")");
      } else if (rest.find("Collective test starting:") != std::string::npos) {
        log.program = t.back();
      } else if (t[0] == "nThread" && t.size() >= 4 && t[2] == "nGpus") {
        log.threads = std::atoi(t[1].c_str());
        log.gpus_per_thread = std::atoi(t[3].c_str());
      } else if (parse_rank_line(t, rest, &rl)) {
        rl.line = number;
        ranks.push_back(rl);
      } else if (t[0] == "size") {
        // nccl-tests prints its column header once per run; a second one after rows is another
        // table pasted on (its rows would join this curve).
        if (!log.rows.empty())
          throw InputError(SourceLocation{path, number, 0}, "",
                           "expected one results table per nccl-tests run, found a second column header here (the "
                           "first table's rows end at line " + std::to_string(log.rows.back().line) + ")");
        layout = parse_header(path, number, t);
        have_layout = true;
      } else {
        read_footer(rest, number);
      }
      continue;
    }
    const std::vector<std::string> t = split(line);
    double first_number = 0;
    if (!is_unsigned(t[0]) && have_layout && static_cast<int>(t.size()) == layout.columns &&
        parse_double(t[0], &first_number))
      // A result row whose size is negative, fractional or in exponent form: not silently skipped.
      throw InputError(SourceLocation{path, number, 0}, "", "expected a size in whole bytes, found '" + t[0] + "'");
    if (!is_unsigned(t[0]) && read_footer(line, number)) continue;  // a footer line without '#'
    if (!is_unsigned(t[0])) {
      // NCCL's own INFO lines (NCCL_DEBUG=INFO) tell the forced algorithm/protocol and the version.
      const auto info = line.find("NCCL INFO ");
      if (info != std::string::npos) {
        const std::vector<std::string> w = split(line.substr(info + 10));
        if (w.size() >= 6 && w[1] == "set" && w[2] == "by" && w[3] == "environment" && w[4] == "to") {
          if (w[0] == "NCCL_ALGO") log.algorithm = w[5];
          if (w[0] == "NCCL_PROTO") log.protocol = w[5];
          // NCCL prints integer settings with a closing period ("... to 1."), and reads the
          // variable with strtol (base 0: 0x10 and 010 are numbers too).
          if (w[0] == "NCCL_COLLNET_ENABLE") {
            std::string v = w[5];
            if (!v.empty() && v.back() == '.') v.pop_back();
            char* end = nullptr;
            const long value = std::strtol(v.c_str(), &end, 0);
            if (!v.empty() && end != nullptr && *end == '\0') log.collnet_enable = value != 0 ? 1 : 0;
          }
        }
        if (w.size() >= 3 && w[0] == "NCCL" && w[1] == "version" && log.nccl_version.empty())
          log.nccl_version = w[2].substr(0, w[2].find('+'));
        NcclTuningLine tl;
        std::string function;
        bool per_rank = false;
        if (parse_tuning_words(w, &tl, &function, &per_rank)) {
          tl.line = number;
          tuning.push_back({tl, function, per_rank});
        }
      }
      continue;  // other lines (MPI, warnings, NCCL INFO) are not results
    }
    if (!have_layout)
      throw InputError(SourceLocation{path, number, 0}, "",
                       "expected the column header (\"#  size  count  type ...\") before the first result row, found a "
                       "result row");
    if (static_cast<int>(t.size()) != layout.columns)
      throw InputError(SourceLocation{path, number, 0}, "",
                       "expected " + std::to_string(layout.columns) + " columns as in the header at line " +
                           std::to_string(layout.line) + " (" + layout.text + "), found " + std::to_string(t.size()));
    NcclTestsRow row;
    row.line = number;
    double v = 0;
    if (!parse_double(t[0], &v)) throw InputError(SourceLocation{path, number, 0}, "", "expected a size in bytes, found '" + t[0] + "'");
    // 4 EiB: beyond any buffer (and past int64 a cast would wrap). Digits are read exactly (a
    // double rounds 2^62 + 1 down to 2^62).
    errno = 0;
    const unsigned long long exact = is_unsigned(t[0]) ? std::strtoull(t[0].c_str(), nullptr, 10) : 0;
    if (v > 0x1p62 || errno == ERANGE || exact > (1ULL << 62))
      throw InputError(SourceLocation{path, number, 0}, "", "expected a size of at most 2^62 bytes, found '" + t[0] + "'");
    row.size_bytes = is_unsigned(t[0]) ? static_cast<int64_t>(exact) : static_cast<int64_t>(v);
    if (!is_unsigned(t[1]))
      throw InputError(SourceLocation{path, number, 0}, "", "expected an element count in column 2, found '" + t[1] + "'");
    // (Past 2^63 the count cannot be any size's: kept as the largest, which the check below
    // finds disagreeing, not saturated silently by atoll.)
    errno = 0;
    row.count = std::strtoll(t[1].c_str(), nullptr, 10);
    row.count_text = t[1];
    if (errno == ERANGE) row.count = std::numeric_limits<int64_t>::max();
    if (layout.type >= 0) row.type = t[layout.type];
    if (layout.redop >= 0) row.redop = t[layout.redop];
    if (layout.root >= 0) {
      const std::string& w = t[layout.root];
      const bool digits = w == "-1" || (is_unsigned(w) && w.size() <= 10);
      const long long root = digits ? std::stoll(w) : -2;
      if (!digits || root > (1LL << 30))
        throw InputError(SourceLocation{path, number, 0}, "root",
                         "expected the root rank (-1 where the collective has none), found '" + w + "'");
      row.root = static_cast<int>(root);
    }
    row.out_of_place = parse_half(path, number, t, layout, 0);
    row.in_place = parse_half(path, number, t, layout, 1);
    for (const NcclTestsHalf* h : {&row.out_of_place, &row.in_place}) {
      const char* half = h == &row.out_of_place ? "out-of-place" : "in-place";
      if (!h->usable && h->time_us >= kMinMeasuredTimeUs)
        log.warnings.push_back(path + ":" + std::to_string(number) + ": #wrong = " + h->wrong +
                               ": nccl-tests found wrong results; this half of the row is left out");
      else if (!h->usable && row.size_bytes > 0)
        log.warnings.push_back(path + ":" + std::to_string(number) + ": the " + half + " time is " +
                               fmt::format("{:g}", h->time_us) + " us for " + std::to_string(row.size_bytes) +
                               " B, below a kernel launch (1 us), which no run measures; this half of the row is "
                               "left out");
    }
    // The names nccl-tests prints for its -d types (src/common.cu test_typenames; "char" and
    // "int" before NCCL 2; fp8 in recent versions): another is a corrupted or foreign column.
    if (layout.type >= 0 && type_bytes(row.type) == 0)
      log.warnings.push_back(path + ":" + std::to_string(number) + ": type '" + row.type +
                             "' is none nccl-tests prints (int8, uint8, int32, uint32, int64, uint64, half, float, "
                             "double, bfloat16, f8e4m3, f8e5m2, and before NCCL 2 char, int); the row is read by its "
                             "size in bytes");
    if (row.size_bytes > 0) log.rows.push_back(row);
  }

  check_repeated_sizes(log, path);

  // Errors after the rows name the run's first line where the file holds several.
  const int at = next_run && (first_line > 1 || *next_run > 0) ? first_line : 0;
  // Which collective.
  const std::string from_program = log.program.empty() ? "" : nccl_tests_collective(log.program);
  const std::string from_flag = collective.empty() ? "" : nccl_tests_collective(collective);
  if (!collective.empty() && from_flag.empty())
    throw InputError(SourceLocation{path, at, 0}, "",
                     "expected a collective (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, "
                     "reduce), found '" + collective + "' on the command line");
  if (!log.program.empty() && from_program.empty())
    throw InputError(SourceLocation{path, at, 0}, "",
                     "expected a log of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, "
                     "sendrecv_perf, broadcast_perf or reduce_perf, found " + log.program);
  if (!collective_default) check_command_line_collective(path, at, log.program, from_program, collective);
  log.collective = !from_program.empty() ? from_program : !from_flag.empty() ? from_flag : collective_from_file_name(path);
  if (log.collective.empty())
    throw InputError(SourceLocation{path, at, 0}, "",
                     "cannot tell which collective this log measured (it has no \"# Collective test starting\" line and "
                     "the file name names none); expected a file name such as all_reduce_perf.log, or the collective "
                     "named on the command line");
  if (log.rows.empty()) {
    // A table of published figures (tests/data/nccl-tests-published/*.csv) is not a log.
    const bool csv = path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
    throw InputError(SourceLocation{path, at, 0}, "",
                     std::string("expected nccl-tests result rows (size count type ... time algbw busbw ...), found "
                                 "none") +
                         (csv ? " (a CSV file: expected the text a *_perf binary prints, not a table of figures)" : ""));
  }

  check_time_against_algbw(log, path);

  // nccl-tests ends a run with "# Avg bus bandwidth" (after its last size): a log without it
  // was cut short, and its last row may be a size still running or half-written.
  if (!footer)
    log.warnings.push_back(path + ":" + std::to_string(log.rows.back().line) +
                           ": the log ends without nccl-tests' closing \"# Avg bus bandwidth\" line after this row "
                           "(cut short?); its rows are read as they are");

  // Group size and nodes.
  if (!ranks.empty()) {
    const int group = ranks.front().group;
    std::set<int> members;
    std::map<std::string, std::set<int>> hosts;
    for (const RankLine& r : ranks)
      if (r.group == group) {
        // nccl-tests prints each rank once; a repeated one is a pasted line.
        if (!members.insert(r.rank).second)
          throw InputError(SourceLocation{path, r.line, 0}, "",
                           "expected each rank once in the rank lines, as nccl-tests prints them, found rank " +
                               std::to_string(r.rank) + " again");
        hosts[r.host].insert(r.rank);
        // The profile is one GPU model's (as logs of two models are refused together): names
        // the device catalog maps to one model are one, others must be the same name.
        const std::string m = device_model_for_gpu_name(r.gpu), m0 = device_model_for_gpu_name(ranks.front().gpu);
        if (m.empty() || m0.empty() ? r.gpu != ranks.front().gpu : m != m0)
          throw InputError(SourceLocation{path, r.line, 0}, "",
                           "expected one GPU model per log, as rank " + std::to_string(ranks.front().rank) +
                               " at line " + std::to_string(ranks.front().line) + " (" + ranks.front().gpu +
                               "), found " + r.gpu);
      }
    log.ranks = static_cast<int>(members.size());
    log.nodes = static_cast<int>(hosts.size());
    log.ranks_per_host = static_cast<int>(hosts.begin()->second.size());
    for (const auto& [host, on] : hosts)
      if (static_cast<int>(on.size()) != log.ranks_per_host) log.ranks_per_host = 0;
    log.gpu_name = ranks.front().gpu;
    log.ranks_from = "rank lines";
  }
  // busbw / algbw = f(n) where f depends on n: infer n (or check the rank lines' n).
  const double f_per_n_known = log.collective == "all_reduce" ? 2.0 : 1.0;
  const bool f_tells_n = log.collective == "all_reduce" || log.collective == "all_gather" ||
                         log.collective == "reduce_scatter" || log.collective == "alltoall";
  std::vector<double> ratios;
  for (const NcclTestsRow& r : log.rows)
    for (const NcclTestsHalf* h : {&r.out_of_place, &r.in_place})
      if (h->usable && h->algbw_GBps >= 10) ratios.push_back(h->busbw_GBps / h->algbw_GBps);
  int n_from_ratio = 0;
  double f_median = -1;  // the median (n−1)/n read, -1 where none was
  if (f_tells_n && !ratios.empty()) {
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    const double f = ratios[ratios.size() / 2] / f_per_n_known;  // (n-1)/n
    f_median = f;
    if (f < 0.999) n_from_ratio = static_cast<int>(std::lround(1.0 / (1.0 - f)));
  }
  if (log.ranks == 0 && n_from_ratio > 0) {
    log.ranks = n_from_ratio;
    log.ranks_from = "busbw/algbw";
    log.warnings.push_back(path + ": no \"# Rank\" lines; group size " + std::to_string(n_from_ratio) +
                           " inferred from busbw/algbw, 1 node assumed");
  } else if (log.ranks == 0) {
    log.ranks = std::max(1, log.threads * log.gpus_per_thread);
    log.ranks_from = "nThread x nGpus";
    log.warnings.push_back(path + ": no \"# Rank\" lines; group size " + std::to_string(log.ranks) +
                           " taken from nThread x nGpus (one process), 1 node assumed");
  } else if (n_from_ratio > 0 && n_from_ratio != log.ranks) {
    throw InputError(SourceLocation{path, at, 0}, "",
                     "the rank lines give a group of " + std::to_string(log.ranks) + " ranks but busbw/algbw gives " +
                         std::to_string(n_from_ratio) + "; expected a log of one group (check NCCL_TESTS_SPLIT)" +
                         // busbw/algbw is the collective's bus factor: read as the one the command
                         // line names, a run of another gives a wrong count.
                         (from_program.empty() && !from_flag.empty()
                              ? " or of the collective the command line names (" + collective +
                                    "): the run names none itself"
                              : std::string()));
  }
  // The columns that tell one collective from another (nccl_tests_rows.hpp).
  check_collective_columns(log, path, at,
                           !from_program.empty() ? "the log's test line"
                           : !from_flag.empty()   ? "the command line (" + collective + ")"
                                                  : "the file name",
                           ratios, f_median);
  if (log.ranks_from != "rank lines") log.ranks_per_host = log.ranks;  // one host assumed
  if (log.ranks < 2)
    throw InputError(SourceLocation{path, at, 0}, "",
                     "expected a collective over at least 2 ranks, found " + std::to_string(log.ranks) + " (" +
                         log.ranks_from + ")");
  check_count_column(log, path);
  // NCCL's choices for this collective (header: sizes of the newest format are per rank for
  // AllGather and ReduceScatter).
  for (RawTuning& t : tuning) {
    if (!t.function.empty() && nccl_tests_collective(t.function) != log.collective) continue;
    if (t.per_rank && (log.collective == "all_gather" || log.collective == "reduce_scatter")) t.line.bytes *= log.ranks;
    log.tuning.push_back(t.line);
  }
  return log;
}

}  // namespace

NcclTestsLog read_nccl_tests_log(const std::string& path, const std::string& collective) {
  require_readable_file(path, "an nccl-tests log");
  std::ifstream in(path, std::ios::binary);
  return parse_nccl_tests_log(path, in, collective);
}

}  // namespace overlapsim
