// The writer's limits: what it does with input that would otherwise break the file.
#include <gtest/gtest.h>

#include <string>

#include "pipescope/trace/trace_summary.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

TEST(TraceWriterLimits, OverlongStringIsCutAndTheFileStaysReadable) {
  test::ScratchDir dir;
  const std::string path = dir.file("long-name.pst");
  const std::string huge(kMaxStringBytes * 3, 'k');
  {
    auto writer = TraceWriter::create(path, WriterOptions{});
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    EXPECT_EQ((*writer)->intern(huge), 1u);
    EXPECT_EQ((*writer)->intern("after"), 2u);
    ASSERT_TRUE((*writer)->close().ok());
  }
  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->stop_reason, StopReason::kEndOfData);
  EXPECT_EQ(summary->strings.get(1), huge.substr(0, kMaxStringBytes));
  EXPECT_EQ(summary->strings.get(2), "after");
}

TEST(TraceWriterLimits, ChunkSizeAboveSixteenMebibytesIsRefused) {
  test::ScratchDir dir;
  WriterOptions options;
  options.max_chunk_bytes = size_t{32} << 20;
  auto writer = TraceWriter::create(dir.file("big-chunks.pst"), options);
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.error().message.find("16 MiB"), std::string::npos);
}

TEST(TraceWriterLimits, AppendAfterCloseIsDroppedAndCounted) {
  test::ScratchDir dir;
  auto writer = TraceWriter::create(dir.file("late.pst"), WriterOptions{});
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  ThreadBuffer* buffer = (*writer)->register_thread();
  ASSERT_TRUE(buffer->append(make_record<KernelRecord>()));
  ASSERT_TRUE((*writer)->close().ok());
  EXPECT_FALSE(buffer->append(make_record<KernelRecord>()));
  EXPECT_EQ((*writer)->records_written(), 1u);
  EXPECT_EQ((*writer)->records_dropped(), 1u);
  EXPECT_EQ((*writer)->register_thread(), nullptr);
}

}  // namespace
}  // namespace pipescope::trace
