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

class DocumentText {
 public:
  // The file at `path`, inflated when it starts with gzip's magic bytes. A cut-off or damaged
  // gzip stream is refused in words that say which (not "not JSON").
  static Expected<DocumentText> load(const std::string& path);
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
  // plain file's stay in the page cache); they must not be read again.
  void release_before(size_t offset);

 private:
  DocumentText(char* data, size_t size, size_t capacity, size_t mapped_bytes)
      : data_(data), size_(size), capacity_(capacity), mapped_bytes_(mapped_bytes) {}
  void unmap();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_bytes_ = 0;  // the whole mapping, from data_
  size_t released_bytes_ = 0;
};

}  // namespace pipescope::analysis::kineto
