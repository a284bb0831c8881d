#include "loaded_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

LoadedTrace load_trace(const std::string& path) {
  LoadedTrace loaded;
  loaded.path = path;
  std::ifstream in(path, std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> data(raw.size());
  std::memcpy(data.data(), raw.data(), raw.size());
  auto decoder = trace::TraceDecoder::open(data);
  if (!decoder.ok()) {
    ADD_FAILURE() << path << ": " << decoder.error().message;
    return loaded;
  }
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

std::string make_temp_dir(const std::string& tag) {
  std::string pattern = ::testing::TempDir() + "pipescope-" + tag + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
  return pattern;
}

}  // namespace pipescope::inject::testing
