#include "nvml_reader.h"

#include <dlfcn.h>

namespace pipescope::benches {

// The few NVML declarations used, from nvml.h (ABI-stable since NVML 10; the toolkit here ships
// no nvml.h). Every function returns nvmlReturn_t, 0 being NVML_SUCCESS. Outside the anonymous
// namespace: NvmlDevice::Api, a class of the header, holds pointers to functions that take them.
using NvmlReturn = int;
using NvmlDeviceHandle = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};

namespace {

constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kPstateUnknown = 32;
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

struct NvmlDevice::Api {
  void* lib = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*memory_info)(NvmlDeviceHandle, NvmlMemory*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDeviceHandle, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock_info)(NvmlDeviceHandle, int, unsigned*) = nullptr;
  NvmlReturn (*power_limit)(NvmlDeviceHandle, unsigned*) = nullptr;
  NvmlReturn (*pstate)(NvmlDeviceHandle, int*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDeviceHandle, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDeviceHandle, int, unsigned*) = nullptr;
  NvmlReturn (*clock_reasons)(NvmlDeviceHandle, unsigned long long*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
};

std::unique_ptr<NvmlDevice> NvmlDevice::open(const std::string& pci_bus_id) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto init = symbol<NvmlReturn (*)()>(lib, "nvmlInit_v2");
  auto by_pci =
      symbol<NvmlReturn (*)(const char*, NvmlDeviceHandle*)>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  auto shutdown = symbol<NvmlReturn (*)()>(lib, "nvmlShutdown");
  NvmlDeviceHandle handle = nullptr;
  if (init == nullptr || by_pci == nullptr || shutdown == nullptr || init() != 0) {
    dlclose(lib);
    return nullptr;
  }
  if (by_pci(pci_bus_id.c_str(), &handle) != 0) {
    shutdown();
    dlclose(lib);
    return nullptr;
  }
  std::unique_ptr<NvmlDevice> d(new NvmlDevice());
  d->api_ = std::make_unique<Api>();
  Api& a = *d->api_;
  a.lib = lib;
  a.shutdown = shutdown;
  a.memory_info = symbol<decltype(a.memory_info)>(lib, "nvmlDeviceGetMemoryInfo");
  a.clock_info = symbol<decltype(a.clock_info)>(lib, "nvmlDeviceGetClockInfo");
  a.max_clock_info = symbol<decltype(a.max_clock_info)>(lib, "nvmlDeviceGetMaxClockInfo");
  a.power_limit = symbol<decltype(a.power_limit)>(lib, "nvmlDeviceGetPowerManagementLimit");
  a.pstate = symbol<decltype(a.pstate)>(lib, "nvmlDeviceGetPerformanceState");
  a.power_usage = symbol<decltype(a.power_usage)>(lib, "nvmlDeviceGetPowerUsage");
  a.temperature = symbol<decltype(a.temperature)>(lib, "nvmlDeviceGetTemperature");
  a.clock_reasons = symbol<decltype(a.clock_reasons)>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.clock_reasons == nullptr)
    a.clock_reasons = symbol<decltype(a.clock_reasons)>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  a.driver_version = symbol<decltype(a.driver_version)>(lib, "nvmlSystemGetDriverVersion");
  d->device_ = handle;
  return d;
}

NvmlDevice::~NvmlDevice() {
  if (api_ == nullptr) return;
  api_->shutdown();
  dlclose(api_->lib);
}

std::optional<uint64_t> NvmlDevice::free_memory_bytes() const {
  NvmlMemory m{};
  if (api_->memory_info == nullptr || api_->memory_info(device_, &m) != 0) return std::nullopt;
  return m.free;
}

std::optional<unsigned> NvmlDevice::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (api_->clock_info == nullptr || api_->clock_info(device_, kClockSm, &mhz) != 0) return std::nullopt;
  return mhz;
}

std::optional<unsigned> NvmlDevice::sm_clock_max_mhz() const {
  unsigned mhz = 0;
  if (api_->max_clock_info == nullptr || api_->max_clock_info(device_, kClockSm, &mhz) != 0)
    return std::nullopt;
  return mhz;
}

std::optional<unsigned> NvmlDevice::memory_clock_mhz() const {
  unsigned mhz = 0;
  if (api_->clock_info == nullptr || api_->clock_info(device_, kClockMem, &mhz) != 0) return std::nullopt;
  return mhz;
}

std::optional<double> NvmlDevice::power_limit_w() const {
  unsigned milliwatts = 0;
  if (api_->power_limit == nullptr || api_->power_limit(device_, &milliwatts) != 0) return std::nullopt;
  return milliwatts / 1000.0;
}

std::optional<int> NvmlDevice::performance_state() const {
  int state = kPstateUnknown;
  if (api_->pstate == nullptr || api_->pstate(device_, &state) != 0 || state == kPstateUnknown)
    return std::nullopt;
  return state;
}

std::optional<double> NvmlDevice::power_w() const {
  unsigned milliwatts = 0;
  if (api_->power_usage == nullptr || api_->power_usage(device_, &milliwatts) != 0) return std::nullopt;
  return milliwatts / 1000.0;
}

std::optional<unsigned> NvmlDevice::temperature_c() const {
  unsigned celsius = 0;
  if (api_->temperature == nullptr || api_->temperature(device_, kTemperatureGpu, &celsius) != 0)
    return std::nullopt;
  return celsius;
}

std::optional<uint64_t> NvmlDevice::clock_event_reasons() const {
  unsigned long long mask = 0;
  if (api_->clock_reasons == nullptr || api_->clock_reasons(device_, &mask) != 0) return std::nullopt;
  return mask;
}

std::string NvmlDevice::driver_version() const {
  char text[96] = {};
  if (api_->driver_version == nullptr || api_->driver_version(text, sizeof(text)) != 0) return "";
  return text;
}

}  // namespace pipescope::benches
