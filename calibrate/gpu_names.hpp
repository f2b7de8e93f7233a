// Which device-catalog model (models/device_catalog.hpp) a GPU is, from the name CUDA reports
// (cudaDeviceProp::name, also printed by nccl-tests and nvidia-smi).
#pragma once

#include <string>

namespace overlapsim {

/// The catalog key for a CUDA device name, or "" when the name is not one of the catalogued
/// parts. Names seen on the parts (nvidia-smi / cudaGetDeviceProperties):
///   "NVIDIA H200"                                      -> h200-sxm-141gb (the "H200 NVL" part is not mapped)
///   "NVIDIA H100 80GB HBM3"                            -> h100-sxm5-80gb (the PCIe part is "NVIDIA H100 PCIe")
///   "NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"           -> a100-sxm4-80gb
///   "NVIDIA RTX A6000"                                 -> rtx-a6000
std::string device_model_for_gpu_name(const std::string& name);

/// The GPU family a device name or catalog key names ("H100" for "NVIDIA H100 80GB HBM3" and for
/// "h100-sxm5-80gb", "V100" for "Tesla V100-SXM2-32GB", "4090" for "NVIDIA GeForce RTX 4090"),
/// case-insensitive, the longest family first ("A100" before "A10", "H200" before "H20"); "" when
/// the name names none of NVIDIA's data-centre and workstation parts listed in gpu_names.cpp. Two
/// names of one family may still be different parts (A100 40 GB and 80 GB).
std::string gpu_family(const std::string& name);

/// The calibrate commands' --device flag: throws InputError at "--device" on the command line,
/// listing the catalog's models, when `device` is neither empty (not given) nor a catalog model.
void check_device_option(const std::string& device);

}  // namespace overlapsim
