// libFuzzer target for the PyTorch profiler (Kineto) reader: any text must convert to a trace or
// come back as an error, never a crash, a hang or a sanitizer report; what it converts must read
// back through the report's scan of one rank. Read in small windows, the text must be read or
// refused as a read of it whole is, with the same events when it is read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kineto_json.h"
#include "kineto_text.h"
#include "pipescope/analysis/kineto_import.h"
#include "pipescope/analysis/rank_digest.h"

namespace {

// One output file per process, removed when it ends.
struct ScratchTrace {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("pipescope-kineto-fuzz-" + std::to_string(getpid()) + ".pst"))
                         .string();
  ~ScratchTrace() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

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

std::pair<bool, std::vector<std::string>> read_in_windows(std::string_view text, size_t window_bytes) {
  auto document = pipescope::analysis::kineto::DocumentText::copy_of(text);
  Fingerprint fingerprint;
  pipescope::analysis::kineto::ReaderOptions options;
  options.window_bytes = window_bytes;
  const bool ok =
      pipescope::analysis::kineto::read_document(document, "fuzz input", fingerprint, options).ok();
  return {ok, std::move(fingerprint.events)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ScratchTrace scratch;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (pipescope::analysis::convert_kineto_text(text, "fuzz input", scratch.path).ok())
    (void)pipescope::analysis::scan_rank_trace(scratch.path, pipescope::analysis::ScanOptions{});
  const auto windowed = read_in_windows(text, 7);
  const auto whole = read_in_windows(text, size + 1);
  if (windowed.first != whole.first || (whole.first && windowed.second != whole.second)) __builtin_trap();
  return 0;
}
