// The two range syntaxes the library's environment and the command line share
// (docs/design.md): a time window "START:END" in seconds and a step range "N:M". One parser each,
// so that PIPESCOPE_WINDOW / PIPESCOPE_STEPS and --window / --steps accept exactly the same text.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipescope {

struct SecondsWindow {
  double start_s = 0;
  std::optional<double> end_s;  // empty: open-ended
};

struct StepSpan {
  int64_t first = 0;
  int64_t last = 0;  // inclusive
};

namespace range_syntax_detail {

// The whole text is one finite number >= 0 (no sign, NaN or infinity).
inline std::optional<double> seconds(std::string_view text) {
  double value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0)
    return std::nullopt;
  return value;
}

inline std::optional<int64_t> count(std::string_view text) {
  int64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace range_syntax_detail

// "START:END" in seconds: either side may be empty (open), not both; START < END when both given.
inline std::optional<SecondsWindow> parse_seconds_window(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
    return std::nullopt;
  const std::string_view start = text.substr(0, colon);
  const std::string_view end = text.substr(colon + 1);
  if (start.empty() && end.empty()) return std::nullopt;
  SecondsWindow window;
  if (!start.empty()) {
    const auto s = range_syntax_detail::seconds(start);
    if (!s) return std::nullopt;
    window.start_s = *s;
  }
  if (!end.empty()) {
    window.end_s = range_syntax_detail::seconds(end);
    if (!window.end_s || *window.end_s <= window.start_s) return std::nullopt;
  }
  return window;
}

// "N:M", 0 <= N <= M.
inline std::optional<StepSpan> parse_step_span(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto first = range_syntax_detail::count(text.substr(0, colon));
  const auto last = range_syntax_detail::count(text.substr(colon + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return StepSpan{*first, *last};
}

}  // namespace pipescope
