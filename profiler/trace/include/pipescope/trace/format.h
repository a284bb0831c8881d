// The on-disk framing of a pipescope trace (docs/trace-format.md is the byte-level spec):
// a file header, then a sequence of self-checking chunks. Little-endian, no padding inside
// the fixed structures below (static_asserts pin every size the doc states).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace pipescope::trace {

static_assert(std::endian::native == std::endian::little,
              "the trace format is little-endian; a big-endian host needs byte swapping");

inline constexpr char kFileMagic[8] = {'P', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
// A major bump breaks old readers (they refuse the file); a minor bump only adds record
// kinds, chunk types, process-info fields or bytes at the end of a record, all of which an
// older reader of the same major version skips.
inline constexpr uint16_t kFormatMajor = 1;
// 1.1: external_correlation records; 1.2: kernel sampling notices; 1.3: nccl_call records and
// the process-end notices.
inline constexpr uint16_t kFormatMinor = 3;

// Which clock the timestamps inside records are on; clock anchors map it to wall time.
enum class TraceClock : uint32_t {
  kGpuTimestamp = 0,  // CUPTI's timestamp clock (what cuptiGetTimestamp returns)
  kRealtime = 1,      // CLOCK_REALTIME
  kMonotonic = 2,     // CLOCK_MONOTONIC
  kMonotonicRaw = 3,  // CLOCK_MONOTONIC_RAW
};

struct FileHeaderFixed {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_bytes;  // fixed part + host name + zero padding to a multiple of 8
  uint32_t pid;
  uint32_t flags;  // reserved, 0
  uint64_t start_realtime_ns;
  uint64_t start_monotonic_ns;
  uint32_t trace_clock;  // TraceClock
  uint16_t host_bytes;
  uint16_t reserved0;
  uint64_t reserved1;
  uint32_t reserved2;
  uint32_t crc32c;  // over bytes [0, 60) of this struct, then the host name bytes
};
static_assert(sizeof(FileHeaderFixed) == 64);
inline constexpr size_t kHeaderCrcCoveredBytes = 60;
inline constexpr size_t kMaxHostBytes = 255;

enum class ChunkType : uint16_t {
  kRecords = 1,      // a run of records (records.h), whole records only
  kStrings = 2,      // string-table entries: {u32 id, u32 length, bytes}
  kProcessInfo = 3,  // what was learned about the process (process_info.h); latest wins
  kClockAnchor = 4,  // one ClockAnchorPayload
  kEnd = 5,          // written by a clean close: one EndPayload
};

inline constexpr uint32_t kChunkMagic = 0x4B435350;  // "PSCK" as little-endian bytes
inline constexpr uint16_t kChunkFlagZstd = 1u << 0;
// Upper bound of a chunk's payload, raw or stored; a reader treats larger as corrupt
// rather than allocating what a damaged length field asks for.
inline constexpr uint32_t kMaxChunkPayloadBytes = 64u << 20;
// Longest string-table entry; longer text (a huge templated kernel name) is cut to this, so
// that any one entry fits in a chunk of the smallest allowed size.
inline constexpr uint32_t kMaxStringBytes = 32u << 10;

struct ChunkHeader {
  uint32_t magic;
  uint16_t type;  // ChunkType
  uint16_t flags;
  uint32_t stored_bytes;  // payload bytes that follow in the file
  uint32_t raw_bytes;     // payload bytes after decompression (== stored_bytes if not compressed)
  uint32_t item_count;    // records, or string entries; 1 for anchor/end; 0 for process info
  uint32_t crc32c;        // over bytes [0, 20) of this header, then the stored payload
};
static_assert(sizeof(ChunkHeader) == 24);
inline constexpr size_t kChunkCrcCoveredHeaderBytes = 20;

struct ClockAnchorPayload {
  uint64_t trace_clock_ns;  // the records' clock (header trace_clock)
  uint64_t realtime_ns;     // CLOCK_REALTIME read next to it
  uint64_t monotonic_ns;    // CLOCK_MONOTONIC read next to it
  uint64_t uncertainty_ns;  // how long the paired reads took; the anchor is good to about this
};
static_assert(sizeof(ClockAnchorPayload) == 32);

struct EndPayload {
  uint64_t records_written;
  uint64_t records_dropped;  // records the writer could not take (buffer full, write failure)
  uint64_t chunks_written;   // chunks before this one
  uint64_t end_realtime_ns;
};
static_assert(sizeof(EndPayload) == 32);

struct StringEntryHeader {
  uint32_t id;  // 1, 2, 3, ... in order of first use; 0 means "no string"
  uint32_t length_bytes;
};
static_assert(sizeof(StringEntryHeader) == 8);

}  // namespace pipescope::trace
