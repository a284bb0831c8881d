#include "kineto_text.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

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

DocumentText::DocumentText(DocumentText&& other) noexcept { *this = std::move(other); }

DocumentText& DocumentText::operator=(DocumentText&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    released_bytes_ = std::exchange(other.released_bytes_, 0);
    lender_ = std::exchange(other.lender_, nullptr);
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
    munmap(data_, mapped_bytes_);
  }
  data_ = nullptr;
  lender_ = nullptr;
}

void DocumentText::release_before(size_t offset) {
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
  // under 4 GiB; otherwise the output grows and the member is inflated again.
  size_t guess = little_endian_u32(compressed.bytes + file_bytes - 4);
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
