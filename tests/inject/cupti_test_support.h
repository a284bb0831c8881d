// Test support for the CUPTI path: activity buffers laid out by the tests themselves (CUPTI 13's
// structs back to back, as libcupti writes them) and a walker over them standing in for
// cuptiActivityGetNextRecord, so no libcupti and no GPU is needed.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "config.h"
#include "pipescope/trace/capture_kinds.h"

namespace pipescope::inject::testing {

// A session writing into `dir` and capturing `kinds` (PIPESCOPE_KINDS' syntax); the tests flush by
// hand or by finishing, the flusher's period being a minute.
inline InjectConfig config_in(const std::string& dir, const char* kinds = "default") {
  InjectConfig config;
  config.output_dir = dir;
  config.flush_ms = 60'000;
  config.buffer_bytes = size_t{1} << 20;
  config.kinds = *trace::parse_capture_kinds(kinds);
  return config;
}

// The struct CUPTI 13 writes for each kind the tests use; 0 for any other kind.
inline size_t cupti_record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    default: return 0;
  }
}

// cuptiActivityGetNextRecord over a buffer of the structs above.
inline CUptiResult walk_test_buffer(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t at = 0;
  if (*record != nullptr) {
    at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) +
         cupti_record_size((*record)->kind);
  }
  if (at >= valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + at);
  const size_t size = cupti_record_size(next->kind);
  if (valid_bytes - at < sizeof(CUpti_Activity) || size == 0 || size > valid_bytes - at) {
    return CUPTI_ERROR_INVALID_KIND;  // what CUPTI says of an incomplete or unknown record
  }
  *record = next;
  return CUPTI_SUCCESS;
}

// Bytes of an activity buffer; operator new's alignment (16) covers CUPTI's 8.
class ActivityBuffer {
 public:
  template <class T>
  ActivityBuffer& add(const T& activity) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &activity, sizeof(T));
    return *this;
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(bytes_.data()); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace pipescope::inject::testing
