#include "device_context.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <type_traits>

#include "clock_reasons.h"
#include "cuda_check.h"
#include "nvml_reader.h"

namespace pipescope::benches {
namespace {

template <class T>
std::string text_or_empty(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_floating_point_v<T>) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", *value);
    return text;
  } else {
    return std::to_string(*value);
  }
}

std::string uuid_text(const cudaUUID_t& uuid) {
  // nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) out += '-';
  }
  return out;
}

// The device's NVML handle for the rest of the program (device_state.h reads it again).
std::unique_ptr<NvmlDevice>& opened_nvml() {
  static std::unique_ptr<NvmlDevice> nvml;
  return nvml;
}

}  // namespace

const NvmlDevice* device_nvml() { return opened_nvml().get(); }

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceInfo open_device(int device, const std::string& suite, const std::string& command) {
  char pci[32] = {};
  PIPESCOPE_CUDA(cudaDeviceGetPCIBusId(pci, sizeof(pci), device));
  opened_nvml() = NvmlDevice::open(pci);
  const std::unique_ptr<NvmlDevice>& nvml = opened_nvml();

  // cuda_context_bytes: the runtime cannot see memory before its context exists (cudaMemGetInfo
  // itself creates the context), so the free memory is read through NVML, which needs none,
  // before and after cudaSetDevice + cudaFree(0) create the primary context. Nothing above
  // created one: cudaGetDeviceCount and cudaDeviceGetPCIBusId only initialize the driver.
  // Without NVML the key is empty. Other processes on the same GPU would skew the difference.
  // -1: unknown (std::optional here trips g++ 12's -Wmaybe-uninitialized).
  const auto free_bytes = [&nvml]() -> int64_t {
    const std::optional<uint64_t> free = nvml ? nvml->free_memory_bytes() : std::nullopt;
    return free ? static_cast<int64_t>(*free) : -1;
  };
  const int64_t free_before = free_bytes();
  PIPESCOPE_CUDA(cudaSetDevice(device));
  PIPESCOPE_CUDA(cudaFree(nullptr));
  const int64_t free_after = free_bytes();
  std::string context_bytes;
  if (free_before >= 0 && free_after >= 0 && free_before >= free_after)
    context_bytes = std::to_string(free_before - free_after);

  cudaDeviceProp prop{};
  PIPESCOPE_CUDA(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.device = device;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.memory_bytes = prop.totalGlobalMem;

  int driver = 0, runtime = 0;
  PIPESCOPE_CUDA(cudaDriverGetVersion(&driver));
  PIPESCOPE_CUDA(cudaRuntimeGetVersion(&runtime));
  // NVML's driver version is the one people quote (580.65.06); the CUDA version the driver
  // supports stands in when NVML is not there.
  std::string driver_version = nvml ? nvml->driver_version() : "";
  if (driver_version.empty()) driver_version = "cuda " + cuda_version_text(driver);

  benchmark::AddCustomContext("pipescope_suite", suite);
  benchmark::AddCustomContext("gpu_name", info.name);
  benchmark::AddCustomContext("gpu_uuid", uuid_text(prop.uuid));
  benchmark::AddCustomContext("compute_capability",
                              std::to_string(prop.major) + "." + std::to_string(prop.minor));
  benchmark::AddCustomContext("sm_count", std::to_string(info.sm_count));
  benchmark::AddCustomContext("memory_bytes", std::to_string(info.memory_bytes));
  // HBM benchmarks below a few times this size measure the cache, not the memory.
  benchmark::AddCustomContext("l2_cache_bytes", std::to_string(prop.l2CacheSize));
  benchmark::AddCustomContext("sm_clock_mhz", text_or_empty(nvml ? nvml->sm_clock_mhz() : std::nullopt));
  benchmark::AddCustomContext("sm_clock_max_mhz",
                              text_or_empty(nvml ? nvml->sm_clock_max_mhz() : std::nullopt));
  benchmark::AddCustomContext("memory_clock_mhz",
                              text_or_empty(nvml ? nvml->memory_clock_mhz() : std::nullopt));
  benchmark::AddCustomContext("power_limit_w", text_or_empty(nvml ? nvml->power_limit_w() : std::nullopt));
  const std::optional<int> pstate = nvml ? nvml->performance_state() : std::nullopt;
  benchmark::AddCustomContext("performance_state", pstate ? "P" + std::to_string(*pstate) : "");
  // At the start the GPU idles: clocks and draw under load come from the device/state benchmarks.
  benchmark::AddCustomContext("power_w", text_or_empty(nvml ? nvml->power_w() : std::nullopt));
  benchmark::AddCustomContext("temperature_c", text_or_empty(nvml ? nvml->temperature_c() : std::nullopt));
  const std::optional<uint64_t> reasons = nvml ? nvml->clock_event_reasons() : std::nullopt;
  benchmark::AddCustomContext("clock_event_reasons", reasons ? clock_event_reason_names(*reasons) : "");
  benchmark::AddCustomContext("driver_version", driver_version);
  benchmark::AddCustomContext("cuda_runtime_version", cuda_version_text(runtime));
  benchmark::AddCustomContext("cuda_context_bytes", context_bytes);
  benchmark::AddCustomContext("command", command);
  return info;
}

}  // namespace pipescope::benches
