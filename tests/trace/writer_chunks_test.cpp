// What TraceWriter puts around the records: the header, strings, process info, clock
// anchors, and the end chunk of a clean close.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_summary.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::ScratchDir;

WriterOptions small_options() {
  WriterOptions o;
  o.host = "node0017";  // 8 bytes: the header is 64 + 8 = 72 bytes, no padding
  o.pid = 4242;
  return o;
}

std::unique_ptr<TraceWriter> create_writer(const std::string& path, const WriterOptions& options) {
  auto writer = TraceWriter::create(path, options);
  EXPECT_TRUE(writer.ok()) << writer.error().message;
  return writer.ok() ? std::move(*writer) : nullptr;
}

std::vector<ChunkType> chunk_types(const test::DecodedTrace& trace) {
  std::vector<ChunkType> types;
  for (const auto& c : trace.chunks) types.push_back(c.type);
  return types;
}

TEST(TraceWriter, EmptyTraceIsHeaderTwoAnchorsAndEnd) {
  ScratchDir dir;
  const std::string path = dir.file("empty.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->close().ok());

  // Header 72 bytes; each anchor and the end chunk is a 24-byte chunk header + 32 bytes.
  const std::vector<std::byte> file = test::read_file(path);
  EXPECT_EQ(file.size(), 72u + 56u + 56u + 56u);
  auto trace = test::decode_all(file);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(chunk_types(*trace),
            (std::vector{ChunkType::kClockAnchor, ChunkType::kClockAnchor, ChunkType::kEnd}));
  EXPECT_EQ(trace->stop_reason, StopReason::kEndOfData);
}

TEST(TraceWriter, HeaderCarriesHostPidClockAndVersion) {
  ScratchDir dir;
  WriterOptions o = small_options();
  o.host = "gpu-a";  // 64 + 5 = 69 bytes, padded to 72
  o.clock = TraceClock::kMonotonicRaw;
  auto writer = create_writer(dir.file("h.pst"), o);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->close().ok());
  auto trace = test::decode_file(dir.file("h.pst"));
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->header.host, "gpu-a");
  EXPECT_EQ(trace->header.header_bytes, 72u);
  EXPECT_EQ(trace->header.pid, 4242u);
  EXPECT_EQ(trace->header.trace_clock, TraceClock::kMonotonicRaw);
  EXPECT_EQ(trace->header.version_major, kFormatMajor);
  EXPECT_EQ(trace->header.version_minor, kFormatMinor);
  EXPECT_GT(trace->header.start_realtime_ns, 1'600'000'000'000'000'000u);  // after Sep 2020
}

TEST(TraceWriter, RefusesOptionsItCannotHonour) {
  ScratchDir dir;
  auto refused = [&](WriterOptions o, const char* why) {
    auto writer = TraceWriter::create(dir.file("refused.pst"), o);
    EXPECT_FALSE(writer.ok()) << why;
  };
  WriterOptions o = small_options();
  o.thread_buffer_bytes = 32 << 10;
  refused(o, "ring under 64 KiB");
  o = small_options();
  o.thread_buffer_bytes = 96 << 10;
  refused(o, "ring not a power of two");
  o = small_options();
  o.max_chunk_bytes = 1000;
  refused(o, "chunk under 64 KiB");
  o = small_options();
  o.max_chunk_bytes = (16u << 20) + 1;
  refused(o, "chunk over 16 MiB");
  o = small_options();
  o.max_threads = 0;
  refused(o, "no threads");
  o = small_options();
  o.clock = TraceClock::kGpuTimestamp;
  refused(o, "GPU clock without a reader");
}

TEST(TraceWriter, CutsAHostNameToTheFormatLimit) {
  ScratchDir dir;
  WriterOptions o = small_options();
  o.host = std::string(300, 'h');
  auto writer = create_writer(dir.file("long-host.pst"), o);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->close().ok());
  auto trace = test::decode_file(dir.file("long-host.pst"));
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->header.host, std::string(255, 'h'));
  EXPECT_EQ(trace->header.header_bytes, 320u);  // 64 + 255 = 319, padded to a multiple of 8
}

TEST(TraceWriter, InternNumbersStringsFromOneInOrderOfFirstUse) {
  ScratchDir dir;
  const std::string path = dir.file("strings.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->intern("ncclAllReduce"), 1u);
  EXPECT_EQ(writer->intern("sm90_xmma_gemm"), 2u);
  EXPECT_EQ(writer->intern("ncclAllReduce"), 1u);
  EXPECT_EQ(writer->intern("cudaLaunchKernel"), 3u);
  EXPECT_EQ(writer->intern("sm90_xmma_gemm"), 2u);
  ASSERT_TRUE(writer->close().ok());

  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  ASSERT_EQ(summary->strings.size(), 3u);
  EXPECT_EQ(summary->strings.get(1), "ncclAllReduce");
  EXPECT_EQ(summary->strings.get(2), "sm90_xmma_gemm");
  EXPECT_EQ(summary->strings.get(3), "cudaLaunchKernel");
  EXPECT_EQ(summary->strings.get(0), "");  // "no string"
  EXPECT_EQ(summary->strings.get(4), "");  // never defined
}

TEST(TraceWriter, StringsAreWrittenBeforeTheRecordsThatNameThem) {
  ScratchDir dir;
  const std::string path = dir.file("order.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);
  ThreadBuffer* buffer = writer->register_thread();
  KernelRecord k = make_record<KernelRecord>();
  k.name_id = writer->intern("first_kernel");
  ASSERT_TRUE(buffer->append(k));
  ASSERT_TRUE(writer->flush().ok());
  k.name_id = writer->intern("second_kernel");
  ASSERT_TRUE(buffer->append(k));
  ASSERT_TRUE(writer->close().ok());

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(chunk_types(*trace),
            (std::vector{ChunkType::kClockAnchor,                                            // create
                         ChunkType::kStrings, ChunkType::kRecords, ChunkType::kClockAnchor,  // flush
                         ChunkType::kStrings, ChunkType::kRecords, ChunkType::kClockAnchor,  // close
                         ChunkType::kEnd}));
  // Ids continue across string chunks: the second chunk defines id 2.
  StringTable table;
  for (const auto& c : trace->chunks) {
    if (c.type == ChunkType::kStrings) read_strings_chunk(c.payload, table);
  }
  EXPECT_EQ(table.get(1), "first_kernel");
  EXPECT_EQ(table.get(2), "second_kernel");
}

TEST(TraceWriter, LatestProcessInfoWins) {
  ScratchDir dir;
  const std::string path = dir.file("process.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);

  ProcessInfo early;
  early.launcher = "slurm";
  early.restart_attempt = 0;
  ASSERT_TRUE(writer->write_process_info(early).ok());

  // What is known once the process group is up: every field but the restart attempt.
  ProcessInfo late = test::process_info_with_every_field();
  late.restart_attempt.reset();
  ASSERT_TRUE(writer->write_process_info(late).ok());
  ASSERT_TRUE(writer->close().ok());

  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->process_info_chunks, 2u);
  EXPECT_TRUE(summary->process_info_error.empty()) << summary->process_info_error;
  ASSERT_TRUE(summary->process.has_value());
  EXPECT_EQ(*summary->process, late);
  EXPECT_EQ(summary->process->rank, 13);
  EXPECT_EQ(summary->process->launcher, "torchrun");
  EXPECT_FALSE(summary->process->restart_attempt.has_value()) << "a later chunk replaces, not merges";
  ASSERT_EQ(summary->process->devices.size(), 2u);
  EXPECT_EQ(summary->process->devices[1].ordinal, 1);
  EXPECT_EQ(summary->process->devices[1].pci_bus, 0x2Cu);
}

std::atomic<uint64_t> fake_gpu_ticks{0};
uint64_t fake_gpu_clock_ns() { return 1000 * fake_gpu_ticks.fetch_add(1) + 1000; }

TEST(TraceWriter, WritesAClockAnchorAtCreateAndAtEveryFlush) {
  ScratchDir dir;
  const std::string path = dir.file("anchors.pst");
  fake_gpu_ticks = 0;
  WriterOptions o = small_options();
  o.clock = TraceClock::kGpuTimestamp;
  o.read_trace_clock_ns = &fake_gpu_clock_ns;  // 1000, 2000, 3000, ... on successive reads
  auto writer = create_writer(path, o);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->flush().ok());
  ASSERT_TRUE(writer->write_clock_anchor().ok());
  ASSERT_TRUE(writer->flush().ok());
  ASSERT_TRUE(writer->close().ok());  // close flushes: one more

  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->header.trace_clock, TraceClock::kGpuTimestamp);
  ASSERT_EQ(summary->anchors.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(summary->anchors[i].trace_clock_ns, 1000 * (i + 1)) << "anchor " << i;
    if (i > 0) {
      EXPECT_GE(summary->anchors[i].monotonic_ns, summary->anchors[i - 1].monotonic_ns);
    }
  }
}

TEST(TraceWriter, AnchorBracketsTheTraceClockBetweenTwoMonotonicReads) {
  ScratchDir dir;
  const std::string path = dir.file("mono.pst");
  auto writer = create_writer(path, small_options());  // records on CLOCK_MONOTONIC
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->close().ok());
  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  ASSERT_EQ(summary->anchors.size(), 2u);
  for (const ClockAnchorPayload& a : summary->anchors) {
    // The trace clock was read between the two monotonic reads whose midpoint is recorded,
    // so the two differ by at most the spread of those reads.
    const uint64_t gap = a.trace_clock_ns > a.monotonic_ns ? a.trace_clock_ns - a.monotonic_ns
                                                           : a.monotonic_ns - a.trace_clock_ns;
    EXPECT_LE(gap, a.uncertainty_ns);
    EXPECT_LT(a.uncertainty_ns, 1'000'000'000u);
    EXPECT_GE(a.realtime_ns, summary->header.start_realtime_ns);
  }
}

TEST(TraceWriter, CloseWritesAnEndChunkWithTheCounts) {
  ScratchDir dir;
  const std::string path = dir.file("end.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);
  ThreadBuffer* buffer = writer->register_thread();
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(buffer->append(make_record<SyncRecord>()));
  ASSERT_TRUE(writer->flush().ok());
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(buffer->append(make_record<OverheadRecord>()));
  ASSERT_TRUE(writer->close().ok());
  EXPECT_EQ(writer->records_written(), 37u);
  EXPECT_EQ(writer->records_dropped(), 0u);

  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  ASSERT_TRUE(summary->end.has_value());
  EXPECT_EQ(summary->end->records_written, 37u);
  EXPECT_EQ(summary->end->records_dropped, 0u);
  // anchor, records, anchor (flush), records, anchor (close), then the end chunk itself.
  EXPECT_EQ(summary->end->chunks_written, 5u);
  EXPECT_EQ(summary->chunks, 6u);
  EXPECT_GE(summary->end->end_realtime_ns, summary->header.start_realtime_ns);
  EXPECT_EQ(summary->records, 37u);
}

TEST(TraceWriter, CloseTwiceWritesNothingMore) {
  ScratchDir dir;
  const std::string path = dir.file("twice.pst");
  auto writer = create_writer(path, small_options());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->register_thread()->append(make_record<NvtxRecord>()));
  ASSERT_TRUE(writer->close().ok());
  const size_t size = test::read_file(path).size();
  EXPECT_TRUE(writer->close().ok());
  EXPECT_TRUE(writer->flush().ok());
  EXPECT_FALSE(writer->write_clock_anchor().ok());
  EXPECT_FALSE(writer->write_process_info(ProcessInfo{}).ok());
  writer.reset();  // the destructor closes again
  EXPECT_EQ(test::read_file(path).size(), size);
}

TEST(TraceWriter, DestructorClosesTheFileCleanly) {
  ScratchDir dir;
  const std::string path = dir.file("dtor.pst");
  {
    auto writer = create_writer(path, small_options());
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->register_thread()->append(make_record<ApiRecord>()));
  }
  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  ASSERT_TRUE(summary->end.has_value());
  EXPECT_EQ(summary->end->records_written, 1u);
  EXPECT_EQ(summary->records, 1u);
}

}  // namespace
}  // namespace pipescope::trace
