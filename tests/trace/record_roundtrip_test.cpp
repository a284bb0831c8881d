// Every record kind written through TraceWriter comes back from TraceDecoder byte for byte,
// with and without zstd compression of the records chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::DecodedTrace;
using test::ScratchDir;

// One record of each kind, every field given a value that no other field has.
KernelRecord kernel() {
  auto r = make_record<KernelRecord>();
  r.device = 3;
  r.start_ns = 1'000'000'001;
  r.end_ns = 1'000'250'002;
  r.stream = 7;
  r.correlation_id = 0xC0FFEE;
  r.name_id = 11;
  r.graph_id = 12;
  r.grid_x = 1024;
  r.grid_y = 13;
  r.grid_z = 14;
  r.block_x = 256;
  r.block_y = 15;
  r.block_z = 16;
  r.registers_per_thread = 96;
  r.static_shared_bytes = 4096;
  r.dynamic_shared_bytes = 49152;
  return r;
}

MemcpyRecord memcpy_record() {
  auto r = make_record<MemcpyRecord>();
  r.device = 1;
  r.start_ns = 2'000'000'003;
  r.end_ns = 2'000'900'004;
  r.stream = 21;
  r.correlation_id = 22;
  r.bytes = 3'221'225'472;  // 3 GiB: more than 32 bits
  r.copy_kind = static_cast<uint8_t>(CopyKind::kPeerToPeer);
  r.src_kind = static_cast<uint8_t>(MemoryKind::kDevice);
  r.dst_kind = static_cast<uint8_t>(MemoryKind::kManaged);
  r.flags = kActivityFlagAsync | kActivityFlagInGraph;
  r.peer_device = 2;
  r.graph_id = 23;
  return r;
}

MemsetRecord memset_record() {
  auto r = make_record<MemsetRecord>();
  r.device = 4;
  r.start_ns = 3'000'000'005;
  r.end_ns = 3'000'000'906;
  r.stream = 31;
  r.correlation_id = 32;
  r.bytes = 1 << 20;
  r.value = 0xDEADBEEF;
  r.memory_kind = static_cast<uint8_t>(MemoryKind::kPinned);
  r.flags = kActivityFlagAsync;
  r.graph_id = 33;
  return r;
}

MemoryRecord memory_record() {
  auto r = make_record<MemoryRecord>();
  r.device = 5;
  r.timestamp_ns = 4'000'000'007;
  r.address = 0x7F00'1234'5000;
  r.bytes = 536'870'912;
  r.stream = 41;
  r.correlation_id = 42;
  r.operation = static_cast<uint8_t>(MemoryOperation::kPoolTrim);
  r.memory_kind = static_cast<uint8_t>(MemoryKind::kDevice);
  r.flags = kMemoryFlagFromPool;
  return r;
}

SyncRecord sync_record() {
  auto r = make_record<SyncRecord>();
  r.device = 6;
  r.start_ns = 5'000'000'008;
  r.end_ns = 5'000'700'009;
  r.stream = 51;
  r.correlation_id = 52;
  r.sync_type = static_cast<uint8_t>(SyncType::kStreamWaitEvent);
  r.event_id = 53;
  return r;
}

ApiRecord api_record() {
  auto r = make_record<ApiRecord>();
  r.thread_id = 61'234;
  r.start_ns = 6'000'000'010;
  r.end_ns = 6'000'000'511;
  r.correlation_id = 62;
  r.callback_id = 211;
  r.name_id = 63;
  r.return_code = -700;  // negative: a signed field must keep its sign
  r.domain = static_cast<uint8_t>(ApiDomain::kDriver);
  return r;
}

NcclOpRecord nccl_op_record() {
  auto r = make_record<NcclOpRecord>();
  r.device = 7;
  r.comm_id = 0xABCD'EF01'2345'6789;
  r.sequence = 71;
  r.count = 72'000'000;
  r.bytes = 144'000'000;
  r.stream = 0x5555'0000'1000;
  r.host_enter_ns = 7'000'000'012;
  r.host_exit_ns = 7'000'000'913;
  r.external_correlation_id = 73;
  r.peer = kNoPeer;
  r.thread_id = 74;
  r.op = static_cast<uint8_t>(NcclOpType::kReduceScatter);
  r.datatype = 9;
  r.reduce_op = 2;
  r.flags = kNcclFlagInGroup | kNcclFlagGraphCapture;
  r.group_id = 75;
  return r;
}

NcclCommRecord nccl_comm_record() {
  auto r = make_record<NcclCommRecord>();
  r.event = static_cast<uint8_t>(NcclCommEvent::kSplit);
  r.start_ns = 8'000'000'014;
  r.end_ns = 8'000'100'015;
  r.comm_id = 81;
  r.parent_comm_id = 82;
  r.comm_handle = 0x5600'0000'0083;
  r.rank = 84;
  r.size = 128;
  r.global_rank = -1;
  r.color = 85;
  r.split_index = 86;
  r.device = 87;
  return r;
}

NvtxRecord nvtx_record() {
  auto r = make_record<NvtxRecord>();
  r.event = static_cast<uint8_t>(NvtxEvent::kStart);
  r.timestamp_ns = 9'000'000'016;
  r.range_id = 91;
  r.name_id = 92;
  r.domain_id = 93;
  r.thread_id = 94;
  r.category = 95;
  r.color = 0xFF76B900;
  return r;
}

OverheadRecord overhead_record() {
  auto r = make_record<OverheadRecord>();
  r.overhead_kind = static_cast<uint8_t>(OverheadKind::kCuptiBufferFlush);
  r.object_kind = 2;
  r.start_ns = 10'000'000'017;
  r.end_ns = 10'000'020'018;
  r.object_id = 101;
  return r;
}

NoticeRecord notice_record() {
  auto r = make_record<NoticeRecord>();
  r.code = static_cast<uint16_t>(NoticeCode::kRecordsDropped);
  r.timestamp_ns = 11'000'000'019;
  r.count = 17;
  r.message_id = 111;
  return r;
}

template <class R>
void expect_same_record(const DecodedTrace& trace, size_t index, const R& written) {
  ASSERT_LT(index, trace.records.size());
  const auto& bytes = trace.records[index];
  const RecordView view{static_cast<RecordKind>(DecodedTrace::kind_of(bytes)), bytes};
  R read{};
  ASSERT_TRUE(view.decode(read)) << "record " << index << " is not a "
                                 << record_kind_name(RecordTraits<R>::kKind);
  EXPECT_EQ(bytes.size(), sizeof(R));
  EXPECT_EQ(std::memcmp(&read, &written, sizeof(R)), 0) << record_kind_name(RecordTraits<R>::kKind);
}

class RecordRoundTrip : public ::testing::TestWithParam<bool> {
 protected:
  WriterOptions options() const {
    WriterOptions o;
    o.host = "node0017";
    o.pid = 4242;
    o.compress = GetParam();
    return o;
  }
  ScratchDir dir_;
};

TEST_P(RecordRoundTrip, EveryKindComesBackFieldForField) {
  const std::string path = dir_.file("every-kind.pst");
  {
    auto writer = TraceWriter::create(path, options());
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    ThreadBuffer* buffer = (*writer)->register_thread();
    ASSERT_NE(buffer, nullptr);
    EXPECT_TRUE(buffer->append(kernel()));
    EXPECT_TRUE(buffer->append(memcpy_record()));
    EXPECT_TRUE(buffer->append(memset_record()));
    EXPECT_TRUE(buffer->append(memory_record()));
    EXPECT_TRUE(buffer->append(sync_record()));
    EXPECT_TRUE(buffer->append(api_record()));
    EXPECT_TRUE(buffer->append(nccl_op_record()));
    EXPECT_TRUE(buffer->append(nccl_comm_record()));
    EXPECT_TRUE(buffer->append(nvtx_record()));
    EXPECT_TRUE(buffer->append(overhead_record()));
    EXPECT_TRUE(buffer->append(notice_record()));
    Status closed = (*writer)->close();
    ASSERT_TRUE(closed.ok()) << closed.error().message;
    EXPECT_EQ((*writer)->records_written(), 11u);
  }

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->stop_reason, StopReason::kEndOfData) << trace->stop_detail;
  ASSERT_EQ(trace->records.size(), 11u);
  expect_same_record(*trace, 0, kernel());
  expect_same_record(*trace, 1, memcpy_record());
  expect_same_record(*trace, 2, memset_record());
  expect_same_record(*trace, 3, memory_record());
  expect_same_record(*trace, 4, sync_record());
  expect_same_record(*trace, 5, api_record());
  expect_same_record(*trace, 6, nccl_op_record());
  expect_same_record(*trace, 7, nccl_comm_record());
  expect_same_record(*trace, 8, nvtx_record());
  expect_same_record(*trace, 9, overhead_record());
  expect_same_record(*trace, 10, notice_record());

  // A few fields spelled out, the wide and the signed ones in particular.
  const KernelRecord k = trace->all_of<KernelRecord>().at(0);
  EXPECT_EQ(k.end_ns, 1'000'250'002u);
  EXPECT_EQ(k.grid_z, 14);
  const MemcpyRecord m = trace->all_of<MemcpyRecord>().at(0);
  EXPECT_EQ(m.bytes, 3'221'225'472u);
  EXPECT_EQ(m.copy_kind, static_cast<uint8_t>(CopyKind::kPeerToPeer));
  EXPECT_EQ(trace->all_of<ApiRecord>().at(0).return_code, -700);
  EXPECT_EQ(trace->all_of<NcclOpRecord>().at(0).peer, -1);
  EXPECT_EQ(trace->all_of<NcclOpRecord>().at(0).comm_id, 0xABCD'EF01'2345'6789u);
  EXPECT_EQ(trace->all_of<NcclCommRecord>().at(0).global_rank, -1);
  EXPECT_EQ(trace->all_of<NvtxRecord>().at(0).color, 0xFF76B900u);
  EXPECT_EQ(trace->all_of<NoticeRecord>().at(0).count, 17u);
}

TEST_P(RecordRoundTrip, RecordsChunksAreCompressedExactlyWhenAsked) {
  const std::string path = dir_.file("flags.pst");
  {
    auto writer = TraceWriter::create(path, options());
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    ThreadBuffer* buffer = (*writer)->register_thread();
    for (uint32_t i = 0; i < 1000; ++i) {  // alike records: zstd surely shrinks them
      KernelRecord r = kernel();
      r.correlation_id = i;
      ASSERT_TRUE(buffer->append(r));
    }
    ASSERT_TRUE((*writer)->close().ok());
  }
  const std::vector<std::byte> file = test::read_file(path);
  auto trace = test::decode_all(file);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  size_t records_chunks = 0;
  for (const auto& chunk : trace->chunks) {
    ChunkHeader header;
    std::memcpy(&header, file.data() + chunk.file_offset, sizeof(header));
    if (chunk.type == ChunkType::kRecords) {
      ++records_chunks;
      EXPECT_EQ((header.flags & kChunkFlagZstd) != 0, GetParam());
      EXPECT_EQ(header.raw_bytes, 1000u * sizeof(KernelRecord));
      if (GetParam()) {
        EXPECT_LT(header.stored_bytes, header.raw_bytes);
      }
    } else {
      EXPECT_EQ(header.flags, 0) << "only records chunks are compressed";
    }
  }
  EXPECT_EQ(records_chunks, 1u);
  EXPECT_EQ(trace->records.size(), 1000u);
}

TEST_P(RecordRoundTrip, SummaryCountsRecordsByKindAndDroppedNotices) {
  const std::string path = dir_.file("summary.pst");
  {
    auto writer = TraceWriter::create(path, options());
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    ThreadBuffer* buffer = (*writer)->register_thread();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(buffer->append(kernel()));
    ASSERT_TRUE(buffer->append(nvtx_record()));
    ASSERT_TRUE(buffer->append(notice_record()));  // 17 dropped
    NoticeRecord second = notice_record();
    second.count = 5;
    ASSERT_TRUE(buffer->append(second));
    NoticeRecord other = notice_record();
    other.code = static_cast<uint16_t>(NoticeCode::kCaptureLost);  // not a drop notice
    other.count = 1000;
    ASSERT_TRUE(buffer->append(other));
    ASSERT_TRUE((*writer)->close().ok());
  }
  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->records, 7u);
  EXPECT_EQ(summary->records_by_kind[static_cast<size_t>(RecordKind::kKernel)], 3u);
  EXPECT_EQ(summary->records_by_kind[static_cast<size_t>(RecordKind::kNvtx)], 1u);
  EXPECT_EQ(summary->records_by_kind[static_cast<size_t>(RecordKind::kNotice)], 3u);
  EXPECT_EQ(summary->records_of_unknown_kind, 0u);
  EXPECT_EQ(summary->dropped_notices, 17u + 5u);
  EXPECT_EQ(summary->header.host, "node0017");
  EXPECT_EQ(summary->header.pid, 4242u);
}

TEST_P(RecordRoundTrip, ManyRecordsSplitIntoChunksOfAtMostTheChunkSize) {
  const std::string path = dir_.file("many.pst");
  // 5000 kernels of 64 bytes = 320000 bytes; chunks of at most 64 KiB hold 1024 of them,
  // so the ring's contents go out as 4 full chunks and one of 904 (5000 - 4 * 1024).
  WriterOptions o = options();
  o.max_chunk_bytes = 64 << 10;
  {
    auto writer = TraceWriter::create(path, o);
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    ThreadBuffer* buffer = (*writer)->register_thread();
    for (uint32_t i = 0; i < 5000; ++i) {
      KernelRecord r = kernel();
      r.correlation_id = i;
      ASSERT_TRUE(buffer->append(r));
    }
    ASSERT_TRUE((*writer)->close().ok());
  }
  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  std::vector<uint32_t> counts;
  for (const auto& chunk : trace->chunks) {
    if (chunk.type == ChunkType::kRecords) counts.push_back(chunk.item_count);
  }
  EXPECT_EQ(counts, (std::vector<uint32_t>{1024, 1024, 1024, 1024, 904}));
  const auto kernels = trace->all_of<KernelRecord>();
  ASSERT_EQ(kernels.size(), 5000u);
  for (uint32_t i = 0; i < 5000; ++i) ASSERT_EQ(kernels[i].correlation_id, i);
}

INSTANTIATE_TEST_SUITE_P(WriterToDecoder, RecordRoundTrip, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Zstd" : "Uncompressed";
                         });

TEST(RecordRoundTrip, CompressionShrinksRepetitiveRecords) {
  ScratchDir dir;
  auto write = [&](const std::string& name, bool compress) {
    WriterOptions o;
    o.host = "node0017";
    o.compress = compress;
    auto writer = TraceWriter::create(dir.file(name), o);
    EXPECT_TRUE(writer.ok());
    ThreadBuffer* buffer = (*writer)->register_thread();
    for (uint32_t i = 0; i < 4000; ++i) {
      KernelRecord r = kernel();
      r.correlation_id = i;
      r.start_ns += 1000 * i;
      r.end_ns += 1000 * i;
      EXPECT_TRUE(buffer->append(r));
    }
    EXPECT_TRUE((*writer)->close().ok());
    return test::read_file(dir.file(name)).size();
  };
  const size_t plain = write("plain.pst", false);
  const size_t zstd = write("zstd.pst", true);
  EXPECT_GT(plain, 4000u * 64u);
  EXPECT_LT(zstd * 4, plain) << "zstd " << zstd << " bytes, plain " << plain;
}

}  // namespace
}  // namespace pipescope::trace
