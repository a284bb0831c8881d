// What the trace tests share: a scratch directory that cleans up after itself, whole-file
// reads and writes, a decode of every chunk and record of a trace, and a builder for traces
// made by hand, byte by byte, when a test needs bytes the writer would never produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"

namespace pipescope::trace::test {

// A fresh directory under ::testing::TempDir(), removed with everything in it on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return dir_; }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

std::vector<std::byte> read_file(const std::string& path);
std::string read_text(const std::string& path);
void write_file(const std::string& path, std::span<const std::byte> bytes);

template <class T>
std::span<const std::byte> bytes_of(const T& value) {
  return {reinterpret_cast<const std::byte*>(&value), sizeof(T)};
}
inline void append(std::vector<std::byte>& out, std::span<const std::byte> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}
inline std::span<const std::byte> bytes_of_text(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

struct DecodedChunk {
  ChunkType type;
  uint32_t item_count;
  uint64_t file_offset;
  uint64_t end_offset;             // one past the chunk's last byte
  std::vector<std::byte> payload;  // decompressed
};

struct DecodedTrace {
  FileHeader header;
  std::vector<DecodedChunk> chunks;
  std::vector<std::vector<std::byte>> records;  // every record's bytes, in file order
  StopReason stop_reason = StopReason::kEndOfData;
  std::string stop_detail;
  uint64_t valid_bytes = 0;

  size_t count_chunks(ChunkType type) const;
  // The records decoded as R, in file order, skipping records of other kinds.
  template <class R>
  std::vector<R> all_of() const {
    std::vector<R> out;
    for (const auto& bytes : records) {
      const RecordView view{static_cast<RecordKind>(kind_of(bytes)), bytes};
      R r;
      if (view.decode(r)) out.push_back(r);
    }
    return out;
  }
  static uint16_t kind_of(std::span<const std::byte> record) {
    RecordHeader h;
    std::memcpy(&h, record.data(), sizeof(h));
    return h.kind;
  }
};

// Opens `data` and reads every chunk it can; open()'s error otherwise.
Expected<DecodedTrace> decode_all(std::span<const std::byte> data);
// The same through MappedFile, as the tools read a trace.
Expected<DecodedTrace> decode_file(const std::string& path);

// The header a writer would write, with a chosen version, and checksummed chunks after it.
class TraceBuilder {
 public:
  explicit TraceBuilder(uint16_t version_major = kFormatMajor, uint16_t version_minor = kFormatMinor,
                        const std::string& host = "node0017");
  TraceBuilder& chunk(ChunkType type, uint32_t item_count, std::span<const std::byte> payload);
  TraceBuilder& chunk(uint16_t type, uint32_t item_count, std::span<const std::byte> payload);
  TraceBuilder& raw(std::span<const std::byte> bytes);
  const std::vector<std::byte>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::byte> bytes_;
};

// A process info with every field set to a distinct value, two devices, and a command line
// whose arguments are separated by NUL bytes.
ProcessInfo process_info_with_every_field();

// Recomputes the header checksum after a test patched header fields.
void reseal_header(std::vector<std::byte>& file);

}  // namespace pipescope::trace::test
