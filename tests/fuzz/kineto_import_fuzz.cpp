// libFuzzer target for the PyTorch profiler (Kineto) reader: any text must convert to a trace or
// come back as an error, never a crash, a hang or a sanitizer report; what it converts must read
// back through the report's scan of one rank.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ScratchTrace scratch;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (pipescope::analysis::convert_kineto_text(text, "fuzz input", scratch.path).ok())
    (void)pipescope::analysis::scan_rank_trace(scratch.path, pipescope::analysis::ScanOptions{});
  return 0;
}
