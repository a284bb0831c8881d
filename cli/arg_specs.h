// Parsers for the value formats of docs/design.md's shared vocabulary, used as CLI validators now
// and by the commands that consume the values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::cli {

struct RankRange {
  int64_t first;
  int64_t last;  // inclusive
};
// "0-7,12,16-31": ranges in any order; each first <= last, every rank >= 0.
Expected<std::vector<RankRange>> parse_rank_spec(const std::string& text);

struct TimeWindow {
  double start_s;
  double end_s;
};
// "START:END" in seconds, 0 <= START < END; either side may be empty (open).
Expected<TimeWindow> parse_time_window(const std::string& text);

struct StepRange {
  int64_t first;
  int64_t last;  // inclusive
};
// "N:M", 0 <= N <= M.
Expected<StepRange> parse_step_range(const std::string& text);

struct LayoutSpec {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
};
// "tp=T,pp=P,dp=D" in any order, each at most once, each >= 1; missing ones are 1.
Expected<LayoutSpec> parse_layout_spec(const std::string& text);

// "kernel,nccl,..." drawn from docs/design.md's kinds (and nvtx-nccl); "all" and "default" alone.
Expected<std::vector<std::string>> parse_kind_list(const std::string& text);

// A regular expression (ECMAScript, case-insensitive) as the NVTX conventions use them.
Expected<std::string> parse_regex(const std::string& text);

// A whole number >= minimum (1 for counts, 0 for indices and attempts).
Expected<int64_t> parse_whole_number(const std::string& text, int64_t minimum);

// A finite decimal number in [minimum, maximum]: CLI11's Range lets NaN through (every comparison
// with it is false), and a NaN bandwidth or budget would flow into every figure of a plan.
Expected<double> parse_number_in_range(const std::string& text, double minimum, double maximum);

// Wraps a parser as a CLI11 validator body: empty string when valid, the message otherwise.
template <class Parser>
auto validator_of(Parser parse) {
  return [parse](std::string& text) -> std::string {
    auto parsed = parse(text);
    return parsed.ok() ? std::string() : parsed.error().message;
  };
}

inline auto whole_number_at_least(int64_t minimum) {
  return validator_of([minimum](const std::string& text) { return parse_whole_number(text, minimum); });
}

inline auto number_in_range(double minimum, double maximum) {
  return validator_of(
      [minimum, maximum](const std::string& text) { return parse_number_in_range(text, minimum, maximum); });
}

}  // namespace pipescope::cli
