#include "cupti_records.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "string_cache.h"

namespace pipescope::inject {
namespace {

using trace::RecordKind;

uint16_t clamp_u16(int32_t v) { return v < 0 ? 0 : v > 0xFFFF ? 0xFFFF : static_cast<uint16_t>(v); }
uint32_t clamp_u32(int32_t v) { return v < 0 ? 0 : static_cast<uint32_t>(v); }
uint32_t valid_or_zero(uint32_t id) { return id == CUPTI_INVALID_STREAM_ID ? 0 : id; }

trace::CopyKind copy_kind_of(uint8_t cupti) {
  using trace::CopyKind;
  switch (cupti) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::kHostToDevice;  // an array is device memory
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::kDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return CopyKind::kDeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::kHostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::kPeerToPeer;
    default: return CopyKind::kUnknown;
  }
}

trace::MemoryKind memory_kind_of(uint32_t cupti) {
  using trace::MemoryKind;
  switch (cupti) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return MemoryKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return MemoryKind::kManaged;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::kDeviceStatic;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::kManagedStatic;
    default: return MemoryKind::kUnknown;
  }
}

trace::SyncType sync_type_of(CUpti_ActivitySynchronizationType cupti) {
  using trace::SyncType;
  switch (cupti) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncType::kEventSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncType::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncType::kStreamSynchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncType::kContextSynchronize;
    default: return SyncType::kUnknown;
  }
}

// pipescope numbers CUPTI's overhead kinds itself (docs/trace-format.md, enum OverheadKind).
trace::OverheadKind overhead_kind_of(CUpti_ActivityOverheadKind cupti) {
  using trace::OverheadKind;
  switch (cupti) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return OverheadKind::kDriverCompiler;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return OverheadKind::kCuptiBufferFlush;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return OverheadKind::kCuptiInstrumentation;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return OverheadKind::kCuptiResource;
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return OverheadKind::kRuntimeTriggeredModuleLoading;
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return OverheadKind::kLazyFunctionLoading;
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return OverheadKind::kCommandBufferFull;
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return OverheadKind::kActivityBuffer;
    default: return OverheadKind::kUnknown;
  }
}

// ---- names ---------------------------------------------------------------------------------

// CUPTI hands every record of one kernel the same name pointer ("shared across all activity
// records representing the same kernel"), so the hot path looks the pointer up instead of
// hashing a 100-byte mangled name. The first bytes are kept as a guard against a pointer that
// was freed and reused for another name. Misses go through the content-keyed StringCache.
struct NameSlot {
  const char* name = nullptr;
  uint64_t head = 0;  // up to the first 8 bytes of the name
  uint32_t generation = 0;
  uint32_t id = 0;
};
constexpr size_t kNameSlots = 1024;  // a power of two; a training step launches ~100 distinct kernels

uint64_t head_of(const char* name) {
  uint64_t head = 0;
  for (int i = 0; i < 8 && name[i] != '\0'; ++i) head |= uint64_t{static_cast<uint8_t>(name[i])} << (8 * i);
  return head;
}

thread_local std::unique_ptr<NameSlot[]> t_name_slots;
thread_local StringCache t_strings;

uint32_t intern_cached(std::string_view text, uint32_t generation, RecordServices& services) {
  return t_strings
      .find_or_add(text, generation,
                   [&](std::string_view t) {
                     return StringCache::Entry{services.intern(t), 0};
                   })
      .id;
}

uint32_t kernel_name_id(const char* name, uint32_t generation, RecordServices& services) {
  if (name == nullptr) return 0;
  if (t_name_slots == nullptr) [[unlikely]] {
    t_name_slots.reset(new (std::nothrow) NameSlot[kNameSlots]);
    if (t_name_slots == nullptr) return intern_cached(name, generation, services);
  }
  NameSlot& slot = t_name_slots[(reinterpret_cast<uintptr_t>(name) >> 3) & (kNameSlots - 1)];
  const uint64_t head = head_of(name);
  if (slot.name == name && slot.generation == generation && slot.head == head) [[likely]]
    return slot.id;
  const uint32_t id = intern_cached(name, generation, services);
  if (id != 0) slot = NameSlot{name, head, generation, id};
  return id;
}

// Callback ids are small dense integers per domain (523 runtime, 807 driver in CUDA 13.0).
constexpr uint32_t kCachedCallbackIds = 1024;
struct ApiNames {
  uint32_t generation = 0;
  uint32_t ids[2][kCachedCallbackIds] = {};
};
thread_local std::unique_ptr<ApiNames> t_api_names;

uint32_t api_name_id(CUpti_CallbackDomain domain, uint32_t cbid, const ConversionSettings& settings,
                     RecordServices& services) {
  const int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
  if (t_api_names == nullptr) t_api_names.reset(new (std::nothrow) ApiNames);
  ApiNames* cache = t_api_names.get();
  if (cache != nullptr && cache->generation != settings.string_generation)
    *cache = ApiNames{settings.string_generation};
  if (cache != nullptr && cbid < kCachedCallbackIds && cache->ids[d][cbid] != 0) return cache->ids[d][cbid];

  const char* name = nullptr;
  std::string_view text;
  char fallback[32];
  if (settings.callback_name != nullptr && settings.callback_name(domain, cbid, &name) == CUPTI_SUCCESS &&
      name != nullptr && name[0] != '\0') {
    text = api_function_name(name);
  } else {
    const int n = std::snprintf(fallback, sizeof(fallback), "cbid:%u", cbid);
    text = std::string_view(fallback, static_cast<size_t>(n));
  }
  const uint32_t id = intern_cached(text, settings.string_generation, services);
  if (cache != nullptr && cbid < kCachedCallbackIds) cache->ids[d][cbid] = id;
  return id;
}

template <class R>
Outcome append(trace::ThreadBuffer& out, const R& record) {
  return out.append(record) ? Outcome::kAppended : Outcome::kRingFull;
}

template <class T>
const T& as(const CUpti_Activity& activity) {
  return reinterpret_cast<const T&>(activity);
}

}  // namespace

// ---- per-kind conversions -------------------------------------------------------------------

trace::KernelRecord kernel_record(const CUpti_ActivityKernel10& a, int64_t offset_ns, uint32_t name_id) {
  auto r = trace::make_record<trace::KernelRecord>();
  r.device = a.deviceId;
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  r.stream = a.streamId;
  r.correlation_id = a.correlationId;
  r.name_id = name_id;
  r.graph_id = a.graphId;
  r.grid_x = clamp_u32(a.gridX);
  r.grid_y = clamp_u16(a.gridY);
  r.grid_z = clamp_u16(a.gridZ);
  r.block_x = clamp_u16(a.blockX);
  r.block_y = clamp_u16(a.blockY);
  r.block_z = clamp_u16(a.blockZ);
  r.registers_per_thread = a.registersPerThread;
  r.static_shared_bytes = clamp_u32(a.staticSharedMemory);
  r.dynamic_shared_bytes = clamp_u32(a.dynamicSharedMemory);
  return r;
}

namespace {

// The fields CUPTI's plain and peer copy records share, under the same names.
template <class CuptiCopy>
trace::MemcpyRecord copy_record_common(const CuptiCopy& a, int64_t offset_ns) {
  auto r = trace::make_record<trace::MemcpyRecord>();
  r.device = a.deviceId;
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  r.stream = a.streamId;
  r.correlation_id = a.correlationId;
  r.bytes = a.bytes;
  r.src_kind = static_cast<uint8_t>(memory_kind_of(a.srcKind));
  r.dst_kind = static_cast<uint8_t>(memory_kind_of(a.dstKind));
  r.flags = static_cast<uint8_t>(
      ((a.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0 ? trace::kActivityFlagAsync : 0) |
      (a.graphId != 0 ? trace::kActivityFlagInGraph : 0));
  r.graph_id = a.graphId;
  return r;
}

}  // namespace

trace::MemcpyRecord memcpy_record(const CUpti_ActivityMemcpy6& a, int64_t offset_ns) {
  trace::MemcpyRecord r = copy_record_common(a, offset_ns);
  r.copy_kind = static_cast<uint8_t>(copy_kind_of(a.copyKind));
  r.peer_device = trace::kUnknownDevice;
  return r;
}

trace::MemcpyRecord peer_memcpy_record(const CUpti_ActivityMemcpyPtoP4& a, int64_t offset_ns) {
  trace::MemcpyRecord r = copy_record_common(a, offset_ns);
  // CUPTI reports a peer copy on one of its two devices; the other one is the peer.
  r.copy_kind = static_cast<uint8_t>(trace::CopyKind::kPeerToPeer);
  r.peer_device = a.deviceId == a.srcDeviceId ? a.dstDeviceId : a.srcDeviceId;
  return r;
}

trace::MemsetRecord memset_record(const CUpti_ActivityMemset4& a, int64_t offset_ns) {
  auto r = trace::make_record<trace::MemsetRecord>();
  r.device = a.deviceId;
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  r.stream = a.streamId;
  r.correlation_id = a.correlationId;
  r.bytes = a.bytes;
  r.value = a.value;
  r.memory_kind = static_cast<uint8_t>(memory_kind_of(a.memoryKind));
  r.flags = static_cast<uint8_t>(
      ((a.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0 ? trace::kActivityFlagAsync : 0) |
      (a.graphId != 0 ? trace::kActivityFlagInGraph : 0));
  r.graph_id = a.graphId;
  return r;
}

bool memory_record(const CUpti_ActivityMemory4& a, int64_t offset_ns, trace::MemoryRecord& out) {
  trace::MemoryOperation operation;
  switch (a.memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      operation = trace::MemoryOperation::kAllocate;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE: operation = trace::MemoryOperation::kRelease; break;
    default: return false;
  }
  out = trace::make_record<trace::MemoryRecord>();
  out.device = a.deviceId;
  out.timestamp_ns = to_trace_ns(a.timestamp, offset_ns);
  out.address = a.address;
  out.bytes = a.bytes;
  out.stream = valid_or_zero(a.streamId);  // CUPTI_INVALID_STREAM_ID unless stream-ordered
  out.correlation_id = a.correlationId;
  out.operation = static_cast<uint8_t>(operation);
  out.memory_kind = static_cast<uint8_t>(memory_kind_of(a.memoryKind));
  // cudaMallocAsync and friends: a tensor-sized block carved from a pool, not memory taken
  // from the driver. That is the `allocated` figure; everything else is `reserved`.
  const bool from_pool =
      a.isAsync != 0 || a.memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
  out.flags = from_pool ? trace::kMemoryFlagFromPool : 0;
  return true;
}

bool memory_pool_record(const CUpti_ActivityMemoryPool3& a, int64_t offset_ns, trace::MemoryRecord& out) {
  trace::MemoryOperation operation;
  switch (a.memoryPoolOperationType) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
      operation = trace::MemoryOperation::kPoolCreate;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
      operation = trace::MemoryOperation::kPoolDestroy;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
      operation = trace::MemoryOperation::kPoolTrim;
      break;
    default: return false;
  }
  out = trace::make_record<trace::MemoryRecord>();
  out.device = a.deviceId;
  out.timestamp_ns = to_trace_ns(a.timestamp, offset_ns);
  out.address = a.address;
  out.bytes = a.size;
  out.stream = 0;  // pool operations are not stream-ordered
  out.correlation_id = a.correlationId;
  out.operation = static_cast<uint8_t>(operation);
  out.memory_kind =
      static_cast<uint8_t>(a.isManagedPool != 0 ? trace::MemoryKind::kManaged : trace::MemoryKind::kDevice);
  out.flags = 0;
  return true;
}

trace::SyncRecord sync_record(const CUpti_ActivitySynchronization2& a, int64_t offset_ns, uint32_t device) {
  auto r = trace::make_record<trace::SyncRecord>();
  r.device = device;
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  r.stream = a.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : a.streamId;
  r.correlation_id = a.correlationId;
  r.sync_type = static_cast<uint8_t>(sync_type_of(a.type));
  r.event_id = a.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : a.cudaEventId;
  return r;
}

trace::ApiRecord api_record(const CUpti_ActivityAPI& a, int64_t offset_ns, uint32_t name_id) {
  auto r = trace::make_record<trace::ApiRecord>();
  r.thread_id = a.threadId;
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  r.correlation_id = a.correlationId;
  r.callback_id = a.cbid;
  r.name_id = name_id;
  r.return_code = static_cast<int32_t>(a.returnValue);
  r.domain = static_cast<uint8_t>(a.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? trace::ApiDomain::kRuntime
                                                                        : trace::ApiDomain::kDriver);
  return r;
}

trace::OverheadRecord overhead_record(const CUpti_ActivityOverhead3& a, int64_t offset_ns) {
  auto r = trace::make_record<trace::OverheadRecord>();
  r.overhead_kind = static_cast<uint8_t>(overhead_kind_of(a.overheadKind));
  r.start_ns = to_trace_ns(a.start, offset_ns);
  r.end_ns = to_trace_ns(a.end, offset_ns);
  // The trace numbers object kinds as CUPTI does: 1 process ... 5 stream.
  switch (a.objectKind) {
    case CUPTI_ACTIVITY_OBJECT_PROCESS: r.object_id = a.objectId.pt.processId; break;
    case CUPTI_ACTIVITY_OBJECT_THREAD: r.object_id = a.objectId.pt.threadId; break;
    case CUPTI_ACTIVITY_OBJECT_DEVICE: r.object_id = a.objectId.dcs.deviceId; break;
    case CUPTI_ACTIVITY_OBJECT_CONTEXT: r.object_id = a.objectId.dcs.contextId; break;
    case CUPTI_ACTIVITY_OBJECT_STREAM: r.object_id = a.objectId.dcs.streamId; break;
    default: r.object_kind = 0; return r;
  }
  r.object_kind = static_cast<uint8_t>(a.objectKind);
  return r;
}

bool external_correlation_record(const CUpti_ActivityExternalCorrelation& a,
                                 trace::ExternalCorrelationRecord& out) {
  if (a.externalKind != kNcclExternalKind) return false;
  out = trace::make_record<trace::ExternalCorrelationRecord>();
  out.external_kind = static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl);
  out.correlation_id = a.correlationId;
  out.external_id = a.externalId;
  return true;
}

trace::DeviceInfo device_info(const CUpti_ActivityDevice5& a) {
  trace::DeviceInfo device;
  device.ordinal = static_cast<int32_t>(a.id);
  std::memcpy(device.uuid.data(), a.uuid.bytes, device.uuid.size());
  device.memory_bytes = a.globalMemorySize;
  if (a.name != nullptr) device.name = a.name;
  return device;  // CUPTI does not report the PCI location; those fields stay 0
}

std::string_view api_function_name(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 == name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, v);
}

// ---- contexts --------------------------------------------------------------------------------

void ContextDevices::learn(uint32_t context_id, uint32_t device) {
  if (context_id == CUPTI_INVALID_CONTEXT_ID) return;
  const uint64_t key = uint64_t{context_id} + 1;
  const uint64_t entry = key << 32 | device;
  for (std::atomic<uint64_t>& slot : slots_) {
    uint64_t current = slot.load(std::memory_order_acquire);
    if (current == 0 && slot.compare_exchange_strong(current, entry, std::memory_order_acq_rel)) return;
    if ((current >> 32) == key) {
      slot.store(entry, std::memory_order_release);
      return;
    }
  }
}

uint32_t ContextDevices::device_of(uint32_t context_id) const {
  const uint64_t key = uint64_t{context_id} + 1;
  for (const std::atomic<uint64_t>& slot : slots_) {
    const uint64_t entry = slot.load(std::memory_order_acquire);
    if (entry == 0) break;
    if ((entry >> 32) == key) return static_cast<uint32_t>(entry);
  }
  return trace::kUnknownDevice;
}

// ---- dispatch ----------------------------------------------------------------------------

Outcome convert_activity(const CUpti_Activity& activity, const ConversionSettings& settings,
                         RecordServices& services, ContextDevices& contexts, trace::ThreadBuffer& out) {
  const int64_t offset = settings.clock_offset_ns;
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      if (!settings.wants(RecordKind::kKernel)) return Outcome::kUnwanted;
      const auto& a = as<CUpti_ActivityKernel10>(activity);
      if (!settings.in_window(to_trace_ns(a.start, offset))) return Outcome::kOutsideWindow;
      return append(out,
                    kernel_record(a, offset, kernel_name_id(a.name, settings.string_generation, services)));
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      if (!settings.wants(RecordKind::kMemcpy)) return Outcome::kUnwanted;
      const auto r = memcpy_record(as<CUpti_ActivityMemcpy6>(activity), offset);
      return settings.in_window(r.start_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      if (!settings.wants(RecordKind::kMemcpy)) return Outcome::kUnwanted;
      const auto r = peer_memcpy_record(as<CUpti_ActivityMemcpyPtoP4>(activity), offset);
      return settings.in_window(r.start_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      if (!settings.wants(RecordKind::kMemset)) return Outcome::kUnwanted;
      const auto r = memset_record(as<CUpti_ActivityMemset4>(activity), offset);
      return settings.in_window(r.start_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      trace::MemoryRecord r;
      if (!settings.wants(RecordKind::kMemory) ||
          !memory_record(as<CUpti_ActivityMemory4>(activity), offset, r)) {
        return Outcome::kUnwanted;
      }
      // Memory the allocator takes from the driver stays taken across a window boundary, so
      // those records are kept from the start: the `reserved` figure inside a window is exact.
      // Pool allocations (one per tensor under cudaMallocAsync) follow the window like kernels.
      const bool windowed = (r.flags & trace::kMemoryFlagFromPool) != 0;
      return !windowed || settings.in_window(r.timestamp_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: {
      trace::MemoryRecord r;
      if (!settings.wants(RecordKind::kMemory) ||
          !memory_pool_record(as<CUpti_ActivityMemoryPool3>(activity), offset, r)) {
        return Outcome::kUnwanted;
      }
      return append(out, r);  // pools, like reserved memory, outlive a window
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      if (!settings.wants(RecordKind::kSync)) return Outcome::kUnwanted;
      const auto& a = as<CUpti_ActivitySynchronization2>(activity);
      const auto r = sync_record(a, offset, contexts.device_of(a.contextId));
      return settings.in_window(r.start_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      // Driver records also come when only external correlation needed them (cupti_source.cpp).
      if (!settings.wants(RecordKind::kApi)) return Outcome::kUnwanted;
      const auto& a = as<CUpti_ActivityAPI>(activity);
      if (!settings.in_window(to_trace_ns(a.start, offset))) return Outcome::kOutsideWindow;
      const CUpti_CallbackDomain domain = activity.kind == CUPTI_ACTIVITY_KIND_RUNTIME
                                              ? CUPTI_CB_DOMAIN_RUNTIME_API
                                              : CUPTI_CB_DOMAIN_DRIVER_API;
      return append(out, api_record(a, offset, api_name_id(domain, a.cbid, settings, services)));
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      if (!settings.wants(RecordKind::kOverhead)) return Outcome::kUnwanted;
      const auto r = overhead_record(as<CUpti_ActivityOverhead3>(activity), offset);
      return settings.in_window(r.start_ns) ? append(out, r) : Outcome::kOutsideWindow;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      trace::ExternalCorrelationRecord r;
      if (!settings.wants(RecordKind::kExternalCorrelation) ||
          !external_correlation_record(as<CUpti_ActivityExternalCorrelation>(activity), r)) {
        return Outcome::kUnwanted;
      }
      return append(out, r);  // untimed; the source turns the kind off outside the window
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
      services.add_device(device_info(as<CUpti_ActivityDevice5>(activity)));
      return Outcome::kInfo;
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& a = as<CUpti_ActivityContext3>(activity);
      contexts.learn(a.contextId, a.deviceId);
      return Outcome::kInfo;
    }
    default: return Outcome::kUnwanted;
  }
}

BufferStats process_activity_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next,
                                    const ConversionSettings& settings, RecordServices& services,
                                    ContextDevices& contexts, trace::ThreadBuffer& out) {
  BufferStats stats;
  if (buffer == nullptr || valid_bytes == 0 || next == nullptr) return stats;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = next(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (status != CUPTI_SUCCESS || record == nullptr) {
      stats.walk_error = status != CUPTI_SUCCESS ? status : CUPTI_ERROR_UNKNOWN;
      break;
    }
    ++stats.activities;
    switch (convert_activity(*record, settings, services, contexts, out)) {
      case Outcome::kAppended: ++stats.appended; break;
      case Outcome::kInfo: ++stats.info; break;
      case Outcome::kOutsideWindow: ++stats.outside_window; break;
      case Outcome::kUnwanted: ++stats.unwanted; break;
      case Outcome::kRingFull: ++stats.ring_full; break;
    }
  }
  return stats;
}

}  // namespace pipescope::inject
