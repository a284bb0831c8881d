// A PyTorch profiler (Kineto) trace file in memory, as the JSON reader needs it: mapped when it is
// plain; when it is gzip, inflated piece by piece as the reader asks for its bytes (ISA-L, where
// the build has it: the pages the reader has passed are moved ahead and inflated into again) or
// whole (libdeflate, in one call per member); followed by the padding the SIMD parser reads past
// its end, and writable (the reader marks the ends of its windows in place and puts the bytes
// back). One document per reader: memory is the document's size, or, streamed, a few MiB.
#pragma once

#include <cstddef>
#include <memory>
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
  // The file at `path`, inflated when it starts with gzip's magic bytes (a document inflated whole
  // uses `memory`'s pages when given, and gives them back when it goes, which must be first). A
  // cut-off or damaged gzip stream is refused in words that say which (not "not JSON").
  static Expected<DocumentText> load(const std::string& path, InflateMemory* memory = nullptr);
  // The same, inflated whole even where it could be streamed.
  static Expected<DocumentText> load_whole(const std::string& path, InflateMemory* memory = nullptr);
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

  // Makes the bytes before `end` (up to size() plus the padding) readable: a streamed document
  // inflates up to there. False when its gzip data fails (failure() says how) or does not hold
  // the single member of size() bytes its trailer states (stream_gave_up(): load_whole reads it).
  bool ensure(size_t end) { return end <= ready_ || fill(end); }
  // A streamed document's bytes not yet inflated are inflated and dropped as they come, to meet
  // its gzip trailer's check (a reader that stopped early may have met damage the check names);
  // false when the check fails. Nothing may be read afterwards.
  bool check_rest();
  bool failed() const;
  Error failure() const;
  bool stream_gave_up() const;
  // Bytes of a streamed document inflated into pages moved up from behind the reader (tests).
  size_t reused_bytes() const;

  // Gives the pages wholly before `offset` back once the reader is past them (to the system; a
  // plain file's stay in the page cache; an InflateMemory's are kept for its next document; a
  // streamed document inflates into them again); they must not be read again.
  void release_before(size_t offset);

 private:
  class Stream;

  DocumentText(char* data, size_t size, size_t capacity, size_t mapped_bytes,
               InflateMemory* lender = nullptr);
  static Expected<DocumentText> load_from(const std::string& path, InflateMemory* memory, bool stream);
  bool fill(size_t end);
  void unmap();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_bytes_ = 0;  // the whole mapping, from data_
  size_t released_bytes_ = 0;
  size_t ready_ = 0;                 // bytes readable from data_ (capacity_ unless streamed)
  InflateMemory* lender_ = nullptr;  // where the mapping goes back to, instead of the system
  std::unique_ptr<Stream> stream_;   // a gzip document inflated as it is read
};

}  // namespace pipescope::analysis::kineto
