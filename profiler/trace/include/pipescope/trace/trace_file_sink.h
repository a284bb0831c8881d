// The writer's side of the file system: create the trace file safely, append whole chunks.
// Once a write fails (disk full, I/O error) the sink stays failed, so no chunk is ever written
// after a partial one and the file always reads up to its last complete chunk.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::trace {

class TraceFileSink {
 public:
  // Creates `path` exclusively (never replaces a file, never follows a symlink at the last
  // component). The caller checks that the path lies inside its output directory.
  static Expected<TraceFileSink> create(const std::string& path);

  TraceFileSink(TraceFileSink&& other) noexcept;
  TraceFileSink& operator=(TraceFileSink&& other) noexcept;
  TraceFileSink(const TraceFileSink&) = delete;
  TraceFileSink& operator=(const TraceFileSink&) = delete;
  ~TraceFileSink();

  // Writes the pieces back to back, retrying short writes and EINTR.
  Status append(std::span<const std::span<const std::byte>> pieces);
  // The same without building an error message: no allocation, async-signal-safe. Returns
  // false (and the sink stays failed) when the write failed.
  bool append_quietly(std::span<const std::span<const std::byte>> pieces) noexcept;
  bool failed() const { return failed_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  void close();

 private:
  TraceFileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int write_all(std::span<const std::span<const std::byte>> pieces) noexcept;  // 0 or errno
  int fd_ = -1;
  bool failed_ = false;
  std::string path_;
};

}  // namespace pipescope::trace
