#include "config.h"

#include "pipescope/common/range_syntax.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <regex>
#include <string_view>

namespace pipescope::inject {
namespace {

constexpr int64_t kMaxFlushMs = 3'600'000;
constexpr int64_t kMaxBufferMb = 4096;
constexpr int64_t kMaxCuptiBufferMb = 256;
constexpr int64_t kMaxKernelSampleSteps = 1'000'000;

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// The shared syntaxes (range_syntax.h), in this library's own types.
std::optional<CaptureWindow> parse_window(std::string_view text) {
  const auto window = parse_seconds_window(text);
  if (!window) return std::nullopt;
  CaptureWindow out;
  out.start_s = window->start_s;
  out.end_s = window->end_s;
  return out;
}

std::optional<StepWindow> parse_steps(std::string_view text) {
  const auto span = parse_step_span(text);
  if (!span) return std::nullopt;
  return StepWindow{span->first, span->last};
}

bool regex_compiles(const std::string& pattern) {
  try {
    std::regex compiled(pattern, std::regex::ECMAScript | std::regex::icase);
    return true;
  } catch (const std::regex_error&) {
    return false;
  }
}

class Reader {
 public:
  Reader(const EnvLookup& env, std::vector<std::string>& warnings) : env_(env), warnings_(warnings) {}

  // The variable's value, or nullptr when unset (an empty value counts as unset).
  const char* get(const char* name) const {
    const char* value = env_(name);
    return value != nullptr && value[0] != '\0' ? value : nullptr;
  }

  void reject(const char* name, const char* value, const std::string& expected, const std::string& fallback) {
    warnings_.push_back(std::string(name) + "='" + value + "' is not " + expected + "; using " + fallback);
  }

  // A whole number in [low, high], or nothing (with a warning naming `fallback`).
  std::optional<int64_t> whole(const char* name, int64_t low, int64_t high, const std::string& fallback) {
    const char* v = get(name);
    if (v == nullptr) return std::nullopt;
    const auto n = parse_int(v);
    if (n && *n >= low && *n <= high) return n;
    reject(name, v, "a whole number from " + std::to_string(low) + " to " + std::to_string(high), fallback);
    return std::nullopt;
  }

  // 0 or 1, or nothing (with a warning naming `fallback`).
  std::optional<bool> flag(const char* name, const std::string& fallback) {
    const char* v = get(name);
    if (v == nullptr) return std::nullopt;
    const std::string_view s(v);
    if (s == "0" || s == "1") return s == "1";
    reject(name, v, "0 or 1", fallback);
    return std::nullopt;
  }

  // One of two words, true for `yes`; nothing (with a warning) otherwise.
  std::optional<bool> choice(const char* name, const char* yes, const char* no, const std::string& fallback) {
    const char* v = get(name);
    if (v == nullptr) return std::nullopt;
    const std::string_view s(v);
    if (s == yes || s == no) return s == yes;
    reject(name, v, std::string(yes) + " or " + no, fallback);
    return std::nullopt;
  }

 private:
  const EnvLookup& env_;
  std::vector<std::string>& warnings_;
};

void read_cupti_tuning(Reader& r, CuptiTuning& t) {
  if (auto mb = r.whole("PIPESCOPE_CUPTI_BUFFER_MB", 1, kMaxCuptiBufferMb, "8"))
    t.activity_buffer_bytes = static_cast<size_t>(*mb) << 20;
  if (auto mb = r.whole("PIPESCOPE_CUPTI_DEVICE_BUFFER_MB", 1, kMaxCuptiBufferMb, "CUPTI's default"))
    t.device_buffer_bytes = static_cast<size_t>(*mb) << 20;
  if (auto n = r.whole("PIPESCOPE_CUPTI_DEVICE_BUFFERS", 1, 64, "CUPTI's default"))
    t.device_buffers_preallocated = static_cast<size_t>(*n);
  t.host_pinned_device_buffers = r.flag("PIPESCOPE_CUPTI_HOST_PINNED", "CUPTI's default");
  t.per_thread_buffers = r.flag("PIPESCOPE_CUPTI_PER_THREAD_BUFFERS", "CUPTI's default");
  if (auto on = r.flag("PIPESCOPE_CUPTI_LATENCY_TIMESTAMPS", "0")) t.latency_timestamps = *on;
  if (auto callback = r.choice("PIPESCOPE_CUPTI_CLOCK", "callback", "offset", "callback"))
    t.clock_callback = *callback;
  if (auto ms = r.whole("PIPESCOPE_CUPTI_FLUSH_PERIOD_MS", 0, kMaxFlushMs, "0 (CUPTI's heuristics)"))
    t.flush_period_ms = static_cast<uint32_t>(*ms);
  if (auto on = r.flag("PIPESCOPE_CUPTI_ALL_SYNC_RECORDS", "0")) t.all_sync_records = *on;
  if (auto launches = r.choice("PIPESCOPE_CUPTI_NCCL_API", "launches", "all", "launches"))
    t.nccl_launch_api_only = *launches;
  if (auto on = r.flag("PIPESCOPE_CUPTI_ZEROED_BUFFERS", "1")) t.zeroed_buffers = *on;
  if (auto thread = r.choice("PIPESCOPE_CUPTI_CONVERT", "thread", "callback", "thread"))
    t.convert_on_own_thread = *thread;
}

}  // namespace

ConfigResult read_config(const EnvLookup& env) {
  ConfigResult result;
  InjectConfig& c = result.config;
  Reader r(env, result.warnings);

  if (const char* v = r.get("PIPESCOPE_OUTPUT")) c.output_dir = v;
  if (const char* v = r.get("PIPESCOPE_KINDS")) {
    auto kinds = trace::parse_capture_kinds(v);
    if (kinds.ok()) {
      c.kinds = *kinds;
    } else {
      r.reject("PIPESCOPE_KINDS", v, "a list of kinds (" + kinds.error().message + ")", "the default kinds");
    }
  }
  if (const char* v = r.get("PIPESCOPE_FLUSH_MS")) {
    auto ms = parse_int(v);
    if (ms && *ms >= 1 && *ms <= kMaxFlushMs) {
      c.flush_ms = static_cast<uint32_t>(*ms);
    } else {
      r.reject("PIPESCOPE_FLUSH_MS", v, "a whole number of milliseconds from 1 to 3600000", "1000");
    }
  }
  if (const char* v = r.get("PIPESCOPE_BUFFER_MB")) {
    auto mb = parse_int(v);
    if (mb && *mb >= 1 && *mb <= kMaxBufferMb) {
      // Rings are powers of two: round up.
      c.buffer_bytes = std::bit_ceil(static_cast<size_t>(*mb) << 20);
    } else {
      r.reject("PIPESCOPE_BUFFER_MB", v, "a whole number of MiB from 1 to 4096", "4");
    }
  }
  if (const char* v = r.get("PIPESCOPE_WINDOW")) {
    c.window = parse_window(v);
    if (!c.window) r.reject("PIPESCOPE_WINDOW", v, "START:END seconds with START < END", "the whole run");
  }
  if (const char* v = r.get("PIPESCOPE_STEPS")) {
    c.steps = parse_steps(v);
    if (!c.steps) r.reject("PIPESCOPE_STEPS", v, "N:M with 0 <= N <= M", "every step");
  }
  if (const char* v = r.get("PIPESCOPE_NVTX_STEP")) {
    if (regex_compiles(v)) {
      c.nvtx_step_regex = v;
    } else {
      r.reject("PIPESCOPE_NVTX_STEP", v, "a valid regular expression", "'" + c.nvtx_step_regex + "'");
    }
  }
  if (const char* v = r.get("PIPESCOPE_STAGE")) {
    const auto stage = parse_int(v);
    if (stage && *stage >= 0 && *stage < (int64_t{1} << 20)) {
      c.declared_stage = static_cast<int32_t>(*stage);
    } else {
      r.reject("PIPESCOPE_STAGE", v, "a pipeline stage number >= 0", "no declared stage");
    }
  }
  if (c.window && c.steps) {
    result.warnings.emplace_back("PIPESCOPE_WINDOW and PIPESCOPE_STEPS are both set; using PIPESCOPE_STEPS");
    c.window.reset();
  }
  if (auto n = r.whole("PIPESCOPE_KERNEL_SAMPLE", 1, kMaxKernelSampleSteps, "1 (every step)"))
    c.kernel_sample_steps = static_cast<uint32_t>(*n);
  read_cupti_tuning(r, c.cupti);
  if (auto on = r.flag("PIPESCOPE_COMPRESS", "1")) c.compress = *on;
  if (auto on = r.flag("PIPESCOPE_TSC", "1")) c.read_tsc = *on;
  if (auto on = r.flag("PIPESCOPE_DISABLE", "0")) c.disabled = *on;
  return result;
}

}  // namespace pipescope::inject
