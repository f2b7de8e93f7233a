// GPU name -> device-catalog model (gpu_names.hpp).
#include "calibrate/gpu_names.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <cctype>

namespace overlapsim {

std::string device_model_for_gpu_name(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H200") && !has("NVL")) return "h200-sxm-141gb";
  if (has("H100") && (has("HBM3") || has("SXM")) && !has("NVL") && !has("PCIe")) return "h100-sxm5-80gb";
  if (has("A100") && has("SXM") && has("80GB")) return "a100-sxm4-80gb";
  if (has("RTX A6000")) return "rtx-a6000";
  return "";
}

std::string gpu_family(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Longer names before those they contain.
  static const char* const kFamilies[] = {"GB200", "B200", "B100", "H200", "H100", "H800", "H20",  "A100", "A800",
                                          "A6000", "A5000", "A4000", "A40",  "A30",  "A10",  "L40S", "L40",  "L4",
                                          "V100",  "P100",  "T4",    "4090", "3090"};
  for (const char* f : kFamilies)
    if (upper.find(f) != std::string::npos) return f;
  return "";
}

void check_device_option(const std::string& device) {
  if (!device.empty() && !is_known_device(device))
    throw InputError(SourceLocation{"<command line>", 0, 0}, "--device",
                     "expected a known device model (" + device_models_text() + "), found '" + device + "'");
}

}  // namespace overlapsim
