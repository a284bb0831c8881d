// CUPTI activity records -> trace records. Pure: no dlopen, no CUPTI call but the ones passed
// in (the next-record walker and the callback-name lookup), so tests feed it structs they build
// themselves. The per-kind conversions know CUPTI 13's structs (one current struct per kind;
// cupti_api.cpp pins their sizes at build time).
//
// Hot path: a kernel record costs a kind switch, a window check, a pointer-keyed name lookup and
// one append to the calling thread's ring; no lock and no allocation once a name has been seen.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "pipescope/trace/capture_kinds.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_writer.h"

namespace pipescope::inject {

// The external-correlation kind pipescope's NCCL interposer pushes its ids under.
inline constexpr CUpti_ExternalCorrelationKind kNcclExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// What conversion needs from the session: strings, devices. An interface so that tests put a
// bare TraceWriter behind it. Called on cache misses and for device records only.
class RecordServices {
 public:
  virtual ~RecordServices() = default;
  virtual uint32_t intern(std::string_view text) = 0;  // 0 when the trace is not open
  virtual void add_device(const trace::DeviceInfo& device) = 0;
};

// Read once per buffer.
struct ConversionSettings {
  uint32_t record_bits = 0;     // trace::CaptureKinds::record_bits: the record kinds wanted
  uint64_t window_open_ns = 0;  // capture window on the trace clock, [open, close)
  uint64_t window_close_ns = UINT64_MAX;
  // Added to every non-zero CUPTI timestamp; 0 when CUPTI reports on the trace clock already.
  int64_t clock_offset_ns = 0;
  // Session::string_generation(): the name caches start over when it changes.
  uint32_t string_generation = 0;
  // cuptiGetCallbackName, or null: api records are then named "cbid:<n>".
  decltype(&cuptiGetCallbackName) callback_name = nullptr;

  bool wants(trace::RecordKind kind) const { return (record_bits & trace::record_bit(kind)) != 0; }
  bool in_window(uint64_t t_ns) const { return t_ns >= window_open_ns && t_ns < window_close_ns; }
};

// CUPTI time -> trace time. 0 means "CUPTI could not time it" and stays 0.
inline uint64_t to_trace_ns(uint64_t cupti_ns, int64_t offset_ns) {
  return cupti_ns == 0 ? 0 : cupti_ns + static_cast<uint64_t>(offset_ns);
}

// ---- one CUPTI struct -> one trace record (pure; times already offset) ----------------------
trace::KernelRecord kernel_record(const CUpti_ActivityKernel10& a, int64_t offset_ns, uint32_t name_id);
trace::MemcpyRecord memcpy_record(const CUpti_ActivityMemcpy6& a, int64_t offset_ns);
trace::MemcpyRecord peer_memcpy_record(const CUpti_ActivityMemcpyPtoP4& a, int64_t offset_ns);
trace::MemsetRecord memset_record(const CUpti_ActivityMemset4& a, int64_t offset_ns);
// False for an operation type CUPTI did not fill in (INVALID).
bool memory_record(const CUpti_ActivityMemory4& a, int64_t offset_ns, trace::MemoryRecord& out);
bool memory_pool_record(const CUpti_ActivityMemoryPool3& a, int64_t offset_ns, trace::MemoryRecord& out);
trace::SyncRecord sync_record(const CUpti_ActivitySynchronization2& a, int64_t offset_ns, uint32_t device);
trace::ApiRecord api_record(const CUpti_ActivityAPI& a, int64_t offset_ns, uint32_t name_id);
trace::OverheadRecord overhead_record(const CUpti_ActivityOverhead3& a, int64_t offset_ns);
// False for another tool's kind: only pipescope's own ids mean something in the trace.
bool external_correlation_record(const CUpti_ActivityExternalCorrelation& a,
                                 trace::ExternalCorrelationRecord& out);
trace::DeviceInfo device_info(const CUpti_ActivityDevice5& a);
// "cudaLaunchKernel" from CUPTI's "cudaLaunchKernel_v7000": the version suffix is dropped.
std::string_view api_function_name(std::string_view cupti_name);

// Which devices CUPTI's contexts are on: synchronization records name a context, not a device.
// Lock-free; a few contexts per process.
class ContextDevices {
 public:
  void learn(uint32_t context_id, uint32_t device);
  uint32_t device_of(uint32_t context_id) const;  // trace::kUnknownDevice when not learned

 private:
  static constexpr int kSlots = 64;
  std::atomic<uint64_t> slots_[kSlots] = {};  // (context_id + 1) << 32 | device; 0 = empty
};

enum class Outcome : uint8_t {
  kAppended,       // a trace record went into the ring
  kInfo,           // taken in without a record (a device, a context)
  kOutsideWindow,  // dropped: before or after the capture window
  kUnwanted,       // dropped: the kind is not captured, or not one pipescope reads
  kRingFull,       // dropped: the ring refused it (full under the drop policy, or closed)
};

struct BufferStats {
  uint64_t activities = 0;  // CUPTI records walked
  uint64_t appended = 0;
  uint64_t info = 0;
  uint64_t outside_window = 0;
  uint64_t unwanted = 0;
  uint64_t ring_full = 0;
  // The walker stopped on something other than "no more records": the buffer was damaged or
  // held an incomplete record; what came before it was kept.
  CUptiResult walk_error = CUPTI_SUCCESS;
};

// Converts one activity record into `out`. Kernel and API names go through the calling
// thread's caches in front of services.intern().
Outcome convert_activity(const CUpti_Activity& activity, const ConversionSettings& settings,
                         RecordServices& services, ContextDevices& contexts, trace::ThreadBuffer& out);

// Walks a completed CUPTI buffer with `next` (cuptiActivityGetNextRecord, or a test's walker)
// and converts every record.
using NextRecordFn = decltype(&cuptiActivityGetNextRecord);
BufferStats process_activity_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next,
                                    const ConversionSettings& settings, RecordServices& services,
                                    ContextDevices& contexts, trace::ThreadBuffer& out);

}  // namespace pipescope::inject
