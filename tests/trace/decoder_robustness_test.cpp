// TraceDecoder against damaged input: a file cut at any byte, any single flipped bit, files of
// other format versions, and chunks whose checksum is right but whose contents are not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "pipescope/trace/chunk_codec.h"
#include "pipescope/trace/crc32c.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::append;
using test::bytes_of;
using test::bytes_of_text;
using test::contains;
using test::DecodedTrace;
using test::ScratchDir;
using test::TraceBuilder;

// A small trace with one chunk of every type the writer makes, and the records it was given.
struct SmallTrace {
  std::vector<std::byte> bytes;
  std::vector<std::vector<std::byte>> records;  // as appended, in order
};

template <class R>
void append_record(ThreadBuffer& buffer, SmallTrace& out, const R& record) {
  ASSERT_TRUE(buffer.append(record));
  const std::span<const std::byte> bytes = bytes_of(record);
  out.records.emplace_back(bytes.begin(), bytes.end());
}

SmallTrace write_small_trace(bool compress) {
  ScratchDir dir;
  SmallTrace out;
  WriterOptions o;
  o.host = "node0017";  // 8 bytes: a 72-byte header with no padding, so every byte is checksummed
  o.pid = 4242;
  o.compress = compress;
  auto created = TraceWriter::create(dir.file("small.pst"), o);
  EXPECT_TRUE(created.ok()) << created.error().message;
  if (!created.ok()) return out;
  TraceWriter& writer = **created;
  ThreadBuffer* buffer = writer.register_thread();

  ProcessInfo info;
  info.rank = 1;
  info.world_size = 2;
  info.run_id = "robust";
  EXPECT_TRUE(writer.write_process_info(info).ok());

  KernelRecord k = make_record<KernelRecord>();
  k.name_id = writer.intern("gemm");
  k.correlation_id = 1;
  append_record(*buffer, out, k);
  MemcpyRecord m = make_record<MemcpyRecord>();
  m.bytes = 4096;
  m.correlation_id = 2;
  append_record(*buffer, out, m);
  NvtxRecord n = make_record<NvtxRecord>();
  n.name_id = writer.intern("step");
  n.range_id = 3;
  append_record(*buffer, out, n);
  EXPECT_TRUE(writer.flush().ok());

  NcclOpRecord op = make_record<NcclOpRecord>();
  op.sequence = 4;
  append_record(*buffer, out, op);
  k.correlation_id = 5;
  append_record(*buffer, out, k);
  EXPECT_TRUE(writer.close().ok());
  out.bytes = test::read_file(dir.file("small.pst"));
  return out;
}

// The chunk types of the small trace, in file order, as the writer's contract has them.
const std::vector<ChunkType> kSmallTraceChunks = {
    ChunkType::kClockAnchor,                                                    // create
    ChunkType::kProcessInfo,                                                    // write_process_info
    ChunkType::kStrings,     ChunkType::kRecords,     ChunkType::kClockAnchor,  // flush
    ChunkType::kRecords,     ChunkType::kClockAnchor,                           // close's flush
    ChunkType::kEnd};
constexpr uint64_t kSmallTraceHeaderBytes = 72;

// The records of the first `chunks` chunks of `full`.
size_t records_in_first_chunks(const DecodedTrace& full, size_t chunks) {
  size_t n = 0;
  for (size_t i = 0; i < chunks; ++i) {
    if (full.chunks[i].type == ChunkType::kRecords) n += full.chunks[i].item_count;
  }
  return n;
}

std::vector<std::byte> copy_of(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

class DamagedTrace : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    small_ = write_small_trace(GetParam());
    ASSERT_FALSE(small_.bytes.empty());
    auto full = test::decode_all(small_.bytes);
    ASSERT_TRUE(full.ok()) << full.error().message;
    full_ = *full;
    std::vector<ChunkType> types;
    for (const auto& c : full_.chunks) types.push_back(c.type);
    ASSERT_EQ(types, kSmallTraceChunks);
    ASSERT_EQ(full_.header.header_bytes, kSmallTraceHeaderBytes);
    ASSERT_EQ(full_.records, small_.records);
    ASSERT_EQ(full_.stop_reason, StopReason::kEndOfData);
    size_t zstd_chunks = 0;
    for (const auto& c : full_.chunks) {
      ChunkHeader h;
      std::memcpy(&h, small_.bytes.data() + c.file_offset, sizeof(h));
      zstd_chunks += (h.flags & kChunkFlagZstd) != 0 ? 1 : 0;
    }
    ASSERT_EQ(zstd_chunks, GetParam() ? 2u : 0u) << "both records chunks compressed, or neither";
    if (!GetParam()) {
      // 72 header + 56 anchor + (24 + 38) process info + (24 + 2 * 12) strings
      // + (24 + 64 + 56 + 48) records + 56 anchor + (24 + 88 + 64) records + 56 anchor + 56 end.
      ASSERT_EQ(small_.bytes.size(), 774u);
    }
  }

  // Index of the chunk that holds file byte `offset`.
  size_t chunk_holding(uint64_t offset) const {
    for (size_t i = 0; i < full_.chunks.size(); ++i) {
      if (offset < full_.chunks[i].end_offset) return i;
    }
    return full_.chunks.size();
  }

  // What a reader must recover from damage in chunk `c`: the chunks before it, and their records.
  void expect_prefix_of_chunks(const DecodedTrace& got, size_t c) const {
    ASSERT_EQ(got.chunks.size(), c);
    for (size_t i = 0; i < c; ++i) {
      EXPECT_EQ(got.chunks[i].file_offset, full_.chunks[i].file_offset);
      EXPECT_EQ(got.chunks[i].payload, full_.chunks[i].payload);
    }
    const size_t n = records_in_first_chunks(full_, c);
    ASSERT_EQ(got.records.size(), n);
    EXPECT_TRUE(std::equal(got.records.begin(), got.records.end(), small_.records.begin()));
    EXPECT_EQ(got.valid_bytes, c == 0 ? kSmallTraceHeaderBytes : full_.chunks[c - 1].end_offset);
  }

  SmallTrace small_;
  DecodedTrace full_;
};

TEST_P(DamagedTrace, CutAtEveryByteReadsTheWholeChunksBeforeTheCut) {
  for (size_t cut = 0; cut <= small_.bytes.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + " of " + std::to_string(small_.bytes.size()));
    // An exact-size copy, so that a read past the cut is a read past the allocation.
    const std::vector<std::byte> prefix = copy_of(std::span(small_.bytes).first(cut));
    auto got = test::decode_all(prefix);
    if (cut < kSmallTraceHeaderBytes) {
      ASSERT_FALSE(got.ok());
      EXPECT_TRUE(contains(got.error().message, cut == 0 ? "empty" : "cut short")) << got.error().message;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().message;
    size_t complete = 0;
    while (complete < full_.chunks.size() && full_.chunks[complete].end_offset <= cut) ++complete;
    expect_prefix_of_chunks(*got, complete);
    const bool at_boundary =
        cut == (complete == 0 ? kSmallTraceHeaderBytes : full_.chunks[complete - 1].end_offset);
    EXPECT_EQ(got->stop_reason, at_boundary ? StopReason::kEndOfData : StopReason::kTruncated)
        << got->stop_detail;
  }
}

TEST_P(DamagedTrace, FlippedBitInAChunkStopsReadingAtThatChunk) {
  for (size_t byte = kSmallTraceHeaderBytes; byte < small_.bytes.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      SCOPED_TRACE("bit " + std::to_string(bit) + " of byte " + std::to_string(byte));
      std::vector<std::byte> damaged = small_.bytes;
      damaged[byte] ^= std::byte{static_cast<uint8_t>(1u << bit)};
      auto got = test::decode_all(damaged);
      ASSERT_TRUE(got.ok()) << got.error().message;
      // A length field flipped larger reads as a cut-off write; anything else fails the checksum.
      EXPECT_TRUE(got->stop_reason == StopReason::kCorrupt || got->stop_reason == StopReason::kTruncated)
          << stop_reason_name(got->stop_reason);
      expect_prefix_of_chunks(*got, chunk_holding(byte));
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(DamagedTrace, FlippedBitInTheHeaderFailsOpen) {
  for (size_t byte = 0; byte < kSmallTraceHeaderBytes; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::byte> damaged = small_.bytes;
      damaged[byte] ^= std::byte{static_cast<uint8_t>(1u << bit)};
      auto got = TraceDecoder::open(damaged);
      EXPECT_FALSE(got.ok()) << "bit " << bit << " of header byte " << byte;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TraceDecoder, DamagedTrace, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Zstd" : "Uncompressed";
                         });

TEST(TraceDecoder, HeaderChecksumMismatchIsReported) {
  std::vector<std::byte> file = TraceBuilder().bytes();
  file[68] ^= std::byte{0x20};  // a host-name byte: covered by the checksum
  auto got = TraceDecoder::open(file);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "checksum")) << got.error().message;
}

TEST(TraceDecoder, HeaderOnlyTraceHasNoChunksAndEndsCleanly) {
  auto got = test::decode_all(TraceBuilder().bytes());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->header.host, "node0017");
  EXPECT_EQ(got->header.pid, 4242u);
  EXPECT_EQ(got->header.start_realtime_ns, 1'700'000'000'000'000'000u);
  EXPECT_TRUE(got->chunks.empty());
  EXPECT_EQ(got->stop_reason, StopReason::kEndOfData);
  EXPECT_EQ(got->valid_bytes, 72u);
}

TEST(TraceDecoder, RefusesANewerMajorVersion) {
  std::vector<std::byte> file = write_small_trace(false).bytes;
  ASSERT_FALSE(file.empty());
  const uint16_t major = 2;
  const uint16_t minor = 0;
  std::memcpy(file.data() + offsetof(FileHeaderFixed, version_major), &major, sizeof(major));
  std::memcpy(file.data() + offsetof(FileHeaderFixed, version_minor), &minor, sizeof(minor));
  test::reseal_header(file);  // a well-formed header, only newer: a 2.0 file
  auto got = TraceDecoder::open(file);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "newer")) << got.error().message;
  EXPECT_TRUE(contains(got.error().message, "2.0")) << got.error().message;
}

TEST(TraceDecoder, RefusesAnOlderMajorVersion) {
  auto got = TraceDecoder::open(TraceBuilder(0, 9).bytes());
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "not supported")) << got.error().message;
}

TEST(TraceDecoder, RefusesAnUnknownTraceClock) {
  std::vector<std::byte> file = TraceBuilder().bytes();
  const uint32_t clock = 4;
  std::memcpy(file.data() + offsetof(FileHeaderFixed, trace_clock), &clock, sizeof(clock));
  test::reseal_header(file);
  auto got = TraceDecoder::open(file);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "clock")) << got.error().message;
}

TEST(TraceDecoder, NewerMinorVersionHandsOnWhatItDoesNotKnow) {
  // What a 1.1 writer could add: a chunk type, a record kind, and bytes at the end of a record.
  constexpr uint16_t kFutureChunkType = 42;
  constexpr uint16_t kFutureRecordKind = 200;
  KernelRecord plain = make_record<KernelRecord>();
  plain.correlation_id = 1;
  KernelRecord extended = make_record<KernelRecord>();
  extended.correlation_id = 2;
  extended.header.size_bytes = sizeof(KernelRecord) + 8;
  const RecordHeader future_header{kFutureRecordKind, 24};
  const uint64_t future_body[2] = {0x1111, 0x2222};
  const uint64_t extension = 0xE7E7E7E7;

  std::vector<std::byte> records;
  append(records, bytes_of(plain));
  append(records, bytes_of(future_header));
  append(records, bytes_of(uint32_t{0}));
  append(records, bytes_of(future_body));
  append(records, bytes_of(extended));
  append(records, bytes_of(extension));
  const std::vector<std::byte> future_payload(40, std::byte{0x5A});

  TraceBuilder builder(kFormatMajor, kFormatMinor + 1);
  builder.chunk(kFutureChunkType, 7, future_payload).chunk(ChunkType::kRecords, 3, records);
  auto got = test::decode_all(builder.bytes());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->header.version_minor, kFormatMinor + 1);
  EXPECT_EQ(got->stop_reason, StopReason::kEndOfData) << got->stop_detail;
  ASSERT_EQ(got->chunks.size(), 2u);
  EXPECT_EQ(static_cast<uint16_t>(got->chunks[0].type), kFutureChunkType);
  EXPECT_EQ(got->chunks[0].item_count, 7u);
  EXPECT_EQ(got->chunks[0].payload, future_payload);

  ASSERT_EQ(got->records.size(), 3u);
  EXPECT_EQ(DecodedTrace::kind_of(got->records[1]), kFutureRecordKind);
  EXPECT_EQ(got->records[1].size(), 24u);
  const auto kernels = got->all_of<KernelRecord>();  // the longer one decodes as a 1.0 kernel
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].correlation_id, 1u);
  EXPECT_EQ(kernels[1].correlation_id, 2u);
  EXPECT_EQ(got->records[2].size(), 72u);

  auto summary = summarize_trace(builder.bytes());
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->records, 3u);
  EXPECT_EQ(summary->records_of_unknown_kind, 1u);
  EXPECT_EQ(summary->records_by_kind[static_cast<size_t>(RecordKind::kKernel)], 2u);
}

TEST(TraceDecoder, EmptyFileIsAnErrorThatSaysSo) {
  ScratchDir dir;
  test::write_file(dir.file("empty.pst"), {});
  auto file = MappedFile::open(dir.file("empty.pst"));
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_TRUE(file->bytes().empty());
  auto got = TraceDecoder::open(file->bytes());
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "empty")) << got.error().message;
  auto summary = summarize_trace_file(dir.file("empty.pst"));
  ASSERT_FALSE(summary.ok());
  EXPECT_TRUE(contains(summary.error().message, dir.file("empty.pst"))) << summary.error().message;
  EXPECT_TRUE(contains(summary.error().message, "empty")) << summary.error().message;
}

TEST(TraceDecoder, ForeignFileIsNotAPipescopeTrace) {
  const std::string text = "# a CSV file, not a trace\nstep,loss\n1,2.5\n2,2.25\n";
  auto got = TraceDecoder::open(bytes_of_text(text));
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(contains(got.error().message, "not a pipescope trace")) << got.error().message;
  // Shorter than the magic and unlike it.
  auto tiny = TraceDecoder::open(bytes_of_text("PK"));
  ASSERT_FALSE(tiny.ok());
  EXPECT_TRUE(contains(tiny.error().message, "not a pipescope trace")) << tiny.error().message;
}

TEST(TraceDecoder, MissingFileAndDirectoryAreErrors) {
  ScratchDir dir;
  auto missing = MappedFile::open(dir.file("nope.pst"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "nope.pst")) << missing.error().message;
  auto directory = MappedFile::open(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_TRUE(contains(directory.error().message, "not a regular file")) << directory.error().message;
}

// A valid records chunk, the chunk under test, and a valid chunk after it: the reader must
// return the first, stop at the second as corrupt, and never reach the third.
void expect_corrupt_between_good_chunks(ChunkType type, uint16_t flags, uint32_t raw_bytes, uint32_t items,
                                        std::span<const std::byte> stored, const std::string& why) {
  SCOPED_TRACE(why);
  const KernelRecord good = make_record<KernelRecord>();
  TraceBuilder builder;
  builder.chunk(ChunkType::kRecords, 1, bytes_of(good));
  const uint64_t bad_offset = builder.size();
  const ChunkHeader header = seal_chunk(type, flags, raw_bytes, items, stored);
  builder.raw(bytes_of(header)).raw(stored);
  builder.chunk(ChunkType::kRecords, 1, bytes_of(good));

  auto got = test::decode_all(builder.bytes());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->stop_reason, StopReason::kCorrupt) << got->stop_detail;
  EXPECT_EQ(got->chunks.size(), 1u);
  EXPECT_EQ(got->records.size(), 1u);
  EXPECT_EQ(got->valid_bytes, bad_offset);
  EXPECT_TRUE(contains(got->stop_detail, "chunk at byte " + std::to_string(bad_offset))) << got->stop_detail;
}

void expect_corrupt_records(std::span<const std::byte> payload, uint32_t items, const std::string& why) {
  expect_corrupt_between_good_chunks(ChunkType::kRecords, 0, static_cast<uint32_t>(payload.size()), items,
                                     payload, why);
}

TEST(TraceDecoder, RecordsChunkWithInconsistentRecordSizesIsCorrupt) {
  KernelRecord k = make_record<KernelRecord>();
  std::vector<std::byte> payload;

  k.header.size_bytes = 48;  // a whole, well-framed record, but shorter than a 1.0 kernel
  payload = copy_of(bytes_of(k).first(48));
  expect_corrupt_records(payload, 1, "record shorter than its kind's struct");

  k.header.size_bytes = 0;
  expect_corrupt_records(bytes_of(k), 1, "record of size 0");

  k.header.size_bytes = 60;
  payload = copy_of(bytes_of(k).first(60));
  expect_corrupt_records(payload, 1, "size not a multiple of 8");

  k.header.size_bytes = 128;
  expect_corrupt_records(bytes_of(k), 1, "record runs past the chunk");

  k = make_record<KernelRecord>();
  payload = copy_of(bytes_of(k));
  payload.resize(payload.size() + 4);
  expect_corrupt_records(payload, 1, "4 stray bytes after the last record");

  expect_corrupt_records(bytes_of(k), 2, "item count says 2, one record present");
  expect_corrupt_records(bytes_of(k), 0, "item count says 0, one record present");

  const RecordHeader padding{static_cast<uint16_t>(RecordKind::kInvalid), 8};
  const uint32_t zero = 0;
  payload.clear();
  append(payload, bytes_of(padding));
  append(payload, bytes_of(zero));
  expect_corrupt_records(payload, 1, "a ring's padding record in the file");
}

TEST(TraceDecoder, StringsChunkWithIdsOutOfOrderIsCorrupt) {
  std::vector<std::byte> payload;
  const StringEntryHeader entry{2, 4};  // the first string of a file must be id 1
  append(payload, bytes_of(entry));
  append(payload, bytes_of_text("gemm"));
  expect_corrupt_between_good_chunks(ChunkType::kStrings, 0, static_cast<uint32_t>(payload.size()), 1,
                                     payload, "string id 2 first");

  payload.clear();
  const StringEntryHeader too_long{1, 100};
  append(payload, bytes_of(too_long));
  append(payload, bytes_of_text("gemm"));
  expect_corrupt_between_good_chunks(ChunkType::kStrings, 0, static_cast<uint32_t>(payload.size()), 1,
                                     payload, "string longer than the chunk");
}

TEST(TraceDecoder, AnchorAndEndChunksShorterThanTheirPayloadAreCorrupt) {
  const std::vector<std::byte> short_payload(31);
  expect_corrupt_between_good_chunks(ChunkType::kClockAnchor, 0, 31, 1, short_payload, "31-byte anchor");
  expect_corrupt_between_good_chunks(ChunkType::kEnd, 0, 31, 1, short_payload, "31-byte end");
}

TEST(TraceDecoder, UncompressedChunkWithUnknownFlagsOrLengthsIsCorrupt) {
  const KernelRecord k = make_record<KernelRecord>();
  expect_corrupt_between_good_chunks(ChunkType::kRecords, 1u << 5, sizeof(k), 1, bytes_of(k), "unknown flag");
  expect_corrupt_between_good_chunks(ChunkType::kRecords, 0, sizeof(k) + 8, 1, bytes_of(k),
                                     "raw length differs from stored length");
}

TEST(TraceDecoder, CompressedChunkThatDecompressesToTheWrongSizeIsCorrupt) {
  std::vector<std::byte> raw;
  for (int i = 0; i < 4; ++i) append(raw, bytes_of(make_record<SyncRecord>()));
  ZstdCompressor compressor(1);
  std::vector<std::byte> stored(ZstdCompressor::bound(raw.size()));
  auto n = compressor.compress(raw, stored);
  ASSERT_TRUE(n.ok()) << n.error().message;
  stored.resize(*n);
  expect_corrupt_between_good_chunks(ChunkType::kRecords, kChunkFlagZstd,
                                     static_cast<uint32_t>(raw.size() + 40), 5, stored,
                                     "raw length claims one record more");
  const std::vector<std::byte> not_zstd(32, std::byte{0x77});
  expect_corrupt_between_good_chunks(ChunkType::kRecords, kChunkFlagZstd, 160, 4, not_zstd,
                                     "not a zstd frame");
}

TEST(TraceDecoder, ChunkOverTheSizeLimitIsCorruptNotAllocated) {
  TraceBuilder builder;
  ChunkHeader header{};
  header.magic = kChunkMagic;
  header.type = static_cast<uint16_t>(ChunkType::kRecords);
  header.stored_bytes = kMaxChunkPayloadBytes + 1;
  header.raw_bytes = kMaxChunkPayloadBytes + 1;
  header.crc32c = crc32c(&header, kChunkCrcCoveredHeaderBytes);
  builder.raw(bytes_of(header));
  auto got = test::decode_all(builder.bytes());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->stop_reason, StopReason::kCorrupt);
  EXPECT_TRUE(contains(got->stop_detail, "64 MiB")) << got->stop_detail;
}

TEST(TraceDecoder, GarbageAfterTheLastChunkIsCorrupt) {
  TraceBuilder builder;
  builder.chunk(ChunkType::kRecords, 1, bytes_of(make_record<KernelRecord>()));
  const uint64_t end_of_chunks = builder.size();
  builder.raw(std::vector<std::byte>(64, std::byte{0xAB}));
  auto got = test::decode_all(builder.bytes());
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->stop_reason, StopReason::kCorrupt);
  EXPECT_TRUE(contains(got->stop_detail, "magic")) << got->stop_detail;
  EXPECT_EQ(got->records.size(), 1u);
  EXPECT_EQ(got->valid_bytes, end_of_chunks);
}

TEST(TraceDecoder, StopsAtFirstCorruptChunkAndStaysStopped) {
  TraceBuilder builder;
  builder.chunk(ChunkType::kRecords, 1, bytes_of(make_record<KernelRecord>()));
  const size_t second = builder.size();
  builder.chunk(ChunkType::kRecords, 1, bytes_of(make_record<SyncRecord>()));
  builder.chunk(ChunkType::kRecords, 1, bytes_of(make_record<NvtxRecord>()));
  std::vector<std::byte> file = builder.bytes();
  file[second + sizeof(ChunkHeader) + 8] ^= std::byte{1};  // a payload byte of the second chunk

  auto decoder = TraceDecoder::open(file);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message;
  ChunkView chunk{};
  ASSERT_TRUE(decoder->next_chunk(chunk));
  EXPECT_EQ(chunk.file_offset, 72u);
  EXPECT_FALSE(decoder->next_chunk(chunk));
  EXPECT_EQ(decoder->stop_reason(), StopReason::kCorrupt);
  EXPECT_TRUE(contains(decoder->stop_detail(), "checksum")) << decoder->stop_detail();
  EXPECT_FALSE(decoder->next_chunk(chunk)) << "a stopped decoder never resumes";
  EXPECT_EQ(decoder->chunks_read(), 1u);
  EXPECT_EQ(decoder->valid_bytes(), second);
  EXPECT_EQ(decoder->total_bytes(), file.size());
  EXPECT_STREQ(stop_reason_name(decoder->stop_reason()), "corrupt");
}

}  // namespace
}  // namespace pipescope::trace
