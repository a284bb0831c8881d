// A small inline-SVG chart: a log-scale x axis, a linear y axis, lines and point series.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pipescope::calibrate {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x > 0, y)
  bool line = true;                               // false: markers only
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
};

// An <svg> element; series without points are left out, a plot without any says so.
std::string svg_plot(const Plot& plot);

// `text` safe inside HTML or SVG text and attribute values: <, >, & and " as entities.
std::string escape_markup(const std::string& text);

}  // namespace pipescope::calibrate
