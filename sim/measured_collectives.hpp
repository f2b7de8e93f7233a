// Measured collective times for the analytic fidelity: a calibration profile's `collectives`
// section (calibrate/profile_tables.hpp CollectiveFit: nccl-tests points and their α / busbw fit
// per collective and group shape, from `overlapsim calibrate import-nccl-tests` or the harness).
//
// Rule. A collective of S bytes (nccl-tests' size: the AllReduce buffer, the AllGather output,
// the ReduceScatter input) over a group of n GPUs on m nodes is timed by the fit of the same
// collective, n and m, the same NCCL_COLLNET_ENABLE (CollectiveFit::collnet_enable) — and,
// where the op or the options force an algorithm or a protocol, the same one (a fit records
// NCCL_ALGO / NCCL_PROTO, "auto" when NCCL chose), where that algorithm can run here —:
//   - between two measured sizes, the time interpolated linearly in S between them (exact at
//     every measured point);
//   - outside the measured sizes, the fit: t = α + S · f(n) / busbw (nccl-tests' bus factor f).
// Only `analytic` uses it (sim/replay.hpp); `flow` always lowers to NCCL's algorithms.
#pragma once

#include "calibrate/profile_tables.hpp"
#include "sim/collective_plan.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <string>
#include <vector>

namespace overlapsim {

/// nccl-tests' name of a collective ("all_reduce", "all_gather", "reduce_scatter", "alltoall",
/// "broadcast", "reduce"), as profiles record it.
const char* nccl_tests_name(CollectiveKind k);

/// The fit that times `kind` over `ranks` GPUs on `nodes` nodes (rule above), or nullptr.
/// `algorithm`: the op's (Auto: a fit of NCCL's own choice, "auto"); `protocol`: "" for NCCL's
/// choice, else "LL", "LL128" or "Simple"; `collnet_enable`: NCCL_COLLNET_ENABLE of the job.
const CollectiveFit* find_measured(const std::vector<CollectiveFit>& fits, CollectiveKind kind, int ranks, int nodes,
                                   CollectiveAlgorithm algorithm, const std::string& protocol,
                                   bool collnet_enable = false);

/// The fit that times collective op `op` over `group` (global ranks) of `topo` in the replay:
/// find_measured with the op's algorithm (else the options'), the options' forced protocol and
/// NCCL_COLLNET_ENABLE; nullptr where the op forces its channels (Op::channels > 0: the fits are
/// of NCCL's own) or forces an algorithm that cannot run over `group`: one that `plan` does not
/// run, where given (the op's plan with `options`, plan_collective after CollectiveOptions::take_op:
/// the callers' own, so that the condition is not found again for every instance of the op), else
/// one algorithm_unavailable_reason names a reason for.
const CollectiveFit* find_measured(const std::vector<CollectiveFit>& fits, const Op& op, const Topology& topo,
                                   const std::vector<int>& group, const CollectiveOptions& options,
                                   const CollectivePlan* plan = nullptr);

/// Time of `bytes` under fit `f` (rule above), seconds. REQUIRES: f.busbw_Bps > 0.
double measured_time_s(const CollectiveFit& f, double bytes);

}  // namespace overlapsim
