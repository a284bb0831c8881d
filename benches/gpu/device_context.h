// Opens the GPU a suite program measures and records what the results depend on as Google
// Benchmark context keys (docs/calibration-results.md): the device, its clocks and power limit
// at the start, the driver and runtime versions, the memory the CUDA context takes.
#pragma once

#include <cstddef>
#include <string>

namespace pipescope::benches {

struct DeviceInfo {
  int device = 0;
  std::string name;  // cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t memory_bytes = 0;
};

// Makes `device` current, which creates its CUDA context, and adds the context keys
// pipescope_suite, gpu_*, compute_capability, sm_count, memory_bytes, l2_cache_bytes, the NVML readings,
// driver_version, cuda_runtime_version, cuda_context_bytes and command. Call before
// benchmark::Initialize, after no_gpu_reason() said there is a GPU. Exits on a CUDA error.
DeviceInfo open_device(int device, const std::string& suite, const std::string& command);

class NvmlDevice;
// The opened device through NVML; null before open_device() or without NVML.
const NvmlDevice* device_nvml();

// CUDA's version numbers (1000 major + 10 minor) as text: 13000 -> "13.0".
std::string cuda_version_text(int version);

}  // namespace pipescope::benches
