#include "pipescope/trace/trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    released_ = std::exchange(other.released_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::release_before(uint64_t offset) {
  static const auto page_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  offset = std::min<uint64_t>(offset, size_) / page_bytes * page_bytes;
  if (data_ == nullptr || offset < released_ + kReleaseStepBytes) return;
  // A private read-only mapping never written: dropping its pages loses nothing.
  madvise(const_cast<std::byte*>(data_) + released_, offset - released_, MADV_DONTNEED);
  released_ = offset;
}

void MappedFile::unmap() {
  if (data_ != nullptr) munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pipescope::trace
