// Problem checks, the evaluation of one plan, and the uniform baseline.
#include "pipescope/planner/partition_plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "partition_costs.h"

namespace pipescope::planner {
namespace {

bool time_ok(double t) { return std::isfinite(t) && t >= 0; }

Status validate_units(const PartitionProblem& problem) {
  const size_t options = problem.units.front().options.size();
  if (options == 0) return Error{"unit 0 (" + problem.units.front().name + ") has no recompute option"};
  for (size_t u = 0; u < problem.units.size(); ++u) {
    const PartitionUnit& unit = problem.units[u];
    const std::string which = "unit " + std::to_string(u) + " (" + unit.name + ")";
    if (unit.options.size() != options) {
      return Error{which + " has " + std::to_string(unit.options.size()) + " recompute options, unit 0 has " +
                   std::to_string(options) + ": every unit needs a cost for every option"};
    }
    if (unit.static_bytes < 0) return Error{which + " has negative static bytes"};
    if (unit.step_bytes < 0) return Error{which + " has negative optimizer-step bytes"};
    for (const UnitOptionCost& c : unit.options) {
      if (!time_ok(c.forward_s) || !time_ok(c.backward_s)) {
        return Error{which + " has a forward or backward time that is negative or not finite"};
      }
      if (c.activation_bytes < 0 || c.transient_bytes < 0)
        return Error{which + " has negative activation bytes"};
    }
  }
  return Status::Ok();
}

bool allowed(const PartitionProblem& problem, int option) {
  return problem.allowed_options.empty() ||
         std::find(problem.allowed_options.begin(), problem.allowed_options.end(), option) !=
             problem.allowed_options.end();
}

Status validate_partial(const PartitionProblem& problem, int options) {
  const int r = problem.partial_option, b = problem.partial_base;
  if (r < 0) return Status::Ok();
  if (r >= options || b < 0 || b >= options || r == b) {
    return Error{"the partial option and its base must be two different options of the units"};
  }
  if (!allowed(problem, r) || !allowed(problem, b)) {
    return Error{"the partial option and its base must both be allowed"};
  }
  for (size_t u = 0; u < problem.units.size(); ++u) {
    const UnitOptionCost& with = problem.units[u].options[r];
    const UnitOptionCost& without = problem.units[u].options[b];
    if (with.forward_s < without.forward_s || with.backward_s < without.backward_s ||
        with.activation_bytes > without.activation_bytes) {
      return Error{"unit " + std::to_string(u) +
                   ": the partial option must be no faster and keep no more activation than its base"};
    }
  }
  return Status::Ok();
}

}  // namespace

Status validate(const PartitionProblem& problem) {
  if (problem.schedule == ScheduleKind::kInterleaved) {
    // Under interleaving a stage's peak depends on which chunk activations overlap in time, not
    // on a per-stage count; the optimizer does not model it.
    return Error{
        "the partition optimizer supports the gpipe and 1f1b schedules, not interleaved; "
        "plan with --schedule 1f1b or pass --balance with a non-interleaved schedule"};
  }
  if (problem.units.empty()) return Error{"the model has no units to partition"};
  if (problem.stages < 1) return Error{"pipeline stages must be at least 1"};
  if (problem.micro_batches < 1) return Error{"micro-batches must be at least 1"};
  const int n = static_cast<int>(problem.units.size());
  if (problem.stages > n) {
    return Error{"more pipeline stages (" + std::to_string(problem.stages) + ") than units to place (" +
                 std::to_string(n) + "): every stage needs at least one; lower --pp"};
  }
  if (Status s = validate_units(problem); !s.ok()) return s;
  const int options = static_cast<int>(problem.units.front().options.size());
  std::vector<bool> seen(static_cast<size_t>(options), false);
  for (int r : problem.allowed_options) {
    if (r < 0 || r >= options) {
      return Error{"recompute option " + std::to_string(r) + " is not one of the " + std::to_string(options) +
                   " the units define"};
    }
    if (seen[r]) return Error{"recompute option " + std::to_string(r) + " is listed twice"};
    seen[r] = true;
  }
  if (!problem.stage_extra_bytes.empty() &&
      problem.stage_extra_bytes.size() != static_cast<size_t>(problem.stages)) {
    return Error{"stage_extra_bytes has " + std::to_string(problem.stage_extra_bytes.size()) +
                 " entries for " + std::to_string(problem.stages) + " stages"};
  }
  for (std::int64_t b : problem.stage_extra_bytes) {
    if (b < 0) return Error{"stage_extra_bytes must not be negative"};
  }
  if (problem.capacity_bytes < 0) return Error{"GPU memory capacity must not be negative"};
  if (!time_ok(problem.p2p_forward_s) || !time_ok(problem.p2p_backward_s)) {
    return Error{"p2p times must be finite and >= 0 s"};
  }
  if (!std::isfinite(problem.time_slack) || problem.time_slack < 0)
    return Error{"time_slack must be finite and >= 0"};
  return validate_partial(problem, options);
}

namespace detail {

void RangeMax::build(const std::vector<std::int64_t>& values) {
  levels_.assign(1, values);
  for (size_t width = 1; 2 * width <= values.size(); width *= 2) {
    const std::vector<std::int64_t>& below = levels_.back();
    std::vector<std::int64_t> level(below.size() - width);
    for (size_t i = 0; i < level.size(); ++i) level[i] = std::max(below[i], below[i + width]);
    levels_.push_back(std::move(level));
  }
}

std::int64_t RangeMax::max(int l, int r) const {
  if (l >= r) return 0;
  const int k = static_cast<int>(std::bit_width(static_cast<unsigned>(r - l))) - 1;
  return std::max(levels_[k][l], levels_[k][r - (1 << k)]);
}

void PartialCosts::build(const PartitionProblem& problem) {
  option = problem.partial_option;
  base = problem.partial_base;
  const size_t n = problem.units.size();
  static_prefix.assign(n + 1, 0);
  step_prefix.assign(n + 1, 0);
  option_activation_prefix.assign(n + 1, 0);
  base_activation_prefix.assign(n + 1, 0);
  std::vector<std::int64_t> option_transient_values(n), base_transient_values(n);
  for (std::vector<double>* prefix :
       {&option_forward_prefix, &option_backward_prefix, &base_forward_prefix, &base_backward_prefix}) {
    prefix->assign(n + 1, 0.0);
  }
  for (size_t u = 0; u < n; ++u) {
    const PartitionUnit& unit = problem.units[u];
    static_prefix[u + 1] = static_prefix[u] + unit.static_bytes;
    step_prefix[u + 1] = step_prefix[u] + unit.step_bytes;
    option_activation_prefix[u + 1] = option_activation_prefix[u] + unit.options[option].activation_bytes;
    base_activation_prefix[u + 1] = base_activation_prefix[u] + unit.options[base].activation_bytes;
    option_forward_prefix[u + 1] = option_forward_prefix[u] + unit.options[option].forward_s;
    option_backward_prefix[u + 1] = option_backward_prefix[u] + unit.options[option].backward_s;
    base_forward_prefix[u + 1] = base_forward_prefix[u] + unit.options[base].forward_s;
    base_backward_prefix[u + 1] = base_backward_prefix[u] + unit.options[base].backward_s;
    option_transient_values[u] = unit.options[option].transient_bytes;
    base_transient_values[u] = unit.options[base].transient_bytes;
  }
  option_transient.build(option_transient_values);
  base_transient.build(base_transient_values);
}

Expected<PartitionContext> PartitionContext::build(const PartitionProblem& problem) {
  if (Status s = validate(problem); !s.ok()) return s.error();
  ScheduleSpec spec{problem.schedule, problem.stages, problem.micro_batches, 1};
  spec.p2p_blocks = problem.p2p_blocks;
  auto dag = ScheduleDag::build(spec);
  if (!dag.ok()) return dag.error();
  auto in_flight = activations_in_flight(spec);
  if (!in_flight.ok()) return in_flight.error();

  PartitionContext ctx{.options = problem.allowed_options,
                       .partial = {},
                       .in_flight = std::move(*in_flight),
                       .extra_bytes = problem.stage_extra_bytes,
                       .p2p_forward_s = std::vector<double>(problem.stages - 1, problem.p2p_forward_s),
                       .p2p_backward_s = std::vector<double>(problem.stages - 1, problem.p2p_backward_s),
                       .dag = std::move(*dag)};
  if (ctx.options.empty()) {
    for (int r = 0; r < static_cast<int>(problem.units.front().options.size()); ++r) ctx.options.push_back(r);
  }
  std::sort(ctx.options.begin(), ctx.options.end());
  if (ctx.extra_bytes.empty()) ctx.extra_bytes.assign(problem.stages, 0);
  if (problem.partial_option >= 0) ctx.partial.build(problem);
  return ctx;
}

}  // namespace detail

Expected<PartitionPlan> evaluate_plan(const PartitionProblem& problem, const PlanChoice& choice) {
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) return ctx.error();
  const int p = problem.stages;
  const int n = static_cast<int>(problem.units.size());
  if (choice.boundaries.size() != static_cast<size_t>(p) + 1 ||
      choice.options.size() != static_cast<size_t>(p)) {
    return Error{"a plan for " + std::to_string(p) + " stages needs " + std::to_string(p + 1) +
                 " boundaries and " + std::to_string(p) + " options"};
  }
  if (choice.boundaries.front() != 0 || choice.boundaries.back() != n) {
    return Error{"plan boundaries must run from 0 to the unit count " + std::to_string(n)};
  }
  if (!choice.partial_units.empty() && choice.partial_units.size() != static_cast<size_t>(p)) {
    return Error{"a plan's partial unit counts need one entry per stage"};
  }
  PartitionPlan plan;
  plan.choice = choice;
  plan.fits = true;
  std::vector<double> forward_s(p), backward_s(p);
  for (int s = 0; s < p; ++s) {
    const int first = choice.boundaries[s];
    const int end = choice.boundaries[s + 1];
    if (end <= first) return Error{"stage " + std::to_string(s) + " of the plan has no unit"};
    const int r = choice.options[s];
    if (std::find(ctx->options.begin(), ctx->options.end(), r) == ctx->options.end()) {
      return Error{"stage " + std::to_string(s) + " uses recompute option " + std::to_string(r) +
                   ", which the problem does not allow"};
    }
    const int partial = choice.partial_units.empty() ? 0 : choice.partial_units[s];
    if (partial != 0 && (r != problem.partial_option || partial < 1 || partial > end - first)) {
      return Error{"stage " + std::to_string(s) + " of the plan has a partial unit count of " +
                   std::to_string(partial) + " that its option and units do not allow"};
    }
    const detail::StageSums sums =
        partial > 0 ? detail::partial_sums(problem, first, end, partial, r, problem.partial_base)
                    : detail::partial_sums(problem, first, end, end - first, r, r);
    StagePlan stage{.first_unit = first,
                    .end_unit = end,
                    .option = r,
                    .partial_units = partial,
                    .forward_s = sums.forward_s,
                    .backward_s = sums.backward_s,
                    .activations_in_flight = ctx->in_flight[s],
                    .memory_bytes = sums.memory_bytes(ctx->extra_bytes[s], ctx->in_flight[s])};
    stage.overflows = stage.memory_bytes > problem.capacity_bytes;
    plan.fits = plan.fits && !stage.overflows;
    plan.peak_memory_bytes = std::max(plan.peak_memory_bytes, stage.memory_bytes);
    forward_s[s] = stage.forward_s;
    backward_s[s] = stage.backward_s;
    plan.stages.push_back(stage);
  }
  auto sim = simulate_schedule(ctx->dag,
                               PipelineCosts{forward_s, backward_s, ctx->p2p_forward_s, ctx->p2p_backward_s});
  if (!sim.ok()) return sim.error();
  plan.iteration_s = sim->iteration_s;
  plan.bubble_fraction = sim->bubble_fraction;
  return plan;
}

Expected<std::vector<int>> uniform_boundaries(int units, int stages, UniformLayout layout) {
  if (stages < 1) return Error{"pipeline stages must be at least 1"};
  const int head = layout.head_last ? 1 : 0;
  const int embedding = layout.embedding_first ? 1 : 0;
  const int layers = units - embedding - head;
  if (layers < 0) return Error{"too few units for an embedding and a head"};
  std::vector<int> boundaries(static_cast<size_t>(stages) + 1, 0);
  const int base = layers / stages;
  const int extra = layers % stages;  // the first `extra` stages take one layer more
  int at = embedding;
  for (int s = 0; s < stages; ++s) {
    at += base + (s < extra ? 1 : 0);
    boundaries[s + 1] = at;
  }
  boundaries[stages] = units;  // the head joins the last stage
  for (int s = 0; s < stages; ++s) {
    if (boundaries[s + 1] <= boundaries[s]) {
      return Error{"a uniform split of " + std::to_string(layers) + " layers over " + std::to_string(stages) +
                   " stages leaves stage " + std::to_string(s) + " empty; lower --pp"};
    }
  }
  return boundaries;
}

Expected<PartitionPlan> uniform_plan(const PartitionProblem& problem) {
  auto boundaries =
      uniform_boundaries(static_cast<int>(problem.units.size()), problem.stages, problem.uniform_layout);
  if (!boundaries.ok()) return boundaries.error();
  return fastest_fitting_options(problem, *boundaries);
}

Expected<PartitionPlan> fastest_fitting_options(const PartitionProblem& problem,
                                                const std::vector<int>& boundaries) {
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) return ctx.error();
  if (boundaries.size() != static_cast<size_t>(problem.stages) + 1 || boundaries.front() != 0 ||
      boundaries.back() != static_cast<int>(problem.units.size())) {
    return Error{"a split needs one boundary per stage and one more, from 0 to the unit count"};
  }
  PlanChoice choice{boundaries, {}, std::vector<int>(static_cast<size_t>(problem.stages), 0)};
  for (int s = 0; s < problem.stages; ++s) {
    const int first = boundaries[s], end = boundaries[s + 1];
    if (end <= first) return Error{"stage " + std::to_string(s) + " of the split has no unit"};
    int best = -1, best_partial = 0;
    bool best_fits = false;
    double best_time = 0;
    std::int64_t best_bytes = 0;
    const auto consider = [&](int r, int partial) {
      const detail::StageSums sums =
          partial > 0 ? detail::partial_sums(problem, first, end, partial, r, problem.partial_base)
                      : detail::partial_sums(problem, first, end, end - first, r, r);
      const std::int64_t bytes = sums.memory_bytes(ctx->extra_bytes[s], ctx->in_flight[s]);
      const bool fits = bytes <= problem.capacity_bytes;
      const double time = sums.forward_s + sums.backward_s;
      const bool better = best < 0 || (fits && !best_fits) ||
                          (fits == best_fits && (fits ? time < best_time : bytes < best_bytes));
      if (better) best = r, best_partial = partial, best_fits = fits, best_time = time, best_bytes = bytes;
    };
    for (int r : ctx->options) consider(r, 0);
    // All units on the option is the plain option; none on it is the base.
    for (int k = 1; ctx->partial.enabled() && k < end - first; ++k) consider(problem.partial_option, k);
    choice.options.push_back(best);
    choice.partial_units[s] = best_partial;
  }
  return evaluate_plan(problem, choice);
}

}  // namespace pipescope::planner
