// Device buffers shared by the benchmarks of one program: a few slots that grow to the largest
// size asked for and keep their contents, so that a sweep over sizes and shapes allocates and
// fills each slot a handful of times rather than once per benchmark.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_kernels.h"

namespace pipescope::benches {

class DeviceSlot {
 public:
  DeviceSlot() = default;
  DeviceSlot(const DeviceSlot&) = delete;
  DeviceSlot& operator=(const DeviceSlot&) = delete;
  ~DeviceSlot();

  // At least `bytes`, filled with random `kind` values (refilled when the kind changes). Null
  // when the device has not enough free memory: the benchmark is then skipped with an error.
  void* get(size_t bytes, ElementKind kind);
  void release();

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  ElementKind kind_ = ElementKind::kBf16;
  bool filled_ = false;
  uint32_t seed_ = 0;
};

// The program's slots: 0..3 for operands and a workspace.
DeviceSlot& device_slot(int index);

}  // namespace pipescope::benches
