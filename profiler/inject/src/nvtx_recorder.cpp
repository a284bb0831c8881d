#include "nvtx_recorder.h"

#include <bit>
#include <cstring>
#include <regex>

#include "string_cache.h"

namespace pipescope::inject {

struct NvtxRegisteredString {
  std::string text;
  bool step = false;                     // the step regex's verdict, taken once at registration
  std::atomic<uint64_t> id{0};           // (string generation << 32) | trace string id
  NvtxRegisteredString* next = nullptr;  // the owner's list
};

struct NvtxDomain {
  std::string name;
  bool skipped = false;              // NCCL's own domain, unless `nvtx-nccl` keeps it
  std::atomic<uint64_t> name_id{0};  // as NvtxRegisteredString::id
  NvtxRegisteredString* strings = nullptr;
  NvtxDomain* next = nullptr;
};

struct NvtxRecorder::StepPattern {
  std::regex regex;
};

// Names and their step verdicts, per thread. The generations passed to the caches change
// whenever the recorder, its session or the session's string ids change, so no stale id survives.
// They live on the heap so that the hot path reaches them through the one thread-local access
// to ThreadState (in a shared object each such access is a call).
struct ThreadCaches {
  StringCache names;
  StringCache step_verdicts;  // when names are not recorded but steps are counted
  uint32_t epoch = 0;
};

// A range pushed on this thread. It and ThreadCaches are outside the anonymous namespace because
// ThreadState, a member type of NvtxRecorder, holds both.
struct OpenPush {
  const NvtxDomain* domain = nullptr;
  int32_t level = 0;
  bool step = false;
};

namespace {

using trace::NvtxEvent;

constexpr std::string_view kNcclDomainName = "NCCL";
constexpr const char* kDefaultStepRegex = "step|iteration|train_step";
// Ids of ranges started in a skipped domain carry this bit, so that nvtxRangeEnd (which names no
// domain) leaves them alone too.
constexpr uint64_t kSkippedRangeBit = uint64_t{1} << 63;

std::atomic<uint64_t> g_next_range_id{1};
std::atomic<uint64_t> g_next_recorder_serial{1};

// Frees a thread's caches when it exits, and clears the pointer ThreadState holds to them.
struct ThreadCachesOwner {
  ThreadCaches* caches = nullptr;
  ThreadCaches** user = nullptr;
  bool exited = false;  // NVTX calls from later thread-exit destructors go uncached
  ~ThreadCachesOwner() {
    if (user != nullptr) *user = nullptr;
    delete caches;
    caches = nullptr;
    exited = true;
  }
};
thread_local ThreadCachesOwner t_caches_owner;  // touched only when a thread adopts a recorder

void free_strings(NvtxRegisteredString* text) {
  while (text != nullptr) {
    NvtxRegisteredString* next = text->next;
    delete text;
    text = next;
  }
}

}  // namespace

// Trivially constructible, so that the thread_local needs no initialization guard.
struct NvtxRecorder::ThreadState {
  uint64_t recorder_serial = 0;
  ThreadCaches* caches = nullptr;  // nullptr only when they could not be allocated
  uint32_t session_generation = 0;
  uint32_t names_generation = 0;
  uint32_t verdicts_generation = 0;
  uint32_t thread_id = 0;  // Session::thread_id(), refreshed when the string generation changes
  uint32_t thread_id_generation = 0;
  uint32_t tracked = 0;     // entries of `stack` in use
  uint32_t untracked = 0;   // open pushes beyond kMaxTrackedDepth
  uint32_t open_steps = 0;  // tracked entries that are step ranges
  OpenPush stack[kMaxTrackedDepth] = {};
};

NvtxRecorder::NvtxRecorder(Session& session)
    : session_(session),
      serial_(g_next_recorder_serial.fetch_add(1, std::memory_order_relaxed)),
      record_(session.wants(trace::RecordKind::kNvtx)),
      count_steps_(session.counts_steps()),
      keep_nccl_domain_(session.config().kinds.nccl_nvtx_domain) {
  if (!count_steps_) return;
  constexpr auto kFlags = std::regex::ECMAScript | std::regex::icase | std::regex::optimize;
  try {
    step_pattern_ =
        std::make_unique<StepPattern>(StepPattern{std::regex(session.config().nvtx_step_regex, kFlags)});
  } catch (const std::regex_error&) {
    // read_config already refused a pattern that does not compile; this is a second line.
    step_pattern_ = std::make_unique<StepPattern>(StepPattern{std::regex(kDefaultStepRegex, kFlags)});
  }
}

NvtxRecorder::~NvtxRecorder() {
  std::lock_guard lock(handles_mutex_);
  while (domains_ != nullptr) {
    NvtxDomain* next = domains_->next;
    free_strings(domains_->strings);
    delete domains_;
    domains_ = next;
  }
  free_strings(default_domain_strings_);
  default_domain_strings_ = nullptr;
}

NvtxRecorder::ThreadState& NvtxRecorder::thread_state() noexcept {
  static thread_local ThreadState state;
  if (state.recorder_serial != serial_) [[unlikely]] {
    // A thread's first call, or a thread that used an earlier recorder (tests make one per
    // session): a fresh stack, and cache generations no earlier entry carries.
    ThreadCaches* caches = state.caches;
    if (caches == nullptr && !t_caches_owner.exited) {
      if (t_caches_owner.caches == nullptr) {
        try {
          t_caches_owner.caches = new ThreadCaches;
        } catch (...) {
        }
      }
      caches = t_caches_owner.caches;
      t_caches_owner.user = &state.caches;
    }
    state = ThreadState{};
    state.recorder_serial = serial_;
    state.caches = caches;
    state.session_generation = session_.string_generation();
    if (caches != nullptr) {
      state.names_generation = ++caches->epoch;
      state.verdicts_generation = ++caches->epoch;
    }
  }
  return state;
}

bool NvtxRecorder::is_step_name(std::string_view text) const noexcept {
  if (step_pattern_ == nullptr) return false;
  try {
    return std::regex_search(text.begin(), text.end(), step_pattern_->regex);
  } catch (...) {  // regex_search may run out of stack or memory on a pathological name
    return false;
  }
}

NvtxRecorder::Name NvtxRecorder::lookup(ThreadState& thread, std::string_view text, bool want_id) noexcept {
  if (text.empty()) return {};
  ThreadCaches* caches = thread.caches;
  if (caches == nullptr) [[unlikely]] {
    return {want_id ? session_.intern(text) : 0, count_steps_ && is_step_name(text)};
  }
  try {
    if (!want_id) {
      if (!count_steps_) return {};
      const StringCache::Entry entry =
          caches->step_verdicts.find_or_add(text, thread.verdicts_generation, [this](std::string_view name) {
            return StringCache::Entry{1, is_step_name(name) ? 1u : 0u};  // id 1: cache the verdict
          });
      return {0, entry.tag != 0};
    }
    const uint32_t generation = session_.string_generation();
    if (generation != thread.session_generation) {
      thread.session_generation = generation;
      thread.names_generation = ++caches->epoch;
    }
    const StringCache::Entry entry =
        caches->names.find_or_add(text, thread.names_generation, [this](std::string_view name) {
          return StringCache::Entry{session_.intern(name), count_steps_ && is_step_name(name) ? 1u : 0u};
        });
    return {entry.id, entry.tag != 0};
  } catch (...) {  // the cache's first allocation on this thread failed: go uncached
    return {want_id ? session_.intern(text) : 0, count_steps_ && is_step_name(text)};
  }
}

NvtxRecorder::Name NvtxRecorder::resolve(ThreadState& thread, const NvtxMessage& message,
                                         bool want_id) noexcept {
  switch (message.type) {
    case NvtxMessage::Type::kAscii:
      return message.ascii == nullptr ? Name{} : lookup(thread, message.ascii, want_id);
    case NvtxMessage::Type::kWide: {
      char utf8[kMaxWideNameBytes];
      const size_t length = wide_to_utf8(message.wide, utf8, sizeof(utf8));
      return lookup(thread, std::string_view(utf8, length), want_id);
    }
    case NvtxMessage::Type::kRegistered: {
      // The handle is ours; the cast only drops the const NVTX's signature puts on it.
      auto* text = const_cast<NvtxRegisteredString*>(message.registered);
      if (text == nullptr) return {};
      return {want_id ? cached_id(text->id, text->text) : 0, text->step};
    }
    case NvtxMessage::Type::kNone: break;
  }
  return {};
}

uint32_t NvtxRecorder::cached_id(std::atomic<uint64_t>& slot, std::string_view text) noexcept {
  const uint32_t generation = session_.string_generation();
  // Acquire pairs with the release below: another thread's record may name the id only once the
  // string is in the writer's table.
  const uint64_t known = slot.load(std::memory_order_acquire);
  if (static_cast<uint32_t>(known >> 32) == generation && static_cast<uint32_t>(known) != 0) {
    return static_cast<uint32_t>(known);
  }
  const uint32_t id = session_.intern(text);
  if (id != 0) slot.store((uint64_t{generation} << 32) | id, std::memory_order_release);
  return id;
}

uint32_t NvtxRecorder::domain_id(NvtxDomain* domain) noexcept {
  return domain == nullptr ? 0 : cached_id(domain->name_id, domain->name);
}

void NvtxRecorder::append(ThreadState& thread, trace::ThreadBuffer* buffer, NvtxEvent event,
                          NvtxDomain* domain, uint32_t name_id, uint64_t range_id,
                          const NvtxAttributes* attributes) noexcept {
  auto record = trace::make_record<trace::NvtxRecord>();
  record.event = static_cast<uint8_t>(event);
  record.timestamp_ns = Session::now_ns();
  record.range_id = range_id;
  record.name_id = name_id;
  record.domain_id = domain_id(domain);
  // The generation changes in a forked child, whose threads have ids of their own.
  const uint32_t generation = session_.string_generation();
  if (thread.thread_id_generation != generation) {
    thread.thread_id = Session::thread_id();
    thread.thread_id_generation = generation;
  }
  record.thread_id = thread.thread_id;
  if (attributes != nullptr) {
    record.category = attributes->category;
    record.color = attributes->color;
  }
  buffer->append(record);
}

trace::ThreadBuffer* NvtxRecorder::buffer_to_open_range() noexcept {
  if (!record_) return nullptr;
  // Opening a range is what makes a process that uses only NVTX write a trace; once it is open,
  // a thread outside the capture window needs no buffer.
  if (!session_.capturing() && session_.is_open()) return nullptr;
  return session_.thread_buffer(Activation::kNvtx);
}

trace::ThreadBuffer* NvtxRecorder::buffer_to_record() noexcept {
  if (!record_ || !session_.capturing()) return nullptr;
  return session_.thread_buffer_if_open();
}

int NvtxRecorder::push(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept {
  if (domain != nullptr && domain->skipped) return 0;
  ThreadState& thread = thread_state();
  trace::ThreadBuffer* buffer = buffer_to_open_range();
  const bool named = buffer != nullptr && session_.capturing();
  Name name = resolve(thread, attributes.message, named);

  int level = 0;
  for (uint32_t i = thread.tracked; i-- > 0;) {
    if (thread.stack[i].domain == domain) {
      level = thread.stack[i].level + 1;
      break;
    }
  }
  if (thread.untracked > 0 || thread.tracked == kMaxTrackedDepth) {
    ++thread.untracked;
    level = static_cast<int>(thread.tracked + thread.untracked - 1);
  } else {
    thread.stack[thread.tracked++] = OpenPush{domain, level, name.step};
    // Before the record: the push that opens the first captured step belongs to the capture.
    if (name.step && thread.open_steps++ == 0) session_.step_began();
  }
  if (!named) {  // nothing to record, unless this very push opened the capture window
    buffer = buffer_to_record();
    if (buffer == nullptr) return level;
    name = resolve(thread, attributes.message, true);
  }
  append(thread, buffer, NvtxEvent::kPush, domain, name.id, 0, &attributes);
  return level;
}

int NvtxRecorder::pop(NvtxDomain* domain) noexcept {
  if (domain != nullptr && domain->skipped) return 0;
  ThreadState& thread = thread_state();
  int level = -1;
  bool closed_step = false;
  if (thread.untracked > 0) {
    level = static_cast<int>(thread.tracked + thread.untracked - 1);
    --thread.untracked;
  } else {
    // The innermost open range of this domain; other domains' ranges may sit above it.
    for (uint32_t i = thread.tracked; i-- > 0;) {
      if (thread.stack[i].domain != domain) continue;
      level = thread.stack[i].level;
      closed_step = thread.stack[i].step;
      for (uint32_t j = i + 1; j < thread.tracked; ++j) thread.stack[j - 1] = thread.stack[j];
      --thread.tracked;
      break;
    }
  }
  if (trace::ThreadBuffer* buffer = buffer_to_record(); buffer != nullptr) {
    append(thread, buffer, NvtxEvent::kPop, domain, 0, 0, nullptr);
  }
  // After the record: the pop that closes the last captured step belongs to the capture.
  if (closed_step && --thread.open_steps == 0) session_.step_ended();
  return level;
}

uint64_t NvtxRecorder::start(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept {
  const uint64_t range_id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (domain != nullptr && domain->skipped) return range_id | kSkippedRangeBit;
  ThreadState& thread = thread_state();
  trace::ThreadBuffer* buffer = buffer_to_open_range();
  const bool named = buffer != nullptr && session_.capturing();
  Name name = resolve(thread, attributes.message, named);
  // Start/end ranges may end on another thread: their steps are counted process-wide.
  if (name.step && track_step_range(range_id) &&
      open_step_range_count_.fetch_add(1, std::memory_order_acq_rel) == 0) {
    session_.step_began();
  }
  if (!named) {
    buffer = buffer_to_record();
    if (buffer == nullptr) return range_id;
    name = resolve(thread, attributes.message, true);
  }
  append(thread, buffer, NvtxEvent::kStart, domain, name.id, range_id, &attributes);
  return range_id;
}

void NvtxRecorder::end(NvtxDomain* domain, uint64_t range_id) noexcept {
  if ((range_id & kSkippedRangeBit) != 0 || (domain != nullptr && domain->skipped)) return;
  const bool closed_step =
      open_step_range_count_.load(std::memory_order_acquire) > 0 && untrack_step_range(range_id);
  if (trace::ThreadBuffer* buffer = buffer_to_record(); buffer != nullptr) {
    append(thread_state(), buffer, NvtxEvent::kEnd, domain, 0, range_id, nullptr);
  }
  if (closed_step && open_step_range_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    session_.step_ended();
  }
}

void NvtxRecorder::mark(NvtxDomain* domain, const NvtxAttributes& attributes) noexcept {
  if (domain != nullptr && domain->skipped) return;
  // A mark alone does not make a process write a trace.
  trace::ThreadBuffer* buffer = buffer_to_record();
  if (buffer == nullptr) return;
  ThreadState& thread = thread_state();
  const Name name = resolve(thread, attributes.message, true);
  append(thread, buffer, NvtxEvent::kMark, domain, name.id, 0, &attributes);
}

bool NvtxRecorder::track_step_range(uint64_t range_id) noexcept {
  for (std::atomic<uint64_t>& slot : open_step_ranges_) {
    uint64_t empty = 0;
    if (slot.compare_exchange_strong(empty, range_id, std::memory_order_acq_rel)) return true;
  }
  return false;  // too many open at once: this one is not counted as a step
}

bool NvtxRecorder::untrack_step_range(uint64_t range_id) noexcept {
  for (std::atomic<uint64_t>& slot : open_step_ranges_) {
    uint64_t expected = range_id;
    if (slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return true;
  }
  return false;
}

NvtxDomain* NvtxRecorder::create_domain(std::string_view name) noexcept {
  try {
    auto domain = std::make_unique<NvtxDomain>();
    domain->name.assign(name);
    domain->skipped = name == kNcclDomainName && !keep_nccl_domain_;
    std::lock_guard lock(handles_mutex_);
    domain->next = domains_;
    domains_ = domain.get();
    return domain.release();
  } catch (...) {
    return nullptr;
  }
}

NvtxDomain* NvtxRecorder::create_domain(const wchar_t* name) noexcept {
  char utf8[kMaxWideNameBytes];
  return create_domain(std::string_view(utf8, wide_to_utf8(name, utf8, sizeof(utf8))));
}

void NvtxRecorder::destroy_domain(NvtxDomain* domain) noexcept {
  if (domain == nullptr) return;
  std::lock_guard lock(handles_mutex_);
  for (NvtxDomain** link = &domains_; *link != nullptr; link = &(*link)->next) {
    if (*link != domain) continue;
    *link = domain->next;
    free_strings(domain->strings);
    delete domain;
    return;
  }
}

NvtxRegisteredString* NvtxRecorder::register_string(NvtxDomain* domain, std::string_view text) noexcept {
  try {
    auto registered = std::make_unique<NvtxRegisteredString>();
    registered->text.assign(text);
    registered->step = count_steps_ && is_step_name(text);
    std::lock_guard lock(handles_mutex_);
    NvtxRegisteredString*& owner = domain != nullptr ? domain->strings : default_domain_strings_;
    registered->next = owner;
    owner = registered.get();
    return registered.release();
  } catch (...) {
    return nullptr;
  }
}

NvtxRegisteredString* NvtxRecorder::register_string(NvtxDomain* domain, const wchar_t* text) noexcept {
  char utf8[kMaxWideNameBytes];
  return register_string(domain, std::string_view(utf8, wide_to_utf8(text, utf8, sizeof(utf8))));
}

size_t wide_to_utf8(const wchar_t* text, char* out, size_t size) noexcept {
  static_assert(sizeof(wchar_t) == 4, "NVTX wide strings are UTF-32 on this platform");
  if (text == nullptr) return 0;
  size_t used = 0;
  for (; *text != 0; ++text) {
    auto code = std::bit_cast<uint32_t>(*text);  // a negative wchar_t is above 0x10FFFF here
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) code = 0xFFFD;
    char bytes[4];
    size_t length = 0;
    if (code < 0x80) {
      bytes[length++] = static_cast<char>(code);
    } else if (code < 0x800) {
      bytes[length++] = static_cast<char>(0xC0 | (code >> 6));
      bytes[length++] = static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      bytes[length++] = static_cast<char>(0xE0 | (code >> 12));
      bytes[length++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      bytes[length++] = static_cast<char>(0x80 | (code & 0x3F));
    } else {
      bytes[length++] = static_cast<char>(0xF0 | (code >> 18));
      bytes[length++] = static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      bytes[length++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      bytes[length++] = static_cast<char>(0x80 | (code & 0x3F));
    }
    if (used + length > size) break;
    std::memcpy(out + used, bytes, length);
    used += length;
  }
  return used;
}

}  // namespace pipescope::inject
