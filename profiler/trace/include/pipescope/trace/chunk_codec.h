// Framing and compression of one chunk: the header with its checksum, and zstd contexts that
// are created once and reused so that neither writing nor reading allocates per chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pipescope/common/expected.h"
#include "pipescope/trace/format.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace pipescope::trace {

// A header for `stored_payload`, checksum included. The payload may come in two pieces
// (a ring buffer's contents); the checksum covers them in order.
ChunkHeader seal_chunk(ChunkType type, uint16_t flags, uint32_t raw_bytes, uint32_t item_count,
                       std::span<const std::byte> stored_payload,
                       std::span<const std::byte> stored_payload_tail = {});

// True when the header's checksum matches `stored_payload`.
bool chunk_checksum_matches(const ChunkHeader& header, std::span<const std::byte> stored_payload);

class ZstdCompressor {
 public:
  explicit ZstdCompressor(int level);
  ~ZstdCompressor();
  ZstdCompressor(const ZstdCompressor&) = delete;
  ZstdCompressor& operator=(const ZstdCompressor&) = delete;

  static size_t bound(size_t raw_bytes);
  // Compresses into `out` (at least bound(raw.size()) bytes); returns the compressed size.
  Expected<size_t> compress(std::span<const std::byte> raw, std::span<std::byte> out);

 private:
  ZSTD_CCtx_s* context_;
  int level_;
};

class ZstdDecompressor {
 public:
  ZstdDecompressor();
  ~ZstdDecompressor();
  ZstdDecompressor(const ZstdDecompressor&) = delete;
  ZstdDecompressor& operator=(const ZstdDecompressor&) = delete;

  // Fails unless the frame decompresses to exactly out.size() bytes.
  Status decompress(std::span<const std::byte> compressed, std::span<std::byte> out);

 private:
  ZSTD_DCtx_s* context_;
};

}  // namespace pipescope::trace
