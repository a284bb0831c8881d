#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace pipescope::calibrate {
namespace {

constexpr double kWidth = 640, kHeight = 320, kLeft = 70, kRight = 170, kTop = 30, kBottom = 45;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

std::string tick(double v) {
  char text[32];
  const double a = std::abs(v);
  if (a >= 1e9) {
    std::snprintf(text, sizeof(text), "%gG", v / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(text, sizeof(text), "%gM", v / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(text, sizeof(text), "%gk", v / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%g", v);
  }
  return text;
}

}  // namespace

std::string escape_markup(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string svg_plot(const Plot& plot) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = 0, y1 = 0;
  for (const auto& s : plot.series) {
    for (auto [x, y] : s.points) {
      if (!(x > 0) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y1 = std::max(y1, y);
    }
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
                    num(kHeight) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  svg += "<text x=\"" + num(kLeft) + "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" +
         escape_markup(plot.title) + "</text>";
  if (x1 <= 0 || !std::isfinite(x0))
    return svg + "<text x=\"" + num(kLeft) + "\" y=\"60\">no data</text></svg>";
  if (x1 <= x0) x1 = x0 * 10;
  if (y1 <= 0) y1 = 1;
  y1 *= 1.05;
  const double lx0 = std::log10(x0), lx1 = std::log10(x1);
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (std::log10(x) - lx0) / (lx1 - lx0) * w; };
  auto py = [&](double y) { return kTop + h - y / y1 * h; };
  svg += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(w) + "\" height=\"" +
         num(h) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double d = std::pow(10, std::floor(lx0)); d <= x1 * 1.0001; d *= 10) {
    if (d < x0 * 0.9999) continue;
    svg += "<line x1=\"" + num(px(d)) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(px(d)) + "\" y2=\"" +
           num(kTop + h) + "\" stroke=\"#eee\"/><text x=\"" + num(px(d)) + "\" y=\"" + num(kTop + h + 14) +
           "\" text-anchor=\"middle\">" + tick(d) + "</text>";
  }
  for (int i = 0; i <= 4; ++i) {
    const double y = y1 * i / 4;
    svg += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" + tick(y) +
           "</text>";
  }
  svg += "<text x=\"" + num(kLeft + w / 2) + "\" y=\"" + num(kHeight - 8) + "\" text-anchor=\"middle\">" +
         escape_markup(plot.x_label) + "</text>";
  svg += "<text x=\"14\" y=\"" + num(kTop + h / 2) + "\" transform=\"rotate(-90 14 " + num(kTop + h / 2) +
         ")\" text-anchor=\"middle\">" + escape_markup(plot.y_label) + "</text>";
  int legend = 0;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    if (s.points.empty()) continue;
    const std::string color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    auto points = s.points;
    std::sort(points.begin(), points.end());
    if (s.line) {
      std::string path;
      for (auto [x, y] : points) {
        if (!(x > 0) || !std::isfinite(y)) continue;
        path += (path.empty() ? "M" : " L") + num(px(x)) + " " + num(py(y));
      }
      svg += "<path d=\"";
      svg += path;
      svg += "\" fill=\"none\" stroke=\"";
      svg += color;
      svg += "\" stroke-width=\"1.5\"/>";
    } else {
      for (auto [x, y] : points) {
        if (!(x > 0) || !std::isfinite(y)) continue;
        svg +=
            "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"2.5\" fill=\"" + color + "\"/>";
      }
    }
    const double ly = kTop + 10 + 16 * legend++;
    svg += "<rect x=\"" + num(kWidth - kRight + 10) + "\" y=\"" + num(ly - 8) +
           "\" width=\"10\" height=\"10\" fill=\"" + color + "\"/><text x=\"" + num(kWidth - kRight + 24) +
           "\" y=\"" + num(ly + 1) + "\">" + escape_markup(s.name) + "</text>";
  }
  return svg + "</svg>";
}

}  // namespace pipescope::calibrate
