// Steady-state extrapolation over micro-batches (both fidelities).
//
// Every micro-batch of an iteration runs the same ops with the same sizes, so once a pipeline's
// schedule (1F1B or GPipe) has filled, each further micro-batch adds the same work to every
// stage and shifts the cool-down, the gradient reduction and the optimizer step by the same
// period: the iteration time, the compute, exposed-communication and bubble times, the op and
// activity counts are all affine in the number of micro-batches m from some m0 on (a pipeline
// of fixed-duration ops is a max-plus linear system, which becomes periodic after its transient;
// flows sharing links at the same points of every period keep it so). Measured on the default
// scenario (GPT-3 175B, PP 8): in analytic fidelity T(m) for m = 8..25 and 96 lies on one line to
// 1e-9 s; in flow fidelity T(8..11) steps by 0.248257719174 s each time.
//
// So a run may replay m0, m0 + 1 and m0 + 2 micro-batches instead of all m
// (m0 = max(PP, 4): a pipeline of PP stages has filled by micro-batch PP; at least 4 keeps the
// last stage's first backward pass, spaced unlike the later ones, out of the spacing filter
// on the last stage below), check that the three samples are collinear in every figure (the check that makes this
// exact rather than assumed: a transient still running, a period of two micro-batches or a choice
// that depends on m shows as a kink), and extend the line to m. Where the check fails the caller
// replays all m micro-batches. It does fail where streams overlap and slow each other by SM
// interference in a pattern that drifts: on the default scenario with SP on over 25 Gb/s
// InfiniBand (tests/data/scenarios/default-sp-25g.yaml, where pipeline sends last about as long
// as the GEMMs beside them), megatron's T(9) − T(8) and T(10) − T(9) are 0.231947 and 0.231495 s,
// so its samples are not collinear (6.5e-5 of the iteration) and it is replayed
// in full. The largest sample is replayed first and its own spacing checked (runs_periodically),
// so that such a strategy costs one sample, not three, before its full replay.
//
// That drift has the pipeline's period: the pattern of stream overlaps repeats every PP
// micro-batches, so T(m + PP) − T(m) is nearly constant where T(m + 1) − T(m) is not (that
// scenario, megatron, analytic: T(16) − T(8) and T(24) − T(16) differ by 1.5e-13 s of 1.85 s,
// while consecutive samples differ by 0.45 ms). Such a strategy is then sampled at m1, m1
// + PP and m1 + 2 PP (m1 ≡ m mod PP, m1 ≥ m0) and extended along that line, the extension's error
// estimated as if the second difference d recurred every period (a drift of constant curvature):
// d · k (k + 1) / 2 after k more periods. It is accepted where twice that estimate is at most
// kPeriodicExtrapolationBound of the iteration time in every figure; the op count, notes and
// plans must still be exactly affine. The estimate is not a strict bound, hence the factor
// (measured on an earlier model of the default scenario with SP on, whose pipeline sends were 8x
// too large: megatron's compute time was 5.7e-6 s off the full replay where its estimate was
// 4.4e-6, and wang-decomp's bubble time, accepted on the estimate alone, 1.2e-6 of the iteration
// off). Measured with it against --every-micro-batch: default-sp-25g's te-overlap within 2.3e-7
// of the iteration in every figure in both fidelities (`overlapsim run
// tests/data/scenarios/default-sp-25g.yaml -s te-overlap --json F`, with and without
// --every-micro-batch).
#pragma once

#include "sim/comm_report.hpp"
#include "sim/replay.hpp"
#include "sim/strategy.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

/// What one strategy's replay gives (StrategyResult's replayed figures; seconds).
struct ReplaySample {
  double iteration_s = 0, compute_s = 0, exposed_comm_s = 0, bubble_s = 0;
  long long ops = 0, activities = 0;
  std::vector<std::string> notes;  ///< the strategy's notes (counts in them grow with m)
  std::vector<OpPlan> plan;        ///< a searching strategy's choices (instances grow with m)
  /// How the replay ran its communication (SimulateOptions::communication_report; else empty)
  /// and the micro-batches that replay ran; an extension keeps its largest sample's.
  std::vector<CommOpSummary> communication;
  int micro_batches = 0;
};

/// Whether a replayed schedule of m micro-batches ran periodically before its end: on every
/// simulated rank from `first_rank` on (the last pipeline stage's, Parallelism::rank_of(0, 0,
/// PP − 1)), the first ops of the backward passes of micro-batches m − 2 − 2 period, m − 2 −
/// period and m − 2 (with period 1, the three before the last: the gradient reduction overlaps
/// the last) started at spacings equal within `tolerance_s`. The
/// last stage alternates one forward and one backward pass from its first micro-batch to its
/// last, so in a periodic pipeline its backward passes are spaced by the period from the second
/// on; an earlier stage's spacing changes where its warm-up ends and its cool-down begins (by a
/// forward pass: 142.51 against 142.02 ms on GPT-3 over 256 H100s, PP 4), which is no drift.
/// A cheap filter before the collinearity check: a pipeline still settling, or one whose
/// overlapping streams drift against each other, fails it from one replay, where the check
/// needs three. True where no such rank has such ops.
bool runs_periodically(const Schedule& schedule, const ReplayTimes& times, int first_rank, double tolerance_s,
                       int period = 1);

/// Relative tolerance of the collinearity check, against the largest of a figure's three values
/// (and 1e-12 s absolute): event times of a few seconds summed over 10^5 ops carry rounding of
/// about 1e-12 s, a change of regime moves a figure by far more than 1e-9 of it.
constexpr double kExtrapolationTolerance = 1e-9;

/// The largest estimated error of a periodic extension (samples PP micro-batches apart), relative
/// to the extended iteration time: a millionth, far below what any measurement or calibration
/// here resolves, and 10^3 times the consecutive samples' check, which such a drift fails.
constexpr double kPeriodicExtrapolationBound = 1e-6;

/// The sample at `m` micro-batches on the line through `s[0..2]`, taken at m0, m0 + step and
/// m0 + 2 step micro-batches (m > m0 + 2 step, m − m0 a multiple of step), or nullopt where the
/// three are not collinear in some figure: with step 1, a time off the line by more than
/// kExtrapolationTolerance of it; with step > 1 (a pipeline's period), a time whose extension's
/// estimated error (header) exceeds kPeriodicExtrapolationBound of the iteration time; in both,
/// the op count or an integer in a note not exactly affine, a note's text or a plan (other than
/// its instances) that differs between the samples. The activity count (what the replay cost)
/// is extended unchecked.
std::optional<ReplaySample> extrapolate_micro_batches(const std::array<ReplaySample, 3>& s, int m0, int m,
                                                      int step = 1);

/// The text `a`, `b`, `c` (taken at m0, m0 + step, m0 + 2 step) would read at m: equal apart
/// from unsigned integers, each exactly affine over the three (a count of ops or sites), which
/// are extended to m. Nullopt where anything else differs, an integer is not affine, or m − m0
/// is not a multiple of step.
std::optional<std::string> extrapolate_text(const std::string& a, const std::string& b, const std::string& c, int m0,
                                            int m, int step = 1);

}  // namespace overlapsim
