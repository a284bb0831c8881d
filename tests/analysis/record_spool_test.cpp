// The record spool gives back every record in the order it came, whole across its chunks'
// boundaries, and after clear() holds nothing of the last document while keeping its chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "record_spool.h"

namespace pipescope::analysis {
namespace {

struct Seen {
  uint16_t kind;
  uint64_t stamp;
};

std::vector<Seen> replayed(const RecordSpool& spool) {
  std::vector<Seen> out;
  spool.for_each([&](const void* bytes, size_t size) {
    trace::RecordHeader header;
    std::memcpy(&header, bytes, sizeof(header));
    EXPECT_EQ(header.size_bytes, size);
    Seen seen{header.kind, 0};
    if (header.kind == static_cast<uint16_t>(trace::RecordKind::kKernel)) {
      trace::KernelRecord k;
      ASSERT_EQ(size, sizeof(k));
      std::memcpy(&k, bytes, sizeof(k));
      seen.stamp = k.start_ns;
    } else {
      trace::MemoryRecord m;
      ASSERT_EQ(size, sizeof(m));
      std::memcpy(&m, bytes, sizeof(m));
      seen.stamp = m.timestamp_ns;
    }
    out.push_back(seen);
  });
  return out;
}

// Kernels and memory records taking turns unevenly, so that records of both sizes end chunks.
std::vector<Seen> fill(RecordSpool& spool, uint64_t count, uint64_t first_stamp) {
  std::vector<Seen> wrote;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t stamp = first_stamp + i;
    if (i % 3 == 0) {
      auto m = trace::make_record<trace::MemoryRecord>();
      m.timestamp_ns = stamp;
      spool.append(m);
      wrote.push_back({m.header.kind, stamp});
    } else {
      auto k = trace::make_record<trace::KernelRecord>();
      k.start_ns = stamp;
      spool.append(k);
      wrote.push_back({k.header.kind, stamp});
    }
  }
  return wrote;
}

void expect_same(const std::vector<Seen>& got, const std::vector<Seen>& wrote) {
  ASSERT_EQ(got.size(), wrote.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].kind, wrote[i].kind) << "record " << i;
    ASSERT_EQ(got[i].stamp, wrote[i].stamp) << "record " << i;
  }
}

TEST(RecordSpool, GivesBackEveryRecordInOrderAcrossChunks) {
  RecordSpool spool;
  EXPECT_TRUE(spool.empty());
  EXPECT_TRUE(replayed(spool).empty());
  // About three and a half chunks.
  const uint64_t count = 7 * RecordSpool::kChunkBytes / (2 * sizeof(trace::KernelRecord));
  const std::vector<Seen> wrote = fill(spool, count, 1000);
  EXPECT_FALSE(spool.empty());
  expect_same(replayed(spool), wrote);
}

TEST(RecordSpool, ClearedItHoldsOnlyTheNextDocumentsRecords) {
  RecordSpool spool;
  fill(spool, 3 * RecordSpool::kChunkBytes / sizeof(trace::KernelRecord), 1);
  spool.clear();
  EXPECT_TRUE(spool.empty());
  EXPECT_TRUE(replayed(spool).empty());
  // Fewer records than before, then more: reused chunks first, then new ones.
  const std::vector<Seen> fewer = fill(spool, 1000, 50'000'000);
  expect_same(replayed(spool), fewer);
  spool.clear();
  const std::vector<Seen> more =
      fill(spool, 5 * RecordSpool::kChunkBytes / sizeof(trace::KernelRecord), 90'000'000);
  expect_same(replayed(spool), more);
}

}  // namespace
}  // namespace pipescope::analysis
