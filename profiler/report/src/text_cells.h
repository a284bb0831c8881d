// Cell formatting for the report's tables and charts: units, padding, escaping.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace pipescope::report {

inline double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }

inline std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}
inline std::string pct(double fraction) { return fixed(fraction * 100, 0) + "%"; }
// Figures the traces may not show: "-" when not measured.
inline std::string pct(const std::optional<double>& fraction) { return fraction ? pct(*fraction) : "-"; }
inline std::string ms_cell(const std::optional<int64_t>& ns, int decimals) {
  return ns ? fixed(static_cast<double>(*ns) / 1e6, decimals) : "-";
}
inline std::string gib_cell(const std::optional<uint64_t>& bytes, int decimals) {
  return bytes ? fixed(gib(*bytes), decimals) : "-";
}
// A plan figure's error (PlanFigure::error_percent), "+12%"; "-" without a measurement.
inline std::string error_pct(const std::optional<double>& percent) {
  if (!percent) return "-";
  return (*percent >= 0 ? "+" : "") + fixed(*percent, 0) + "%";
}
// A figure the traces may not show, scaled for display: "-" when not measured.
inline std::string scaled(const std::optional<double>& value, double factor, int decimals) {
  return value ? fixed(*value * factor, decimals) : "-";
}
inline std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}
inline std::string right(const std::string& text, size_t width) {
  return text.size() >= width ? " " + text : std::string(width - text.size(), ' ') + text;
}
inline std::string left(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}
inline std::string shorten(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}
// "3,6 (no trace)": ranks, marked where they left no trace; "?" where no trace tells which.
inline std::string rank_list(const std::vector<int32_t>& ranks, const std::vector<int32_t>& untraced = {}) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 16) return text + ", ... (" + std::to_string(ranks.size()) + " ranks)";
    text += (i ? "," : "") + (ranks[i] >= 0 ? std::to_string(ranks[i]) : std::string("?"));
    for (int32_t u : untraced)
      if (u == ranks[i]) {
        text += " (no trace)";
        break;
      }
  }
  return text.empty() ? "none" : text;
}

}  // namespace pipescope::report
