// The planner end to end on one core, at the sizes the planner issue names:
//   BM_PlanLlama2_70b           one `pipescope plan`: llama2-70b on 64 A100s (dgx-a100), tp 8,
//                               pp 4, mbs 1, gbs 64 (32 micro-batches), seq 4096, recompute auto:
//                               the cost model, the uniform plan and the exact partition optimizer.
//   BM_PlanLlama3_405b_Pp64,    plans whose split search is hard (below).
//   BM_PlanLlama2_70b_Pp8
//   BM_SearchLlama2_70b_2048    one `pipescope search`: llama2-70b on 2,048 A100s (dgx-a100),
//                               gbs 1024, seq 4096, every default constraint, top 20.
// Loading the model, cluster and profile is outside the timed loop (it is JSON parsing, done once
// per command). Target from the issue: a search under 1 s.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/plan.h"
#include "pipescope/planner/search.h"

namespace pp = pipescope::planner;

namespace {

template <class T>
T or_die(pipescope::Expected<T> value) {
  if (!value.ok()) {
    std::fprintf(stderr, "planner_benchmark: %s\n", value.error().message.c_str());
    std::exit(1);
  }
  return std::move(*value);
}

void BM_PlanLlama2_70b(benchmark::State& state) {
  pp::PlanInputs in;
  in.model = or_die(pipescope::models::load_model("llama2-70b"));
  in.cluster = or_die(pp::load_cluster("dgx-a100"));
  in.profile = or_die(pp::profile_for_gpu(in.cluster.gpu));
  pp::ParallelConfig c;
  c.gpus = 64;
  c.tp = 8;
  c.pp = 4;
  c.global_batch = 64;
  c.seq_length = 4096;
  c.sequence_parallel = true;
  c.recompute = pp::RecomputeChoice::kAuto;
  in.config = or_die(pp::resolve_config(in.model, c));
  for (auto _ : state) {
    auto outcome = pp::make_plan(in);
    benchmark::DoNotOptimize(outcome);
  }
}
BENCHMARK(BM_PlanLlama2_70b)->Unit(benchmark::kMillisecond);

pp::ParallelConfig auto_recompute_config(int64_t gpus, int64_t tp, int64_t pipeline, int64_t global_batch,
                                         int64_t seq_length) {
  pp::ParallelConfig c;
  c.gpus = gpus;
  c.tp = tp;
  c.pp = pipeline;
  c.global_batch = global_batch;
  c.seq_length = seq_length;
  c.recompute = pp::RecomputeChoice::kAuto;
  return c;
}

// Plans whose split search is hard: about as many micro-batches as stages, recompute auto, so
// every split runs within a few percent of every other (see docs/planner.md). The counters say
// whether the search proved its split optimal and, when not, the proven gap in peak memory.
void plan_with_search_counters(benchmark::State& state, const char* model, const char* gpu,
                               const pp::ParallelConfig& c) {
  pp::PlanInputs in;
  in.model = or_die(pipescope::models::load_model(model));
  in.cluster = or_die(pp::make_gpu_cluster(gpu));
  in.profile = or_die(pp::profile_for_gpu(in.cluster.gpu));
  in.config = or_die(pp::resolve_config(in.model, c));
  pp::PlanOutcome last;
  for (auto _ : state) {
    last = or_die(pp::make_plan(in));
    benchmark::DoNotOptimize(last);
  }
  state.counters["proven"] = last.suggested_is_optimal ? 1 : 0;
  state.counters["peak_gap"] = last.optimality_gap;
  state.counters["peak_GiB"] = static_cast<double>(last.suggested.peak_memory_bytes) / (1 << 30);
  state.counters["uniform_peak_GiB"] = static_cast<double>(last.uniform.peak_memory_bytes) / (1 << 30);
}

//   BM_PlanLlama3_405b_Pp64     llama3-405b on 512 H100s, tp 8, pp 64, gbs 64 (64 micro-batches),
//                               seq 8192, recompute auto: 128 units on 64 stages.
void BM_PlanLlama3_405b_Pp64(benchmark::State& state) {
  plan_with_search_counters(state, "llama3-405b", "h100-80gb", auto_recompute_config(512, 8, 64, 64, 8192));
}
BENCHMARK(BM_PlanLlama3_405b_Pp64)->Unit(benchmark::kMillisecond);

//   BM_PlanLlama2_70b_Pp8       llama2-70b on 64 H100s, tp 8, pp 8, gbs 8 (8 micro-batches),
//                               seq 4096, recompute auto.
void BM_PlanLlama2_70b_Pp8(benchmark::State& state) {
  plan_with_search_counters(state, "llama2-70b", "h100-80gb", auto_recompute_config(64, 8, 8, 8, 4096));
}
BENCHMARK(BM_PlanLlama2_70b_Pp8)->Unit(benchmark::kMillisecond);

void BM_SearchLlama2_70b_2048(benchmark::State& state) {
  pp::SearchRequest r;
  r.model = or_die(pipescope::models::load_model("llama2-70b"));
  r.cluster = or_die(pp::load_cluster("dgx-a100"));
  r.profile = or_die(pp::profile_for_gpu(r.cluster.gpu));
  r.gpus = 2048;
  r.global_batch = 1024;
  r.seq_length = 4096;
  pp::SearchStats stats;
  for (auto _ : state) {
    auto result = or_die(pp::search(r));
    stats = result.stats;
    benchmark::DoNotOptimize(result);
  }
  state.counters["configs"] = static_cast<double>(stats.candidates);
  state.counters["feasible"] = static_cast<double>(stats.feasible);
  state.counters["cost_models"] = static_cast<double>(stats.cost_models);
  state.counters["exact_plans"] = static_cast<double>(stats.exact_plans);
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(stats.candidates),
                                                       benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SearchLlama2_70b_2048)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
