#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "loaded_trace.h"

namespace pipescope::inject::testing {

uint16_t LoadedTrace::header_kind(const std::vector<std::byte>& bytes) {
  trace::RecordHeader header{};
  std::memcpy(&header, bytes.data(), sizeof(header));
  return header.kind;
}

std::vector<trace::NoticeRecord> LoadedTrace::notices(trace::NoticeCode code) const {
  std::vector<trace::NoticeRecord> out;
  for (const auto& notice : all<trace::NoticeRecord>()) {
    if (notice.code == static_cast<uint16_t>(code)) out.push_back(notice);
  }
  return out;
}

Expected<LoadedTrace> read_trace(const std::string& path) {
  LoadedTrace loaded;
  loaded.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open " + path};
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> data(raw.size());
  std::memcpy(data.data(), raw.data(), raw.size());
  auto decoder = trace::TraceDecoder::open(data);
  if (!decoder.ok()) return Error{path + ": " + decoder.error().message};
  loaded.header = decoder->header();
  trace::ChunkView chunk;
  while (decoder->next_chunk(chunk)) {
    switch (chunk.type) {
      case trace::ChunkType::kRecords: {
        trace::RecordCursor cursor(chunk.payload);
        trace::RecordView view;
        while (cursor.next(view)) loaded.records.emplace_back(view.bytes.begin(), view.bytes.end());
        break;
      }
      case trace::ChunkType::kStrings: trace::read_strings_chunk(chunk.payload, loaded.strings); break;
      case trace::ChunkType::kProcessInfo: {
        auto info = trace::decode_process_info(chunk.payload);
        if (info.ok()) loaded.process = *info;
        break;
      }
      case trace::ChunkType::kClockAnchor: {
        trace::ClockAnchorPayload anchor{};
        if (chunk.payload.size() >= sizeof(anchor)) {
          std::memcpy(&anchor, chunk.payload.data(), sizeof(anchor));
          loaded.anchors.push_back(anchor);
        }
        break;
      }
      case trace::ChunkType::kEnd: loaded.ended_cleanly = true; break;
      default: break;
    }
  }
  loaded.stop_reason = decoder->stop_reason();
  return loaded;
}

std::vector<std::string> trace_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".pst") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace pipescope::inject::testing
