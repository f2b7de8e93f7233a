// Chrome trace event format writer (loads in https://ui.perfetto.dev and chrome://tracing).
//
// One process per (strategy, simulated rank), named "STRATEGY · rank R"; one thread (track) per
// stream of that rank, named after Schedule::stream_names; every op a complete event ("ph": "X")
// from its start to its end in microseconds of simulated time, named after the op, with its
// category (gemm, attention, memory, optimizer, collective, send, recv) and arguments: phase,
// layer, micro-batch, and the bytes, FLOPs, collective kind, group size or peer that apply. A
// receive's event starts when it is posted (or when its sender starts, whichever is later) and
// ends when the data has arrived.
//
// When the replay recorded its flows (ReplayOptions::record_flows), a process "STRATEGY · links"
// follows the ranks, with one track per directed link that carried traffic (named "A → B" after
// the devices at its ends; "A ↔ B" for a half-duplex link), computed by sim/link_trace.hpp:
//  - complete events (category "link") for each interval during which the link carried flows of
//    one set of ops, named after the op ("rank:name") or "N ops", with arguments bytes (moved in
//    the interval, each flow at a uniform rate bytes / duration), flows (that overlap it),
//    max_concurrent_flows, ops (the first 8 "rank:name") and more_ops (how many others);
//  - a counter per link, named like its track, with two series: flows (running at once) and
//    bytes_per_s (the sum of their bytes / duration; not the link's bandwidth share, which the
//    flow model does not report). Perfetto shows them as two counter tracks "NAME flows" and
//    "NAME bytes_per_s" under the links process.
// Folded replays record the representatives' flows (and the mirrors' flows they simulate), not
// those of every rank: see sim/link_trace.hpp.
//
// The trace needs only the Schedule and the replay's times (sim/replay.hpp). Several strategies
// go into one file, in the order added, so that their timelines sit one above the other. Events
// are streamed to a temporary file as schedules are added (a big trace is not held in memory)
// and the file is renamed over the target on commit().
#pragma once

#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <fstream>
#include <memory>
#include <string>

namespace overlapsim {

class TraceWriter {
 public:
  /// Collects the trace in memory (json() returns it).
  TraceWriter() = default;
  /// Streams the trace to a temporary file beside `path`; commit() renames it over `path` (a
  /// trace never appears half-written; one not committed is removed). Throws InputError naming
  /// `flag` and the path when it cannot be written.
  explicit TraceWriter(const std::string& path, const std::string& flag = "--trace");
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Adds one replayed schedule under `label` (e.g. the strategy's name), and its link tracks
  /// when times.flows is not empty.
  /// REQUIRES: times come from replaying `s` (same programs and ops) on `topo`; topo is not null
  /// when times.flows is not empty.
  void add(const std::string& label, const Schedule& s, const ReplayTimes& times, const Topology* topo = nullptr);
  /// In-memory mode: the whole trace as JSON text.
  std::string json() const;
  /// File mode: finishes the file and renames it over the target.
  void commit();
  long long events() const { return events_count_; }

 private:
  void flush_to_file(bool force);
  /// Starts the next event (separator, count, flush when the buffer is large).
  void next_event();
  void add_links(const std::string& label, const Schedule& s, const ReplayTimes& times, const Topology& topo);

  std::string events_;  ///< events not yet written (all of them in memory mode)
  bool any_ = false;
  int next_pid_ = 1;
  long long events_count_ = 0;
  std::string path_, flag_, target_, tmp_;
  std::unique_ptr<std::ofstream> file_;
};

}  // namespace overlapsim
