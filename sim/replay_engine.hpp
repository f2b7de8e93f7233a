// The replay engine behind replay.hpp, run inside the simulation process. Internal to sim/.
#pragma once

#include "sim/replay.hpp"

namespace overlapsim {

/// Builds the platform, replays the schedule and returns the op times. REQUIRES: a SimGrid
/// Engine exists in this process and no platform was built yet.
ReplayTimes run_replay_engine(const Schedule& schedule, const Topology& topo, const ReplayOptions& options);

}  // namespace overlapsim
