// The planner's pure algorithms at the sizes the issue asks for: the 1F1B simulation of one
// iteration, and the exact partition search over 128 units (126 decoder layers, embedding,
// head) on 64 stages with three recompute options (none / selective / full).
//
// The per-unit numbers (benches/support/gpt_partition_problem.h) are illustrative of a 175B-class
// GPT layer at TP = 8, sequence 2048, micro-batch 1.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "gpt_partition_problem.h"
#include "partition_bound.h"
#include "path_tables.h"
#include "pipescope/planner/partition_optimizer.h"
#include "pipescope/planner/pipeline_schedule.h"
#include "pivot_bound.h"

namespace pp = pipescope::planner;

namespace {

using pp::fixtures::gpt_partition_problem;

void BM_Simulate1F1B(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  pp::PipelineCosts costs{std::vector<double>(p, 0.02), std::vector<double>(p, 0.04),
                          std::vector<double>(p - 1, 0.002), std::vector<double>(p - 1, 0.002)};
  costs.forward_s[0] = 0.025;  // an uneven stage, so that waiting happens
  for (auto _ : state) {
    auto result = pp::simulate_schedule({pp::ScheduleKind::kOneFOneB, p, m, 1}, costs);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * 2 * p * m);  // ops simulated per second
}
BENCHMARK(BM_Simulate1F1B)
    ->ArgNames({"stages", "micro_batches"})
    ->Args({8, 64})
    ->Args({64, 128})
    ->Args({64, 512});

void BM_Partition(benchmark::State& state) {
  const auto balance = state.range(2) == 1 ? pp::Balance::kTime : pp::Balance::kMemory;
  pp::PartitionProblem problem =
      gpt_partition_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), balance,
                            static_cast<double>(state.range(3)) * 1e-3);
  problem.bound_at_least_uniform = state.range(2) == 2;  // --balance headroom
  problem.micro_batches = static_cast<int>(state.range(4));
  if (state.range(5) == 1) problem.schedule = pp::ScheduleKind::kGPipe;
  pp::PartitionResult last;
  for (auto _ : state) {
    auto result = pp::optimize_partition(problem);
    if (!result.ok()) {
      state.SkipWithError(result.error().message.c_str());
      return;
    }
    last = *result;
  }
  state.counters["nodes"] = static_cast<double>(last.stats.nodes);
  state.counters["plans_timed"] = static_cast<double>(last.stats.plans_timed);
  state.counters["proven"] = last.proven_optimal ? 1 : 0;
  state.counters["gap"] = last.optimality_gap;
  state.counters["iteration_s"] = last.plan.iteration_s;
  state.counters["peak_GB"] = static_cast<double>(last.plan.peak_memory_bytes) / 1e9;
  if (last.uniform) {
    state.counters["uniform_s"] = last.uniform->iteration_s;
    state.counters["uniform_peak_GB"] = static_cast<double>(last.uniform->peak_memory_bytes) / 1e9;
  }
}
// layers (plus embedding and head), stages, objective (0 memory, 1 time, 2 memory with the
// uniform split's time as a floor under the limit: --balance headroom), p2p ms each way,
// micro-batches, schedule (0 1f1b, 1 gpipe).
BENCHMARK(BM_Partition)
    ->ArgNames({"layers", "stages", "objective", "p2p_ms", "mb", "gpipe"})
    ->Args({126, 64, 1, 0, 128, 0})
    ->Args({126, 64, 0, 0, 128, 0})
    ->Args({126, 64, 1, 2, 128, 0})
    ->Args({126, 64, 0, 2, 128, 0})
    ->Args({126, 64, 0, 2, 256, 0})
    ->Args({126, 64, 0, 2, 64, 0})  // as many micro-batches as stages: the hard case
    ->Args({126, 64, 1, 2, 64, 0})
    ->Args({126, 32, 0, 2, 128, 0})
    ->Args({126, 64, 0, 2, 128, 1})
    ->Args({126, 64, 2, 0, 128, 0})
    ->Args({126, 64, 2, 2, 128, 0})
    ->Args({126, 64, 2, 2, 64, 0})
    ->Unit(benchmark::kMillisecond);

// The searches' critical-path tables for one memory limit, with one weight set and with many
// (path_tables.h): what a table fill costs against the work it is charged (items: candidate
// stages; the charge is one per candidate and one more per six sets).
void BM_PathTables(benchmark::State& state) {
  namespace detail = pp::detail;
  pp::PartitionProblem problem = gpt_partition_problem(126, 64, pp::Balance::kMemory, 2e-3);
  problem.micro_batches = 64;
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) {
    state.SkipWithError(ctx.error().message.c_str());
    return;
  }
  detail::PathBound bound(problem, *ctx);
  bound.add_path(std::vector<double>(problem.stages, 0.3), std::vector<double>(problem.stages, 0.6));
  bound.lower_bound(problem.capacity_bytes, 40, nullptr);
  const std::vector<detail::PathWeights> sets = bound.weight_sets(static_cast<int>(state.range(0)));
  detail::PathTables tables;
  tables.set_weights(sets);
  std::int64_t work = 0;
  for (auto _ : state) {
    work = tables.build_suffix(problem, *ctx, problem.capacity_bytes);
    benchmark::DoNotOptimize(tables.open_s(0, 0, 0));
  }
  state.counters["sets"] = tables.sets();
  state.counters["work_charged"] = static_cast<double>(work);
  state.counters["ns_per_work"] =
      benchmark::Counter(static_cast<double>(work) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PathTables)->ArgNames({"sets"})->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);

// The searches' pivot fronts for one memory limit (pivot_bound.h), at m = p and m = 2p: what a
// fill costs against the work it is charged.
void BM_PivotTables(benchmark::State& state) {
  namespace detail = pp::detail;
  pp::PartitionProblem problem = gpt_partition_problem(126, 64, pp::Balance::kMemory, 2e-3);
  problem.micro_batches = static_cast<int>(state.range(0));
  auto ctx = detail::PartitionContext::build(problem);
  if (!ctx.ok()) {
    state.SkipWithError(ctx.error().message.c_str());
    return;
  }
  const detail::PivotFamilies families = detail::PivotFamilies::find(problem, *ctx);
  detail::PivotTables tables;
  tables.set_families(&families);
  // Without a ceiling, or with the uniform split's time: what a search that must beat it asks.
  const double ceiling_s =
      state.range(1) == 0 ? std::numeric_limits<double>::infinity() : pp::uniform_plan(problem)->iteration_s;
  std::int64_t work = 0;
  for (auto _ : state) {
    work = tables.build_suffix(problem, *ctx, problem.capacity_bytes, ceiling_s);
    benchmark::DoNotOptimize(tables.bound_after_prefix(detail::PivotState::empty_prefix(), 0, 0));
  }
  state.counters["root_bound_s"] = tables.bound_after_prefix(detail::PivotState::empty_prefix(), 0, 0);
  state.counters["classes"] = families.classes;
  state.counters["work_charged"] = static_cast<double>(work);
  state.counters["ns_per_work"] =
      benchmark::Counter(static_cast<double>(work) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PivotTables)
    ->ArgNames({"mb", "ceiling"})
    ->Args({64, 0})
    ->Args({64, 1})
    ->Args({128, 0})
    ->Args({128, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
