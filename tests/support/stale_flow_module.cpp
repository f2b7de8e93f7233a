// A flow module as a stale build would leave it: it has the entry points of sim/flow_replay.cpp
// but another layout value, so the loader (sim/replay.cpp) must refuse it before calling it.
// Built only for the tests (CMakeLists.txt: overlapsim_stale_flow_module).
#include <cstdlib>

extern "C" unsigned long long overlapsim_flow_abi() { return 1; }

extern "C" void overlapsim_flow_replay() { std::abort(); }  // never called: refused first
