#include "pipescope/calibrate/gemm_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "fit_numbers.h"

namespace pipescope::calibrate {
namespace {

using detail::fixed;
using detail::median;

using Shape = std::tuple<int64_t, int64_t, int64_t>;

struct Measured {
  double efficiency = 0;  // median over repeats
  std::string name;
};

// The largest full grid inside the measured shapes: drop the axis value whose slice misses the
// largest share of its combinations until every combination is there.
std::array<std::set<int64_t>, 3> full_grid(const std::map<Shape, Measured>& shapes) {
  std::array<std::set<int64_t>, 3> axes;
  for (const auto& [shape, _] : shapes) {
    axes[0].insert(std::get<0>(shape));
    axes[1].insert(std::get<1>(shape));
    axes[2].insert(std::get<2>(shape));
  }
  for (;;) {
    size_t missing_total = 0;
    int worst_axis = -1;
    int64_t worst_value = 0;
    double worst_share = -1;
    for (int axis = 0; axis < 3; ++axis) {
      const int o1 = (axis + 1) % 3, o2 = (axis + 2) % 3;
      for (int64_t v : axes[axis]) {
        size_t missing = 0;
        for (int64_t a : axes[o1]) {
          for (int64_t b : axes[o2]) {
            std::array<int64_t, 3> s{};
            s[axis] = v;
            s[o1] = a;
            s[o2] = b;
            missing += shapes.count({s[0], s[1], s[2]}) == 0;
          }
        }
        missing_total += missing;
        const double share =
            static_cast<double>(missing) / static_cast<double>(axes[o1].size() * axes[o2].size());
        if (missing > 0 && share > worst_share) {
          worst_share = share;
          worst_axis = axis;
          worst_value = v;
        }
      }
    }
    if (missing_total == 0 || worst_axis < 0) return axes;
    axes[worst_axis].erase(worst_value);
  }
}

planner::CalibrationProfile table_of(const GemmFit& fit) {
  planner::CalibrationProfile p;
  p.gemm_interpolation = fit.interpolation;
  p.gemm = fit.points;
  p.gemm_waves = fit.waves;
  return p;
}

}  // namespace

Expected<GemmFit> fit_gemm(const std::vector<GemmSample>& samples, const GemmFitInputs& in) {
  std::map<Shape, std::vector<double>> repeats;
  std::map<Shape, std::string> names;
  for (const GemmSample& s : samples) {
    if (s.dtype != in.dtype) continue;
    if (!(s.seconds > 0) || !std::isfinite(s.seconds)) {
      return Error{"cannot fit GEMM efficiency: '" + s.id.name + "' has time " + std::to_string(s.seconds) +
                   " s"};
    }
    const double efficiency = s.flops() / (s.seconds * in.peak_flops_per_s);
    if (efficiency > 1.0) {
      return Error{
          "cannot fit GEMM efficiency: '" + s.id.name + "' ran at " + fixed(efficiency, 2) +
          "x the datasheet peak; the results are not from this GPU (check --gpu) or the timing is wrong"};
    }
    repeats[{s.m, s.n, s.k}].push_back(efficiency);
    names.emplace(Shape{s.m, s.n, s.k}, s.id.name);
  }
  if (repeats.size() < 2) {
    return Error{"cannot fit GEMM efficiency from " + std::to_string(repeats.size()) + " " + in.dtype +
                 " shape" + (repeats.size() == 1 ? "" : "s") + ": at least two distinct shapes are needed"};
  }
  std::map<Shape, Measured> shapes;
  for (auto& [shape, values] : repeats) shapes[shape] = {median(values), names[shape]};

  GemmFit fit;
  fit.shapes = shapes.size();
  const auto axes = full_grid(shapes);
  const bool grid = axes[0].size() >= 2 && axes[1].size() >= 2 && axes[2].size() >= 2;
  auto on_grid = [&](const Shape& s) {
    return axes[0].count(std::get<0>(s)) && axes[1].count(std::get<1>(s)) && axes[2].count(std::get<2>(s));
  };
  const std::string source_tail = ", " + in.dtype + ", " + in.source;

  if (!grid) {
    // No 2 x 2 x 2 grid among the shapes: the 1-D table over FLOPs, equal work merged.
    fit.interpolation = planner::GemmInterpolation::kLogFlops;
    std::map<double, std::vector<std::pair<Shape, double>>> by_flops;
    for (const auto& [shape, m] : shapes) {
      const auto [a, b, c] = shape;
      by_flops[2.0 * static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c)].push_back(
          {shape, m.efficiency});
    }
    for (const auto& [flops, list] : by_flops) {
      std::vector<double> e;
      for (const auto& item : list) e.push_back(item.second);
      const auto [a, b, c] = list.front().first;
      fit.points.push_back(
          {a, b, c, median(e),
           "measured: median of " + std::to_string(list.size()) + " shape(s) of this work" + source_tail});
    }
    fit.notes.emplace_back(
        "the GEMM shapes hold no full m x n x k grid (run the suite's coarse sweep); the "
        "table is one-dimensional in work and has no wave term");
    const planner::CalibrationProfile table = table_of(fit);
    for (const auto& [shape, m] : shapes) {
      const auto [a, b, c] = shape;
      fit.quality.add(m.name, m.efficiency, table.gemm_efficiency(a, b, c));
    }
    fit.quality.finish();
    return fit;
  }

  fit.interpolation = planner::GemmInterpolation::kLogShapeGrid;
  std::vector<planner::GemmWaves> candidates = {planner::GemmWaves{}};
  if (in.sm_count > 0) {
    for (int64_t tm : {64, 128, 256}) {
      for (int64_t tn : {64, 128, 256}) candidates.push_back({in.sm_count, tm, tn, ""});
    }
  }
  size_t off_grid = 0;
  for (const auto& [shape, _] : shapes) off_grid += !on_grid(shape);
  if (off_grid == 0 && in.sm_count > 0) {
    fit.notes.emplace_back(
        "every measured shape is on the grid, so nothing could test a wave term; none is used");
    candidates.resize(1);
  }
  double best_rms = std::numeric_limits<double>::infinity();
  const GemmFit empty = fit;
  for (const planner::GemmWaves& waves : candidates) {
    GemmFit trial = empty;
    trial.waves = waves;
    for (int64_t a : axes[0]) {
      for (int64_t b : axes[1]) {
        for (int64_t c : axes[2]) {
          const Measured& m = shapes.at({a, b, c});
          // The grid holds the efficiency before the last wave's idle SMs take their share.
          const double wave_free = std::min(1.0, m.efficiency / waves.factor(a, b));
          trial.points.push_back(
              {a, b, c, wave_free,
               "measured: " + m.name + " achieved " + fixed(m.efficiency, 4) + " of peak" + source_tail});
        }
      }
    }
    const planner::CalibrationProfile table = table_of(trial);
    for (const auto& [shape, m] : shapes) {
      if (on_grid(shape)) continue;
      const auto [a, b, c] = shape;
      trial.quality.add(m.name, m.efficiency, table.gemm_efficiency(a, b, c));
    }
    trial.quality.finish();
    // A wave term must earn its place: keep the plain grid unless the term clearly helps.
    if (trial.quality.rms_relative_error < best_rms * (waves.enabled() ? 0.95 : 1.0)) {
      best_rms = trial.quality.rms_relative_error;
      fit = std::move(trial);
    }
  }
  if (fit.waves.enabled()) {
    fit.waves.source = "fitted: " + std::to_string(fit.waves.tile_m) + " x " +
                       std::to_string(fit.waves.tile_n) + " output tiles on " +
                       std::to_string(fit.waves.sm_count) + " SMs gave the least error on the " +
                       std::to_string(off_grid) + " shapes off the grid" + source_tail;
  }
  fit.notes.push_back(std::to_string(axes[0].size()) + " x " + std::to_string(axes[1].size()) + " x " +
                      std::to_string(axes[2].size()) + " grid; " + std::to_string(off_grid) +
                      " other shapes test it" +
                      (fit.waves.enabled() ? ", with a wave term" : ", without a wave term"));
  return fit;
}

}  // namespace pipescope::calibrate
