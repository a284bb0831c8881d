#include "pipescope/trace/trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace pipescope::trace {

Expected<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Error{"cannot open " + path + ": " + std::strerror(err)};
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{path + " is not a regular file"};
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MappedFile(nullptr, 0, path);
  }
  if (size < kReadWholeBelowBytes) {
    std::unique_ptr<std::byte[]> bytes(new (std::nothrow) std::byte[size]);
    if (bytes == nullptr) {
      ::close(fd);
      return Error{"cannot read " + path + ": out of memory"};
    }
    size_t got = 0;
    while (got < size) {
      const ssize_t n = pread(fd, bytes.get() + got, size - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // shrank while being read: what is there is what a mapping would show
      got += static_cast<size_t>(n);
    }
    const int err = errno;
    ::close(fd);
    if (got == 0 && size > 0) return Error{"cannot read " + path + ": " + std::strerror(err)};
    return MappedFile(std::move(bytes), got, path);
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return Error{"cannot map " + path + ": " + std::strerror(err)};
  madvise(p, size, MADV_SEQUENTIAL);
  return MappedFile(static_cast<const std::byte*>(p), size, path);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      released_(std::exchange(other.released_, 0)),
      owned_(std::move(other.owned_)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    released_ = std::exchange(other.released_, 0);
    owned_ = std::move(other.owned_);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::release_before(uint64_t offset) {
  static const auto page_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  offset = std::min<uint64_t>(offset, size_) / page_bytes * page_bytes;
  if (data_ == nullptr || owned_ != nullptr || offset < released_ + kReleaseStepBytes) return;
  // A private read-only mapping never written: dropping its pages loses nothing.
  madvise(const_cast<std::byte*>(data_) + released_, offset - released_, MADV_DONTNEED);
  released_ = offset;
}

void MappedFile::unmap() {
  if (data_ != nullptr && owned_ == nullptr) munmap(const_cast<std::byte*>(data_), size_);
  owned_.reset();
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pipescope::trace
