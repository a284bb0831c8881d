// NVTX ranges and marks as trace records. This is the logic behind the NVTX injection
// (nvtx_injection.cpp, the thin layer that speaks NVTX's export tables): it knows no NVTX type,
// so that tests drive it directly.
//
// Per thread it keeps the open push ranges (which domain, whether each is a step range) in a
// fixed stack, so that PIPESCOPE_STEPS can count steps on the step range even while nothing is
// captured. Hot path (a known name): a cache lookup, a clock read and one ring append; no lock,
// no allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "session.h"

namespace pipescope::inject {

// A domain from nvtxDomainCreate and a string from nvtxDomainRegisterString: handles the
// recorder owns and the application passes back. Opaque outside nvtx_recorder.cpp.
struct NvtxDomain;
struct NvtxRegisteredString;

// An event's message, as NVTX gives it: one of the three kinds, or none.
struct NvtxMessage {
  enum class Type : uint8_t { kNone, kAscii, kWide, kRegistered };
  Type type = Type::kNone;
  const char* ascii = nullptr;
  const wchar_t* wide = nullptr;
  const NvtxRegisteredString* registered = nullptr;

  static NvtxMessage of(const char* text) { return {Type::kAscii, text, nullptr, nullptr}; }
  static NvtxMessage of(const wchar_t* text) { return {Type::kWide, nullptr, text, nullptr}; }
  static NvtxMessage of(const NvtxRegisteredString* text) {
    return {Type::kRegistered, nullptr, nullptr, text};
  }
};

// What the recorder keeps of nvtxEventAttributes_t.
struct NvtxAttributes {
  NvtxMessage message;
  uint32_t category = 0;
  uint32_t color = 0;  // ARGB; 0 when the event gave none
};

class NvtxRecorder {
 public:
  // Open push ranges tracked per thread; deeper ones are counted but never step ranges.
  static constexpr uint32_t kMaxTrackedDepth = 64;
  // Step ranges of the start/end kind open at once in the process; more are not step ranges.
  static constexpr uint32_t kMaxOpenStepRanges = 32;
  // Names are cut to this many UTF-8 bytes when converted from wide text.
  static constexpr size_t kMaxWideNameBytes = 512;

  explicit NvtxRecorder(Session& session);
  ~NvtxRecorder();  // frees every domain and registered string; tests only (the library's lives on)
  NvtxRecorder(const NvtxRecorder&) = delete;
  NvtxRecorder& operator=(const NvtxRecorder&) = delete;

  // False when NVTX calls cannot matter: NVTX is not recorded and no steps are counted (the
  // injection then installs no callbacks and NVTX stays a no-op).
  bool active() const noexcept { return record_ || count_steps_; }

  // `domain` nullptr is NVTX's default domain. Push returns the range's 0-based level in its
  // domain on this thread, pop the level of the range it closed (-1 when none was open).
  int push(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept;
  int pop(NvtxDomain* domain) noexcept;
  // Start returns a process-wide range id (never 0) that end takes back, on any thread.
  uint64_t start(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept;
  void end(NvtxDomain* domain, uint64_t range_id) noexcept;
  void mark(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept;

  // nullptr only when out of memory (NVTX then uses the default domain).
  NvtxDomain* create_domain(std::string_view name) noexcept;
  NvtxDomain* create_domain(const wchar_t* name) noexcept;
  void destroy_domain(NvtxDomain* domain) noexcept;
  NvtxRegisteredString* register_string(NvtxDomain* domain, std::string_view text) noexcept;
  NvtxRegisteredString* register_string(NvtxDomain* domain, const wchar_t* text) noexcept;

 private:
  struct ThreadState;
  struct StepPattern;
  struct Name {
    uint32_t id = 0;  // 0 when not wanted or not known
    bool step = false;
  };

  ThreadState& thread_state() noexcept;
  Name resolve(ThreadState& thread, const NvtxMessage& message, bool want_id) noexcept;
  Name lookup(ThreadState& thread, std::string_view text, bool want_id) noexcept;
  bool is_step_name(std::string_view text) const noexcept;
  uint32_t cached_id(std::atomic<uint64_t>& slot, std::string_view text) noexcept;
  uint32_t domain_id(NvtxDomain* domain) noexcept;
  // The calling thread's buffer for a push or start (which may open the trace), or for any
  // other record; nullptr when nothing is to be recorded now.
  trace::ThreadBuffer* buffer_to_open_range() noexcept;
  trace::ThreadBuffer* buffer_to_record() noexcept;
  void append(ThreadState& thread, trace::ThreadBuffer* buffer, trace::NvtxEvent event, NvtxDomain* domain,
              uint32_t name_id, uint64_t range_id, const NvtxAttributes* attributes) noexcept;
  bool track_step_range(uint64_t range_id) noexcept;
  bool untrack_step_range(uint64_t range_id) noexcept;

  Session& session_;
  const uint64_t serial_;   // tells this recorder's per-thread state from an earlier one's
  const bool record_;       // the nvtx kind is on
  const bool count_steps_;  // PIPESCOPE_STEPS or PIPESCOPE_KERNEL_SAMPLE is set
  const bool keep_nccl_domain_;
  std::unique_ptr<const StepPattern> step_pattern_;  // set when steps are counted

  std::atomic<uint64_t> open_step_ranges_[kMaxOpenStepRanges] = {};  // ids of open step start ranges
  std::atomic<int> open_step_range_count_{0};

  std::mutex handles_mutex_;  // the lists below; never taken on a hot path
  NvtxDomain* domains_ = nullptr;
  NvtxRegisteredString* default_domain_strings_ = nullptr;
};

// `text` (UTF-32, as wchar_t is on Linux) as UTF-8 into `out`, cut at a character boundary to
// fit `size` bytes; invalid code points become U+FFFD. Returns the bytes written.
size_t wide_to_utf8(const wchar_t* text, char* out, size_t size) noexcept;

}  // namespace pipescope::inject
