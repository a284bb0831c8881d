// Per rank and per pipeline stage: forward/backward time per micro-batch, warm-up / steady /
// cool-down, the measured bubble, memory (peak, static, activations) and the 1F1B imbalance;
// the top kernels by category; the busy and memory time series.
#include <algorithm>
#include <map>
#include <set>

#include "p2p_pipeline.h"
#include "parallel_for.h"
#include "pipescope/analysis/kernel_category.h"
#include "report_context.h"

namespace pipescope::analysis {
namespace {

// Sums over a rank's steps, from NVTX ranges or the p2p pattern; added up again per stage.
struct PipelineFigures {
  std::string source = "none";
  uint64_t forwards = 0, backwards = 0, pairs = 0;
  int64_t forward_ns = 0, backward_ns = 0, pair_ns = 0;
  double bubble_sum = 0;
  uint64_t steps = 0;  // steps with a measured bubble
  int64_t warmup_ns = 0, steady_ns = 0, cooldown_ns = 0;
  uint64_t phase_steps = 0;
  uint64_t microbatches = 0, microbatch_steps = 0;  // forwards per step, over the steps that had some

  void add(const PipelineFigures& o) {
    microbatches += o.microbatches;
    microbatch_steps += o.microbatch_steps;
    forwards += o.forwards;
    backwards += o.backwards;
    pairs += o.pairs;
    forward_ns += o.forward_ns;
    backward_ns += o.backward_ns;
    pair_ns += o.pair_ns;
    bubble_sum += o.bubble_sum;
    steps += o.steps;
    warmup_ns += o.warmup_ns;
    steady_ns += o.steady_ns;
    cooldown_ns += o.cooldown_ns;
    phase_steps += o.phase_steps;
  }
};

PipelineFigures nvtx_figures(const RankDigest& d) {
  PipelineFigures p;
  auto add_counts = [&p](const StepDigest& s) {
    p.forwards += s.forwards;
    p.backwards += s.backwards;
    p.forward_ns += s.forward_ns;
    p.backward_ns += s.backward_ns;
  };
  for (const StepDigest& s : d.steps) {
    if (s.failed) continue;  // its ranges hold the timeout it ended in
    add_counts(s);
    if (s.forwards > 0) {
      p.microbatches += s.forwards;
      ++p.microbatch_steps;
    }
    if (s.forwards == 0 || s.backwards == 0) continue;
    // The pipeline's span: first forward to last backward. What the stage did not compute in it
    // is its bubble (p2p waits, warm-up and cool-down idling); 1F1B's ideal is (p-1)/(m+p-1).
    const int64_t span = s.last_backward_end_ns - s.first_forward_ns;
    if (span <= 0) continue;
    ++p.steps;
    p.bubble_sum += std::clamp(
        1.0 - static_cast<double>(s.forward_ns + s.backward_ns) / static_cast<double>(span), 0.0, 1.0);
    const int64_t warmup = std::max<int64_t>(0, s.first_backward_ns - s.first_forward_ns);
    const int64_t cooldown = std::max<int64_t>(0, s.last_backward_end_ns - s.last_forward_end_ns);
    ++p.phase_steps;
    p.warmup_ns += warmup;
    p.cooldown_ns += cooldown;
    p.steady_ns += std::max<int64_t>(0, span - warmup - cooldown);
  }
  add_counts(d.unstepped);
  if (p.forwards + p.backwards > 0) p.source = "nvtx";
  return p;
}

PipelineFigures p2p_figures(const P2pPipelineFigures& f) {
  PipelineFigures p;
  if (f.steps == 0) return p;
  p.source = "p2p";
  p.forwards = f.forwards;
  p.backwards = f.backwards;
  p.pairs = f.pairs;
  p.forward_ns = f.forward_ns;
  p.backward_ns = f.backward_ns;
  p.pair_ns = f.pair_ns;
  p.bubble_sum = f.bubble_sum;
  p.steps = f.steps;
  p.warmup_ns = f.warmup_ns;
  p.steady_ns = f.steady_ns;
  p.cooldown_ns = f.cooldown_ns;
  p.phase_steps = f.phase_steps;
  p.microbatches = f.microbatches;
  p.microbatch_steps = f.steps;
  return p;
}

std::optional<int64_t> mean_of(int64_t total, uint64_t count) {
  if (count == 0) return std::nullopt;
  return total / static_cast<int64_t>(count);
}

int64_t mean(int64_t total, uint64_t count) { return count == 0 ? 0 : total / static_cast<int64_t>(count); }

// When the first forward started on the rank's clock, from NVTX (the first forward range, else
// the first step); -1 when they do not show it.
int64_t nvtx_first_forward_ns(const RankDigest& d) {
  int64_t before = d.first_forward_ns;
  if (before < 0 && !d.steps.empty()) before = d.steps.front().start_ns;
  return before;
}

// Static memory is what the rank held just before its first forward: from NVTX, else from the
// p2p pattern; without either, not measured.
void fill_memory(const ReportContext& ctx, size_t i, const P2pPipelineFigures& p2p, RankReport& r) {
  const RankDigest& d = ctx.run.ranks[i];
  if (!d.memory_seen) return;
  r.memory_figure = d.memory_from_pool ? "allocated" : "reserved";
  r.peak_memory_bytes = d.peak_memory_bytes;  // memory records seen: measured, 0 included
  r.peak_memory_at_ns = ctx.aligned(i, d.peak_memory_at_ns);
  int64_t before = nvtx_first_forward_ns(d);
  if (before < 0 && p2p.first_forward_ns >= 0) before = ctx.local(i, p2p.first_forward_ns);
  if (before < 0) return;
  const uint64_t held = memory_level_at(d, before - 1);
  r.static_memory_bytes = held;
  r.peak_activation_bytes = d.peak_memory_bytes - std::min(d.peak_memory_bytes, held);
}

int64_t percentile_ns(const MergedKernel& k, double q) {
  return duration_percentile_ns(k.durations, k.count, q, k.min_ns, k.max_ns);
}

}  // namespace

void add_pipeline_reports(const ReportContext& ctx, RunReport& report) {
  const size_t n = ctx.run.ranks.size();
  std::vector<PipelineFigures> figures(n);
  parallel_for(n, ctx.options.threads, [&](size_t i) { figures[i] = nvtx_figures(ctx.run.ranks[i]); });
  // The p2p pattern is read only where NVTX does not tell (a run without forward/backward ranges).
  bool p2p_needed = false;
  for (size_t i = 0; i < n && !p2p_needed; ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    p2p_needed = figures[i].source == "none" || (d.memory_seen && nvtx_first_forward_ns(d) < 0);
  }
  const std::vector<P2pPipelineFigures> from_p2p =
      p2p_needed ? p2p_pipeline_figures(ctx) : std::vector<P2pPipelineFigures>(n);
  parallel_for(n, ctx.options.threads, [&](size_t i) {
    RankReport& r = report.ranks[i];
    r.forward_ranges = figures[i].forwards;
    r.backward_ranges = figures[i].backwards;
    if (figures[i].source == "none") figures[i] = p2p_figures(from_p2p[i]);
    const PipelineFigures& p = figures[i];
    r.pipeline_source = p.source;
    r.forward_mean_ns = mean_of(p.forward_ns, p.forwards);
    r.backward_mean_ns = mean_of(p.backward_ns, p.backwards);
    if (p.steps > 0) r.bubble_fraction = p.bubble_sum / static_cast<double>(p.steps);
    fill_memory(ctx, i, from_p2p[i], r);
  });
  std::map<int32_t, std::vector<size_t>> by_stage;
  for (size_t i = 0; i < n; ++i) by_stage[report.ranks[i].stage].push_back(i);
  // Stages whose processes share a GPU: a blocking receive or a time slice of another stage's
  // kernels reads as work, in NVTX ranges and in GPU activity alike.
  std::map<std::string, std::set<int32_t>> stages_by_gpu;
  for (const RankReport& r : report.ranks)
    for (const std::string& uuid : r.gpu_uuids) stages_by_gpu[uuid].insert(r.stage);
  auto shares_gpu = [&](const RankReport& r) {
    return std::any_of(r.gpu_uuids.begin(), r.gpu_uuids.end(),
                       [&](const std::string& uuid) { return stages_by_gpu[uuid].size() > 1; });
  };
  for (RankReport& r : report.ranks)
    if (shares_gpu(r)) r.bubble_fraction.reset();
  for (const auto& [stage, members] : by_stage) {
    StageReport s;
    s.stage = stage;
    s.shares_gpu =
        std::any_of(members.begin(), members.end(), [&](size_t i) { return shares_gpu(report.ranks[i]); });
    s.ranks = static_cast<int32_t>(members.size());
    PipelineFigures sum;
    int64_t p2p = 0, p2p_wait = 0, gpu_ns = 0;
    uint64_t p2p_steps = 0;
    for (size_t i : members) {
      sum.add(figures[i]);
      // Under kernel sampling the kernels cover the recorded steps only: scaled to all of them.
      const double recorded = std::max(report.ranks[i].gpu.recorded_fraction, 1e-9);
      for (const auto& [category, ns] : report.ranks[i].kernel_ns_by_category)
        if (category != "nccl") gpu_ns += static_cast<int64_t>(static_cast<double>(ns) / recorded);
      if (figures[i].source != "none") s.source = figures[i].source;
      // Per step: the rank's NVTX steps, else the run's (from the collectives' rhythm).
      const uint64_t rank_steps =
          std::max<uint64_t>(1, report.ranks[i].steps > 0 ? report.ranks[i].steps : report.steps.count);
      if (const auto& rank_p2p = report.ranks[i].p2p_ns) {
        p2p += *rank_p2p;
        p2p_wait += report.ranks[i].p2p_wait_ns;
        p2p_steps += rank_steps;
      }
      if (const auto& peak = report.ranks[i].peak_memory_bytes)
        s.peak_memory_bytes = std::max(s.peak_memory_bytes.value_or(0), *peak);
      if (const auto& a = report.ranks[i].peak_activation_bytes)
        s.peak_activation_bytes = std::max(s.peak_activation_bytes.value_or(0), *a);
    }
    s.forward_mean_ns = mean_of(sum.forward_ns, sum.forwards);
    // A trace not closed holds forwards whose kernels never reached the file: not measured.
    const bool unflushed = std::any_of(members.begin(), members.end(),
                                       [&](size_t i) { return report.ranks[i].gpu.unflushed_tail_ns > 0; });
    if (gpu_ns > 0 && !unflushed) s.gpu_ns_per_microbatch = mean_of(gpu_ns, sum.forwards);
    s.backward_mean_ns = mean_of(sum.backward_ns, sum.backwards);
    if (s.forward_mean_ns && s.backward_mean_ns) {
      s.microbatch_ns = *s.forward_mean_ns + *s.backward_mean_ns;
    } else {
      s.microbatch_ns = mean_of(sum.pair_ns, sum.pairs);
    }
    s.warmup_ns = mean_of(sum.warmup_ns, sum.phase_steps);
    s.steady_ns = mean_of(sum.steady_ns, sum.phase_steps);
    s.cooldown_ns = mean_of(sum.cooldown_ns, sum.phase_steps);
    if (sum.steps > 0 && !s.shares_gpu) s.bubble_fraction = sum.bubble_sum / static_cast<double>(sum.steps);
    if (sum.microbatch_steps > 0)
      s.microbatches_per_step =
          static_cast<double>(sum.microbatches) / static_cast<double>(sum.microbatch_steps);
    if (p2p_steps > 0) {
      s.p2p_ns = mean(p2p, p2p_steps);
      s.p2p_wait_ns = mean(p2p_wait, p2p_steps);
    }
    report.stages.push_back(s);
  }
  if (!report.stages.empty() && report.stages.back().peak_activation_bytes.value_or(0) > 0) {
    const auto last = static_cast<double>(*report.stages.back().peak_activation_bytes);
    for (StageReport& s : report.stages)
      if (s.peak_activation_bytes)
        s.activation_vs_last_stage = static_cast<double>(*s.peak_activation_bytes) / last;
  }
}

void add_kernel_reports(const ReportContext& ctx, RunReport& report) {
  std::vector<const MergedKernel*> order;
  for (const MergedKernel& k : ctx.run.kernels) order.push_back(&k);
  std::sort(order.begin(), order.end(),
            [](const MergedKernel* a, const MergedKernel* b) { return a->total_ns > b->total_ns; });
  std::map<std::string, CategoryStat> categories;
  int64_t all = 0;
  for (const MergedKernel* k : order) {
    const char* category = kernel_category(k->name);
    CategoryStat& c = categories[category];
    c.category = category;
    c.count += k->count;
    c.total_ns += k->total_ns;
    all += k->total_ns;
    if (report.kernels.size() >= ctx.options.top_kernels) continue;
    KernelStat s{
        readable_kernel_name(k->name), k->name, category, k->count, k->total_ns, 0, 0, 0, 0, k->max_ns};
    s.mean_ns = mean(k->total_ns, k->count);
    s.p50_ns = percentile_ns(*k, 0.5);
    s.p90_ns = percentile_ns(*k, 0.9);
    s.p99_ns = percentile_ns(*k, 0.99);
    report.kernels.push_back(std::move(s));
  }
  CategoryStat copy{"copy", 0, 0, 0};
  for (const RankDigest& d : ctx.run.ranks) {
    copy.count += d.memcpy_totals.calls + d.memset_totals.calls;
    copy.total_ns += d.memcpy_totals.time_ns + d.memset_totals.time_ns;
  }
  all += copy.total_ns;
  if (copy.count > 0) categories["copy"] = copy;
  for (auto& [name, c] : categories) {
    c.share = all > 0 ? static_cast<double>(c.total_ns) / static_cast<double>(all) : 0;
    report.categories.push_back(c);
  }
  std::sort(report.categories.begin(), report.categories.end(),
            [](const CategoryStat& a, const CategoryStat& b) { return a.total_ns > b.total_ns; });
}

namespace {

// Re-buckets one rank's series onto a common grid on the aligned clock.
void resample(const BucketSeries& from, int64_t shift_ns, Series& into, bool as_max) {
  const std::vector<double>& values = from.values();
  const int64_t width = from.width_ns();
  auto put = [&](size_t index, double v) {
    into.values[index] = as_max ? std::max(into.values[index], v) : into.values[index] + v;
  };
  // Source bucket b starts at `at` on the grid.
  int64_t at = from.origin_ns() + shift_ns - into.start_ns;
  size_t b = 0;
  for (; b < values.size() && at < 0; ++b, at += width)
    if (at + width > 0 && !into.values.empty()) put(0, values[b]);  // it overlaps the first
  if (b == values.size()) return;
  // From here the grid index at / bucket_ns grows by a fixed quotient and remainder per bucket.
  auto index = static_cast<size_t>(at / into.bucket_ns);
  int64_t rest = at % into.bucket_ns;
  const auto index_step = static_cast<size_t>(width / into.bucket_ns);
  const int64_t rest_step = width % into.bucket_ns;
  for (; b < values.size() && index < into.values.size(); ++b) {
    put(index, values[b]);
    index += index_step;
    rest += rest_step;
    if (rest >= into.bucket_ns) {
      rest -= into.bucket_ns;
      ++index;
    }
  }
}

}  // namespace

void add_timeline_excerpt(const ReportContext& ctx, RunReport& report) {
  std::map<int32_t, size_t> first_of_stage;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i)
    if (!ctx.run.ranks[i].excerpt.empty()) first_of_stage.try_emplace(report.ranks[i].stage, i);
  static const char* kNames[] = {"step", "forward", "backward"};
  for (const auto& [stage, i] : first_of_stage) {
    TimelineLane lane{report.ranks[i].rank, stage, {}};
    for (const RankDigest::ExcerptSpan& s : ctx.run.ranks[i].excerpt)
      lane.spans.push_back(TimelineSpan{ctx.aligned(i, s.start_ns), ctx.aligned(i, s.end_ns),
                                        kNames[std::min<uint8_t>(s.kind, 2)]});
    report.timeline_excerpt.push_back(std::move(lane));
  }
}

void add_series(const ReportContext& ctx, RunReport& report) {
  add_timeline_excerpt(ctx, report);
  int64_t end = 0, width = 0;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    end = std::max(end, report.ranks[i].last_event_ns);
    width = std::max(width, ctx.run.ranks[i].busy.width_ns());
  }
  if (end <= 0 || width <= 0) return;
  width = std::max(width, end / 400 + 1);  // a chart's worth of points
  const auto buckets = static_cast<size_t>(end / width + 1);
  report.gpu_busy = Series{0, width, std::vector<double>(buckets, 0.0)};
  size_t gpu_ranks = 0;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    if (ctx.run.ranks[i].busy.empty()) continue;
    ++gpu_ranks;
    resample(ctx.run.ranks[i].busy, ctx.shift_ns[i] - ctx.origin_ns, report.gpu_busy, false);
  }
  if (gpu_ranks == 0) {
    report.gpu_busy = {};
  } else {
    for (double& v : report.gpu_busy.values)
      v = std::min(1.0, v / (static_cast<double>(gpu_ranks) * static_cast<double>(width)));
  }
  // Memory: every rank, both figures it has, on a coarser grid the more ranks there are.
  size_t with_memory = 0;
  for (const RankDigest& d : ctx.run.ranks) with_memory += d.memory_seen;
  if (with_memory == 0) return;
  const int64_t points = std::clamp<int64_t>(100'000 / static_cast<int64_t>(with_memory), 32, 400);
  const int64_t memory_width = std::max(width, end / points + 1);
  const auto memory_buckets = static_cast<size_t>(end / memory_width + 1);
  auto timeline = [&](size_t i, const BucketSeries& from) {
    Series series{0, memory_width, std::vector<double>(memory_buckets, 0.0)};
    resample(from, ctx.shift_ns[i] - ctx.origin_ns, series, true);
    // Buckets without an event hold the level of the one before.
    for (size_t b = 1; b < series.values.size(); ++b)
      if (series.values[b] == 0) series.values[b] = series.values[b - 1];
    return series;
  };
  std::vector<std::optional<MemoryTimeline>> timelines(ctx.run.ranks.size());
  parallel_for(timelines.size(), ctx.options.threads, [&](size_t i) {
    const RankDigest& d = ctx.run.ranks[i];
    if (!d.memory_seen) return;
    MemoryTimeline m{report.ranks[i].rank, report.ranks[i].memory_figure, std::nullopt, std::nullopt};
    if (d.reserved_seen) m.reserved = timeline(i, d.memory_reserved);
    if (d.allocated_seen) m.allocated = timeline(i, d.memory_allocated);
    timelines[i] = std::move(m);
  });
  for (auto& m : timelines)
    if (m) report.memory_timelines.push_back(std::move(*m));
}

}  // namespace pipescope::analysis
