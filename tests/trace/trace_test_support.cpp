#include "trace_test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "pipescope/trace/chunk_codec.h"
#include "pipescope/trace/crc32c.h"
#include "pipescope/trace/trace_file.h"

namespace pipescope::trace::test {

ScratchDir::ScratchDir() {
  std::string pattern = ::testing::TempDir();
  if (pattern.empty() || pattern.back() != '/') pattern += '/';
  pattern += "pipescope-trace-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
  dir_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::string read_text(const std::string& path) {
  const std::vector<std::byte> bytes = read_file(path);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

void write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

size_t DecodedTrace::count_chunks(ChunkType type) const {
  size_t n = 0;
  for (const auto& c : chunks) n += c.type == type ? 1 : 0;
  return n;
}

Expected<DecodedTrace> decode_all(std::span<const std::byte> data) {
  auto decoder = TraceDecoder::open(data);
  if (!decoder.ok()) return decoder.error();
  DecodedTrace out;
  out.header = decoder->header();
  ChunkView chunk{};
  while (decoder->next_chunk(chunk)) {
    out.chunks.push_back(DecodedChunk{chunk.type,
                                      chunk.item_count,
                                      chunk.file_offset,
                                      decoder->valid_bytes(),
                                      {chunk.payload.begin(), chunk.payload.end()}});
    if (chunk.type != ChunkType::kRecords) continue;
    RecordCursor cursor(chunk.payload);
    RecordView record{};
    while (cursor.next(record)) out.records.emplace_back(record.bytes.begin(), record.bytes.end());
  }
  out.stop_reason = decoder->stop_reason();
  out.stop_detail = decoder->stop_detail();
  out.valid_bytes = decoder->valid_bytes();
  return out;
}

Expected<DecodedTrace> decode_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.error();
  return decode_all(file->bytes());
}

TraceBuilder::TraceBuilder(uint16_t version_major, uint16_t version_minor, const std::string& host) {
  FileHeaderFixed header{};
  std::memcpy(header.magic, kFileMagic, sizeof(kFileMagic));
  header.version_major = version_major;
  header.version_minor = version_minor;
  header.header_bytes = static_cast<uint32_t>((sizeof(header) + host.size() + 7) / 8 * 8);
  header.pid = 4242;
  header.start_realtime_ns = 1'700'000'000'000'000'000;
  header.start_monotonic_ns = 5'000'000'000;
  header.trace_clock = static_cast<uint32_t>(TraceClock::kMonotonic);
  header.host_bytes = static_cast<uint16_t>(host.size());
  append(bytes_, bytes_of(header));
  append(bytes_, bytes_of_text(host));
  bytes_.resize(header.header_bytes);
  reseal_header(bytes_);
}

TraceBuilder& TraceBuilder::chunk(ChunkType type, uint32_t item_count, std::span<const std::byte> payload) {
  return chunk(static_cast<uint16_t>(type), item_count, payload);
}

TraceBuilder& TraceBuilder::chunk(uint16_t type, uint32_t item_count, std::span<const std::byte> payload) {
  const ChunkHeader header =
      seal_chunk(static_cast<ChunkType>(type), 0, static_cast<uint32_t>(payload.size()), item_count, payload);
  append(bytes_, bytes_of(header));
  append(bytes_, payload);
  return *this;
}

TraceBuilder& TraceBuilder::raw(std::span<const std::byte> bytes) {
  append(bytes_, bytes);
  return *this;
}

ProcessInfo process_info_with_every_field() {
  ProcessInfo info;
  info.rank = 13;
  info.local_rank = 5;
  info.world_size = 64;
  info.local_world_size = 8;
  info.node_rank = 1;
  info.restart_attempt = 2;
  info.run_id = "run-2024-06-01-llama";
  info.launcher = "torchrun";
  // Arguments are separated by NUL bytes, which must survive.
  info.command_line = std::string("python\0train.py\0--lr=3e-4", 25);
  info.pipescope_version = "0.1.0";
  info.capture_kinds = 0b1110;
  DeviceInfo a;
  a.ordinal = 0;
  for (uint8_t i = 0; i < 16; ++i) a.uuid[i] = static_cast<uint8_t>(0xA0 + i);
  a.pci_domain = 0;
  a.pci_bus = 0x1B;
  a.pci_device = 0;
  a.memory_bytes = 85'899'345'920;  // 80 GiB
  a.name = "NVIDIA H100 80GB HBM3";
  DeviceInfo b = a;
  b.ordinal = 1;
  b.uuid[15] = 0x01;
  b.pci_bus = 0x2C;
  b.name = "NVIDIA H100 80GB HBM3 (second)";
  info.devices = {a, b};
  return info;
}

void reseal_header(std::vector<std::byte>& file) {
  FileHeaderFixed header;
  std::memcpy(&header, file.data(), sizeof(header));
  uint32_t crc = crc32c(&header, kHeaderCrcCoveredBytes);
  header.crc32c = crc32c_extend(crc, file.data() + sizeof(header), header.host_bytes);
  std::memcpy(file.data(), &header, sizeof(header));
}

}  // namespace pipescope::trace::test
