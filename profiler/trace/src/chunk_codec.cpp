#include "pipescope/trace/chunk_codec.h"

#include <zstd.h>

#include <cstring>
#include <string>

#include "pipescope/trace/crc32c.h"

namespace pipescope::trace {

ChunkHeader seal_chunk(ChunkType type, uint16_t flags, uint32_t raw_bytes, uint32_t item_count,
                       std::span<const std::byte> stored_payload,
                       std::span<const std::byte> stored_payload_tail) {
  ChunkHeader header{};
  header.magic = kChunkMagic;
  header.type = static_cast<uint16_t>(type);
  header.flags = flags;
  header.stored_bytes = static_cast<uint32_t>(stored_payload.size() + stored_payload_tail.size());
  header.raw_bytes = raw_bytes;
  header.item_count = item_count;
  uint32_t crc = crc32c(&header, kChunkCrcCoveredHeaderBytes);
  crc = crc32c_extend(crc, stored_payload.data(), stored_payload.size());
  crc = crc32c_extend(crc, stored_payload_tail.data(), stored_payload_tail.size());
  header.crc32c = crc;
  return header;
}

bool chunk_checksum_matches(const ChunkHeader& header, std::span<const std::byte> stored_payload) {
  uint32_t crc = crc32c(&header, kChunkCrcCoveredHeaderBytes);
  crc = crc32c_extend(crc, stored_payload.data(), stored_payload.size());
  return crc == header.crc32c;
}

ZstdCompressor::ZstdCompressor(int level) : context_(ZSTD_createCCtx()), level_(level) {}
ZstdCompressor::~ZstdCompressor() { ZSTD_freeCCtx(context_); }

size_t ZstdCompressor::bound(size_t raw_bytes) { return ZSTD_compressBound(raw_bytes); }

Expected<size_t> ZstdCompressor::compress(std::span<const std::byte> raw, std::span<std::byte> out) {
  if (context_ == nullptr) return Error{"zstd: could not create a compression context"};
  const size_t n = ZSTD_compressCCtx(context_, out.data(), out.size(), raw.data(), raw.size(), level_);
  if (ZSTD_isError(n)) return Error{std::string("zstd: ") + ZSTD_getErrorName(n)};
  return n;
}

ZstdDecompressor::ZstdDecompressor() : context_(ZSTD_createDCtx()) {}
ZstdDecompressor::~ZstdDecompressor() { ZSTD_freeDCtx(context_); }

Status ZstdDecompressor::decompress(std::span<const std::byte> compressed, std::span<std::byte> out) {
  if (context_ == nullptr) return Error{"zstd: could not create a decompression context"};
  const size_t n =
      ZSTD_decompressDCtx(context_, out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n)) return Error{std::string("zstd: ") + ZSTD_getErrorName(n)};
  if (n != out.size()) return Error{"zstd: chunk decompressed to a different size than its header says"};
  return {};
}

}  // namespace pipescope::trace
