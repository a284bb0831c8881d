#include "svg_chart.h"

#include <algorithm>
#include <cstdio>

namespace pipescope::report {
namespace {

constexpr int kLabelWidth = 110;
constexpr int kPlotWidth = 640;
constexpr int kNoteWidth = 150;

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

std::string svg_open(int width, int height) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"11\">";
}

std::string text_at(double x, double y, const std::string& text, const char* anchor = "start") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\">" +
         escape_html(text) + "</text>";
}

std::string rect(double x, double y, double w, double h, const std::string& color,
                 const std::string& title = "") {
  std::string s = "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 0.0)) +
                  "\" height=\"" + num(h) + "\" fill=\"" + escape_html(color) + "\">";
  if (!title.empty()) s += "<title>" + escape_html(title) + "</title>";
  return s + "</rect>";
}

std::string legend_row(const std::vector<Legend>& legend, double y) {
  std::string s;
  double x = kLabelWidth;
  for (const Legend& l : legend) {
    s += rect(x, y - 9, 10, 10, l.color) + text_at(x + 14, y, l.label);
    x += 24 + 7.0 * static_cast<double>(l.label.size());
  }
  return s;
}

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string stacked_bars(const std::vector<BarRow>& rows, const std::vector<Legend>& legend, double scale) {
  constexpr int kRow = 16;
  if (scale <= 0) {
    for (const BarRow& r : rows) {
      double total = 0;
      for (const BarSegment& s : r.segments) total += s.value;
      scale = std::max(scale, total);
    }
  }
  if (scale <= 0) scale = 1;
  const int height = static_cast<int>(rows.size()) * kRow + 30;
  std::string s = svg_open(kLabelWidth + kPlotWidth + kNoteWidth, height);
  double y = 4;
  for (const BarRow& r : rows) {
    s += text_at(kLabelWidth - 6, y + 11, r.label, "end");
    double x = kLabelWidth;
    for (const BarSegment& seg : r.segments) {
      const double w = seg.value / scale * kPlotWidth;
      s += rect(x, y, w, kRow - 3, seg.color);
      x += w;
    }
    s += text_at(x + 6, y + 11, r.note);
    y += kRow;
  }
  s += legend_row(legend, y + 18);
  return s + "</svg>";
}

std::string line_chart(const std::vector<Line>& lines, double x0_s, double dx_s, double y_max,
                       const std::string& y_unit, bool area) {
  constexpr int kHeight = 180;
  constexpr int kTop = 10;
  size_t points = 0;
  for (const Line& l : lines) points = std::max(points, l.values.size());
  if (y_max <= 0) {
    for (const Line& l : lines)
      for (double v : l.values) y_max = std::max(y_max, v);
  }
  if (y_max <= 0) y_max = 1;
  std::string s = svg_open(kLabelWidth + kPlotWidth + kNoteWidth, kHeight + 50);
  s += "<line x1=\"" + num(kLabelWidth) + "\" y1=\"" + num(kTop + kHeight) + "\" x2=\"" +
       num(kLabelWidth + kPlotWidth) + "\" y2=\"" + num(kTop + kHeight) + "\" stroke=\"#888\"/>";
  s += text_at(kLabelWidth - 6, kTop + 8, num(y_max) + " " + y_unit, "end");
  s += text_at(kLabelWidth - 6, kTop + kHeight, "0", "end");
  const double span_s = dx_s * static_cast<double>(points > 0 ? points - 1 : 0);
  s += text_at(kLabelWidth, kTop + kHeight + 14, num(x0_s) + " s");
  s += text_at(kLabelWidth + kPlotWidth, kTop + kHeight + 14, num(x0_s + span_s) + " s", "end");
  for (const Line& l : lines) {
    if (l.values.empty()) continue;
    std::string path;
    for (size_t i = 0; i < l.values.size(); ++i) {
      const double x =
          kLabelWidth +
          (points > 1 ? static_cast<double>(i) / static_cast<double>(points - 1) : 0) * kPlotWidth;
      const double y = kTop + kHeight - std::clamp(l.values[i] / y_max, 0.0, 1.0) * kHeight;
      path += (i == 0 ? "M" : "L") + num(x) + " " + num(y) + " ";
    }
    if (area) {
      const double x_end =
          kLabelWidth +
          (points > 1 ? static_cast<double>(l.values.size() - 1) / static_cast<double>(points - 1) : 0) *
              kPlotWidth;
      s += "<path d=\"" + path + "L" + num(x_end) + " " + num(kTop + kHeight) + " L" + num(kLabelWidth) +
           " " + num(kTop + kHeight) + " Z\" fill=\"" + escape_html(l.color) +
           "\" fill-opacity=\"0.35\" stroke=\"none\"/>";
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + escape_html(l.color) +
         "\" stroke-width=\"1.5\"/>";
  }
  std::vector<Legend> legend;
  for (const Line& l : lines) legend.push_back({l.label, l.color});
  s += legend_row(legend, kTop + kHeight + 34);
  return s + "</svg>";
}

std::string lane_timeline(const std::vector<Lane>& lanes, const std::vector<Legend>& legend) {
  constexpr int kRow = 18;
  double t0 = 1e300, t1 = -1e300;
  for (const Lane& l : lanes)
    for (const LaneSpan& s : l.spans) {
      t0 = std::min(t0, s.start_s);
      t1 = std::max(t1, s.end_s);
    }
  if (t1 <= t0) t1 = t0 + 1;
  const int height = static_cast<int>(lanes.size()) * kRow + 44;
  std::string s = svg_open(kLabelWidth + kPlotWidth + kNoteWidth, height);
  double y = 4;
  for (const Lane& l : lanes) {
    s += text_at(kLabelWidth - 6, y + 12, l.label, "end");
    for (const LaneSpan& sp : l.spans) {
      const double x = kLabelWidth + (sp.start_s - t0) / (t1 - t0) * kPlotWidth;
      const double w = std::max(0.5, (sp.end_s - sp.start_s) / (t1 - t0) * kPlotWidth);
      s += rect(x, y, w, kRow - 4, sp.color, sp.title);
    }
    y += kRow;
  }
  s += text_at(kLabelWidth, y + 12, num(t0) + " s");
  s += text_at(kLabelWidth + kPlotWidth, y + 12, num(t1) + " s", "end");
  s += legend_row(legend, y + 30);
  return s + "</svg>";
}

}  // namespace pipescope::report
