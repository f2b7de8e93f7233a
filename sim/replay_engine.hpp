// The replay engine behind replay.hpp, run inside the simulation process. Internal to sim/.
#pragma once

#include "sim/activity_backend.hpp"
#include "sim/replay.hpp"

namespace overlapsim {

/// Builds the backend's machine, replays the schedule on it and returns the op times.
ReplayTimes run_replay_engine(const Schedule& schedule, const Topology& topo, const ReplayOptions& options,
                              ActivityBackend& backend);

}  // namespace overlapsim
