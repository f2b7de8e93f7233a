#include "sim/micro_batch_extrapolation.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace overlapsim {

namespace {

/// y at m on the line through (m0, a), (m0 + 1, b), (m0 + 2, c), or nullopt where the three are
/// not collinear within kExtrapolationTolerance.
std::optional<double> extend(double a, double b, double c, int m0, int m) {
  const double scale = std::max({std::abs(a), std::abs(b), std::abs(c)});
  if (std::abs((c - b) - (b - a)) > kExtrapolationTolerance * scale + 1e-12) return std::nullopt;
  // The slope over the two steps rounds less than either one.
  return c + (c - a) / 2 * static_cast<double>(m - (m0 + 2));
}

/// An integer at m on the line through (m0, a), (m0 + step, b), (m0 + 2 step, c) exactly, or
/// nullopt where they are not affine or m is not on the samples' grid.
std::optional<long long> extend_exact(long long a, long long b, long long c, int m0, int m, int step = 1) {
  if (c - b != b - a || (m - m0) % step != 0) return std::nullopt;
  return c + (c - b) * static_cast<long long>((m - (m0 + 2 * step)) / step);
}

/// Periodic samples (step > 1): y at m = m0 + 2 step + k step on the line through the three,
/// with the extrapolation's error estimated as if the second difference d = (c − b) − (b − a)
/// recurred every period (a slow drift): d · k (k + 1) / 2.
struct PeriodicExtension {
  double value = 0;
  double error_s = 0;
};
PeriodicExtension extend_periodic(double a, double b, double c, int m0, int m, int step) {
  const double k = static_cast<double>(m - (m0 + 2 * step)) / step;
  return {c + (c - a) / 2 * k, std::abs((c - b) - (b - a)) * k * (k + 1) / 2};
}

/// Splits a text into runs of decimal digits and runs of anything else.
std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const bool digit = std::isdigit(static_cast<unsigned char>(s[i])) != 0;
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) != 0) == digit) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool same_alternatives(const std::vector<PlanAlternative>& x, const std::vector<PlanAlternative>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].plan != y[i].plan || x[i].time_s != y[i].time_s || x[i].exposed_s != y[i].exposed_s) return false;
  return true;
}

}  // namespace

bool runs_periodically(const Schedule& schedule, const ReplayTimes& times, int first_rank, double tolerance_s,
                       int period) {
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    if (schedule.programs[r].rank < first_rank) continue;
    const auto& ops = schedule.programs[r].ops;
    int m = 0;
    for (const Op& op : ops) m = std::max(m, op.micro_batch + 1);
    const int from = m - 2 - 2 * period;  // micro-batches from, from + period, m − 2
    if (from < 0) continue;
    std::array<double, 3> first{-1, -1, -1};  // the first backward op of each, in program order
    for (size_t i = 0; i < ops.size(); ++i) {
      const int d = ops[i].micro_batch - from;
      const int k = d % period == 0 ? d / period : -1;
      if (ops[i].phase == Phase::Backward && d >= 0 && k < 3 && k >= 0 && first[k] < 0) first[k] = times.start_s[r][i];
    }
    if (first[0] < 0 || first[1] < 0 || first[2] < 0) continue;
    if (std::abs((first[2] - first[1]) - (first[1] - first[0])) > tolerance_s) return false;
  }
  return true;
}

std::optional<std::string> extrapolate_text(const std::string& a, const std::string& b, const std::string& c, int m0,
                                            int m, int step) {
  if (a == b && b == c) return a;
  const auto ta = tokens(a), tb = tokens(b), tc = tokens(c);
  if (ta.size() != tb.size() || tb.size() != tc.size()) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < ta.size(); ++i) {
    const bool digits = std::isdigit(static_cast<unsigned char>(ta[i][0])) != 0;
    if (!digits || (ta[i] == tb[i] && tb[i] == tc[i])) {
      if (ta[i] != tb[i] || tb[i] != tc[i]) return std::nullopt;
      out += ta[i];
      continue;
    }
    // A count that grows with m; a decimal fraction's digits ("0.25" vs "0.26") are not one.
    const bool fraction = i >= 2 && ta[i - 1].back() == '.' && std::isdigit(static_cast<unsigned char>(ta[i - 2][0])) != 0;
    if (fraction || ta[i].size() > 15 || tb[i].size() > 15 || tc[i].size() > 15) return std::nullopt;
    const auto v = extend_exact(std::stoll(ta[i]), std::stoll(tb[i]), std::stoll(tc[i]), m0, m, step);
    if (!v || *v < 0) return std::nullopt;
    out += std::to_string(*v);
  }
  return out;
}

std::optional<ReplaySample> extrapolate_micro_batches(const std::array<ReplaySample, 3>& s, int m0, int m, int step) {
  if (step < 1 || m <= m0 + 2 * step || (m - m0) % step != 0) return std::nullopt;
  ReplaySample r;
  std::optional<double> t, comp, exp, bub;
  if (step == 1) {
    t = extend(s[0].iteration_s, s[1].iteration_s, s[2].iteration_s, m0, m);
    comp = extend(s[0].compute_s, s[1].compute_s, s[2].compute_s, m0, m);
    exp = extend(s[0].exposed_comm_s, s[1].exposed_comm_s, s[2].exposed_comm_s, m0, m);
    bub = extend(s[0].bubble_s, s[1].bubble_s, s[2].bubble_s, m0, m);
  } else {
    const PeriodicExtension e[4] = {
        extend_periodic(s[0].iteration_s, s[1].iteration_s, s[2].iteration_s, m0, m, step),
        extend_periodic(s[0].compute_s, s[1].compute_s, s[2].compute_s, m0, m, step),
        extend_periodic(s[0].exposed_comm_s, s[1].exposed_comm_s, s[2].exposed_comm_s, m0, m, step),
        extend_periodic(s[0].bubble_s, s[1].bubble_s, s[2].bubble_s, m0, m, step)};
    // Twice the estimate: it fell short of the measured error by up to 30% (header).
    for (const PeriodicExtension& x : e)
      if (2 * x.error_s > kPeriodicExtrapolationBound * std::abs(e[0].value) + 1e-12) return std::nullopt;
    t = e[0].value;
    comp = e[1].value;
    exp = e[2].value;
    bub = e[3].value;
  }
  const auto ops = extend_exact(s[0].ops, s[1].ops, s[2].ops, m0, m, step);
  if (!t || !comp || !exp || !bub || !ops) return std::nullopt;
  // Times are never negative: a rounding below zero (−1e-15 s of a bubble that is 0 in every
  // sample) reads 0; anything more is no steady state.
  for (const std::optional<double>* v : {&t, &comp, &exp, &bub})
    if (**v < -kExtrapolationTolerance * std::max(1.0, std::abs(*t))) return std::nullopt;
  r.iteration_s = std::max(0.0, *t);
  r.compute_s = std::max(0.0, *comp);
  r.exposed_comm_s = std::max(0.0, *exp);
  r.bubble_s = std::max(0.0, *bub);
  r.ops = *ops;
  // What the replay cost, not what it found: extended at the two steps' mean rate, unchecked (in
  // flow fidelity a ring step's pacing timer may or may not be needed by a rounding, 55066 and
  // 55068 more activities per micro-batch under centauri on the default scenario).
  r.activities = s[2].activities + std::llround(static_cast<double>(s[2].activities - s[0].activities) / 2 *
                                                static_cast<double>(m - (m0 + 2 * step)) / step);
  if (s[0].notes.size() != s[1].notes.size() || s[1].notes.size() != s[2].notes.size()) return std::nullopt;
  for (size_t i = 0; i < s[0].notes.size(); ++i) {
    const auto n = extrapolate_text(s[0].notes[i], s[1].notes[i], s[2].notes[i], m0, m, step);
    if (!n) return std::nullopt;
    r.notes.push_back(*n);
  }
  if (s[0].plan.size() != s[1].plan.size() || s[1].plan.size() != s[2].plan.size()) return std::nullopt;
  for (size_t i = 0; i < s[0].plan.size(); ++i) {
    const OpPlan &x = s[0].plan[i], &y = s[1].plan[i], &z = s[2].plan[i];
    for (const OpPlan* o : {&y, &z})
      if (o->op != x.op || o->kind != x.kind || o->purpose != x.purpose || o->group_size != x.group_size ||
          o->bytes != x.bytes || o->gemm != x.gemm || o->chosen != x.chosen ||
          !same_alternatives(o->alternatives, x.alternatives))
        return std::nullopt;
    const auto inst = extend_exact(x.instances, y.instances, z.instances, m0, m, step);
    if (!inst) return std::nullopt;
    OpPlan p = z;
    p.instances = *inst;
    r.plan.push_back(p);
  }
  r.communication = s[2].communication;
  r.micro_batches = s[2].micro_batches;
  return r;
}

}  // namespace overlapsim
