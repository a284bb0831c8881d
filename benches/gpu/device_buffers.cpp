#include "device_buffers.h"

#include <array>

#include "cuda_check.h"

namespace pipescope::benches {

DeviceSlot::~DeviceSlot() { release(); }

void DeviceSlot::release() {
  // At exit the driver may already be shutting down; the error is of no interest then.
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
  filled_ = false;
}

void* DeviceSlot::get(size_t bytes, ElementKind kind) {
  if (bytes > bytes_) {
    release();
    if (cudaMalloc(&data_, bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free out-of-memory error
      data_ = nullptr;
      return nullptr;
    }
    bytes_ = bytes;
  }
  if (!filled_ || kind != kind_) {
    fill_random(data_, bytes_ / element_bytes(kind), kind, ++seed_, nullptr);
    PIPESCOPE_CUDA(cudaDeviceSynchronize());
    kind_ = kind;
    filled_ = true;
  }
  return data_;
}

DeviceSlot& device_slot(int index) {
  static std::array<DeviceSlot, 4> slots;
  return slots.at(static_cast<size_t>(index));
}

}  // namespace pipescope::benches
