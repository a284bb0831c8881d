// The report's spine: communicators across ranks, clock alignment, layout, per-rank figures,
// then the analyses of report_nccl.cpp / report_pipeline.cpp / report_plan.cpp, and the findings.
#include "pipescope/analysis/report_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>

#include "pipescope/analysis/clock_alignment.h"
#include "report_context.h"
#include "step_rhythm.h"

namespace pipescope::analysis {
namespace {

const char* stop_name(trace::StopReason reason) {
  switch (reason) {
    case trace::StopReason::kEndOfData: return "end of data";
    case trace::StopReason::kTruncated: return "truncated";
    case trace::StopReason::kCorrupt: return "corrupt";
  }
  return "?";
}

// A stated layout the traffic contradicts is still the user's word: Megatron's order
// (rank = tp_rank + tp * (dp_rank + dp * stage)).
InferredLayout layout_in_rank_order(int32_t world_size, const StatedLayout& stated) {
  InferredLayout out;
  out.world_size = world_size;
  out.tp = stated.tp;
  out.pp = stated.pp;
  out.dp = stated.dp;
  for (int32_t r = 0; r < world_size; ++r)
    out.ranks.push_back(
        RankCoordinates{r, r / (stated.tp * stated.dp), r % stated.tp, r / stated.tp % stated.dp, 0});
  out.notes.push_back("layout: tp " + std::to_string(out.tp) + " x pp " + std::to_string(out.pp) + " x dp " +
                      std::to_string(out.dp) +
                      " as stated; coordinates from the rank order, not the traffic");
  return out;
}

void infer(ReportContext& ctx, RunReport& report) {
  LayoutReport& layout = report.layout;
  layout.world_size = ctx.run.world_size;
  const std::vector<CommunicatorTraffic> traffic = layout_traffic(ctx);
  const std::vector<P2pFlow> flows = layout_flows(ctx);
  if (traffic.empty() && !ctx.options.stated_layout) {
    layout.source = "none";
    layout.world_size = ctx.run.world_size;
    layout.notes.push_back("no communicator joins two traced ranks: layout unknown");
    for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {  // stages the ranks declare still show
      report.ranks[i].stage = ctx.run.ranks[i].declared_stage.value_or(0);
      layout.pp = std::max(layout.pp, report.ranks[i].stage + 1);
    }
  } else {
    LayoutEvidence evidence;
    evidence.stated = ctx.options.stated_layout;
    evidence.untraced = silent_ranks(ctx.run);
    evidence.declared_stage.assign(static_cast<size_t>(ctx.run.world_size), -1);
    for (size_t i = 0; i < ctx.run.ranks.size(); ++i)
      if (ctx.run.ranks[i].declared_stage)
        evidence.declared_stage[static_cast<size_t>(ctx.run.global_rank[i])] =
            *ctx.run.ranks[i].declared_stage;
    auto inferred = infer_layout(ctx.run.world_size, traffic, flows, evidence);
    const auto& stated = ctx.options.stated_layout;
    if (!inferred && stated && int64_t{stated->tp} * stated->pp * stated->dp == ctx.run.world_size) {
      report.warnings.push_back("--layout tp=" + std::to_string(stated->tp) +
                                ",pp=" + std::to_string(stated->pp) + ",dp=" + std::to_string(stated->dp) +
                                " is used as stated, with coordinates in Megatron's rank order, but the "
                                "traffic contradicts it: " +
                                inferred.error().message);
      inferred = layout_in_rank_order(ctx.run.world_size, *stated);
    }
    if (!inferred) {
      layout.source = "unknown";
      report.warnings.push_back("layout: " + inferred.error().message +
                                (stated ? "" : " (state it with --layout tp=T,pp=P,dp=D)"));
    } else {
      layout.source = ctx.options.stated_layout ? "stated" : "inferred";
      layout.tp = inferred->tp;
      layout.pp = inferred->pp;
      layout.dp = inferred->dp;
      layout.zero_shard = inferred->zero_shard;
      layout.ep = inferred->ep;
      layout.notes = inferred->notes;
      for (const auto& [id, role] : inferred->roles)
        if (auto it = ctx.comm_by_id.find(id); it != ctx.comm_by_id.end())
          ctx.comms[it->second].role = comm_role_name(role);
      ctx.pp = inferred->pp;
      ctx.coordinates = inferred->ranks;
      for (RankReport& r : report.ranks) {
        if (r.rank < 0 || static_cast<size_t>(r.rank) >= inferred->ranks.size()) continue;
        const RankCoordinates& c = inferred->ranks[r.rank];
        r.stage = c.stage;
        r.tp_rank = c.tp_rank;
        r.dp_rank = c.dp_rank;
        r.shard_rank = c.shard_rank;
      }
    }
  }
  for (const CommInfo& comm : ctx.comms) {
    if (comm.size < 2) continue;
    CommunicatorReport c{comm.comm_id, comm.role, comm.ranks, {}};
    for (size_t k = 0; k < comm.members.size(); ++k)
      if (!comm.traced(k)) c.untraced.push_back(comm.ranks[k]);
    layout.communicators.push_back(std::move(c));
  }
}

void fill_files(const ReportContext& ctx, RunReport& report) {
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    RankFile f;
    f.rank = ctx.run.global_rank[i];
    f.path = d.path;
    f.host = d.header.host;
    f.pid = d.header.pid;
    f.valid_bytes = d.valid_bytes;
    f.total_bytes = d.total_bytes;
    f.records = d.records;
    f.records_dropped = d.records_dropped;
    f.closed_cleanly = d.end.has_value();
    f.stop = stop_name(d.stop_reason);
    f.stop_detail = d.stop_detail;
    if (d.stop_reason != trace::StopReason::kEndOfData)
      report.warnings.push_back("rank " + std::to_string(f.rank) + ": trace " + f.stop + " after " +
                                std::to_string(d.valid_bytes) + " of " + std::to_string(d.total_bytes) +
                                " bytes; used what was there (" + d.stop_detail + ")");
    if (d.records_dropped > 0)
      report.warnings.push_back("rank " + std::to_string(f.rank) + ": the profiler lost " +
                                std::to_string(d.records_dropped) + " records");
    for (const std::string& notice : d.notices)
      report.warnings.push_back("rank " + std::to_string(f.rank) + ": " + notice);
    report.files.push_back(std::move(f));
  }
}

// nvidia-smi's spelling of a UUID: GPU-8-4-4-4-12 hex digits.
std::string uuid_text(const std::array<uint8_t, 16>& uuid) {
  char text[48];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9],
                uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
  return text;
}

// The devices the rank's kernels ran on, as the process info names them; a device without a
// UUID (an older trace, a zeroed field) is left out rather than guessed from its ordinal, which
// CUDA_VISIBLE_DEVICES renumbers in every process.
std::vector<std::string> kernel_gpu_uuids(const RankDigest& d) {
  std::vector<std::string> uuids;
  if (!d.process) return uuids;
  for (const trace::DeviceInfo& device : d.process->devices) {
    if (device.ordinal < 0 || device.ordinal >= 64 || (d.kernel_devices >> device.ordinal & 1) == 0) continue;
    if (std::all_of(device.uuid.begin(), device.uuid.end(), [](uint8_t b) { return b == 0; })) continue;
    uuids.push_back(uuid_text(device.uuid));
  }
  return uuids;
}

// Whether some step that started at `from_ns` or later ended (the next one started) by `to_ns`.
bool covers_a_whole_step(const RankDigest& d, int64_t from_ns, int64_t to_ns) {
  for (size_t k = 0; k + 1 < d.steps.size(); ++k)
    if (d.steps[k].start_ns >= from_ns && d.steps[k + 1].start_ns <= to_ns) return true;
  return false;
}

// HTA's figures from the rank's unions of GPU time, the overlaps by inclusion and exclusion. As
// HTA, they leave out the GPU work of the last step when there are two steps or more: HTA drops
// the kernels launched from the last ProfilerStep's start on; where the trace does not say when
// work was launched (or the scan could not sort it by launch), what started from then on.
HtaFigures hta_figures(const RankDigest& d) {
  RankDigest::UnionsBefore whole;
  whole.compute_ns = d.compute_union_ns;
  whole.comm_ns = d.comm_union_ns;
  whole.compute_or_comm_ns = d.compute_or_comm_union_ns;
  whole.any_ns = d.any_union_ns;
  whole.copy_ns = d.copy_union_ns;
  whole.compute_or_copy_ns = d.compute_or_copy_union_ns;
  whole.comm_or_copy_ns = d.comm_or_copy_union_ns;
  whole.last_end_ns = d.gpu_last_ns;
  const RankDigest::UnionsBefore& launched = d.hta_launched_before_last_step;
  const RankDigest::UnionsBefore& last = d.before_last_step;
  const bool by_launch = d.steps.size() >= 2 && launched.known;
  const bool trimmed = !by_launch && d.steps.size() >= 2 && last.known && last.any_ns > 0;
  const RankDigest::UnionsBefore& u = by_launch ? launched : trimmed ? last : whole;
  const int64_t first_ns = by_launch ? launched.at_ns : d.gpu_first_ns;
  HtaFigures h;
  // Cut by start, not by launch, with the GPU still busy at the cut: HTA may count more.
  h.busy_at_last_step_start = d.steps.size() >= 2 && !(by_launch && d.launch_times_known) && last.known &&
                              last.last_end_ns > last.at_ns;
  h.kernel_time_ns = std::max<int64_t>(0, u.last_end_ns - first_ns);
  h.idle_time_ns = std::max<int64_t>(0, h.kernel_time_ns - u.any_ns);
  h.compute_time_ns = u.compute_ns;
  h.non_compute_time_ns = std::max<int64_t>(0, u.any_ns - u.compute_ns);
  const int64_t c = u.compute_ns, x = u.comm_ns, m = u.copy_ns;
  const int64_t cx = c + x - u.compute_or_comm_ns;
  const int64_t cm = c + m - u.compute_or_copy_ns;
  const int64_t xm = x + m - u.comm_or_copy_ns;
  const int64_t cxm = u.any_ns - c - x - m + cx + cm + xm;
  if (x > 0) h.comp_comm_overlap = static_cast<double>(cx) / static_cast<double>(x);
  HtaFigures::KernelTypes& k = h.kernel_types;
  k.all_three_ns = cxm;
  k.computation_communication_ns = cx - cxm;
  k.computation_memory_ns = cm - cxm;
  k.communication_memory_ns = xm - cxm;
  k.computation_ns = c - cx - cm + cxm;
  k.communication_ns = x - cx - xm + cxm;
  k.memory_ns = m - cm - xm + cxm;
  return h;
}

HtaFigures::KernelTypes summed_kernel_types(const std::vector<RankReport>& ranks) {
  HtaFigures::KernelTypes sum;
  for (const RankReport& r : ranks) {
    if (!r.hta) continue;
    const HtaFigures::KernelTypes& k = r.hta->kernel_types;
    sum.computation_ns += k.computation_ns;
    sum.communication_ns += k.communication_ns;
    sum.memory_ns += k.memory_ns;
    sum.computation_communication_ns += k.computation_communication_ns;
    sum.computation_memory_ns += k.computation_memory_ns;
    sum.communication_memory_ns += k.communication_memory_ns;
    sum.all_three_ns += k.all_three_ns;
  }
  return sum;
}

void fill_rank(const ReportContext& ctx, size_t i, RankReport& r) {
  const RankDigest& d = ctx.run.ranks[i];
  r.rank = ctx.run.global_rank[i];
  r.host = d.header.host;
  if (d.first_ns != INT64_MAX) {
    r.first_event_ns = ctx.aligned(i, d.first_ns);
    r.last_event_ns = ctx.aligned(i, d.last_ns);
  }
  GpuBreakdown& g = r.gpu;
  g.captured = d.gpu_captured;
  if (d.gpu_captured) r.hta = hta_figures(d);
  if (d.gpu_captured) {
    // From the first step on, where the trace tells when it started; for a trace not closed, up
    // to where its GPU records stop being complete.
    const RankDigest::UnionsBefore& tail = d.before_unflushed_tail;
    const bool cut = !d.end && tail.known;
    const int64_t span_end = cut ? tail.at_ns : d.gpu_last_ns;
    const RankDigest::UnionsBefore& b = d.before_first_step;
    g.from_first_step = b.known && b.at_ns > d.gpu_first_ns && b.at_ns < d.gpu_last_ns;
    const RankDigest::UnionsBefore none;
    const RankDigest::UnionsBefore& before = g.from_first_step ? b : none;
    // A first step that starts after the cut leaves nothing (and shares not measured, below).
    const auto from_first = [](int64_t total, int64_t before_step) {
      return std::max<int64_t>(0, total - before_step);
    };
    const int64_t compute = from_first(cut ? tail.compute_ns : d.compute_union_ns, before.compute_ns);
    const int64_t comm = from_first(cut ? tail.comm_ns : d.comm_union_ns, before.comm_ns);
    const int64_t compute_or_comm =
        from_first(cut ? tail.compute_or_comm_ns : d.compute_or_comm_union_ns, before.compute_or_comm_ns);
    const int64_t any = from_first(cut ? tail.any_ns : d.any_union_ns, before.any_ns);
    const int64_t span_start = g.from_first_step ? b.at_ns : d.gpu_first_ns;
    const int64_t whole_span = std::max<int64_t>(0, span_end - span_start);
    // Kernel sampling: only the recorded intervals count (work a paused interval's first kernels
    // finished is counted in it; clamped below).
    int64_t paused = 0;
    for (const auto& [from, to] : d.gpu_record_pauses)
      paused += std::max<int64_t>(0, std::min(to, span_end) - std::max(from, span_start));
    g.span_ns = whole_span - paused;
    g.kernel_sample_steps = d.kernel_sample_steps;
    g.recorded_fraction =
        whole_span > 0 ? static_cast<double>(g.span_ns) / static_cast<double>(whole_span) : 1.0;
    g.compute_ns = compute;
    g.comm_exposed_ns = compute_or_comm - compute;
    g.comm_hidden_ns = comm - g.comm_exposed_ns;
    g.copy_only_ns = any - compute_or_comm;
    g.idle_ns = std::max<int64_t>(0, g.span_ns - any);
    g.gpu_busy_fraction =
        g.span_ns > 0 ? std::min(1.0, static_cast<double>(any) / static_cast<double>(g.span_ns)) : 0;
    if (!d.end && d.last_ns > span_end) {
      g.unflushed_tail_ns = d.last_ns - span_end;
      g.shares_measured =
          g.span_ns > 0 && (!g.from_first_step || covers_a_whole_step(d, span_start, span_end));
    }
    g.out_of_order_intervals = d.out_of_order_intervals;
  }
  if (!d.comms.empty()) r.p2p_ns = d.p2p_ns;
  r.gpu_uuids = kernel_gpu_uuids(d);
  r.kernel_ns_by_category = d.kernel_ns_by_category;
  const int64_t copy_ns = d.memcpy_totals.time_ns + d.memset_totals.time_ns;
  if (copy_ns > 0) r.kernel_ns_by_category["copy"] += copy_ns;
}

// A step's time is its period: from its start to the next step's start on the same rank. That
// takes in the GPU work it queued beyond its NVTX range (the host returns from kernel launches
// long before the GPU has run them, unless the step synchronizes inside its range) and whatever
// runs between steps, as a step's share of the run's wall time. The last step has no next start:
// its range bounds it from below only, so it counts only in a run of one step.
std::optional<int64_t> step_time_ns(const RankDigest& d, size_t k) {
  const std::vector<StepDigest>& steps = d.steps;
  if (k + 1 < steps.size()) return steps[k + 1].start_ns - steps[k].start_ns;
  if (steps.size() == 1 && d.steps_beyond_cap == 0) return steps[k].end_ns - steps[k].start_ns;
  return std::nullopt;
}

// Without NVTX steps: the rhythm of the data-parallel collectives (or shard / world ones) on
// their lowest member, within the first 256 calls.
void steps_from_collectives(const ReportContext& ctx, StepReport& steps) {
  for (const char* role : {"data", "shard", "world"}) {
    for (const CommInfo& comm : ctx.comms) {
      if (comm.role != role) continue;
      const auto first =
          std::find_if(comm.members.begin(), comm.members.end(), [](int32_t m) { return m >= 0; });
      if (first == comm.members.end()) continue;
      const CommDigest* c = digest_of(ctx.run.ranks[*first], comm.comm_id);
      if (c == nullptr) continue;
      const std::vector<int64_t> starts = step_starts_from_rhythm(c->first_enters_ns);
      if (starts.size() < 2) continue;
      for (size_t k = 1; k < starts.size() && steps.step_ns.size() < 1000; ++k)
        steps.step_ns.push_back(starts[k] - starts[k - 1]);
      steps.source = "collectives";
      return;
    }
  }
}

// When the first step ended on every rank (aligned): its NVTX range's end, else halfway between
// the first two data-parallel reductions; INT64_MIN when no step shows.
int64_t first_step_end_ns(const ReportContext& ctx) {
  int64_t end = INT64_MIN;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i)
    if (!ctx.run.ranks[i].steps.empty())
      end = std::max(end, ctx.aligned(i, ctx.run.ranks[i].steps[0].end_ns));
  if (end != INT64_MIN) return end;
  for (const char* role : {"data", "shard", "world"}) {
    for (const CommInfo& comm : ctx.comms) {
      if (comm.role != role) continue;
      for (int32_t m : comm.members) {
        const CommDigest* c = m >= 0 ? digest_of(ctx.run.ranks[m], comm.comm_id) : nullptr;
        if (c == nullptr) continue;
        const std::vector<int64_t> starts = step_starts_from_rhythm(c->first_enters_ns);
        if (starts.size() >= 2) return ctx.aligned(static_cast<size_t>(m), (starts[0] + starts[1]) / 2);
      }
    }
  }
  return INT64_MIN;
}

void fill_steps(const ReportContext& ctx, RunReport& report) {
  // A step in which any rank's NCCL call failed never ended: its ranges closed as the stacks
  // unwound after a timeout or an abort. It is left out for every rank.
  size_t most = 0;
  std::vector<bool> unfinished;
  for (const RankDigest& d : ctx.run.ranks) {
    most = std::max(most, d.steps.size());
    unfinished.resize(most, false);
    for (size_t k = 0; k < d.steps.size(); ++k)
      if (d.steps[k].failed) unfinished[k] = true;
  }
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    RankReport& r = report.ranks[i];
    int64_t total = 0;
    uint64_t finished = 0, timed = 0;
    for (size_t k = 0; k < d.steps.size(); ++k) {
      if (unfinished[k]) continue;
      ++finished;
      if (const std::optional<int64_t> t = step_time_ns(d, k)) {
        total += *t;
        ++timed;
      }
    }
    r.steps = finished + d.steps_beyond_cap;
    r.step_mean_ns = timed == 0 ? 0 : total / static_cast<int64_t>(timed);
  }
  StepReport& steps = report.steps;
  steps.unfinished = static_cast<uint64_t>(std::count(unfinished.begin(), unfinished.end(), true));
  if (most > 0) {
    steps.source = "nvtx";
    std::vector<int64_t> across;
    for (size_t k = 0; k < most; ++k) {
      if (unfinished[k]) continue;
      across.clear();
      for (const RankDigest& d : ctx.run.ranks)
        if (k < d.steps.size())
          if (const std::optional<int64_t> t = step_time_ns(d, k)) across.push_back(*t);
      if (across.empty()) continue;
      std::nth_element(across.begin(), across.begin() + across.size() / 2, across.end());
      const int64_t median = across[across.size() / 2];
      if (steps.step_ns.size() < 1000) steps.step_ns.push_back(median);
    }
    most = steps.step_ns.size();
    if (most == 0) return;
  } else {
    steps_from_collectives(ctx, steps);
    if (steps.step_ns.empty()) return;
    most = steps.step_ns.size();
  }
  std::vector<int64_t> sorted = steps.step_ns;
  std::sort(sorted.begin(), sorted.end());
  steps.count = most;
  for (const RankReport& r : report.ranks) steps.count = std::max<uint64_t>(steps.count, r.steps);
  double sum = 0, sq = 0;
  for (int64_t v : sorted) sum += static_cast<double>(v);
  const double mean = sum / static_cast<double>(sorted.size());
  for (int64_t v : sorted) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  steps.mean_ns = static_cast<int64_t>(mean);
  steps.median_ns = sorted[sorted.size() / 2];
  steps.min_ns = sorted.front();
  steps.max_ns = sorted.back();
  if (sorted.size() >= 2) steps.stdev_ns = std::sqrt(sq / static_cast<double>(sorted.size()));
}

}  // namespace

RunTimebase align_run_clocks(const LoadedRun& run, unsigned threads) {
  ReportOptions options;
  options.threads = threads;
  ReportContext ctx{run, options, {}, 0, false, {}, {}, {}, 1, {}, INT64_MIN};
  collect_comms(run, ctx.comms, ctx.comm_by_id);
  return align(ctx);
}

std::vector<HtaKernelTypeShare> hta_kernel_type_shares(const HtaFigures::KernelTypes& types) {
  std::vector<HtaKernelTypeShare> rows = {
      {"COMPUTATION", types.computation_ns},
      {"COMMUNICATION", types.communication_ns},
      {"MEMORY", types.memory_ns},
      {"COMPUTATION overlapping COMMUNICATION", types.computation_communication_ns},
      {"COMPUTATION overlapping MEMORY", types.computation_memory_ns},
      {"COMMUNICATION overlapping MEMORY", types.communication_memory_ns},
      {"COMPUTATION overlapping COMMUNICATION overlapping MEMORY", types.all_three_ns}};
  std::erase_if(rows, [](const HtaKernelTypeShare& t) { return t.sum_ns <= 0; });
  int64_t total = 0;
  for (const auto& t : rows) total += t.sum_ns;
  for (auto& t : rows) t.percentage = 100.0 * static_cast<double>(t.sum_ns) / static_cast<double>(total);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.sum_ns > b.sum_ns; });
  return rows;
}

Expected<RunReport> build_run_report(const LoadedRun& run, const ReportOptions& options) {
  RunReport report;
  report.dir = run.dir;
  report.run_id = run.run_id;
  report.attempt = run.attempt;
  report.missing_ranks = run.missing_ranks;
  report.warnings = run.warnings;
  if (!run.missing_ranks.empty())
    report.warnings.push_back(std::to_string(run.missing_ranks.size()) + " of " +
                              std::to_string(run.world_size) + " ranks have no trace (first: rank " +
                              std::to_string(run.missing_ranks.front()) + ")");
  ReportContext ctx{run, options, {}, 0, false, {}, {}, {}, 1, {}, INT64_MIN};
  for (size_t i = 0; i < run.ranks.size(); ++i) ctx.index_of_rank[run.global_rank[i]] = i;
  collect_comms(run, ctx.comms, ctx.comm_by_id);
  RunTimebase base = align(ctx);
  ctx.shift_ns = std::move(base.shift_ns);
  ctx.origin_ns = base.origin_ns;
  ctx.kernel_mode = base.kernel_mode;
  report.clock = std::move(base.clock);
  fill_files(ctx, report);
  report.ranks.resize(run.ranks.size());
  for (size_t i = 0; i < run.ranks.size(); ++i) fill_rank(ctx, i, report.ranks[i]);
  report.hta_kernel_types = hta_kernel_type_shares(summed_kernel_types(report.ranks));
  std::vector<int32_t> busy_at_cut;
  for (const RankReport& r : report.ranks)
    if (r.hta && r.hta->busy_at_last_step_start) busy_at_cut.push_back(r.rank);
  if (!busy_at_cut.empty())
    report.warnings.push_back(
        "HTA's figures: the GPU of " + std::to_string(busy_at_cut.size()) + " rank(s) (first: rank " +
        std::to_string(busy_at_cut.front()) +
        ") was still busy when the last step began; HTA leaves out the GPU work launched from then on, "
        "pipescope the work that started from then on, so its HTA figures may differ from HTA's");
  infer(ctx, report);
  fill_steps(ctx, report);
  if (report.steps.count >= 2) ctx.warmup_end_ns = first_step_end_ns(ctx);
  add_nccl_reports(ctx, report);
  add_stragglers(ctx, report);
  add_hang_report(ctx, report);
  add_failure(ctx, report);
  add_pipeline_reports(ctx, report);
  add_kernel_reports(ctx, report);
  add_series(ctx, report);
  if (!options.plan_json.empty())
    if (Status s = add_plan_comparison(ctx, report); !s) return s.error();
  add_findings(report);
  return report;
}

}  // namespace pipescope::analysis
