#include "sim/link_trace.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace overlapsim {

void FlowRecorder::started(const void* tag, const FlowRecord& r) {
  open_[tag] = flows_.size();
  flows_.push_back(r);
}

void FlowRecorder::ended(const void* tag, double now_s) {
  auto it = open_.find(tag);
  if (it == open_.end()) return;
  flows_[it->second].end_s = now_s;
  open_.erase(it);
}

std::vector<FlowRecord> FlowRecorder::take() {
  OVERLAPSIM_CHECK(open_.empty(), "flow recorder: a flow never arrived");
  open_.clear();
  return std::move(flows_);
}

namespace {

/// The op a flow belongs to, as a label index.
class OpLabels {
 public:
  OpLabels(const Schedule& s) : s_(s) {
    for (size_t i = 0; i < s.programs.size(); ++i) rank_index_[s.programs[i].rank] = static_cast<int>(i);
  }

  int of(const FlowRecord& f) {
    const auto key = std::make_tuple(f.rank, f.op, f.op >= 0 ? int64_t{-1} : f.match);
    auto [it, fresh] = ids_.try_emplace(key, static_cast<int>(labels_.size()));
    if (fresh) labels_.push_back(std::to_string(f.rank) + ":" + name(f));
    return it->second;
  }
  const std::string& label(int id) const { return labels_[id]; }

 private:
  std::string name(const FlowRecord& f) {
    auto r = rank_index_.find(f.rank);
    if (f.op >= 0 && r != rank_index_.end()) return s_.programs[r->second].ops.at(f.op).name;
    // A mirror's flow: the op of a simulated rank with the same match id.
    if (by_match_.empty())
      for (const auto& p : s_.programs)
        for (const auto& op : p.ops)
          if (op.type != OpType::Compute) by_match_.try_emplace(op.match, &op.name.str());
    auto m = by_match_.find(f.match);
    return m != by_match_.end() ? *m->second : "flow";
  }

  const Schedule& s_;
  std::unordered_map<int, int> rank_index_;
  std::unordered_map<int64_t, const std::string*> by_match_;
  std::map<std::tuple<int, int, int64_t>, int> ids_;
  std::vector<std::string> labels_;
};

std::string track_name(const Topology& topo, int key) {
  const int id = key / 2;
  const auto [a, b] = topo.endpoints(id);
  const std::string& na = topo.graph[a].name;
  const std::string& nb = topo.graph[b].name;
  if (!topo.link(id).full_duplex) return na + " ↔ " + nb;
  return key % 2 == 0 ? na + " → " + nb : nb + " → " + na;
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

struct Edge {
  double time_s;
  int flow;  ///< index into the link's flows
  bool start;
};

/// Segments and samples of one link carrying `flows` (indices into `all`); labels[i]: op of all[i].
void sweep(const std::vector<FlowRecord>& all, const std::vector<int>& labels, const std::vector<int>& flows,
           OpLabels& names, LinkTrack& track) {
  std::vector<Edge> edges;
  edges.reserve(2 * flows.size());
  for (int i = 0; i < static_cast<int>(flows.size()); ++i) {
    const FlowRecord& f = all[flows[i]];
    if (f.end_s <= f.start_s) continue;  // took no time: carried nothing over an interval
    edges.push_back(Edge{f.start_s, i, true});
    edges.push_back(Edge{f.end_s, i, false});
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& x, const Edge& y) { return std::tie(x.time_s, x.start) < std::tie(y.time_s, y.start); });
  std::unordered_map<int, int> active_ops;  // label → flows of it on the link
  std::set<int> active;                     // flows on the link (indices into `flows`)
  std::vector<int> seg_ops;                 // labels of the open segment
  std::vector<int> seg_flows;               // flows that overlap the open segment
  std::vector<int> started;                 // flows that start at the current instant
  double rate = 0;
  LinkSegment* seg = nullptr;
  LinkSample last{0, 0, 0};
  // Each flow's bytes pro rata of its time inside the segment (a flow wholly inside counts
  // exactly its bytes).
  auto close = [&](double t) {
    seg->end_s = t;
    for (int i : seg_flows) {
      const FlowRecord& f = all[flows[i]];
      const double inside = std::min(f.end_s, t) - std::max(f.start_s, seg->start_s);
      seg->bytes += inside == f.end_s - f.start_s ? f.bytes : f.bytes * inside / (f.end_s - f.start_s);
    }
    seg->flows = static_cast<int>(seg_flows.size());
    seg = nullptr;
  };
  for (size_t e = 0; e < edges.size();) {
    const double t = edges[e].time_s;
    bool ops_changed = false;
    started.clear();
    for (; e < edges.size() && edges[e].time_s == t; ++e) {
      const int i = edges[e].flow;
      const FlowRecord& f = all[flows[i]];
      const int op = labels[flows[i]];
      const double r = f.bytes / (f.end_s - f.start_s);
      if (edges[e].start) {
        active.insert(i);
        started.push_back(i);
        rate += r;
        if (active_ops[op]++ == 0) ops_changed = true;
      } else {
        active.erase(i);
        rate -= r;
        if (--active_ops[op] == 0) {
          active_ops.erase(op);
          ops_changed = true;
        }
      }
    }
    if (active.empty()) rate = 0;  // no rounding drift carried across idle time
    // A flow that ends as another of the same ops starts does not cut the segment.
    if (ops_changed && seg) {
      ops_changed = active_ops.size() != seg_ops.size() ||
                    std::any_of(seg_ops.begin(), seg_ops.end(), [&](int op) { return !active_ops.count(op); });
    }
    if (seg && (ops_changed || active.empty())) close(t);
    if (!seg && !active.empty()) {
      track.segments.push_back(LinkSegment{t, t, 0, 0, 0, {}, 0});
      seg = &track.segments.back();
      seg_flows.assign(active.begin(), active.end());
      started.clear();  // counted above
      seg_ops.clear();
      for (const auto& [op, n] : active_ops) seg_ops.push_back(op);
      std::sort(seg_ops.begin(), seg_ops.end());  // labels are numbered in order of appearance
      for (int op : seg_ops) {
        if (static_cast<int>(seg->ops.size()) < kMaxOpsListed) seg->ops.push_back(names.label(op));
        else ++seg->more_ops;
      }
    }
    if (seg) {
      seg_flows.insert(seg_flows.end(), started.begin(), started.end());
      seg->max_concurrent = std::max(seg->max_concurrent, static_cast<int>(active.size()));
    }
    const int n_active = static_cast<int>(active.size());
    if (n_active != last.flows || !same(rate, last.bytes_per_s) || track.samples.empty()) {
      last = LinkSample{t, n_active, rate};
      track.samples.push_back(last);
    }
  }
}

}  // namespace

std::vector<LinkTrack> link_tracks(const Schedule& s, const std::vector<FlowRecord>& flows, const Topology& topo) {
  OpLabels names(s);
  std::vector<int> labels(flows.size());
  std::map<int, std::vector<int>> by_link;  // track key → flows crossing it
  std::map<std::pair<int, int>, std::vector<int>> routes;
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowRecord& f = flows[i];
    OVERLAPSIM_CHECK(f.end_s >= f.start_s, "link trace: a flow without an arrival time");
    labels[i] = names.of(f);
    auto [it, fresh] = routes.try_emplace({f.src_rank, f.dst_rank});
    if (fresh)
      for (const Hop& h : topo.route(f.src_rank, f.dst_rank))
        it->second.push_back(2 * h.link_id + (topo.link(h.link_id).full_duplex && !h.forward ? 1 : 0));
    for (int key : it->second) by_link[key].push_back(static_cast<int>(i));
  }
  std::vector<LinkTrack> out;
  out.reserve(by_link.size());
  for (const auto& [key, on_link] : by_link) {
    out.push_back(LinkTrack{key, track_name(topo, key), {}, {}});
    sweep(flows, labels, on_link, names, out.back());
  }
  // Parallel links between the same two devices: told apart by their ids.
  std::map<std::string, int> uses;
  for (const LinkTrack& t : out) ++uses[t.name];
  for (LinkTrack& t : out)
    if (uses[t.name] > 1) t.name += " #" + std::to_string(t.key / 2);
  return out;
}

}  // namespace overlapsim
