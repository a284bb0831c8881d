// A trace file mapped read-only into memory, for TraceDecoder. The pages belong to the page
// cache, but every page touched counts in the process's resident memory until it is unmapped
// or released: a one-pass reader calls release_before() as it goes, so that what it holds is a
// few MiB behind its cursor, not the file read so far. A file smaller than one release step is
// read into memory instead: unmapping costs every other thread of the process a TLB flush, and
// a report over a thousand small traces spent more time in those than in reading them.
#pragma once

#include <cstddef>
#include <memory>
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

  // Drops this process's mapping of the pages wholly before `offset` (they stay in the page
  // cache), in steps of kReleaseStepBytes so that the system call is rare. Bytes before
  // `offset` still read the same, at the cost of faulting their pages in again.
  void release_before(uint64_t offset);
  static constexpr uint64_t kReleaseStepBytes = uint64_t{4} << 20;
  static constexpr uint64_t kReadWholeBelowBytes = kReleaseStepBytes;

 private:
  MappedFile(const std::byte* data, size_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}
  MappedFile(std::unique_ptr<std::byte[]> owned, size_t size, std::string path)
      : data_(owned.get()), size_(size), owned_(std::move(owned)), path_(std::move(path)) {}
  void unmap();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t released_ = 0;                 // bytes from the start already released
  std::unique_ptr<std::byte[]> owned_;  // a small file's bytes, read rather than mapped
  std::string path_;
};

}  // namespace pipescope::trace
