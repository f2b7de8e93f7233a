#include "sim/trace.hpp"

#include "sim/error.hpp"
#include "sim/link_trace.hpp"
#include "sim/output_file.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

namespace overlapsim {

namespace {

/// Seconds as the trace's microseconds, rounded to its 3 decimals (a nanosecond) before an
/// event's start and its end are subtracted: back-to-back events then meet exactly (regression:
/// start and duration rounded each on its own overlapped 1 ns, which viewers may nest).
double ns_us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
}

const char* category(const Op& op) {
  switch (op.type) {
    case OpType::Collective: return "collective";
    case OpType::Send: return "send";
    case OpType::Recv: return "recv";
    case OpType::Compute:
      switch (op.compute) {
        case ComputeKind::Gemm: return "gemm";
        case ComputeKind::Attention: return "attention";
        case ComputeKind::MemoryBound: return "memory";
        case ComputeKind::Optimizer: return "optimizer";
      }
  }
  return "op";
}

}  // namespace

void TraceWriter::next_event() {
  if (any_) events_ += ",\n";
  any_ = true;
  ++events_count_;
  if (events_.size() > (1 << 22)) flush_to_file(false);
}

void TraceWriter::add(const std::string& label, const Schedule& s, const ReplayTimes& t, const Topology* topo) {
  OVERLAPSIM_CHECK(t.start_s.size() == s.programs.size() && t.end_s.size() == s.programs.size(),
                   "trace: times do not belong to this schedule");
  std::string& out = events_;
  for (size_t ri = 0; ri < s.programs.size(); ++ri) {
    const RankProgram& p = s.programs[ri];
    OVERLAPSIM_CHECK(t.start_s[ri].size() == p.ops.size(), "trace: times do not belong to this schedule");
    const int pid = next_pid_++;
    next_event();
    out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":)", pid);
    append_escaped(out, fmt::format("{} · rank {}", label, p.rank));
    out += "}}";
    next_event();
    out += fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", pid, pid);
    std::set<int> used;
    for (const Op& op : p.ops) used.insert(op.stream);
    for (int st : used) {
      const std::string name = st < static_cast<int>(s.stream_names.size()) ? s.stream_names[st]
                                                                             : "stream " + std::to_string(st);
      next_event();
      out += fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":)", pid, st);
      append_escaped(out, name);
      out += "}}";
      next_event();
      out += fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                         pid, st, st);
    }
    for (size_t oi = 0; oi < p.ops.size(); ++oi) {
      const Op& op = p.ops[oi];
      const double start = t.start_s[ri][oi], end = t.end_s[ri][oi];
      next_event();
      out += R"({"ph":"X","name":)";
      append_escaped(out, op.name);
      out += fmt::format(R"(,"cat":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"phase":"{}")",
                         category(op), pid, op.stream, ns_us(start), std::max(0.0, ns_us(end) - ns_us(start)),
                         to_string(op.phase));
      if (op.layer >= 0) out += fmt::format(R"(,"layer":{})", op.layer);
      if (op.micro_batch >= 0) out += fmt::format(R"(,"micro_batch":{})", op.micro_batch);
      switch (op.type) {
        case OpType::Compute:
          if (op.flops > 0) out += fmt::format(R"(,"flops":{:.17g})", op.flops);
          if (op.gemm_m > 0)
            out += fmt::format(R"(,"gemm":"{}x{}x{}{}")", op.gemm_m, op.gemm_n, op.gemm_k,
                               op.gemm_batch > 1 ? fmt::format(" x{}", op.gemm_batch) : "");
          break;
        case OpType::Collective:
          out += fmt::format(R"(,"kind":"{}","bytes":{:.17g},"group_size":{},"purpose":"{}")",
                             to_string(op.collective), op.bytes, s.groups.at(op.group).ranks.size(),
                             to_string(op.purpose));
          if (op.num_sm >= 0) out += fmt::format(R"(,"num_sm":{})", op.num_sm);
          break;
        case OpType::Send:
        case OpType::Recv:
          out += fmt::format(R"(,"peer":{},"bytes":{:.17g},"purpose":"{}")", op.peer, op.bytes, to_string(op.purpose));
          if (op.group >= 0) out += fmt::format(R"(,"group_size":{})", s.groups.at(op.group).ranks.size());
          if (op.num_sm >= 0) out += fmt::format(R"(,"num_sm":{})", op.num_sm);
          break;
      }
      out += "}}";
    }
  }
  if (t.flows.empty()) return;
  OVERLAPSIM_CHECK(topo != nullptr, "trace: flows without the topology they crossed");
  add_links(label, s, t, *topo);
}

void TraceWriter::add_links(const std::string& label, const Schedule& s, const ReplayTimes& t, const Topology& topo) {
  std::string& out = events_;
  const std::vector<LinkTrack> tracks = link_tracks(s, t.flows, topo);
  const int pid = next_pid_++;
  next_event();
  out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":)", pid);
  append_escaped(out, fmt::format("{} · links", label));
  out += "}}";
  next_event();
  out += fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", pid, pid);
  for (size_t tid = 0; tid < tracks.size(); ++tid) {
    const LinkTrack& track = tracks[tid];
    next_event();
    out += fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":)", pid, tid);
    append_escaped(out, track.name);
    out += "}}";
    next_event();
    out += fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       pid, tid, tid);
    for (const LinkSegment& seg : track.segments) {
      const int n_ops = static_cast<int>(seg.ops.size()) + seg.more_ops;
      next_event();
      out += R"({"ph":"X","name":)";
      append_escaped(out, n_ops == 1 ? seg.ops[0] : fmt::format("{} ops", n_ops));
      out += fmt::format(
          R"(,"cat":"link","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"bytes":{:.17g},"flows":{},"max_concurrent_flows":{},"ops":[)",
          pid, tid, ns_us(seg.start_s), std::max(0.0, ns_us(seg.end_s) - ns_us(seg.start_s)), seg.bytes, seg.flows,
          seg.max_concurrent);
      for (size_t i = 0; i < seg.ops.size(); ++i) {
        if (i) out += ',';
        append_escaped(out, seg.ops[i]);
      }
      out += ']';
      if (seg.more_ops > 0) out += fmt::format(R"(,"more_ops":{})", seg.more_ops);
      out += "}}";
    }
    for (const LinkSample& c : track.samples) {
      next_event();
      out += R"({"ph":"C","name":)";
      append_escaped(out, track.name);
      out += fmt::format(R"(,"pid":{},"ts":{:.3f},"args":{{"flows":{},"bytes_per_s":{:.6g}}}}})", pid, c.time_s * 1e6,
                         c.flows, c.bytes_per_s);
    }
  }
}

namespace {
constexpr const char* kHeader =
    "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"overlapsim\",\"time\":\"simulated\"},"
    "\"traceEvents\":[\n";
constexpr const char* kFooter = "\n]}\n";
}  // namespace

TraceWriter::TraceWriter(const std::string& path, const std::string& flag) : path_(path), flag_(flag) {
  namespace fs = std::filesystem;
  check_output_path(path, flag);
  target_ = resolve_output_path(path);
  tmp_ = create_temp_beside(target_, flag);
  file_ = std::make_unique<std::ofstream>(tmp_, std::ios::binary | std::ios::trunc);
  if (!*file_) {
    file_.reset();
    discard_temp(tmp_);  // (it was left behind)
    throw InputError(SourceLocation{path_, 0, 0}, flag_, "cannot open the file for writing");
  }
  *file_ << kHeader;
}

TraceWriter::~TraceWriter() {
  if (file_) {
    file_.reset();
    discard_temp(tmp_);
  }
}

void TraceWriter::flush_to_file(bool force) {
  if (!file_ || (!force && events_.size() < (1 << 22))) return;
  file_->write(events_.data(), static_cast<std::streamsize>(events_.size()));
  events_.clear();
  if (!*file_) throw InputError(SourceLocation{path_, 0, 0}, flag_, "write failed");
}

std::string TraceWriter::json() const {
  OVERLAPSIM_CHECK(!file_ && tmp_.empty(), "json() of a trace streamed to a file");
  return kHeader + events_ + kFooter;
}

void TraceWriter::commit() {
  OVERLAPSIM_CHECK(file_ != nullptr, "commit() of a trace not streamed to a file, or committed twice");
  flush_to_file(true);
  *file_ << kFooter;
  file_->flush();
  const bool ok = static_cast<bool>(*file_);
  file_.reset();
  commit_temp(tmp_, target_, ok, path_, flag_);
}

}  // namespace overlapsim
