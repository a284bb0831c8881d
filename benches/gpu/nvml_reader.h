// NVML (libnvidia-ml.so.1, which comes with the driver) opened with dlopen, so that the suite
// needs no link dependency on it and runs where it is missing: every reading is then empty.
// NVML sees device memory without a CUDA context, which is how cuda_context_bytes is measured.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace pipescope::benches {

class NvmlDevice {
 public:
  // The device with this PCI bus id (cudaDeviceGetPCIBusId's "0000:3B:00.0"); null when NVML
  // or the device is not there.
  static std::unique_ptr<NvmlDevice> open(const std::string& pci_bus_id);
  ~NvmlDevice();
  NvmlDevice(const NvmlDevice&) = delete;
  NvmlDevice& operator=(const NvmlDevice&) = delete;

  std::optional<uint64_t> free_memory_bytes() const;
  std::optional<unsigned> sm_clock_mhz() const;
  std::optional<unsigned> sm_clock_max_mhz() const;
  std::optional<unsigned> memory_clock_mhz() const;
  std::optional<double> power_limit_w() const;
  std::optional<int> performance_state() const;   // 0 for P0 ... 15
  std::optional<double> power_w() const;          // the board's draw now
  std::optional<unsigned> temperature_c() const;  // the GPU die
  // Why the clocks are below their maximum (clock_reasons.h): nvmlDeviceGetCurrentClocksEventReasons,
  // or ...ThrottleReasons on drivers older than its rename.
  std::optional<uint64_t> clock_event_reasons() const;
  std::string driver_version() const;  // e.g. "580.65.06"; empty when unknown

  struct Api;

 private:
  NvmlDevice() = default;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;
};

}  // namespace pipescope::benches
