// The GPU's SM clock, power draw and temperature through NVML, opened at run time from the
// driver's libnvidia-ml.so.1, so that the harness has no build dependency on it and runs where
// it is missing. The few entry points used are declared here as NVIDIA's nvml.h declares them
// (NVML API Reference Guide: nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2,
// nvmlDeviceGetClockInfo with NVML_CLOCK_SM = 1, nvmlDeviceGetPowerUsage in milliwatts,
// nvmlDeviceGetTemperature with NVML_TEMPERATURE_GPU = 0); NVML_SUCCESS is 0.
#include "calibrate/harness/harness.hpp"

#include <dlfcn.h>

#include <mutex>

namespace overlapsim::harness {

namespace {

using NvmlDevice = void*;
using InitFn = int (*)();
using HandleByPciFn = int (*)(const char*, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned*);
using PowerFn = int (*)(NvmlDevice, unsigned*);
using TemperatureFn = int (*)(NvmlDevice, int, unsigned*);

constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

struct Nvml {
  HandleByPciFn handle_by_pci = nullptr;
  ClockFn clock = nullptr;
  PowerFn power = nullptr;
  TemperatureFn temperature = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    const auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    n.handle_by_pci = reinterpret_cast<HandleByPciFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.power = reinterpret_cast<PowerFn>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    n.temperature = reinterpret_cast<TemperatureFn>(dlsym(lib, "nvmlDeviceGetTemperature"));
    n.ok = init && n.handle_by_pci && n.clock && n.power && n.temperature && init() == 0;
  });
  return n;
}

}  // namespace

GpuState read_gpu_state(const std::string& pci_bus_id) {
  GpuState s;
  const Nvml& n = nvml();
  NvmlDevice dev = nullptr;
  if (!n.ok || pci_bus_id.empty() || n.handle_by_pci(pci_bus_id.c_str(), &dev) != 0) return s;
  unsigned v = 0;
  if (n.clock(dev, kNvmlClockSm, &v) == 0) s.sm_clock_mhz = v;
  if (n.power(dev, &v) == 0) s.power_w = v / 1000.0;
  if (n.temperature(dev, kNvmlTemperatureGpu, &v) == 0) s.temperature_c = v;
  return s;
}

}  // namespace overlapsim::harness
