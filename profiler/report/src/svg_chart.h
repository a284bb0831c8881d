// Small inline-SVG charts for the HTML report: stacked horizontal bars, a line/area chart over
// time and a lane timeline. Pure string building; every text is escaped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipescope::report {

std::string escape_html(const std::string& text);

struct BarSegment {
  double value = 0;
  std::string color;
};
struct BarRow {
  std::string label;
  std::vector<BarSegment> segments;
  std::string note;  // printed right of the bar
};
struct Legend {
  std::string label;
  std::string color;
};

// Rows of stacked bars scaled to the largest row total (or to `scale` when > 0).
std::string stacked_bars(const std::vector<BarRow>& rows, const std::vector<Legend>& legend,
                         double scale = 0);

struct Line {
  std::string label;
  std::string color;
  std::vector<double> values;  // evenly spaced from x0
};
// Lines over time; x in seconds from `x0_s` with `dx_s` per point, y formatted with `y_unit`.
std::string line_chart(const std::vector<Line>& lines, double x0_s, double dx_s, double y_max,
                       const std::string& y_unit, bool area = false);

struct LaneSpan {
  double start_s = 0;
  double end_s = 0;
  std::string color;
  std::string title;
};
struct Lane {
  std::string label;
  std::vector<LaneSpan> spans;
};
std::string lane_timeline(const std::vector<Lane>& lanes, const std::vector<Legend>& legend);

}  // namespace pipescope::report
