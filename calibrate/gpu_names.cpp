// GPU name -> device-catalog model (gpu_names.hpp).
#include "calibrate/gpu_names.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"

namespace overlapsim {

std::string device_model_for_gpu_name(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H200") && !has("NVL")) return "h200-sxm-141gb";
  if (has("H100") && (has("HBM3") || has("SXM")) && !has("NVL") && !has("PCIe")) return "h100-sxm5-80gb";
  if (has("A100") && has("SXM") && has("80GB")) return "a100-sxm4-80gb";
  if (has("RTX A6000")) return "rtx-a6000";
  return "";
}

void check_device_option(const std::string& device) {
  if (!device.empty() && !is_known_device(device))
    throw InputError(SourceLocation{"<command line>", 0, 0}, "--device",
                     "expected a known device model (" + device_models_text() + "), found '" + device + "'");
}

}  // namespace overlapsim
