// libFuzzer target for the PyTorch profiler (Kineto) reader: any text must convert to a trace or
// come back as an error, never a crash, a hang or a sanitizer report; what it converts must read
// back through the report's scan of one rank. Read in small windows, the text must be read or
// refused as a read of it whole is, with the same events when it is read; gzip'ed and inflated as
// it is read (where the build streams), too. An input that is itself gzip data is converted from
// a file, as `report` would.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "kineto_json.h"
#include "kineto_text.h"
#include "pipescope/analysis/kineto_import.h"
#include "pipescope/analysis/rank_digest.h"

namespace {

// One file of each name per process, removed when it ends.
struct ScratchFile {
  explicit ScratchFile(const std::string& suffix)
      : path((std::filesystem::temp_directory_path() /
              ("pipescope-kineto-fuzz-" + std::to_string(getpid()) + suffix))
                 .string()) {}
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::string path;
};

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string gzipped(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    __builtin_trap();
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) __builtin_trap();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// What a read hands on, enough to tell two reads apart.
struct Fingerprint : pipescope::analysis::kineto::DocumentHandler {
  std::vector<std::string> events;
  pipescope::Status on_distributed_info(const pipescope::analysis::kineto::DistributedInfo&) override {
    return {};
  }
  void on_event(const pipescope::analysis::kineto::Event& e) override {
    events.push_back(std::string(e.cat) + "|" + std::string(e.name) + "|" + std::string(e.ph) + "|" +
                     (e.ts_us ? std::to_string(*e.ts_us) : "-") + "|" + std::to_string(e.args.correlation) +
                     "|" + std::to_string(e.args.input_dims_count) + "|" +
                     std::to_string(e.args.group_ranks.size()));
  }
};

std::pair<bool, std::vector<std::string>> read(pipescope::analysis::kineto::DocumentText& document,
                                               size_t window_bytes) {
  Fingerprint fingerprint;
  pipescope::analysis::kineto::ReaderOptions options;
  options.window_bytes = window_bytes;
  const bool ok =
      pipescope::analysis::kineto::read_document(document, "fuzz input", fingerprint, options).ok();
  return {ok, std::move(fingerprint.events)};
}

std::pair<bool, std::vector<std::string>> read_in_windows(std::string_view text, size_t window_bytes) {
  auto document = pipescope::analysis::kineto::DocumentText::copy_of(text);
  return read(document, window_bytes);
}

std::pair<bool, std::vector<std::string>> read_streamed(const std::string& path, size_t window_bytes) {
  auto document = pipescope::analysis::kineto::DocumentText::load(path);
  if (!document) __builtin_trap();  // gzip data made here
  auto outcome = read(*document, window_bytes);
  if (document->stream_gave_up()) __builtin_trap();  // one member whose trailer is right
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ScratchFile scratch(".pst");
  static const ScratchFile compressed(".json.gz");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    write_file(compressed.path, text);
    std::error_code ec;
    std::filesystem::remove(scratch.path, ec);
    (void)pipescope::analysis::convert_kineto_trace(compressed.path, scratch.path);
    return 0;
  }
  if (pipescope::analysis::convert_kineto_text(text, "fuzz input", scratch.path).ok())
    (void)pipescope::analysis::scan_rank_trace(scratch.path, pipescope::analysis::ScanOptions{});
  const auto windowed = read_in_windows(text, 7);
  const auto whole = read_in_windows(text, size + 1);
  if (windowed.first != whole.first || (whole.first && windowed.second != whole.second)) __builtin_trap();
  write_file(compressed.path, gzipped(text));
  const auto streamed = read_streamed(compressed.path, 7);
  if (streamed.first != whole.first || (whole.first && streamed.second != whole.second)) __builtin_trap();
  return 0;
}
