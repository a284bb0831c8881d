// CUPTI activity records -> trace records, from CUPTI 13 structs built here by hand: every
// supported kind field by field, then whole buffers walked into a trace that is read back.
#include "cupti_records.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cupti_test_support.h"
#include "loaded_trace.h"
#include "session.h"

namespace pipescope::inject {
namespace {

using testing::ActivityBuffer;
using testing::config_in;
using testing::load_trace;
using testing::make_temp_dir;
using testing::trace_in;
using testing::walk_test_buffer;
using trace::RecordKind;

constexpr int64_t kNoOffset = 0;

CUpti_ActivityKernel10 kernel_activity(const char* name, uint64_t start, uint64_t end) {
  CUpti_ActivityKernel10 a{};
  a.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  a.name = name;
  a.start = start;
  a.end = end;
  a.deviceId = 1;
  a.streamId = 7;
  a.correlationId = 100;
  a.gridX = 132;
  a.gridY = 4;
  a.gridZ = 1;
  a.blockX = 256;
  a.blockY = 1;
  a.blockZ = 1;
  a.registersPerThread = 168;
  a.staticSharedMemory = 1024;
  a.dynamicSharedMemory = 73728;
  return a;
}

// ---- one struct at a time --------------------------------------------------------------------

TEST(CuptiKernel, EveryFieldReachesTheRecordWithItsGraph) {
  CUpti_ActivityKernel10 a = kernel_activity("k", 5'000, 9'000);
  a.graphId = 12;
  const trace::KernelRecord r = kernel_record(a, kNoOffset, 33);
  EXPECT_EQ(r.header.kind, static_cast<uint16_t>(RecordKind::kKernel));
  EXPECT_EQ(r.header.size_bytes, sizeof(trace::KernelRecord));
  EXPECT_EQ(r.device, 1u);
  EXPECT_EQ(r.start_ns, 5'000u);
  EXPECT_EQ(r.end_ns, 9'000u);
  EXPECT_EQ(r.stream, 7u);
  EXPECT_EQ(r.correlation_id, 100u);
  EXPECT_EQ(r.name_id, 33u);
  EXPECT_EQ(r.graph_id, 12u);
  EXPECT_EQ(r.grid_x, 132u);
  EXPECT_EQ(r.grid_y, 4u);
  EXPECT_EQ(r.grid_z, 1u);
  EXPECT_EQ(r.block_x, 256u);
  EXPECT_EQ(r.block_y, 1u);
  EXPECT_EQ(r.block_z, 1u);
  EXPECT_EQ(r.registers_per_thread, 168u);
  EXPECT_EQ(r.static_shared_bytes, 1024u);
  EXPECT_EQ(r.dynamic_shared_bytes, 73728u);
}

TEST(CuptiClock, AnOffsetMovesTimesButAnUntimedZeroStaysZero) {
  // CUPTI writes 0 when it could not time a kernel (no device memory for the timestamps).
  const trace::KernelRecord r = kernel_record(kernel_activity("k", 0, 0), -300, 1);
  EXPECT_EQ(r.start_ns, 0u);
  EXPECT_EQ(r.end_ns, 0u);
  const trace::KernelRecord moved = kernel_record(kernel_activity("k", 1'000, 1'500), -300, 1);
  EXPECT_EQ(moved.start_ns, 700u);
  EXPECT_EQ(moved.end_ns, 1'200u);
  EXPECT_EQ(to_trace_ns(1'000, 2'000), 3'000u);
}

TEST(CuptiMemcpy, DirectionsFoldArraysIntoDeviceMemory) {
  const std::map<int, trace::CopyKind> expected = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, trace::CopyKind::kHostToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, trace::CopyKind::kHostToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, trace::CopyKind::kDeviceToHost},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, trace::CopyKind::kDeviceToHost},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, trace::CopyKind::kDeviceToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, trace::CopyKind::kDeviceToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, trace::CopyKind::kDeviceToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, trace::CopyKind::kDeviceToDevice},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, trace::CopyKind::kHostToHost},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, trace::CopyKind::kPeerToPeer},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, trace::CopyKind::kUnknown},
  };
  for (const auto& [cupti, kind] : expected) {
    CUpti_ActivityMemcpy6 a{};
    a.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    a.copyKind = static_cast<uint8_t>(cupti);
    EXPECT_EQ(memcpy_record(a, kNoOffset).copy_kind, static_cast<uint8_t>(kind))
        << "CUPTI copy kind " << cupti;
  }
}

TEST(CuptiMemcpy, AnAsyncCopyInAGraphCarriesBothFlags) {
  CUpti_ActivityMemcpy6 a{};
  a.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  a.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  a.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  a.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  a.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  a.bytes = 1 << 20;
  a.start = 10;
  a.end = 20;
  a.deviceId = 2;
  a.streamId = 9;
  a.correlationId = 5;
  a.graphId = 3;
  const trace::MemcpyRecord r = memcpy_record(a, kNoOffset);
  EXPECT_EQ(r.device, 2u);
  EXPECT_EQ(r.bytes, 1u << 20);
  EXPECT_EQ(r.src_kind, static_cast<uint8_t>(trace::MemoryKind::kDevice));
  EXPECT_EQ(r.dst_kind, static_cast<uint8_t>(trace::MemoryKind::kPinned));
  EXPECT_EQ(r.flags, trace::kActivityFlagAsync | trace::kActivityFlagInGraph);
  EXPECT_EQ(r.peer_device, trace::kUnknownDevice);
  EXPECT_EQ(r.graph_id, 3u);
  EXPECT_EQ(r.stream, 9u);
  EXPECT_EQ(r.correlation_id, 5u);

  a.flags = 0;
  a.graphId = 0;
  EXPECT_EQ(memcpy_record(a, kNoOffset).flags, 0u);
}

TEST(CuptiMemcpy, APeerCopyNamesTheOtherDevice) {
  CUpti_ActivityMemcpyPtoP4 a{};
  a.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  a.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  a.bytes = 4096;
  a.srcDeviceId = 1;
  a.dstDeviceId = 3;
  a.deviceId = 1;  // reported on the source device: the peer is the destination
  trace::MemcpyRecord r = peer_memcpy_record(a, kNoOffset);
  EXPECT_EQ(r.copy_kind, static_cast<uint8_t>(trace::CopyKind::kPeerToPeer));
  EXPECT_EQ(r.device, 1u);
  EXPECT_EQ(r.peer_device, 3u);
  EXPECT_EQ(r.bytes, 4096u);
  a.deviceId = 3;  // reported on the destination: the peer is the source
  r = peer_memcpy_record(a, kNoOffset);
  EXPECT_EQ(r.device, 3u);
  EXPECT_EQ(r.peer_device, 1u);
}

TEST(CuptiMemset, ValueKindAndFlagsReachTheRecord) {
  CUpti_ActivityMemset4 a{};
  a.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  a.value = 0xAB;
  a.bytes = 256;
  a.start = 100;
  a.end = 150;
  a.deviceId = 0;
  a.streamId = 4;
  a.correlationId = 77;
  a.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
  a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  const trace::MemsetRecord r = memset_record(a, kNoOffset);
  EXPECT_EQ(r.value, 0xABu);
  EXPECT_EQ(r.bytes, 256u);
  EXPECT_EQ(r.start_ns, 100u);
  EXPECT_EQ(r.end_ns, 150u);
  EXPECT_EQ(r.memory_kind, static_cast<uint8_t>(trace::MemoryKind::kManaged));
  EXPECT_EQ(r.flags, trace::kActivityFlagAsync);
  EXPECT_EQ(r.correlation_id, 77u);
  EXPECT_EQ(r.graph_id, 0u);
}

CUpti_ActivityMemory4 memory_activity(CUpti_ActivityMemoryOperationType op, uint64_t timestamp) {
  CUpti_ActivityMemory4 a{};
  a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  a.memoryOperationType = op;
  a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  a.correlationId = 8;
  a.address = 0x7f0000000000;
  a.bytes = 2 << 20;
  a.timestamp = timestamp;
  a.deviceId = 0;
  a.streamId = CUPTI_INVALID_STREAM_ID;  // cudaMalloc: not stream-ordered
  return a;
}

TEST(CuptiMemory, CudaMallocIsReservedMemoryWithNoStream) {
  trace::MemoryRecord r{};
  ASSERT_TRUE(
      memory_record(memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 40), kNoOffset, r));
  EXPECT_EQ(r.operation, static_cast<uint8_t>(trace::MemoryOperation::kAllocate));
  EXPECT_EQ(r.memory_kind, static_cast<uint8_t>(trace::MemoryKind::kDevice));
  EXPECT_EQ(r.address, 0x7f0000000000u);
  EXPECT_EQ(r.bytes, 2u << 20);
  EXPECT_EQ(r.timestamp_ns, 40u);
  EXPECT_EQ(r.stream, 0u);
  EXPECT_EQ(r.correlation_id, 8u);
  EXPECT_EQ(r.flags, 0u);
  ASSERT_TRUE(memory_record(memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 50), kNoOffset, r));
  EXPECT_EQ(r.operation, static_cast<uint8_t>(trace::MemoryOperation::kRelease));
}

TEST(CuptiMemory, CudaMallocAsyncIsAPoolAllocationOnItsStream) {
  CUpti_ActivityMemory4 a = memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 40);
  a.isAsync = 1;
  a.streamId = 13;
  a.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  trace::MemoryRecord r{};
  ASSERT_TRUE(memory_record(a, kNoOffset, r));
  EXPECT_EQ(r.flags, trace::kMemoryFlagFromPool);
  EXPECT_EQ(r.stream, 13u);
}

TEST(CuptiMemory, AnInvalidOperationMakesNoRecord) {
  trace::MemoryRecord r{};
  EXPECT_FALSE(memory_record(memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, 1), kNoOffset, r));
}

TEST(CuptiMemoryPool, CreateDestroyAndTrimAreMemoryRecordsOfThePool) {
  const std::map<int, trace::MemoryOperation> expected = {
      {CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, trace::MemoryOperation::kPoolCreate},
      {CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED, trace::MemoryOperation::kPoolDestroy},
      {CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, trace::MemoryOperation::kPoolTrim},
  };
  for (const auto& [cupti, operation] : expected) {
    CUpti_ActivityMemoryPool3 a{};
    a.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    a.memoryPoolOperationType = static_cast<CUpti_ActivityMemoryPoolOperationType>(cupti);
    a.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    a.deviceId = 5;
    a.address = 0x1000;
    a.size = 64 << 20;
    a.timestamp = 900;
    a.correlationId = 4;
    trace::MemoryRecord r{};
    ASSERT_TRUE(memory_pool_record(a, kNoOffset, r));
    EXPECT_EQ(r.operation, static_cast<uint8_t>(operation));
    EXPECT_EQ(r.device, 5u);
    EXPECT_EQ(r.address, 0x1000u);
    EXPECT_EQ(r.bytes, 64u << 20);
    EXPECT_EQ(r.timestamp_ns, 900u);
    EXPECT_EQ(r.memory_kind, static_cast<uint8_t>(trace::MemoryKind::kDevice));
    EXPECT_EQ(r.stream, 0u);
  }
  CUpti_ActivityMemoryPool3 managed{};
  managed.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  managed.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  managed.isManagedPool = 1;
  trace::MemoryRecord r{};
  ASSERT_TRUE(memory_pool_record(managed, kNoOffset, r));
  EXPECT_EQ(r.memory_kind, static_cast<uint8_t>(trace::MemoryKind::kManaged));
  managed.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID;
  EXPECT_FALSE(memory_pool_record(managed, kNoOffset, r));
}

TEST(CuptiSync, TypesMapAndNotApplicableValuesBecomeZero) {
  CUpti_ActivitySynchronization2 a{};
  a.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  a.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  a.start = 300;
  a.end = 700;
  a.correlationId = 21;
  a.contextId = 1;
  a.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  a.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  trace::SyncRecord r = sync_record(a, kNoOffset, 6);
  EXPECT_EQ(r.sync_type, static_cast<uint8_t>(trace::SyncType::kContextSynchronize));
  EXPECT_EQ(r.device, 6u);
  EXPECT_EQ(r.start_ns, 300u);
  EXPECT_EQ(r.end_ns, 700u);
  EXPECT_EQ(r.stream, 0u);
  EXPECT_EQ(r.event_id, 0u);
  EXPECT_EQ(r.correlation_id, 21u);

  a.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  a.streamId = 3;
  a.cudaEventId = 44;
  r = sync_record(a, kNoOffset, 6);
  EXPECT_EQ(r.sync_type, static_cast<uint8_t>(trace::SyncType::kEventSynchronize));
  EXPECT_EQ(r.stream, 3u);
  EXPECT_EQ(r.event_id, 44u);
  a.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  EXPECT_EQ(sync_record(a, 0, 0).sync_type, static_cast<uint8_t>(trace::SyncType::kStreamWaitEvent));
  a.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  EXPECT_EQ(sync_record(a, 0, 0).sync_type, static_cast<uint8_t>(trace::SyncType::kStreamSynchronize));
}

TEST(CuptiApi, RuntimeAndDriverRecordsKeepTheirDomainThreadAndResult) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 211;
  a.start = 1'000;
  a.end = 1'800;
  a.threadId = 4242;
  a.correlationId = 90;
  a.returnValue = 2;  // cudaErrorMemoryAllocation
  trace::ApiRecord r = api_record(a, kNoOffset, 19);
  EXPECT_EQ(r.domain, static_cast<uint8_t>(trace::ApiDomain::kRuntime));
  EXPECT_EQ(r.callback_id, 211u);
  EXPECT_EQ(r.thread_id, 4242u);
  EXPECT_EQ(r.start_ns, 1'000u);
  EXPECT_EQ(r.end_ns, 1'800u);
  EXPECT_EQ(r.correlation_id, 90u);
  EXPECT_EQ(r.return_code, 2);
  EXPECT_EQ(r.name_id, 19u);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  EXPECT_EQ(api_record(a, kNoOffset, 19).domain, static_cast<uint8_t>(trace::ApiDomain::kDriver));
}

TEST(CuptiApi, FunctionNamesLoseCuptisVersionSuffix) {
  EXPECT_EQ(api_function_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_function_name("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(api_function_name("cuLaunchKernelEx"), "cuLaunchKernelEx");
  EXPECT_EQ(api_function_name("cudaMalloc_v"), "cudaMalloc_v");
  EXPECT_EQ(api_function_name("cuCtx_vX1"), "cuCtx_vX1");
}

TEST(CuptiOverhead, KindsAreRenumberedAndObjectsKeepTheirId) {
  CUpti_ActivityOverhead3 a{};
  a.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  a.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  a.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  a.objectId.pt.processId = 10;
  a.objectId.pt.threadId = 11;
  a.start = 5;
  a.end = 6;
  trace::OverheadRecord r = overhead_record(a, kNoOffset);
  EXPECT_EQ(r.overhead_kind, static_cast<uint8_t>(trace::OverheadKind::kCuptiBufferFlush));
  EXPECT_EQ(r.object_kind, 2u);  // thread
  EXPECT_EQ(r.object_id, 11u);
  EXPECT_EQ(r.start_ns, 5u);
  EXPECT_EQ(r.end_ns, 6u);

  a.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
  a.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
  a.objectId.dcs.deviceId = 3;
  r = overhead_record(a, kNoOffset);
  EXPECT_EQ(r.overhead_kind, static_cast<uint8_t>(trace::OverheadKind::kDriverCompiler));
  EXPECT_EQ(r.object_kind, 3u);
  EXPECT_EQ(r.object_id, 3u);

  a.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
  a.objectKind = CUPTI_ACTIVITY_OBJECT_STREAM;
  a.objectId.dcs.streamId = 17;
  r = overhead_record(a, kNoOffset);
  EXPECT_EQ(r.overhead_kind, static_cast<uint8_t>(trace::OverheadKind::kActivityBuffer));
  EXPECT_EQ(r.object_kind, 5u);
  EXPECT_EQ(r.object_id, 17u);

  a.overheadKind = CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT;  // newer than the trace's table
  a.objectKind = CUPTI_ACTIVITY_OBJECT_UNKNOWN;
  r = overhead_record(a, kNoOffset);
  EXPECT_EQ(r.overhead_kind, static_cast<uint8_t>(trace::OverheadKind::kUnknown));
  EXPECT_EQ(r.object_kind, 0u);
}

TEST(CuptiExternalCorrelation, OnlyPipescopesNcclIdsBecomeRecords) {
  CUpti_ActivityExternalCorrelation a{};
  a.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  a.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  a.externalId = 0x1234567890ull;
  a.correlationId = 555;
  trace::ExternalCorrelationRecord r{};
  ASSERT_TRUE(external_correlation_record(a, r));
  EXPECT_EQ(r.header.kind, static_cast<uint16_t>(RecordKind::kExternalCorrelation));
  EXPECT_EQ(r.header.size_bytes, 24u);
  EXPECT_EQ(r.external_kind, static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl));
  EXPECT_EQ(r.correlation_id, 555u);
  EXPECT_EQ(r.external_id, 0x1234567890ull);
  a.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;  // the PyTorch profiler's, say
  EXPECT_FALSE(external_correlation_record(a, r));
}

TEST(CuptiDevice, ADeviceRecordDescribesTheGpu) {
  CUpti_ActivityDevice5 a{};
  a.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  a.id = 2;
  a.globalMemorySize = 85'899'345'920ull;  // 80 GiB
  a.name = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 16; ++i) a.uuid.bytes[i] = static_cast<char>(0xA0 + i);
  const trace::DeviceInfo d = device_info(a);
  EXPECT_EQ(d.ordinal, 2);
  EXPECT_EQ(d.memory_bytes, 85'899'345'920ull);
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.uuid[0], 0xA0);
  EXPECT_EQ(d.uuid[15], 0xAF);
  EXPECT_EQ(d.pci_bus, 0u);  // CUPTI does not say
}

TEST(CuptiContexts, SynchronizationsFindTheirDeviceThroughTheContext) {
  ContextDevices contexts;
  EXPECT_EQ(contexts.device_of(1), trace::kUnknownDevice);
  contexts.learn(1, 0);
  contexts.learn(9, 3);
  EXPECT_EQ(contexts.device_of(1), 0u);
  EXPECT_EQ(contexts.device_of(9), 3u);
  EXPECT_EQ(contexts.device_of(2), trace::kUnknownDevice);
  contexts.learn(9, 4);  // a context id reused after its context was destroyed
  EXPECT_EQ(contexts.device_of(9), 4u);
  contexts.learn(CUPTI_INVALID_CONTEXT_ID, 1);
  EXPECT_EQ(contexts.device_of(CUPTI_INVALID_CONTEXT_ID), trace::kUnknownDevice);
}

// ---- whole buffers into a trace ----------------------------------------------------------------

// The session seen through RecordServices, counting the calls that reach it.
class SessionServices : public RecordServices {
 public:
  explicit SessionServices(Session& session) : session_(session) {}
  uint32_t intern(std::string_view text) override {
    ++interned;
    return session_.intern(text);
  }
  void add_device(const trace::DeviceInfo& device) override {
    ++devices;
    session_.add_device(device);
  }
  int interned = 0;
  int devices = 0;

 private:
  Session& session_;
};

CUptiResult callback_name(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) {
    *name = "cudaLaunchKernel_v7000";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

// Each test's strings live in its own trace file: a generation of its own keeps the calling
// thread's name caches from handing out an earlier file's ids.
uint32_t fresh_generation() {
  static uint32_t next = 1'000;
  return ++next;
}

ConversionSettings all_kinds() {
  ConversionSettings settings;
  settings.record_bits = trace::parse_capture_kinds("all")->record_bits;
  settings.string_generation = fresh_generation();
  settings.callback_name = &callback_name;
  return settings;
}

TEST(CuptiBuffer, EveryKindWalksIntoTheTrace) {
  const std::string dir = make_temp_dir("cupti_every_kind");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* out = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(out, nullptr);

  ActivityBuffer buffer;
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1;
  context.deviceId = 0;
  CUpti_ActivityDevice5 device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.id = 0;
  device.name = "NVIDIA H100 80GB HBM3";
  device.globalMemorySize = 80ull << 30;
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 1000;
  copy.start = 20;
  CUpti_ActivityMemcpyPtoP4 peer{};
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.deviceId = 0;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  peer.start = 21;
  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 64;
  set.start = 22;
  CUpti_ActivityMemoryPool3 pool{};
  pool.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  pool.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  pool.timestamp = 23;
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.contextId = 1;
  sync.start = 24;
  CUpti_ActivityAPI launch{};
  launch.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  launch.cbid = 211;
  launch.start = 25;
  CUpti_ActivityAPI driver_call{};
  driver_call.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  driver_call.cbid = 9999;  // a name CUPTI cannot give
  driver_call.start = 26;
  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.start = 27;
  CUpti_ActivityExternalCorrelation link{};
  link.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  link.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  link.externalId = 31;
  link.correlationId = 100;
  CUpti_ActivityName unread{};  // a kind pipescope does not read
  unread.kind = CUPTI_ACTIVITY_KIND_NAME;
  buffer.add(context)
      .add(device)
      .add(kernel_activity("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn", 10, 19))
      .add(copy)
      .add(peer)
      .add(set)
      .add(memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 23))
      .add(pool)
      .add(sync)
      .add(launch)
      .add(driver_call)
      .add(overhead)
      .add(link)
      .add(unread);

  SessionServices services(session);
  ContextDevices contexts;
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer,
                                                    all_kinds(), services, contexts, *out);
  EXPECT_EQ(stats.activities, 14u);
  EXPECT_EQ(stats.appended, 11u);
  EXPECT_EQ(stats.info, 2u);      // the context and the device
  EXPECT_EQ(stats.unwanted, 1u);  // the name record
  EXPECT_EQ(stats.outside_window, 0u);
  EXPECT_EQ(stats.ring_full, 0u);
  EXPECT_EQ(stats.walk_error, CUPTI_SUCCESS);
  session.finish();

  const auto trace = trace_in(dir);
  const auto kernels = trace.all<trace::KernelRecord>();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(trace.text(kernels[0].name_id), "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn");
  const auto copies = trace.all<trace::MemcpyRecord>();
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[1].peer_device, 1u);
  EXPECT_EQ(trace.all<trace::MemsetRecord>().size(), 1u);
  EXPECT_EQ(trace.all<trace::MemoryRecord>().size(), 2u);
  const auto syncs = trace.all<trace::SyncRecord>();
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].device, 0u);  // from the context record before it
  const auto calls = trace.all<trace::ApiRecord>();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(trace.text(calls[0].name_id), "cudaLaunchKernel");
  EXPECT_EQ(trace.text(calls[1].name_id), "cbid:9999");
  EXPECT_EQ(trace.all<trace::OverheadRecord>().size(), 1u);
  const auto links = trace.all<trace::ExternalCorrelationRecord>();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].external_id, 31u);
  EXPECT_EQ(links[0].correlation_id, 100u);
  ASSERT_EQ(trace.process.devices.size(), 1u);
  EXPECT_EQ(trace.process.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(trace.process.devices[0].memory_bytes, 80ull << 30);
}

TEST(CuptiBuffer, RecordsOutsideTheCaptureWindowAreDropped) {
  const std::string dir = make_temp_dir("cupti_window");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* out = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(out, nullptr);
  ConversionSettings settings = all_kinds();
  settings.window_open_ns = 1'000;
  settings.window_close_ns = 2'000;

  CUpti_ActivityMemory4 async_early = memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 500);
  async_early.isAsync = 1;
  CUpti_ActivityMemoryPool3 pool_early{};
  pool_early.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  pool_early.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  pool_early.timestamp = 400;
  ActivityBuffer buffer;
  buffer
      .add(kernel_activity("before", 999, 1'500))  // started before the window opened
      .add(kernel_activity("inside", 1'000, 1'100))
      .add(kernel_activity("last", 1'999, 2'500))
      .add(kernel_activity("after", 2'000, 2'100))
      // cudaMalloc'd memory is held across the window's edge: kept; a pool block is not.
      .add(memory_activity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 500))
      .add(async_early)
      .add(pool_early);
  SessionServices services(session);
  ContextDevices contexts;
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer, settings,
                                                    services, contexts, *out);
  EXPECT_EQ(stats.appended, 4u);
  EXPECT_EQ(stats.outside_window, 3u);
  session.finish();

  const auto trace = trace_in(dir);
  const auto kernels = trace.all<trace::KernelRecord>();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(trace.text(kernels[0].name_id), "inside");
  EXPECT_EQ(trace.text(kernels[1].name_id), "last");
  const auto memory = trace.all<trace::MemoryRecord>();
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].flags, 0u);
  EXPECT_EQ(memory[1].operation, static_cast<uint8_t>(trace::MemoryOperation::kPoolCreate));
}

TEST(CuptiBuffer, KindsNotCapturedAreDropped) {
  const std::string dir = make_temp_dir("cupti_unwanted");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* out = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(out, nullptr);
  ConversionSettings settings = all_kinds();
  settings.record_bits = trace::parse_capture_kinds("memory,nccl")->record_bits;

  // DRIVER records arrive for external correlation even when `api` is not captured.
  CUpti_ActivityAPI driver_call{};
  driver_call.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  CUpti_ActivityExternalCorrelation link{};
  link.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  link.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  ActivityBuffer buffer;
  buffer.add(kernel_activity("k", 1, 2)).add(driver_call).add(link);
  SessionServices services(session);
  ContextDevices contexts;
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer, settings,
                                                    services, contexts, *out);
  EXPECT_EQ(stats.unwanted, 2u);
  EXPECT_EQ(stats.appended, 1u);
  EXPECT_EQ(services.interned, 0);  // no kernel or API name was even looked at
  session.finish();
  const auto trace = trace_in(dir);
  EXPECT_TRUE(trace.all<trace::KernelRecord>().empty());
  EXPECT_TRUE(trace.all<trace::ApiRecord>().empty());
  EXPECT_EQ(trace.all<trace::ExternalCorrelationRecord>().size(), 1u);
}

TEST(CuptiBuffer, EachKernelNameIsInternedOncePerThread) {
  const std::string dir = make_temp_dir("cupti_names");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* out = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(out, nullptr);
  // Fifty kernels of a layer, launched 20 times; CUPTI gives each kernel one name pointer.
  std::vector<std::string> names;
  names.reserve(50);
  for (int i = 0; i < 50; ++i) names.push_back("kernel_" + std::to_string(i));
  ActivityBuffer buffer;
  for (int launch = 0; launch < 20; ++launch) {
    for (const std::string& name : names) buffer.add(kernel_activity(name.c_str(), 10, 20));
  }
  SessionServices services(session);
  ContextDevices contexts;
  const ConversionSettings settings = all_kinds();
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer, settings,
                                                    services, contexts, *out);
  EXPECT_EQ(stats.appended, 1000u);
  EXPECT_EQ(services.interned, 50);
  session.finish();
  const auto trace = trace_in(dir);
  const auto kernels = trace.all<trace::KernelRecord>();
  ASSERT_EQ(kernels.size(), 1000u);
  EXPECT_EQ(trace.text(kernels[0].name_id), "kernel_0");
  EXPECT_EQ(trace.text(kernels[999].name_id), "kernel_49");
}

TEST(CuptiBuffer, ADamagedRecordStopsTheWalkAndKeepsWhatCameBefore) {
  const std::string dir = make_temp_dir("cupti_damaged");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* out = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(out, nullptr);
  ActivityBuffer buffer;
  buffer.add(kernel_activity("first", 1, 2)).add(kernel_activity("second", 3, 4));
  SessionServices services(session);
  ContextDevices contexts;
  // Cut the second record short: CUPTI reports an incomplete record as an invalid kind.
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size() - 8, &walk_test_buffer,
                                                    all_kinds(), services, contexts, *out);
  EXPECT_EQ(stats.appended, 1u);
  EXPECT_EQ(stats.walk_error, CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(process_activity_buffer(nullptr, 0, &walk_test_buffer, all_kinds(), services, contexts, *out)
                .activities,
            0u);
  session.finish();
  EXPECT_EQ(trace_in(dir).all<trace::KernelRecord>().size(), 1u);
}

// ---- the ring behind the conversion -----------------------------------------------------------

// A TraceWriter with a 64 KiB ring per thread, seen through RecordServices.
struct SmallRingTrace : RecordServices {
  explicit SmallRingTrace(const std::string& dir) {
    trace::WriterOptions options;
    options.thread_buffer_bytes = size_t{64} << 10;
    path = dir + "/small-ring.pst";
    auto created = trace::TraceWriter::create(path, options);
    EXPECT_TRUE(created.ok());
    if (created.ok()) writer = std::move(*created);
  }
  uint32_t intern(std::string_view text) override { return writer->intern(text); }
  void add_device(const trace::DeviceInfo&) override {}
  std::string path;
  std::unique_ptr<trace::TraceWriter> writer;
};

ActivityBuffer many_kernels(int count) {
  ActivityBuffer buffer;
  for (int i = 0; i < count; ++i) buffer.add(kernel_activity("k", 10 + i, 11 + i));
  return buffer;
}

TEST(CuptiBuffer, AFullRingUnderTheDropPolicyCountsWhatItRefused) {
  SmallRingTrace trace_file(make_temp_dir("cupti_ring_drop"));
  ASSERT_NE(trace_file.writer, nullptr);
  trace::ThreadBuffer* out = trace_file.writer->register_thread(trace::FullBufferPolicy::kDrop);
  ASSERT_NE(out, nullptr);
  // 4,000 kernels are 256,000 bytes of records: four times the 64 KiB ring.
  ActivityBuffer buffer = many_kernels(4'000);
  ContextDevices contexts;
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer,
                                                    all_kinds(), trace_file, contexts, *out);
  EXPECT_EQ(stats.appended + stats.ring_full, 4'000u);
  EXPECT_EQ(stats.appended, (size_t{64} << 10) / sizeof(trace::KernelRecord));
  EXPECT_EQ(out->dropped_records(), stats.ring_full);
  ASSERT_TRUE(trace_file.writer->close().ok());
  EXPECT_EQ(load_trace(trace_file.path).all<trace::KernelRecord>().size(), stats.appended);
}

TEST(CuptiBuffer, AFullRingUnderTheDrainPolicyLosesNothing) {
  SmallRingTrace trace_file(make_temp_dir("cupti_ring_drain"));
  ASSERT_NE(trace_file.writer, nullptr);
  trace::ThreadBuffer* out = trace_file.writer->register_thread(trace::FullBufferPolicy::kDrainInline);
  ASSERT_NE(out, nullptr);
  ActivityBuffer buffer = many_kernels(4'000);
  ContextDevices contexts;
  const BufferStats stats = process_activity_buffer(buffer.data(), buffer.size(), &walk_test_buffer,
                                                    all_kinds(), trace_file, contexts, *out);
  EXPECT_EQ(stats.appended, 4'000u);
  EXPECT_EQ(stats.ring_full, 0u);
  ASSERT_TRUE(trace_file.writer->close().ok());
  EXPECT_EQ(load_trace(trace_file.path).all<trace::KernelRecord>().size(), 4'000u);
}

}  // namespace
}  // namespace pipescope::inject
