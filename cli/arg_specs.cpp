#include "arg_specs.h"

#include "pipescope/common/range_syntax.h"
#include "pipescope/trace/capture_kinds.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string_view>

namespace pipescope::cli {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

bool parse_count(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= 0;
}

// The whole text is one finite number (no NaN, no infinity).
bool parse_finite(std::string_view text, double& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(out);
}

}  // namespace

Expected<int64_t> parse_whole_number(const std::string& text, int64_t minimum) {
  int64_t value = 0;
  if (!parse_count(text, value) || value < minimum) {
    return Error{"'" + text + "' is not a whole number of at least " + std::to_string(minimum)};
  }
  return value;
}

Expected<double> parse_number_in_range(const std::string& text, double minimum, double maximum) {
  double value = 0;
  if (!parse_finite(text, value) || value < minimum || value > maximum) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g", minimum, maximum);
    return Error{"'" + text + "' is not a number from " + range};
  }
  return value;
}

Expected<std::vector<RankRange>> parse_rank_spec(const std::string& text) {
  std::vector<RankRange> ranges;
  for (std::string_view part : split(text, ',')) {
    const size_t dash = part.find('-');
    RankRange r{};
    bool ok = false;
    if (dash == std::string_view::npos) {
      ok = parse_count(part, r.first);
      r.last = r.first;
    } else {
      ok = parse_count(part.substr(0, dash), r.first) && parse_count(part.substr(dash + 1), r.last) &&
           r.first <= r.last;
    }
    if (!ok) {
      return Error{"'" + text + "' is not a rank list like 0-7,12,16-31 (bad part '" + std::string(part) +
                   "')"};
    }
    ranges.push_back(r);
  }
  return ranges;
}

Expected<TimeWindow> parse_time_window(const std::string& text) {
  const auto window = parse_seconds_window(text);
  if (!window) return Error{"'" + text + "' is not a window START:END in seconds with START < END"};
  return TimeWindow{window->start_s, window->end_s.value_or(INFINITY)};
}

Expected<StepRange> parse_step_range(const std::string& text) {
  const auto span = parse_step_span(text);
  if (!span) return Error{"'" + text + "' is not a step range N:M with N <= M"};
  return StepRange{span->first, span->last};
}

Expected<LayoutSpec> parse_layout_spec(const std::string& text) {
  LayoutSpec layout;
  std::array<bool, 3> seen{};
  for (std::string_view part : split(text, ',')) {
    const size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    int64_t value = 0;
    const int index = key == "tp" ? 0 : key == "pp" ? 1 : key == "dp" ? 2 : -1;
    if (eq == std::string_view::npos || index < 0 || !parse_count(part.substr(eq + 1), value) || value < 1 ||
        seen[index]) {
      return Error{"'" + text + "' is not a layout like tp=8,pp=4,dp=2 (bad part '" + std::string(part) +
                   "')"};
    }
    seen[index] = true;
    (index == 0 ? layout.tp : index == 1 ? layout.pp : layout.dp) = value;
  }
  return layout;
}

Expected<std::vector<std::string>> parse_kind_list(const std::string& text) {
  auto kinds = trace::parse_capture_kinds(text);
  if (!kinds.ok()) return kinds.error();
  if (text == "all" || text == "default") return std::vector<std::string>{text};
  std::vector<std::string> names;
  for (std::string_view part : split(text, ',')) names.emplace_back(part);
  return names;
}

Expected<std::string> parse_regex(const std::string& text) {
  try {
    std::regex compiled(text, std::regex::ECMAScript | std::regex::icase);
  } catch (const std::regex_error& e) {
    return Error{"'" + text + "' is not a valid regular expression (" + e.what() + ")"};
  }
  return text;
}

}  // namespace pipescope::cli
