#include "pipescope/trace/trace_file_sink.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace pipescope::trace {

Expected<TraceFileSink> TraceFileSink::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    return Error{"cannot create trace file " + path + ": " + std::strerror(err)};
  }
  return TraceFileSink(fd, path);
}

TraceFileSink::TraceFileSink(TraceFileSink&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), failed_(other.failed_), path_(std::move(other.path_)) {}

TraceFileSink& TraceFileSink::operator=(TraceFileSink&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    failed_ = other.failed_;
    path_ = std::move(other.path_);
  }
  return *this;
}

TraceFileSink::~TraceFileSink() { close(); }

void TraceFileSink::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Status TraceFileSink::append(std::span<const std::span<const std::byte>> pieces) {
  if (failed_ || fd_ < 0) return Error{"trace file " + path_ + " is no longer writable"};
  const int err = write_all(pieces);
  if (err == 0) return {};
  if (err == E2BIG) return Error{"internal: too many pieces for one chunk write"};
  return Error{"writing trace file " + path_ + ": " + std::strerror(err)};
}

bool TraceFileSink::append_quietly(std::span<const std::span<const std::byte>> pieces) noexcept {
  return !failed_ && fd_ >= 0 && write_all(pieces) == 0;
}

int TraceFileSink::write_all(std::span<const std::span<const std::byte>> pieces) noexcept {
  constexpr size_t kMaxPieces = 8;
  iovec iov[kMaxPieces];
  size_t count = 0;
  for (const auto& piece : pieces) {
    if (piece.empty()) continue;
    if (count == kMaxPieces) return E2BIG;
    iov[count++] = iovec{const_cast<std::byte*>(piece.data()), piece.size()};
  }
  size_t first = 0;
  while (first < count) {
    const ssize_t n = ::writev(fd_, iov + first, static_cast<int>(count - first));
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      return errno;
    }
    auto left = static_cast<size_t>(n);
    while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < count) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return 0;
}

}  // namespace pipescope::trace
