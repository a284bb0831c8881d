#include "kineto_text.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#ifdef PIPESCOPE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace pipescope::analysis::kineto {
namespace {

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t round_up_to_page(size_t n) { return (n + page_bytes() - 1) / page_bytes() * page_bytes(); }

// Writable anonymous memory whose untouched pages cost nothing (the size of an inflated document
// is a guess until it is inflated), or, with `populate`, whose pages are all there at once (a
// fault per page costs a third as much as inflating into it).
char* reserve(size_t bytes, bool populate = false) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (populate ? MAP_POPULATE : 0), -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) close(fd);
  }
};

struct ReadOnlyMapping {
  const unsigned char* bytes = nullptr;
  size_t size = 0;
  ReadOnlyMapping() = default;
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
      : bytes(std::exchange(other.bytes, nullptr)), size(std::exchange(other.size, 0)) {}
  ReadOnlyMapping& operator=(ReadOnlyMapping&&) = delete;
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping() {
    if (bytes != nullptr) munmap(const_cast<unsigned char*>(bytes), size);
  }
};

// Why a gzip stream that libdeflate refused is bad, in zlib's words: cut short (the common case:
// a copy interrupted) or damaged.
Error gzip_failure(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return Error("cannot read " + path);
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) {
  }
  int code = Z_OK;
  const std::string detail = gzerror(file, &code);
  gzclose(file);
  if (code == Z_BUF_ERROR) {
    return Error(path +
                 " is truncated: its gzip data ends early (an interrupted copy or write?); copy it again");
  }
  return Error(path + " is corrupt gzip data (" + (code == Z_OK ? std::string("bad data") : detail) +
               "); copy it again");
}

uint32_t little_endian_u32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

// A gzip document inflated as the reader asks for its bytes, into address space reserved for all
// of it. The chunks the reader has passed are moved, their pages and not their bytes, to where the
// inflater writes next: after the first few MiB it writes into pages it already has, which the
// kernel need neither zero, map nor free, and which are still in the CPU's caches. The document's
// size is its gzip trailer's; a stream that disagrees gives up, for load_whole to read.
class DocumentText::Stream {
 public:
  static constexpr size_t kChunk = size_t{1} << 20;

  Stream(std::string path, ReadOnlyMapping input) : path_(std::move(path)), input_(std::move(input)) {
#ifdef PIPESCOPE_HAVE_ISAL
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
#endif
  }

  // Inflates the document's bytes up to `target`, the last call checking its trailer.
  bool fill(char* data, size_t size, size_t mapped, size_t target);
  // Chunks wholly before `offset` may be moved ahead (or, once a move has failed, are given back).
  void release_before(char* data, size_t offset);
  // Bytes from the start that were moved away (no longer this document's to unmap).
  size_t moved_away() const { return recycled_; }
  size_t inflated() const { return inflated_; }
  bool finished() const { return finished_; }
  bool gave_up() const { return gave_up_; }
  const std::optional<Error>& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  void prepare(char* data, size_t upto, size_t mapped);
  bool fail() {
    error_ = gzip_failure(path_);
    return false;
  }
  bool give_up() {
    gave_up_ = true;
    return false;
  }

  std::string path_;
  ReadOnlyMapping input_;
  size_t inflated_ = 0;    // output bytes written
  size_t prepared_ = 0;    // chunks below it have pages (moved in) or are left to fault in
  size_t recycled_ = 0;    // chunks below it were moved ahead
  size_t released_ = 0;    // chunks below it may be moved ahead
  size_t dropped_ = 0;     // after a failed move: pages below it were given back
  bool moving_ = true;     // false once a move failed (the process's mapping count at its limit)
  bool finished_ = false;  // the trailer checked, the padding zeroed
  bool gave_up_ = false;
  std::optional<Error> error_;
#ifdef PIPESCOPE_HAVE_ISAL
  size_t fed_ = 0;  // input bytes handed to the inflater
  inflate_state state_{};
#endif
};

void DocumentText::Stream::prepare(char* data, size_t upto, size_t mapped) {
  // The inflater reads back up to 32 KiB of what it wrote: that stays where it is.
  constexpr size_t kHistory = size_t{64} << 10;
  for (; prepared_ < upto; prepared_ += kChunk) {
    const bool movable = recycled_ + kChunk <= released_ && recycled_ + kChunk + kHistory <= inflated_;
    if (!moving_ || !movable || prepared_ + kChunk > mapped) continue;  // fresh pages, faulted in
    void* moved = mremap(data + recycled_, kChunk, kChunk, MREMAP_MAYMOVE | MREMAP_FIXED, data + prepared_);
    if (moved != MAP_FAILED) {
      recycled_ += kChunk;
    } else {
      moving_ = false;
      release_before(data, released_);
    }
  }
}

void DocumentText::Stream::release_before(char* data, size_t offset) {
  released_ = std::max(released_, offset / kChunk * kChunk);
  if (moving_) return;
  const size_t from = std::max(dropped_, recycled_);
  if (released_ > from) madvise(data + from, released_ - from, MADV_DONTNEED);
  dropped_ = std::max(dropped_, released_);
}

#ifdef PIPESCOPE_HAVE_ISAL
bool DocumentText::Stream::fill(char* data, size_t size, size_t mapped, size_t target) {
  if (error_ || gave_up_) return false;
  auto feed = [&] {
    if (state_.avail_in != 0 || fed_ == input_.size) return;
    const size_t piece = std::min<size_t>(input_.size - fed_, size_t{1} << 30);  // avail_in is 32 bits
    state_.next_in = const_cast<uint8_t*>(input_.bytes + fed_);
    state_.avail_in = static_cast<uint32_t>(piece);
    fed_ += piece;
  };
  while (inflated_ < target) {
    const size_t chunk_end = std::min((inflated_ / kChunk + 1) * kChunk, size);
    prepare(data, chunk_end, mapped);
    feed();
    state_.next_out = reinterpret_cast<uint8_t*>(data + inflated_);
    state_.avail_out = static_cast<uint32_t>(chunk_end - inflated_);
    const size_t before = inflated_;
    const uint32_t unread = state_.avail_in;
    const int result = isal_inflate(&state_);
    inflated_ = chunk_end - state_.avail_out;
    if (result < 0) return fail();
    if (inflated_ == before && state_.avail_in == unread && state_.block_state != ISAL_BLOCK_FINISH)
      return fail();  // no progress: the stream is not what it claims
    if (state_.block_state == ISAL_BLOCK_FINISH && inflated_ < size) return give_up();  // shorter than stated
    if (state_.avail_out != 0 && state_.avail_in == 0 && fed_ == input_.size) return fail();  // cut short
  }
  if (inflated_ < size || finished_) return true;
  // The whole document is out: the stream must end here, with nothing after it.
  uint8_t beyond[64];
  while (state_.block_state != ISAL_BLOCK_FINISH) {
    feed();
    state_.next_out = beyond;
    state_.avail_out = sizeof(beyond);
    const int result = isal_inflate(&state_);
    if (result < 0) return fail();
    if (state_.avail_out != sizeof(beyond)) return give_up();  // longer than its trailer says
    if (state_.block_state != ISAL_BLOCK_FINISH && state_.avail_in == 0 && fed_ == input_.size) return fail();
  }
  if (state_.avail_in != 0 || fed_ != input_.size) return give_up();  // another member, or padding
  prepare(data, size + kPaddingBytes + 2, mapped);
  std::memset(data + size, 0, kPaddingBytes + 2);
  finished_ = true;
  return true;
}
#else
bool DocumentText::Stream::fill(char*, size_t, size_t, size_t) { return give_up(); }
#endif

Error DocumentText::failure() const {
  if (stream_ != nullptr && stream_->error()) return *stream_->error();
  if (stream_ != nullptr && stream_->gave_up())
    return Error(stream_->path() + " is not the one gzip member its trailer describes: read it whole");
  return Error("cannot read past the end of a document");
}

bool DocumentText::stream_gave_up() const { return stream_ != nullptr && stream_->gave_up(); }

bool DocumentText::check_rest() {
  if (stream_ == nullptr) return true;
  while (!stream_->finished()) {
    release_before(ready_);
    if (!fill(std::min(capacity_, ready_ + Stream::kChunk))) return false;
  }
  return true;
}

bool DocumentText::failed() const { return stream_ != nullptr && (stream_->gave_up() || stream_->error()); }

size_t DocumentText::reused_bytes() const { return stream_ != nullptr ? stream_->moved_away() : 0; }

bool DocumentText::fill(size_t end) {
  if (stream_ == nullptr) return true;  // all there is is readable
  end = std::min(end, capacity_);
  // Ahead by a chunk at least: fewer, larger calls to the inflater.
  const size_t target = std::min(size_, std::max(end, ready_ + Stream::kChunk));
  const bool ok = stream_->fill(data_, size_, mapped_bytes_, target);
  ready_ = stream_->finished() ? capacity_ : stream_->inflated();
  return ok && end <= ready_;
}

DocumentText::DocumentText(char* data, size_t size, size_t capacity, size_t mapped_bytes,
                           InflateMemory* lender)
    : data_(data),
      size_(size),
      capacity_(capacity),
      mapped_bytes_(mapped_bytes),
      ready_(capacity),
      lender_(lender) {}

DocumentText::DocumentText(DocumentText&& other) noexcept { *this = std::move(other); }

DocumentText& DocumentText::operator=(DocumentText&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    released_bytes_ = std::exchange(other.released_bytes_, 0);
    ready_ = std::exchange(other.ready_, 0);
    lender_ = std::exchange(other.lender_, nullptr);
    stream_ = std::move(other.stream_);
  }
  return *this;
}

DocumentText::~DocumentText() { unmap(); }

InflateMemory::~InflateMemory() {
  if (data_ != nullptr) munmap(data_, mapped_bytes_);
}

void DocumentText::unmap() {
  if (data_ != nullptr && lender_ != nullptr && lender_->data_ == nullptr) {
    lender_->data_ = data_;
    lender_->mapped_bytes_ = mapped_bytes_;
  } else if (data_ != nullptr) {
    // A streamed document's first chunks were moved ahead: what is left there is not its own.
    const size_t moved = stream_ != nullptr ? stream_->moved_away() : 0;
    munmap(data_ + moved, mapped_bytes_ - moved);
  }
  data_ = nullptr;
  lender_ = nullptr;
  stream_.reset();
}

void DocumentText::release_before(size_t offset) {
  if (stream_ != nullptr) return stream_->release_before(data_, offset);
  if (lender_ != nullptr) return;
  const size_t end = offset / page_bytes() * page_bytes();
  if (end <= released_bytes_) return;
  madvise(data_ + released_bytes_, end - released_bytes_, MADV_DONTNEED);
  released_bytes_ = end;
}

DocumentText DocumentText::copy_of(std::string_view text) {
  const size_t mapped = round_up_to_page(text.size() + kPaddingBytes + 2);
  char* data = reserve(mapped);
  if (data == nullptr) throw std::bad_alloc();
  std::memcpy(data, text.data(), text.size());
  return DocumentText(data, text.size(), mapped, mapped);
}

Expected<DocumentText> DocumentText::load(const std::string& path, InflateMemory* memory) {
  return load_from(path, memory, true);
}

Expected<DocumentText> DocumentText::load_whole(const std::string& path, InflateMemory* memory) {
  return load_from(path, memory, false);
}

Expected<DocumentText> DocumentText::load_from(const std::string& path, InflateMemory* memory, bool stream) {
  FileDescriptor file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  struct stat info {};
  if (file.fd < 0 || fstat(file.fd, &info) != 0)
    return Error("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return Error("cannot read " + path + ": not a regular file");
  const auto file_bytes = static_cast<size_t>(info.st_size);
  unsigned char magic[2] = {0, 0};
  const bool gzip =
      file_bytes >= 18 && pread(file.fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;

  if (!gzip) {
    // The file's pages, privately (the reader's marks never reach the file), then zero pages
    // for the padding.
    const size_t mapped = round_up_to_page(file_bytes + kPaddingBytes + 2);
    char* data = reserve(mapped);
    if (data == nullptr) return Error("cannot map " + path + ": out of address space");
    if (file_bytes > 0 &&
        mmap(data, file_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, file.fd, 0) == MAP_FAILED) {
      munmap(data, mapped);
      return Error("cannot map " + path + ": " + std::strerror(errno));
    }
    madvise(data, file_bytes, MADV_SEQUENTIAL);
    return DocumentText(data, file_bytes, mapped, mapped);
  }

  ReadOnlyMapping compressed;
  void* in = mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, file.fd, 0);
  if (in == MAP_FAILED) return Error("cannot map " + path + ": " + std::strerror(errno));
  compressed.bytes = static_cast<const unsigned char*>(in);
  compressed.size = file_bytes;

  // The trailer states the last member's size modulo 4 GiB: right for the usual single member
  // under 4 GiB; otherwise the output grows and the member is inflated again (whole), or the
  // stream gives up.
  size_t guess = little_endian_u32(compressed.bytes + file_bytes - 4);
#ifdef PIPESCOPE_HAVE_ISAL
  if (stream) {
    const size_t reserved = round_up_to_page(guess + kPaddingBytes + 2);
    char* out = reserve(reserved);
    if (out == nullptr) return Error("cannot inflate " + path + ": out of address space");
    DocumentText text(out, guess, reserved, reserved);
    text.stream_ = std::make_unique<Stream>(path, std::move(compressed));
    text.ready_ = 0;
    return text;
  }
#else
  (void)stream;
#endif
  guess = std::max(guess, file_bytes);
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> inflater(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (inflater == nullptr) return Error("cannot inflate " + path + ": out of memory");

  size_t mapped = round_up_to_page(guess + kPaddingBytes + 2);
  char* out = nullptr;
  if (memory != nullptr && memory->data_ != nullptr) {
    // The last document's pages; a larger document's extra pages are faulted in as it inflates.
    out = std::exchange(memory->data_, nullptr);
    const size_t held = std::exchange(memory->mapped_bytes_, 0);
    if (held < mapped) {
      void* grown = mremap(out, held, mapped, MREMAP_MAYMOVE);
      if (grown == MAP_FAILED) {
        munmap(out, held);
        return Error("cannot inflate " + path + ": out of address space");
      }
      out = static_cast<char*>(grown);
    }
    mapped = std::max(mapped, held);
  } else {
    // A damaged trailer can state any size: only a plausible one is committed up front.
    constexpr size_t kMostPlausibleRatio = 100;
    out = reserve(mapped, guess / kMostPlausibleRatio <= file_bytes);
    if (out == nullptr) return Error("cannot inflate " + path + ": out of address space");
  }
  // On failure the pages go back to `memory`, or to the system.
  auto give_back = [&] {
    if (memory != nullptr) {
      memory->data_ = out;
      memory->mapped_bytes_ = mapped;
    } else {
      munmap(out, mapped);
    }
  };
  size_t in_at = 0, out_at = 0;
  while (in_at < file_bytes) {
    size_t read = 0, written = 0;
    const libdeflate_result result =
        libdeflate_gzip_decompress_ex(inflater.get(), compressed.bytes + in_at, file_bytes - in_at,
                                      out + out_at, mapped - kPaddingBytes - 2 - out_at, &read, &written);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE) {
      const size_t grown = round_up_to_page(2 * mapped);
      void* moved = mremap(out, mapped, grown, MREMAP_MAYMOVE);
      if (moved == MAP_FAILED) {
        give_back();
        return Error("cannot inflate " + path + ": out of address space");
      }
      out = static_cast<char*>(moved);
      mapped = grown;
      continue;
    }
    if (result != LIBDEFLATE_SUCCESS) {
      give_back();
      return gzip_failure(path);
    }
    in_at += read;
    out_at += written;
    // Another member follows only where gzip's magic does (some writers pad with zeros).
    if (in_at + 2 > file_bytes || compressed.bytes[in_at] != 0x1f || compressed.bytes[in_at + 1] != 0x8b)
      break;
  }
  // Reused pages hold the last document's bytes: the padding reads as a fresh mapping's would.
  std::memset(out + out_at, 0, kPaddingBytes + 2);
  return DocumentText(out, out_at, mapped, mapped, memory);
}

}  // namespace pipescope::analysis::kineto
