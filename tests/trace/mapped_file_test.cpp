// MappedFile: a one-pass reader's resident memory stays a few MiB behind its cursor; a small
// file is read, not mapped, and reads the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "pipescope/trace/trace_file.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

// This process's resident pages that are file-backed (mapped files), in bytes.
uint64_t resident_file_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("RssFile:")) return std::stoull(line.substr(8)) * 1024;
  return 0;
}

TEST(MappedFile, ReleasedPagesLeaveResidentMemoryAndStillReadTheSame) {
  test::ScratchDir dir;
  constexpr size_t kBytes = size_t{32} << 20;
  std::vector<std::byte> bytes(kBytes);
  for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<std::byte>(i * 7 + i / 4096);
  test::write_file(dir.file("big.pst"), bytes);
  auto file = MappedFile::open(dir.file("big.pst"));
  ASSERT_TRUE(file.ok());
  const uint64_t before = resident_file_bytes();
  uint64_t sum = 0;
  for (size_t i = 0; i < kBytes; i += 4096) sum += static_cast<uint64_t>(file->bytes()[i]);
  const uint64_t touched = resident_file_bytes();
  EXPECT_GE(touched - before, kBytes * 9 / 10);  // every page read is resident

  file->release_before(1 << 20);  // less than a release step: nothing yet
  EXPECT_GE(resident_file_bytes() - before, kBytes * 9 / 10);
  file->release_before(kBytes - 1000);  // all but the last (partial) page
  EXPECT_LT(resident_file_bytes() - before, uint64_t{1} << 20);

  uint64_t again = 0;
  for (size_t i = 0; i < kBytes; i += 4096) again += static_cast<uint64_t>(file->bytes()[i]);
  EXPECT_EQ(again, sum);
}

TEST(MappedFile, ASmallFileIsReadWholeWithoutAMappingAndMovesWithItsBytes) {
  test::ScratchDir dir;
  const size_t size = MappedFile::kReadWholeBelowBytes - 12345;
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 13 + i / 977);
  test::write_file(dir.file("small.pst"), bytes);
  // Once before measuring, so that the code it runs is resident (the program's own pages count as
  // file-backed too; a sanitizer build has many).
  ASSERT_TRUE(MappedFile::open(dir.file("small.pst")).ok());
  const uint64_t before = resident_file_bytes();
  auto file = MappedFile::open(dir.file("small.pst"));
  ASSERT_TRUE(file.ok());
  EXPECT_LT(resident_file_bytes(), before + (uint64_t{256} << 10));  // no mapped pages
  MappedFile moved = std::move(*file);
  ASSERT_EQ(moved.bytes().size(), size);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), moved.bytes().begin()));
  moved.release_before(size);  // nothing to release: the bytes stay readable
  EXPECT_EQ(moved.bytes()[size - 1], bytes[size - 1]);
}

}  // namespace
}  // namespace pipescope::trace
