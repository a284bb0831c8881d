// A PyTorch profiler (Kineto) trace file in memory, as the JSON reader needs it: inflated when it
// is gzip (libdeflate, in one call per member), mapped when it is plain, followed by the padding
// the SIMD parser reads past its end, and writable (the reader marks the ends of its windows in
// place and puts the bytes back). One document per reader: memory is the document's size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "pipescope/common/expected.h"

namespace pipescope::analysis::kineto {

// The memory a worker inflates documents into, one after another: the last document's pages are
// kept for the next, because fresh pages cost the kernel (zeroing, mapping, freeing) about as much
// as inflating into them. Holds at most the largest document it has lent memory to, until it goes.
class InflateMemory {
 public:
  InflateMemory() = default;
  InflateMemory(const InflateMemory&) = delete;
  InflateMemory& operator=(const InflateMemory&) = delete;
  ~InflateMemory();

 private:
  friend class DocumentText;
  char* data_ = nullptr;
  size_t mapped_bytes_ = 0;
};

class DocumentText {
 public:
  // The file at `path`, inflated when it starts with gzip's magic bytes (into `memory`'s pages
  // when given: the document gives them back when it goes, and must go first). A cut-off or
  // damaged gzip stream is refused in words that say which (not "not JSON").
  static Expected<DocumentText> load(const std::string& path, InflateMemory* memory = nullptr);
  static DocumentText copy_of(std::string_view text);

  DocumentText(DocumentText&& other) noexcept;
  DocumentText& operator=(DocumentText&& other) noexcept;
  DocumentText(const DocumentText&) = delete;
  DocumentText& operator=(const DocumentText&) = delete;
  ~DocumentText();

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Bytes readable from data(): size() plus at least kPaddingBytes + 2 (a window's closing
  // marks may sit just past the end).
  size_t capacity() const { return capacity_; }
  static constexpr size_t kPaddingBytes = 64;  // simdjson's SIMDJSON_PADDING

  // Gives the pages wholly before `offset` back to the system once the reader is past them (a
  // plain file's stay in the page cache; an InflateMemory's are kept for its next document); they
  // must not be read again.
  void release_before(size_t offset);

 private:
  DocumentText(char* data, size_t size, size_t capacity, size_t mapped_bytes, InflateMemory* lender = nullptr)
      : data_(data), size_(size), capacity_(capacity), mapped_bytes_(mapped_bytes), lender_(lender) {}
  void unmap();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_bytes_ = 0;  // the whole mapping, from data_
  size_t released_bytes_ = 0;
  InflateMemory* lender_ = nullptr;  // where the mapping goes back to, instead of the system
};

}  // namespace pipescope::analysis::kineto
