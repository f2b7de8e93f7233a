// Per-link traffic of a replay, for the link tracks of the Chrome/Perfetto trace (sim/trace.hpp).
//
// Recording (FlowRecorder): when ReplayOptions::record_flows is set, the replay engine notes
// every flow it starts — ring and chain steps, AllToAll pieces, sends — with its start and
// arrival times, bytes, end points and the op it belongs to (ReplayTimes::flows). Without the
// flag nothing is recorded and nothing is paid.
//
// What a link track shows (link_tracks): a flow crosses every link of its route
// (Topology::route); a full-duplex link has one track per direction ("n3.gpu2 → n3.nic2"), a
// half-duplex one a single track for both ("gpu0 ↔ gpu1": one capacity, design §3). Only links
// that carried at least one recorded flow have a track. The flow model does not expose a flow's
// instantaneous rate, so a flow is taken to move its bytes uniformly over [start, arrival]
// (rate = bytes / duration, route latency included). On that basis a track holds:
//  - segments: maximal intervals during which the link carried flows and the set of ops
//    ("rank:name") those flows belong to did not change. Back-to-back steps of one collective
//    make one segment; a second op starting or ending on the link cuts it, so overlapping
//    communication shows as its own segment. Each has the bytes moved in it (each flow's bytes
//    pro rata of its time inside), the flows that overlap it, the most that ran at once, and
//    its ops (the first kMaxOpsListed, and how many more);
//  - samples: a counter series, one sample wherever it changes: the number of flows on the link
//    and the sum of their rates (bytes/s implied by the recorded flows; not the link's share of
//    bandwidth, which max-min sharing decides and the flow model does not report).
// Folded replays (schedule.hpp) issue the flows of the simulated ranks, plus those of mirrors
// that a representative needs to be timed (uneven rings of ≤ 64 flows per step, AllToAll
// pieces sent to a representative, sends from a mirror): links only mirrored ranks use have no
// track, and a link shared by mirrored rings shows the representative's flows only.
#pragma once

#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <string>
#include <unordered_map>
#include <vector>

namespace overlapsim {

/// The replay engine's note-taker (internal to sim/): flows are identified by their activity
/// tag between start and end.
class FlowRecorder {
 public:
  /// A flow started; `r.end_s` is filled in by ended().
  void started(const void* tag, const FlowRecord& r);
  /// An activity ended at `now_s`; ignored when it is not a recorded flow.
  void ended(const void* tag, double now_s);
  /// The flows, in start order. REQUIRES: every started flow has ended.
  std::vector<FlowRecord> take();

 private:
  std::vector<FlowRecord> flows_;
  std::unordered_map<const void*, size_t> open_;
};

/// Ops listed by name in a segment; the others are counted.
constexpr int kMaxOpsListed = 8;

struct LinkSegment {
  double start_s = 0, end_s = 0;  ///< seconds of simulated time
  double bytes = 0;               ///< bytes moved in the interval (uniform rate per flow)
  int flows = 0;                  ///< flows that overlap the interval
  int max_concurrent = 0;         ///< most flows on the link at one instant of it
  std::vector<std::string> ops;   ///< "rank:name", first kMaxOpsListed in order of appearance
  int more_ops = 0;               ///< ops not listed
};

struct LinkSample {
  double time_s = 0;
  int flows = 0;             ///< flows on the link from this instant on
  double bytes_per_s = 0;    ///< sum over them of bytes / (arrival − start)
};

struct LinkTrack {
  int key = 0;        ///< full duplex: 2·link id + backward; half duplex: 2·link id
  std::string name;   ///< "A → B" (full duplex, direction of travel) or "A ↔ B"
  std::vector<LinkSegment> segments;
  std::vector<LinkSample> samples;
};

/// The link tracks of a replay's flows, ordered by key.
/// REQUIRES: `flows` come from replaying `s` on `topo` with ReplayOptions::record_flows.
std::vector<LinkTrack> link_tracks(const Schedule& s, const std::vector<FlowRecord>& flows, const Topology& topo);

}  // namespace overlapsim
