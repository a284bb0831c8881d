// Random unit costs for the screening tests: three recompute modes, slower and leaner in that
// order, with a gradient sync, an optimizer step and, at times, step memory above a stage's
// activations.
#pragma once

#include <random>

#include "screening_costs.h"

namespace pipescope::planner::search_detail::test {

// sync_scale: the gradient sync against the unit's forward (0.5 to 2 times it, scaled): large
// enough and it outlasts the backward that hides it.
inline UnitPrice random_unit(std::mt19937& rng, double sync_scale = 0.5) {
  std::uniform_real_distribution<double> time(0.5, 2.0);
  std::uniform_int_distribution<int64_t> bytes(10, 100);
  UnitPrice u;
  u.static_bytes = bytes(rng);
  const double f = time(rng), b = 2 * time(rng);
  const int64_t act = 5 * bytes(rng);
  u.modes[0] = {f, b, act, 0};
  u.modes[1] = {f, b + 0.2 * f, act / 2, act / 2};
  u.modes[2] = {f, b + f, act / 10, act};
  u.dp_sync_s = sync_scale * time(rng);
  u.optimizer_s = 0.1 * time(rng);
  u.step_bytes = (bytes(rng) % 2) * 10 * bytes(rng);
  return u;
}

}  // namespace pipescope::planner::search_detail::test
