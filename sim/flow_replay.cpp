// The flow fidelity's entry point. With sim/platform.cpp and sim/simgrid_backend.cpp it makes the
// flow module, liboverlapsim_flow.so: the only code that links SimGrid. The overlapsim binary
// loads it (sim/replay.cpp) the first time a flow replay is asked for, so a run that never
// replays flows does not load SimGrid and the libraries it pulls in (ns-3, GSL: ~45 ms of
// dynamic linking and static constructors per process, measured as `overlapsim` with no
// arguments, 49 ms against 3 ms for a program linking only fmt and yaml-cpp). The module's
// references to the engine (replay_engine.cpp, the topology, the collective plans) resolve
// against the binary that loads it, which exports them.
#include "sim/activity_backend.hpp"
#include "sim/platform.hpp"
#include "sim/replay.hpp"
#include "sim/replay_engine.hpp"

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

/// kFlowModuleAbi as this module was built (sim/replay.hpp); the loader compares it with its own.
extern "C" unsigned long long overlapsim_flow_abi() { return overlapsim::kFlowModuleAbi; }

/// replay_in_process's SimGrid part (sim/replay.hpp): creates the process's one SimGrid Engine,
/// configures CM02 max-min sharing (configure_ideal_network), builds the platform and replays.
/// Throws what the replay throws. Looked up by this name (C linkage: an unmangled symbol).
extern "C" void overlapsim_flow_replay(const overlapsim::Schedule& schedule, const overlapsim::Topology& topo,
                                       const overlapsim::ReplayOptions& options, overlapsim::ReplayTimes& out) {
  int argc = 2;
  char arg0[] = "overlapsim";
  char arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  overlapsim::configure_ideal_network();
  auto backend = overlapsim::make_simgrid_backend();
  out = overlapsim::run_replay_engine(schedule, topo, options, *backend);
}
