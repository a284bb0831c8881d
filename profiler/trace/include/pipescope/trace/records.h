// Fixed-layout event records. Every record starts with RecordHeader and its size is a
// multiple of 8. A reader decodes a record of kind K by copying min(size, sizeof(K's struct))
// bytes; a newer minor version may only append fields, so older readers ignore the tail.
#pragma once

#include <cstdint>
#include <type_traits>

namespace pipescope::trace {

enum class RecordKind : uint16_t {
  kInvalid = 0,  // never valid in a file; ring buffers use it internally as padding
  kKernel = 1,
  kMemcpy = 2,
  kMemset = 3,
  kMemory = 4,  // device memory allocation / release / pool events
  kSync = 5,
  kApi = 6,  // CUDA runtime / driver API call span
  kNcclOp = 7,
  kNcclComm = 8,
  kNvtx = 9,
  kOverhead = 10,             // time the profiling machinery itself took (CUPTI buffer flushes, ...)
  kNotice = 11,               // what the profiler wants the report to know: drops, lost capture, ...
  kExternalCorrelation = 12,  // ties a CUPTI correlation id to an id pipescope pushed (format 1.1)
  kNcclCall = 13,  // an NCCL call still running when the trace was written, and its return (format 1.3)
};
inline constexpr uint16_t kLastRecordKind = 13;

struct RecordHeader {
  uint16_t kind;        // RecordKind
  uint16_t size_bytes;  // whole record, header included; a multiple of 8, at least 8
};

// Values for a field that was not known when the record was made.
inline constexpr uint32_t kUnknownDevice = 0xFFFFFFFFu;
inline constexpr int32_t kNoPeer = -1;

struct KernelRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream;  // CUPTI stream id
  uint32_t correlation_id;
  uint32_t name_id;   // string id of the (mangled) kernel name
  uint32_t graph_id;  // CUDA graph the launch belongs to; 0 when not in a graph
  uint32_t grid_x;
  uint16_t grid_y;
  uint16_t grid_z;
  uint16_t block_x;
  uint16_t block_y;
  uint16_t block_z;
  uint16_t registers_per_thread;
  uint32_t static_shared_bytes;
  uint32_t dynamic_shared_bytes;
};

enum class CopyKind : uint8_t {
  kUnknown = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
  kHostToHost = 4,
  kPeerToPeer = 5,
};
enum class MemoryKind : uint8_t {
  kUnknown = 0,
  kPageable = 1,
  kPinned = 2,
  kDevice = 3,
  kArray = 4,
  kManaged = 5,
  kDeviceStatic = 6,
  kManagedStatic = 7,
};
inline constexpr uint8_t kActivityFlagAsync = 1u << 0;
inline constexpr uint8_t kActivityFlagInGraph = 1u << 1;

struct MemcpyRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream;
  uint32_t correlation_id;
  uint64_t bytes;
  uint8_t copy_kind;     // CopyKind
  uint8_t src_kind;      // MemoryKind
  uint8_t dst_kind;      // MemoryKind
  uint8_t flags;         // kActivityFlag*
  uint32_t peer_device;  // the other device of a peer copy; kUnknownDevice otherwise
  uint32_t graph_id;
  uint32_t reserved;
};

struct MemsetRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream;
  uint32_t correlation_id;
  uint64_t bytes;
  uint32_t value;
  uint8_t memory_kind;  // MemoryKind
  uint8_t flags;        // kActivityFlag*
  uint16_t reserved0;
  uint32_t graph_id;
  uint32_t reserved1;
};

enum class MemoryOperation : uint8_t {
  kAllocate = 1,
  kRelease = 2,
  kPoolCreate = 3,
  kPoolDestroy = 4,
  kPoolTrim = 5,
};
inline constexpr uint8_t kMemoryFlagFromPool = 1u << 0;  // cudaMallocAsync / stream-ordered

struct MemoryRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t timestamp_ns;
  uint64_t address;  // allocation address, or pool address for pool operations
  uint64_t bytes;    // allocation size, or pool size after the operation
  uint32_t stream;   // 0 when not stream-ordered
  uint32_t correlation_id;
  uint8_t operation;    // MemoryOperation
  uint8_t memory_kind;  // MemoryKind
  uint8_t flags;        // kMemoryFlag*
  uint8_t reserved0;
  uint32_t reserved1;
};

enum class SyncType : uint8_t {
  kUnknown = 0,
  kEventSynchronize = 1,
  kStreamWaitEvent = 2,
  kStreamSynchronize = 3,
  kContextSynchronize = 4,
};

struct SyncRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream;
  uint32_t correlation_id;
  uint8_t sync_type;  // SyncType
  uint8_t reserved0;
  uint16_t reserved1;
  uint32_t event_id;
};

enum class ApiDomain : uint8_t { kRuntime = 1, kDriver = 2 };

struct ApiRecord {
  RecordHeader header;
  uint32_t thread_id;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t correlation_id;
  uint32_t callback_id;  // CUPTI callback id in its domain
  uint32_t name_id;      // string id of the function name
  int32_t return_code;
  uint8_t domain;  // ApiDomain
  uint8_t reserved0;
  uint16_t reserved1;
  uint32_t reserved2;
};

enum class NcclOpType : uint8_t {
  kAllReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kBroadcast = 4,
  kReduce = 5,
  kAllToAll = 6,
  kGather = 7,
  kScatter = 8,
  kSend = 9,
  kRecv = 10,
};
inline constexpr uint8_t kNcclFlagInGroup = 1u << 0;       // issued between GroupStart/End
inline constexpr uint8_t kNcclFlagGraphCapture = 1u << 1;  // issued while a stream captured
inline constexpr uint8_t kNcclFlagFailed = 1u << 2;        // the call returned an error

// NcclOpRecord::sequence of an operation that cannot be paired across ranks (an unknown
// communicator, a peer out of range).
inline constexpr uint64_t kNcclUnknownSequence = UINT64_MAX;

struct NcclOpRecord {
  RecordHeader header;
  uint32_t device;
  uint64_t comm_id;  // communicator identity, equal on every member
  // Per communicator for collectives; per (communicator, peer, direction) for send/recv,
  // so that the same operation has the same number on every rank that took part;
  // kNcclUnknownSequence when it cannot be paired.
  uint64_t sequence;
  uint64_t count;   // elements, as passed to NCCL
  uint64_t bytes;   // payload bytes of this rank's buffer
  uint64_t stream;  // cudaStream_t value
  uint64_t host_enter_ns;
  uint64_t host_exit_ns;
  uint64_t external_correlation_id;  // pairs the call with the kernels it launched
  int32_t peer;                      // peer of send/recv, root of rooted collectives; kNoPeer otherwise
  uint32_t thread_id;
  uint8_t op;         // NcclOpType
  uint8_t datatype;   // ncclDataType_t value
  uint8_t reduce_op;  // ncclRedOp_t value; 0xFF when the op does not reduce
  uint8_t flags;      // kNcclFlag*
  uint32_t group_id;  // calls in one GroupStart/End share it; 0 outside groups
};

enum class NcclCommEvent : uint8_t {
  kInit = 1,
  kSplit = 2,
  kShrink = 3,
  kFinalize = 4,
  kDestroy = 5,
  kAbort = 6,
  kRevoke = 7,
};

struct NcclCommRecord {
  RecordHeader header;
  uint8_t event;  // NcclCommEvent
  uint8_t reserved0;
  uint16_t reserved1;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t comm_id;         // identity every member derives to the same value
  uint64_t parent_comm_id;  // for split/shrink; 0 otherwise
  uint64_t comm_handle;     // process-local ncclComm_t value, to match later calls
  int32_t rank;             // rank in this communicator
  int32_t size;
  int32_t global_rank;   // the process's rank in the job; -1 when unknown
  int32_t color;         // split color; -1 when not a split
  uint32_t split_index;  // how many splits of the parent came before this one
  uint32_t device;
};

enum class NvtxEvent : uint8_t { kPush = 1, kPop = 2, kStart = 3, kEnd = 4, kMark = 5 };

struct NvtxRecord {
  RecordHeader header;
  uint8_t event;  // NvtxEvent
  uint8_t reserved0;
  uint16_t reserved1;
  uint64_t timestamp_ns;
  uint64_t range_id;   // ties kStart to kEnd; 0 for push/pop/mark
  uint32_t name_id;    // 0 for kPop / kEnd
  uint32_t domain_id;  // string id of the domain name; 0 for the default domain
  uint32_t thread_id;
  uint32_t category;
  uint32_t color;  // ARGB, 0 when none was given
  uint32_t reserved2;
};

enum class OverheadKind : uint8_t {
  kUnknown = 0,
  kDriverCompiler = 1,
  kCuptiBufferFlush = 2,
  kCuptiInstrumentation = 3,
  kCuptiResource = 4,
  kRuntimeTriggeredModuleLoading = 5,
  kLazyFunctionLoading = 6,
  kCommandBufferFull = 7,
  kActivityBuffer = 8,
  kPipescopeFlush = 9,
};

struct OverheadRecord {
  RecordHeader header;
  uint8_t overhead_kind;  // OverheadKind
  uint8_t object_kind;    // 1 process, 2 thread, 3 device, 4 context, 5 stream
  uint16_t reserved;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t object_id;
};

enum class NoticeCode : uint16_t {
  kRecordsDropped = 1,      // count = records lost since the last such notice
  kCuptiBufferDropped = 2,  // count = records CUPTI reported dropped
  kCaptureLost = 3,         // another tool took CUPTI over; count unused
  kCaptureResumed = 4,
  kInjectionConflict = 5,   // another tool's injection path was left in place
  kUnsupportedVersion = 6,  // a library version this build does not know; capture off
  kKindUnavailable = 7,     // a requested kind could not be captured (message says which)
  kWindowOpened = 8,        // capture window / step range began
  kWindowClosed = 9,
  kClockOffsetApplied = 10,  // GPU times mapped onto the trace clock by a measured offset (format 1.1)
  // PIPESCOPE_KERNEL_SAMPLE (format 1.2): GPU activity records (kernels, copies, memsets) resume (a
  // sampled step begins) or pause (an unsampled one begins); count = the step's number, from 0.
  kKernelSamplingResumed = 11,
  kKernelSamplingPaused = 12,
  // How the process ended (format 1.3). kProcessSignal: count = the signal that ended it (a fatal
  // one, caught as it struck, or a termination signal the process did not handle itself).
  // kProcessExit: count = the status passed to exit() or returned from main.
  kProcessSignal = 13,
  kProcessExit = 14,
};

struct NoticeRecord {
  RecordHeader header;
  uint16_t code;  // NoticeCode
  uint16_t reserved0;
  uint64_t timestamp_ns;
  uint64_t count;
  uint32_t message_id;  // string id of a human-readable detail; 0 when none
  uint32_t reserved1;
};

// Who pushed the external id of an external_correlation record.
enum class ExternalCorrelationKind : uint8_t {
  kNccl = 1,  // pipescope's NCCL interposer: external_id is an nccl_op's external_correlation_id
};

// CUPTI's link between a CUDA call (its correlation_id, which the kernels, copies and memsets it
// issued carry too) and the external id that was pushed on the calling thread during the call.
struct ExternalCorrelationRecord {
  RecordHeader header;
  uint8_t external_kind;  // ExternalCorrelationKind
  uint8_t reserved0;
  uint16_t reserved1;
  uint32_t correlation_id;
  uint32_t reserved2;
  uint64_t external_id;
};

// The NCCL flight recorder (format 1.3). A call that is still inside NCCL when the trace is
// written (a periodic flush, a termination or fatal signal, exit) is written as kInFlight with
// what was known when it was entered, again at each write while it runs; when such a call
// returns, a kReturned record with the same (thread_id, call_serial) follows, whatever the
// capture window. A call with a kInFlight record
// and no kReturned one never returned. Calls that return between two flushes leave no nccl_call
// record (their nccl_op / nccl_comm records say everything). Grouped operations stay in flight
// until their outermost ncclGroupEnd returns.
enum class NcclCallKind : uint8_t {
  kOperation = 1,     // `what` is an NcclOpType
  kCommunicator = 2,  // `what` is an NcclCommEvent: creation, split, shrink, teardown
};
enum class NcclCallState : uint8_t {
  kInFlight = 1,  // entered at enter_ns and not yet returned at at_ns
  kReturned = 2,  // returned at at_ns with `result`
};

struct NcclCallRecord {
  RecordHeader header;
  uint8_t call_kind;  // NcclCallKind
  uint8_t what;       // NcclOpType or NcclCommEvent
  uint8_t state;      // NcclCallState
  uint8_t flags;      // kNcclFlagInGroup, kNcclFlagGraphCapture
  // Operations and teardown: the communicator; creation: the new communicator's identity (as
  // its nccl_comm record will have it), 0 for a split member that passed NCCL_SPLIT_NOCOLOR.
  uint64_t comm_id;
  uint64_t parent_comm_id;  // split / shrink: the communicator split; 0 otherwise
  // Operations: as NcclOpRecord::sequence; split / shrink: how many came before on the parent.
  uint64_t sequence;
  uint64_t bytes;        // operations: payload bytes of this rank's buffer; 0 otherwise
  uint64_t enter_ns;     // when the call was entered; 0 outside a capture window (clock not read)
  uint64_t at_ns;        // kInFlight: when it was seen still running; kReturned: when it returned
  uint32_t call_serial;  // per thread, from 1: (thread_id, call_serial) pairs the two states
  uint32_t thread_id;
  int32_t peer;         // operations: as NcclOpRecord::peer; split: the color (-1 NOCOLOR)
  int32_t rank;         // the caller's rank in the communicator; -1 when not known yet
  int32_t size;         // the communicator's size; -1 when not known yet
  int32_t global_rank;  // the process's rank in the job; -1 when unknown
  uint32_t group_id;    // as NcclOpRecord::group_id
  int32_t result;       // kReturned: the ncclResult_t; 0 otherwise
  uint8_t datatype;     // operations: ncclDataType_t value
  uint8_t reduce_op;    // operations: ncclRedOp_t value; 0xFF when the op does not reduce
  uint16_t reserved0;
  uint32_t reserved1;
};

template <class R>
struct RecordTraits;
#define PIPESCOPE_RECORD_TRAITS(Type, Kind)                                  \
  template <>                                                                \
  struct RecordTraits<Type> {                                                \
    static constexpr RecordKind kKind = RecordKind::Kind;                    \
  };                                                                         \
  static_assert(sizeof(Type) % 8 == 0 && std::is_trivially_copyable_v<Type>, \
                #Type " must be a trivially copyable multiple of 8 bytes")
PIPESCOPE_RECORD_TRAITS(KernelRecord, kKernel);
PIPESCOPE_RECORD_TRAITS(MemcpyRecord, kMemcpy);
PIPESCOPE_RECORD_TRAITS(MemsetRecord, kMemset);
PIPESCOPE_RECORD_TRAITS(MemoryRecord, kMemory);
PIPESCOPE_RECORD_TRAITS(SyncRecord, kSync);
PIPESCOPE_RECORD_TRAITS(ApiRecord, kApi);
PIPESCOPE_RECORD_TRAITS(NcclOpRecord, kNcclOp);
PIPESCOPE_RECORD_TRAITS(NcclCommRecord, kNcclComm);
PIPESCOPE_RECORD_TRAITS(NvtxRecord, kNvtx);
PIPESCOPE_RECORD_TRAITS(OverheadRecord, kOverhead);
PIPESCOPE_RECORD_TRAITS(NoticeRecord, kNotice);
PIPESCOPE_RECORD_TRAITS(ExternalCorrelationRecord, kExternalCorrelation);
PIPESCOPE_RECORD_TRAITS(NcclCallRecord, kNcclCall);
#undef PIPESCOPE_RECORD_TRAITS

// The sizes docs/trace-format.md states; a change here is a format change.
static_assert(sizeof(KernelRecord) == 64);
static_assert(sizeof(MemcpyRecord) == 56);
static_assert(sizeof(MemsetRecord) == 56);
static_assert(sizeof(MemoryRecord) == 48);
static_assert(sizeof(SyncRecord) == 40);
static_assert(sizeof(ApiRecord) == 48);
static_assert(sizeof(NcclOpRecord) == 88);
static_assert(sizeof(NcclCommRecord) == 72);
static_assert(sizeof(NvtxRecord) == 48);
static_assert(sizeof(OverheadRecord) == 32);
static_assert(sizeof(NoticeRecord) == 32);
static_assert(sizeof(ExternalCorrelationRecord) == 24);
static_assert(sizeof(NcclCallRecord) == 96);

// Builds a record with its header filled in; fields are set by the caller.
template <class R>
constexpr R make_record() {
  R record{};
  record.header.kind = static_cast<uint16_t>(RecordTraits<R>::kKind);
  record.header.size_bytes = static_cast<uint16_t>(sizeof(R));
  return record;
}

const char* record_kind_name(RecordKind kind);
// "all_reduce", "send", ... ("unknown" for a value this build does not know).
const char* nccl_op_name(uint8_t op);
// "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "unknown".
const char* copy_kind_name(uint8_t kind);

}  // namespace pipescope::trace
