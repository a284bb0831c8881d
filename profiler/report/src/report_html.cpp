// The HTML report: one file, inline CSS and SVG, nothing fetched, no script; opens offline.
#include <algorithm>
#include <map>
#include <sstream>

#include "hta_table.h"
#include "pipescope/report/report_output.h"
#include "svg_chart.h"
#include "text_cells.h"

namespace pipescope::report {
namespace {

using namespace analysis;  // NOLINT(google-build-using-namespace): the report's types

constexpr const char* kCompute = "#4c78a8";
constexpr const char* kExposed = "#e45756";
constexpr const char* kCopy = "#72b7b2";
constexpr const char* kIdle = "#d9d9d9";

constexpr const char* kComputeOverlapped = "#8cb3d9";

// Shares of the rank's GPU span, adding up to 100%: hidden communication runs under compute, so
// it is the part of compute that overlaps it, not time beside it.
BarRow breakdown_row(const std::string& label, const GpuBreakdown& g) {
  const double span = static_cast<double>(std::max<int64_t>(g.span_ns, 1));
  auto share = [span](int64_t ns) { return static_cast<double>(ns) / span; };
  const int64_t hidden = std::min(g.comm_hidden_ns, g.compute_ns);
  return BarRow{label,
                {{share(g.compute_ns - hidden), kCompute},
                 {share(hidden), kComputeOverlapped},
                 {share(g.comm_exposed_ns), kExposed},
                 {share(g.copy_only_ns), kCopy},
                 {share(g.idle_ns), kIdle}},
                "busy " + pct(share(g.span_ns - g.idle_ns))};
}

std::string breakdown_chart(const RunReport& r) {
  std::vector<BarRow> rows;
  if (r.ranks.size() <= 64) {
    for (const RankReport& k : r.ranks)
      if (k.gpu.captured && k.gpu.shares_measured)
        rows.push_back(breakdown_row("rank " + std::to_string(k.rank), k.gpu));
  } else {  // many ranks: one bar per stage, the stage's ranks added up
    std::map<int32_t, GpuBreakdown> stages;
    for (const RankReport& k : r.ranks) {
      if (!k.gpu.captured || !k.gpu.shares_measured) continue;
      GpuBreakdown& s = stages[k.stage];
      s.captured = true;
      s.span_ns += k.gpu.span_ns;
      s.compute_ns += k.gpu.compute_ns;
      s.comm_exposed_ns += k.gpu.comm_exposed_ns;
      s.comm_hidden_ns += k.gpu.comm_hidden_ns;
      s.copy_only_ns += k.gpu.copy_only_ns;
      s.idle_ns += k.gpu.idle_ns;
    }
    for (const auto& [stage, g] : stages) rows.push_back(breakdown_row("stage " + std::to_string(stage), g));
  }
  if (rows.empty()) return "<p>No GPU activity in the traces (no CUPTI kernel records).</p>";
  return stacked_bars(rows,
                      {{"compute", kCompute},
                       {"compute hiding communication", kComputeOverlapped},
                       {"exposed communication", kExposed},
                       {"copies only", kCopy},
                       {"idle", kIdle}},
                      1.0);
}

std::string memory_stage_chart(const RunReport& r) {
  std::vector<BarRow> rows;
  for (const StageReport& s : r.stages) {
    if (!s.peak_memory_bytes || *s.peak_memory_bytes == 0) continue;
    const uint64_t peak = *s.peak_memory_bytes;
    if (!s.peak_activation_bytes) {  // the split is not measured: the peak alone
      rows.push_back(BarRow{"stage " + std::to_string(s.stage),
                            {{gib(peak), "#bdbdbd"}},
                            fixed(gib(peak), 2) + " GiB (static / activations not measured)"});
      continue;
    }
    const uint64_t activations = *s.peak_activation_bytes;
    const uint64_t static_bytes = peak - std::min(peak, activations);
    rows.push_back(BarRow{"stage " + std::to_string(s.stage),
                          {{gib(static_bytes), "#9ecae9"}, {gib(activations), "#3182bd"}},
                          fixed(gib(peak), 2) + " GiB (activations " +
                              fixed(s.activation_vs_last_stage.value_or(0), 1) + "x last stage)"});
  }
  if (rows.empty()) return "<p>No memory records in the traces.</p>";
  return stacked_bars(rows, {{"static (before the first forward)", "#9ecae9"},
                             {"activations (peak)", "#3182bd"},
                             {"peak (split not measured)", "#bdbdbd"}});
}

// Per stage, the rank with the highest peak; each in the figure its peak comes from.
std::string memory_timeline_chart(const RunReport& r) {
  std::map<int32_t, const RankReport*> peak_of_stage;
  for (const RankReport& k : r.ranks) {
    if (k.memory_figure == "none") continue;
    const RankReport*& best = peak_of_stage[k.stage];
    if (best == nullptr || k.peak_memory_bytes > best->peak_memory_bytes) best = &k;
  }
  static const char* kColors[] = {"#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#d6616b"};
  std::vector<Line> lines;
  double x0 = 0, dx = 0;
  for (const auto& [stage, k] : peak_of_stage) {
    if (lines.size() >= 6) break;
    const int32_t rank = k->rank;  // a structured binding cannot be captured before C++20 in clang 14
    const auto m = std::find_if(r.memory_timelines.begin(), r.memory_timelines.end(),
                                [rank](const MemoryTimeline& t) { return t.rank == rank; });
    if (m == r.memory_timelines.end()) continue;
    const std::optional<Series>& series = m->figure == "allocated" ? m->allocated : m->reserved;
    if (!series) continue;
    std::vector<double> gibs;
    for (double v : series->values) gibs.push_back(v / (1024.0 * 1024 * 1024));
    lines.push_back(
        Line{"stage " + std::to_string(stage) + ": rank " + std::to_string(k->rank) + " (" + m->figure + ")",
             kColors[lines.size()], gibs});
    x0 = static_cast<double>(series->start_ns) * 1e-9;
    dx = static_cast<double>(series->bucket_ns) * 1e-9;
  }
  if (lines.empty()) return "<p>No memory records in the traces.</p>";
  return line_chart(lines, x0, dx, 0, "GiB");
}

std::string busy_chart(const RunReport& r) {
  if (r.gpu_busy.values.empty()) return "<p>No GPU activity in the traces.</p>";
  std::vector<double> percent;
  for (double v : r.gpu_busy.values) percent.push_back(v * 100);
  return line_chart({Line{"GPU busy (kernel union), mean over ranks", kCompute, percent}},
                    static_cast<double>(r.gpu_busy.start_ns) * 1e-9,
                    static_cast<double>(r.gpu_busy.bucket_ns) * 1e-9, 100, "%", true);
}

std::string timeline_chart(const RunReport& r) {
  if (r.timeline_excerpt.empty()) return "<p>No NVTX step / forward / backward ranges in the traces.</p>";
  std::vector<Lane> lanes;
  for (const TimelineLane& t : r.timeline_excerpt) {
    Lane lane{"stage " + std::to_string(t.stage) + " (rank " + std::to_string(t.rank) + ")", {}};
    std::vector<TimelineSpan> spans = t.spans;
    std::stable_sort(spans.begin(), spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
      return (a.category == "step") > (b.category == "step");  // steps underneath
    });
    for (const TimelineSpan& s : spans) {
      const char* color = s.category == "forward"    ? "#4c78a8"
                          : s.category == "backward" ? "#f58518"
                                                     : "#eeeeee";
      lane.spans.push_back(LaneSpan{static_cast<double>(s.start_ns) * 1e-9,
                                    static_cast<double>(s.end_ns) * 1e-9, color,
                                    s.category + " " + fixed(ms(s.end_ns - s.start_ns), 2) + " ms"});
    }
    lanes.push_back(std::move(lane));
  }
  return lane_timeline(lanes, {{"forward", "#4c78a8"}, {"backward", "#f58518"}, {"step", "#eeeeee"}});
}

void table_row(std::ostringstream& out, const std::vector<std::string>& cells, const char* tag = "td") {
  out << "<tr>";
  for (const std::string& c : cells) out << '<' << tag << '>' << escape_html(c) << "</" << tag << '>';
  out << "</tr>\n";
}

void write_plan(std::ostringstream& out, const PlanComparison& p) {
  out << "<h2>Planned versus measured</h2>\n<p>" << escape_html(p.plan_path)
      << "; memory figure: " << escape_html(p.memory_figure) << ".</p>\n<table>\n";
  table_row(out,
            {"stage", "peak GiB plan", "measured", "error", "fwd ms plan", "measured", "error", "bwd ms plan",
             "measured", "error"},
            "th");
  constexpr double kGiB = 1.0 / (1024.0 * 1024 * 1024);
  auto cells = [](std::vector<std::string>& row, const PlanFigure& f, double factor) {
    row.push_back(fixed(f.predicted * factor, 2));
    row.push_back(scaled(f.measured, factor, 2));
    row.push_back(error_pct(f.error_percent));
  };
  for (const PlanStageComparison& s : p.stages) {
    std::vector<std::string> row{std::to_string(s.stage)};
    cells(row, s.peak_memory_bytes, kGiB);
    cells(row, s.forward_s, 1e3);
    cells(row, s.backward_s, 1e3);
    table_row(out, row);
  }
  out << "</table>\n";
  if (std::any_of(p.stages.begin(), p.stages.end(),
                  [](const PlanStageComparison& s) { return s.gemm_s.has_value(); })) {
    out << "<p>GPU time a step by kind of work: the plan's split against the stage's kernels.</p>\n<table>\n";
    table_row(out,
              {"stage", "GEMM ms plan", "measured", "error", "attention ms plan", "measured", "error",
               "memory-bound ms plan", "measured", "error"},
              "th");
    for (const PlanStageComparison& s : p.stages) {
      std::vector<std::string> row{std::to_string(s.stage)};
      for (const std::optional<PlanFigure>* f : {&s.gemm_s, &s.attention_s, &s.memory_bound_s}) {
        if (*f) {
          cells(row, **f, 1e3);
        } else {
          row.insert(row.end(), {"-", "-", "-"});
        }
      }
      table_row(out, row);
    }
    out << "</table>\n";
  }
  out << "<p>Bubble: plan " << pct(p.bubble_fraction.predicted) << ", measured "
      << pct(p.bubble_fraction.measured) << " (" << escape_html(error_pct(p.bubble_fraction.error_percent))
      << "). Step: plan " << fixed(p.step_s.predicted * 1e3, 1) << " ms, measured "
      << scaled(p.step_s.measured, 1e3, 1) << " ms (" << escape_html(error_pct(p.step_s.error_percent))
      << ").</p>\n";
  if (!p.notes.empty()) {
    out << "<ul>\n";
    for (const std::string& note : p.notes) out << "<li>" << escape_html(note) << "</li>\n";
    out << "</ul>\n";
  }
}

}  // namespace

std::string report_html(const RunReport& r) {
  std::ostringstream out;
  out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>pipescope report: "
      << escape_html(r.dir) << "</title>\n<style>\n"
      << "body{font-family:sans-serif;margin:24px;max-width:1000px;color:#222}"
         "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}"
         "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}tr:nth-child(even){background:#f6f6f6}"
         ".warn{color:#a33}code{font-size:12px}\n</style></head><body>\n";
  out << "<h1>pipescope report: " << escape_html(r.dir) << "</h1>\n<p>"
      << (r.run_id.empty() ? std::string("no run id") : "run '" + escape_html(r.run_id) + "'") << ", attempt "
      << r.attempt << ", " << r.files.size() << " rank traces (" << escape_html(r.source_format) << ")</p>\n";

  out << "<h2>Findings</h2>\n<ul>\n";
  for (const std::string& f : r.findings) out << "<li>" << escape_html(f) << "</li>\n";
  if (r.findings.empty()) out << "<li>nothing stands out</li>\n";
  out << "</ul>\n";
  if (!r.warnings.empty()) {
    out << "<ul class=\"warn\">\n";
    for (const std::string& w : r.warnings) out << "<li>" << escape_html(w) << "</li>\n";
    out << "</ul>\n";
  }

  const LayoutReport& l = r.layout;
  out << "<h2>Layout</h2>\n<p>" << escape_html(l.source) << ": world " << l.world_size << " = tp " << l.tp
      << " x pp " << l.pp << " x dp " << l.dp
      << (l.zero_shard > 1 ? ", ZeRO shard groups of " + std::to_string(l.zero_shard) : "") << "</p>\n";

  const bool from_first_step = std::all_of(r.ranks.begin(), r.ranks.end(), [](const RankReport& k) {
    return k.gpu.from_first_step || !k.gpu.captured;
  });
  out << "<h2>GPU time per rank</h2>\n";
  if (from_first_step)
    out << "<p>From each rank's first step on: what ran before training is left out.</p>\n";
  out << breakdown_chart(r) << '\n';
  if (const HtaTable t = hta_table(r, 64); !t.rows.empty()) {
    out << "<h2>HTA's figures per rank</h2>\n<p>Holistic Trace Analysis' temporal breakdown and "
           "communication-computation overlap, as HTA defines them: from the first GPU activity to the "
           "last, the last step left out (docs/report.md)."
        << (t.rows.size() < t.ranks_with_figures ? " The ranks that idled most; --json has all." : "")
        << "</p>\n<table>\n";
    table_row(out, t.header, "th");
    for (const auto& row : t.rows) table_row(out, row);
    out << "</table>\n";
    if (!t.kernel_types.empty())
      out << "<p>Kernel types (all ranks): " << escape_html(t.kernel_types) << "</p>\n";
  }
  out << "<h2>GPU busy over time</h2>\n<p>The union of kernel and copy intervals (not the SM activity the "
         "hardware counts), as a share of each bucket, averaged over ranks.</p>\n"
      << busy_chart(r) << '\n';
  out << "<h2>Memory per stage</h2>\n" << memory_stage_chart(r) << '\n';
  out << "<h2>Memory over time</h2>\n<p>The rank with the highest peak of each stage, in the figure the "
         "trace holds (reserved: what allocators took with cudaMalloc; allocated: stream-ordered pool "
         "allocations). --json has every rank's timeline.</p>\n"
      << memory_timeline_chart(r) << '\n';
  out << "<h2>Timeline excerpt</h2>\n<p>The first two steps of one rank per stage (NVTX ranges).</p>\n"
      << timeline_chart(r) << '\n';

  if (!r.stages.empty()) {
    out << "<h2>Pipeline stages</h2>\n<table>\n";
    table_row(out,
              {"stage", "ranks", "fwd ms", "bwd ms", "bubble", "p2p ms", "p2p wait ms", "peak GiB",
               "activations GiB", "x last"},
              "th");
    for (const StageReport& s : r.stages)
      table_row(out, {std::to_string(s.stage), std::to_string(s.ranks), ms_cell(s.forward_mean_ns, 2),
                      ms_cell(s.backward_mean_ns, 2), pct(s.bubble_fraction), ms_cell(s.p2p_ns, 2),
                      ms_cell(s.p2p_wait_ns, 2), gib_cell(s.peak_memory_bytes, 2),
                      s.peak_activation_bytes ? fixed(gib(*s.peak_activation_bytes), 2) : "-",
                      s.activation_vs_last_stage ? fixed(*s.activation_vs_last_stage, 2) : "-"});
    out << "</table>\n";
  }
  if (r.plan) write_plan(out, *r.plan);
  if (!r.stragglers.empty()) {
    out << "<h2>Stragglers</h2>\n<table>\n";
    table_row(out, {"rank", "last at (sampled)", "others waited ms"}, "th");
    for (const Straggler& s : r.stragglers)
      table_row(out, {std::to_string(s.rank), std::to_string(s.instances_last), fixed(ms(s.cost_ns), 1)});
    out << "</table>\n";
  }
  if (r.failure) {
    out << "<h2>Failure</h2>\n<p><b>" << escape_html(r.failure->kind)
        << "</b>: " << escape_html(r.failure->detail) << "</p>\n";
  }
  if (!r.hang.desyncs.empty() || !r.hang.p2p_mismatches.empty()) {
    out << "<h2>Desyncs</h2>\n<ul>\n";
    for (const Desync& d : r.hang.desyncs)
      out << "<li>" << escape_html(d.role) << " communicator " << hex(d.comm_id) << " collective #"
          << d.sequence << ": " << escape_html(d.what) << "</li>\n";
    for (const P2pMismatch& m : r.hang.p2p_mismatches)
      out << "<li>p2p size mismatch: rank " << m.sender << " send #" << m.sequence << " to rank "
          << m.receiver << " (" << escape_html(m.role) << ")</li>\n";
    out << "</ul>\n";
  }
  if (r.hang.suspected) {
    out << "<h2>Hang / failure view</h2>\n";
    for (const HangRoot& root : r.hang.roots)
      out << "<p>Rank " << root.rank << ": " << escape_html(root.where)
          << (root.call.empty() ? "" : " (" + escape_html(root.call) + ")") << "; " << root.waiting
          << " rank(s) wait on it.</p>\n";
    if (!r.hang.root_ranks.empty())
      out << "<p><b>Root: rank(s) " << escape_html(rank_list(r.hang.root_ranks, r.hang.no_trace)) << "</b> ("
          << r.hang.blocked << " rank(s) waited on them, directly or through others).</p>\n";
    out << "<table>\n";
    table_row(
        out, {"communicator", "role", "completed by all", "next op", "entered", "never entered", "waited ms"},
        "th");
    for (const CommHang& h : r.hang.communicators)
      table_row(out, {hex(h.comm_id), h.role, std::to_string(h.last_completed_by_all), h.next_op,
                      rank_list(h.entered), rank_list(h.missing, h.untraced), fixed(ms(h.waited_ns), 1)});
    out << "</table>\n";
    if (!r.hang.p2p.empty()) {
      out << "<table>\n";
      table_row(out, {"rank", "waits in", "peer", "waited ms"}, "th");
      for (const P2pHang& p : r.hang.p2p)
        table_row(out, {std::to_string(p.rank), p.op, rank_list({p.peer}, r.hang.no_trace),
                        fixed(ms(p.waited_ns), 1)});
      out << "</table>\n";
    }
    if (!r.hang.ended_early.empty())
      out << "<p>Traces ending early: " << rank_list(r.hang.ended_early) << "</p>\n";
  }
  if (!r.hang.not_closed.empty() || !r.hang.no_trace.empty()) {
    if (!r.hang.suspected) out << "<h2>Traces</h2>\n";
    if (!r.hang.not_closed.empty())
      out << "<p>Traces not closed (killed or crashed): " << rank_list(r.hang.not_closed) << "</p>\n";
    if (!r.hang.no_trace.empty())
      out << "<p>No trace (file missing, empty or header only): " << rank_list(r.hang.no_trace) << "</p>\n";
  }
  if (!r.nccl.empty()) {
    out << "<h2>NCCL</h2>\n<table>\n";
    table_row(out, {"role", "op", "n", "calls", "MiB", "time ms", "algbw GB/s", "busbw GB/s", "slowest"},
              "th");
    for (const NcclOpReport& n : r.nccl)
      table_row(out, {n.role, n.op, std::to_string(n.comm_size), std::to_string(n.calls),
                      fixed(static_cast<double>(n.bytes) / (1 << 20), 1), fixed(ms(n.time_ns), 2),
                      fixed(n.algbw_bytes_per_s / 1e9, 1), fixed(n.busbw_bytes_per_s / 1e9, 1),
                      n.slowest_rank >= 0 ? std::to_string(n.slowest_rank) : "-"});
    out << "</table>\n";
  }
  if (!r.kernels.empty()) {
    out << "<h2>Kernels</h2>\n<table>\n";
    table_row(out, {"name", "category", "count", "total ms", "mean us", "p50 us", "p99 us"}, "th");
    for (const KernelStat& k : r.kernels)
      table_row(out, {shorten(k.name, 80), k.category, std::to_string(k.count), fixed(ms(k.total_ns), 1),
                      fixed(k.mean_ns / 1e3, 1), fixed(k.p50_ns / 1e3, 1), fixed(k.p99_ns / 1e3, 1)});
    out << "</table>\n";
  }
  out << "<h2>Clock alignment</h2>\n<p>" << escape_html(r.clock.source) << ": ";
  if (r.clock.residual_median_ns) {
    out << "residual skew median " << fixed(*r.clock.residual_median_ns / 1e3, 1) << " us, p99 "
        << fixed(r.clock.residual_p99_ns.value_or(0) / 1e3, 1) << " us over " << r.clock.instances_used
        << " collective instances.</p>\n";
  } else {
    out << "residual skew not measured (no collective joins two traced ranks).</p>\n";
  }
  out << "</body></html>\n";
  return out.str();
}

}  // namespace pipescope::report
