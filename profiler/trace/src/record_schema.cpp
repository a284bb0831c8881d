#include "pipescope/trace/record_schema.h"

#include <cstring>

namespace pipescope::trace {
namespace {

template <class T>
constexpr FieldType field_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return FieldType::kU8;
  if constexpr (std::is_same_v<T, uint16_t>) return FieldType::kU16;
  if constexpr (std::is_same_v<T, uint32_t>) return FieldType::kU32;
  if constexpr (std::is_same_v<T, uint64_t>) return FieldType::kU64;
  if constexpr (std::is_same_v<T, int32_t>) return FieldType::kI32;
}

#define F(Record, member) \
  FieldDesc { #member, offsetof(Record, member), field_type_of < decltype(Record::member)>() }
#define HEADER(Record)                                                                                     \
  FieldDesc{"kind", offsetof(Record, header) + offsetof(RecordHeader, kind), FieldType::kU16}, FieldDesc { \
    "size_bytes", offsetof(Record, header) + offsetof(RecordHeader, size_bytes), FieldType::kU16           \
  }

constexpr FieldDesc kKernelFields[] = {
    HEADER(KernelRecord),
    F(KernelRecord, device),
    F(KernelRecord, start_ns),
    F(KernelRecord, end_ns),
    F(KernelRecord, stream),
    F(KernelRecord, correlation_id),
    F(KernelRecord, name_id),
    F(KernelRecord, graph_id),
    F(KernelRecord, grid_x),
    F(KernelRecord, grid_y),
    F(KernelRecord, grid_z),
    F(KernelRecord, block_x),
    F(KernelRecord, block_y),
    F(KernelRecord, block_z),
    F(KernelRecord, registers_per_thread),
    F(KernelRecord, static_shared_bytes),
    F(KernelRecord, dynamic_shared_bytes),
};
constexpr FieldDesc kMemcpyFields[] = {
    HEADER(MemcpyRecord),      F(MemcpyRecord, device),    F(MemcpyRecord, start_ns),
    F(MemcpyRecord, end_ns),   F(MemcpyRecord, stream),    F(MemcpyRecord, correlation_id),
    F(MemcpyRecord, bytes),    F(MemcpyRecord, copy_kind), F(MemcpyRecord, src_kind),
    F(MemcpyRecord, dst_kind), F(MemcpyRecord, flags),     F(MemcpyRecord, peer_device),
    F(MemcpyRecord, graph_id), F(MemcpyRecord, reserved),
};
constexpr FieldDesc kMemsetFields[] = {
    HEADER(MemsetRecord),       F(MemsetRecord, device),    F(MemsetRecord, start_ns),
    F(MemsetRecord, end_ns),    F(MemsetRecord, stream),    F(MemsetRecord, correlation_id),
    F(MemsetRecord, bytes),     F(MemsetRecord, value),     F(MemsetRecord, memory_kind),
    F(MemsetRecord, flags),     F(MemsetRecord, reserved0), F(MemsetRecord, graph_id),
    F(MemsetRecord, reserved1),
};
constexpr FieldDesc kMemoryFields[] = {
    HEADER(MemoryRecord),
    F(MemoryRecord, device),
    F(MemoryRecord, timestamp_ns),
    F(MemoryRecord, address),
    F(MemoryRecord, bytes),
    F(MemoryRecord, stream),
    F(MemoryRecord, correlation_id),
    F(MemoryRecord, operation),
    F(MemoryRecord, memory_kind),
    F(MemoryRecord, flags),
    F(MemoryRecord, reserved0),
    F(MemoryRecord, reserved1),
};
constexpr FieldDesc kSyncFields[] = {
    HEADER(SyncRecord),       F(SyncRecord, device),    F(SyncRecord, start_ns),
    F(SyncRecord, end_ns),    F(SyncRecord, stream),    F(SyncRecord, correlation_id),
    F(SyncRecord, sync_type), F(SyncRecord, reserved0), F(SyncRecord, reserved1),
    F(SyncRecord, event_id),
};
constexpr FieldDesc kApiFields[] = {
    HEADER(ApiRecord),       F(ApiRecord, thread_id),      F(ApiRecord, start_ns),
    F(ApiRecord, end_ns),    F(ApiRecord, correlation_id), F(ApiRecord, callback_id),
    F(ApiRecord, name_id),   F(ApiRecord, return_code),    F(ApiRecord, domain),
    F(ApiRecord, reserved0), F(ApiRecord, reserved1),      F(ApiRecord, reserved2),
};
constexpr FieldDesc kNcclOpFields[] = {
    HEADER(NcclOpRecord),          F(NcclOpRecord, device),
    F(NcclOpRecord, comm_id),      F(NcclOpRecord, sequence),
    F(NcclOpRecord, count),        F(NcclOpRecord, bytes),
    F(NcclOpRecord, stream),       F(NcclOpRecord, host_enter_ns),
    F(NcclOpRecord, host_exit_ns), F(NcclOpRecord, external_correlation_id),
    F(NcclOpRecord, peer),         F(NcclOpRecord, thread_id),
    F(NcclOpRecord, op),           F(NcclOpRecord, datatype),
    F(NcclOpRecord, reduce_op),    F(NcclOpRecord, flags),
    F(NcclOpRecord, group_id),
};
constexpr FieldDesc kNcclCommFields[] = {
    HEADER(NcclCommRecord),       F(NcclCommRecord, event),          F(NcclCommRecord, reserved0),
    F(NcclCommRecord, reserved1), F(NcclCommRecord, start_ns),       F(NcclCommRecord, end_ns),
    F(NcclCommRecord, comm_id),   F(NcclCommRecord, parent_comm_id), F(NcclCommRecord, comm_handle),
    F(NcclCommRecord, rank),      F(NcclCommRecord, size),           F(NcclCommRecord, global_rank),
    F(NcclCommRecord, color),     F(NcclCommRecord, split_index),    F(NcclCommRecord, device),
};
constexpr FieldDesc kNvtxFields[] = {
    HEADER(NvtxRecord),          F(NvtxRecord, event),    F(NvtxRecord, reserved0), F(NvtxRecord, reserved1),
    F(NvtxRecord, timestamp_ns), F(NvtxRecord, range_id), F(NvtxRecord, name_id),   F(NvtxRecord, domain_id),
    F(NvtxRecord, thread_id),    F(NvtxRecord, category), F(NvtxRecord, color),     F(NvtxRecord, reserved2),
};
constexpr FieldDesc kOverheadFields[] = {
    HEADER(OverheadRecord),       F(OverheadRecord, overhead_kind), F(OverheadRecord, object_kind),
    F(OverheadRecord, reserved),  F(OverheadRecord, start_ns),      F(OverheadRecord, end_ns),
    F(OverheadRecord, object_id),
};
constexpr FieldDesc kNoticeFields[] = {
    HEADER(NoticeRecord),          F(NoticeRecord, code),  F(NoticeRecord, reserved0),
    F(NoticeRecord, timestamp_ns), F(NoticeRecord, count), F(NoticeRecord, message_id),
    F(NoticeRecord, reserved1),
};
constexpr FieldDesc kExternalCorrelationFields[] = {
    HEADER(ExternalCorrelationRecord),
    F(ExternalCorrelationRecord, external_kind),
    F(ExternalCorrelationRecord, reserved0),
    F(ExternalCorrelationRecord, reserved1),
    F(ExternalCorrelationRecord, correlation_id),
    F(ExternalCorrelationRecord, reserved2),
    F(ExternalCorrelationRecord, external_id),
};
constexpr FieldDesc kNcclCallFields[] = {
    HEADER(NcclCallRecord),
    F(NcclCallRecord, call_kind),
    F(NcclCallRecord, what),
    F(NcclCallRecord, state),
    F(NcclCallRecord, flags),
    F(NcclCallRecord, comm_id),
    F(NcclCallRecord, parent_comm_id),
    F(NcclCallRecord, sequence),
    F(NcclCallRecord, bytes),
    F(NcclCallRecord, enter_ns),
    F(NcclCallRecord, at_ns),
    F(NcclCallRecord, call_serial),
    F(NcclCallRecord, thread_id),
    F(NcclCallRecord, peer),
    F(NcclCallRecord, rank),
    F(NcclCallRecord, size),
    F(NcclCallRecord, global_rank),
    F(NcclCallRecord, group_id),
    F(NcclCallRecord, result),
    F(NcclCallRecord, datatype),
    F(NcclCallRecord, reduce_op),
    F(NcclCallRecord, reserved0),
    F(NcclCallRecord, reserved1),
};
#undef F
#undef HEADER

template <class R, size_t N>
constexpr RecordSchema schema(const char* name, const FieldDesc (&fields)[N]) {
  return RecordSchema{RecordTraits<R>::kKind, name, sizeof(R), std::span<const FieldDesc>(fields, N)};
}

// Names match docs/design.md's `kinds` vocabulary where a kind maps to one record
// (memory, nvtx, ...); NCCL has two records, so its names say which.
constexpr RecordSchema kSchemas[] = {
    schema<KernelRecord>("kernel", kKernelFields),
    schema<MemcpyRecord>("memcpy", kMemcpyFields),
    schema<MemsetRecord>("memset", kMemsetFields),
    schema<MemoryRecord>("memory", kMemoryFields),
    schema<SyncRecord>("sync", kSyncFields),
    schema<ApiRecord>("api", kApiFields),
    schema<NcclOpRecord>("nccl_op", kNcclOpFields),
    schema<NcclCommRecord>("nccl_comm", kNcclCommFields),
    schema<NvtxRecord>("nvtx", kNvtxFields),
    schema<OverheadRecord>("overhead", kOverheadFields),
    schema<NoticeRecord>("notice", kNoticeFields),
    schema<ExternalCorrelationRecord>("external_correlation", kExternalCorrelationFields),
    schema<NcclCallRecord>("nccl_call", kNcclCallFields),
};

}  // namespace

std::span<const RecordSchema> record_schemas() { return kSchemas; }

const RecordSchema* find_record_schema(RecordKind kind) {
  for (const RecordSchema& s : kSchemas) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

const char* record_kind_name(RecordKind kind) {
  const RecordSchema* s = find_record_schema(kind);
  return s != nullptr ? s->name : "unknown";
}

const char* nccl_op_name(uint8_t op) {
  switch (static_cast<NcclOpType>(op)) {
    case NcclOpType::kAllReduce: return "all_reduce";
    case NcclOpType::kAllGather: return "all_gather";
    case NcclOpType::kReduceScatter: return "reduce_scatter";
    case NcclOpType::kBroadcast: return "broadcast";
    case NcclOpType::kReduce: return "reduce";
    case NcclOpType::kAllToAll: return "all_to_all";
    case NcclOpType::kGather: return "gather";
    case NcclOpType::kScatter: return "scatter";
    case NcclOpType::kSend: return "send";
    case NcclOpType::kRecv: return "recv";
  }
  return "unknown";
}

const char* copy_kind_name(uint8_t kind) {
  switch (static_cast<CopyKind>(kind)) {
    case CopyKind::kHostToDevice: return "HtoD";
    case CopyKind::kDeviceToHost: return "DtoH";
    case CopyKind::kDeviceToDevice: return "DtoD";
    case CopyKind::kHostToHost: return "HtoH";
    case CopyKind::kPeerToPeer: return "PtoP";
    case CopyKind::kUnknown: break;
  }
  return "unknown";
}

size_t field_size_bytes(FieldType type) {
  switch (type) {
    case FieldType::kU8: return 1;
    case FieldType::kU16: return 2;
    case FieldType::kU32:
    case FieldType::kI32: return 4;
    case FieldType::kU64: return 8;
  }
  return 0;
}

const char* field_type_name(FieldType type) {
  switch (type) {
    case FieldType::kU8: return "u8";
    case FieldType::kU16: return "u16";
    case FieldType::kU32: return "u32";
    case FieldType::kI32: return "i32";
    case FieldType::kU64: return "u64";
  }
  return "?";
}

uint64_t read_unsigned_field(const std::byte* record, const FieldDesc& field) {
  uint64_t value = 0;
  std::memcpy(&value, record + field.offset, field_size_bytes(field.type));
  return value;
}

int64_t read_signed_field(const std::byte* record, const FieldDesc& field) {
  if (field.type == FieldType::kI32) {
    int32_t value = 0;
    std::memcpy(&value, record + field.offset, sizeof(value));
    return value;
  }
  return static_cast<int64_t>(read_unsigned_field(record, field));
}

}  // namespace pipescope::trace
