// `calibrate show --html`: the profile's curves, and the suite's raw points when given.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "pipescope/calibrate/profile_summary.h"
#include "pipescope/planner/collective_model.h"
#include "svg_plot.h"

namespace pipescope::calibrate {
namespace {

using planner::CalibrationProfile;

Plot gemm_plot(const CalibrationProfile& p, const planner::Gpu& gpu, const BenchResults* measured) {
  Plot plot{"GEMM bf16: achieved fraction of peak", "FLOPs per GEMM (2mnk)", "fraction of peak", {}};
  PlotSeries square{"profile, m=n=k", {}, true};
  for (double s = 128; s <= 32768; s *= std::sqrt(2.0)) {
    const auto n = static_cast<int64_t>(std::llround(s));
    square.points.emplace_back(2.0 * s * s * s, p.gemm_efficiency(n, n, n));
  }
  PlotSeries table{"profile table", {}, false};
  for (const auto& g : p.gemm) table.points.emplace_back(g.flops(), p.gemm_efficiency(g.m, g.n, g.k));
  plot.series = {square, table};
  if (measured != nullptr) {
    PlotSeries raw{"measured", {}, false};
    for (const auto& s : measured->gemm) {
      if (s.dtype == "bf16")
        raw.points.emplace_back(s.flops(), s.flops() / (s.seconds * gpu.peak_dense_bf16_flops_per_s));
    }
    plot.series.push_back(raw);
  }
  return plot;
}

Plot attention_plot(const CalibrationProfile& p, const planner::Gpu& gpu, const BenchResults* measured) {
  Plot plot{"Fused attention: achieved fraction of peak", "sequence length", "fraction of peak", {}};
  std::set<int64_t> dims;
  for (const auto& a : p.attention_forward) dims.insert(a.head_dim);
  for (int64_t dim : dims) {
    for (auto pass : {planner::AttentionPass::kForward, planner::AttentionPass::kBackward}) {
      PlotSeries s{std::string(pass == planner::AttentionPass::kForward ? "forward" : "backward") + " hd " +
                       std::to_string(dim),
                   {},
                   true};
      for (double seq = 512; seq <= 65536; seq *= 2)
        s.points.emplace_back(seq, p.attention_efficiency(static_cast<int64_t>(seq), dim, pass));
      plot.series.push_back(s);
    }
  }
  if (measured != nullptr) {
    PlotSeries raw{"measured", {}, false};
    for (const auto& a : measured->attention) {
      raw.points.emplace_back(static_cast<double>(a.seq),
                              a.flops / (a.seconds * gpu.peak_dense_bf16_flops_per_s));
    }
    plot.series.push_back(raw);
  }
  return plot;
}

Plot collective_plot(const CalibrationProfile& p, planner::LinkTier tier, const BenchResults* measured) {
  Plot plot{"NCCL " + std::string(planner::link_tier_name(tier)) + ": bus bandwidth",
            "bytes (nccl-tests size)",
            "busbw GB/s",
            {}};
  for (planner::CollectiveKind kind : planner::kCollectiveKinds) {
    const auto& entries = p.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
    for (const auto& e : entries) {
      PlotSeries s{
          std::string(planner::collective_kind_name(kind)) + " " + std::to_string(e.ranks) + "r", {}, true};
      const double factor = planner::bus_bandwidth_factor(kind, e.ranks);
      for (double bytes = 8; bytes <= (1ull << 31); bytes *= 2) {
        const double t = p.collective_time_s(kind, bytes, e.ranks, tier, 1.0);
        s.points.emplace_back(bytes, bytes * factor / t / 1e9);
      }
      plot.series.push_back(s);
    }
  }
  if (measured != nullptr) {
    PlotSeries raw{"measured", {}, false};
    for (const auto& c : measured->collectives) {
      const auto kind = planner::parse_collective_kind(c.kind);
      if (!kind || c.ranks <= 1 || (c.nodes > 1) != (tier == planner::LinkTier::kInterNode)) continue;
      raw.points.emplace_back(c.bytes,
                              c.bytes * planner::bus_bandwidth_factor(*kind, c.ranks) / c.seconds / 1e9);
    }
    plot.series.push_back(raw);
  }
  return plot;
}

Plot bandwidth_plot(const CalibrationProfile& p, const planner::Gpu& gpu, const BenchResults* measured) {
  Plot plot{"Memory-bound kernels and copies", "bytes moved", "GB/s", {}};
  plot.series.push_back({"HBM (profile)",
                         {{1 << 20, p.memory_bound_bytes_per_s(gpu) / 1e9},
                          {double(1ull << 32), p.memory_bound_bytes_per_s(gpu) / 1e9}},
                         true});
  for (planner::CopyKind kind : planner::kCopyKinds) {
    const planner::CopyCost& c = p.copy(kind);
    if (c.bytes_per_s <= 0) continue;
    PlotSeries s{std::string(planner::copy_kind_name(kind)), {}, true};
    for (double bytes = 4096; bytes <= (1ull << 31); bytes *= 2)
      s.points.emplace_back(bytes, bytes / (c.latency_s + bytes / c.bytes_per_s) / 1e9);
    plot.series.push_back(s);
  }
  if (measured != nullptr) {
    PlotSeries raw{"measured", {}, false};
    for (const auto& b : measured->bandwidth) raw.points.emplace_back(b.bytes, b.bytes / b.seconds / 1e9);
    plot.series.push_back(raw);
  }
  return plot;
}

// The training losses the planner takes off the table's figures, each with its source.
std::string losses_table(const planner::TrainingLosses& l) {
  std::string html = "<h2>Training losses</h2><table><tr><th>loss</th><th>value</th><th>source</th></tr>";
  for (const planner::TrainingLossField& field : planner::kTrainingLossFields) {
    const planner::SourcedValue& value = l.*field.member;
    char number[32];
    std::snprintf(number, sizeof(number), "%.4g", value.value);
    html += "<tr><td>" + std::string(field.description) + "</td><td>" +
            (value.source.empty() ? std::string("not measured") : std::string(number)) + "</td><td>" +
            escape_markup(value.source) + "</td></tr>";
  }
  return html + "</table>";
}

}  // namespace

std::string profile_html(const CalibrationProfile& p, const planner::Gpu& gpu, const BenchResults* measured) {
  std::string html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>pipescope calibration: " +
                     escape_markup(p.gpu) +
                     "</title><style>body{font-family:sans-serif;margin:20px;max-width:1000px}"
                     "svg{display:block;margin:12px 0}</style></head><body>";
  html +=
      "<h1>Calibration profile: " + escape_markup(p.gpu) + "</h1><p>" + escape_markup(p.description) + "</p>";
  if (!p.provenance.empty()) {
    html += "<p>Measured on " + escape_markup(p.provenance.gpu_device_name) + " " +
            escape_markup(p.provenance.date) +
            (p.provenance.command.empty()
                 ? ""
                 : "; command: <code>" + escape_markup(p.provenance.command) + "</code>") +
            "</p>";
  }
  html +=
      "<p>Lines: the profile as the planner reads it. Dots: " +
      std::string(measured != nullptr ? "the benchmark results given." : "the profile's own table points.") +
      "</p>";
  html += svg_plot(gemm_plot(p, gpu, measured));
  html += svg_plot(attention_plot(p, gpu, measured));
  html += svg_plot(bandwidth_plot(p, gpu, measured));
  for (planner::LinkTier tier : planner::kLinkTiers) html += svg_plot(collective_plot(p, tier, measured));
  html += losses_table(p.losses);
  return html + "</body></html>\n";
}

}  // namespace pipescope::calibrate
