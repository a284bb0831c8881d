// A trace file mapped read-only into memory, for TraceDecoder. Pages come and go with the
// page cache, so reading a large trace does not hold it in the process's memory.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::trace {

class MappedFile {
 public:
  static Expected<MappedFile> open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(const std::byte* data, size_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}
  void unmap();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace pipescope::trace
