#include "pipescope/calibrate/profile_summary.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace pipescope::calibrate {
namespace {

using planner::CalibrationProfile;
using planner::CollectiveKind;
using planner::LinkTier;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

bool is_measured(std::string_view source) {
  return source.rfind("measured", 0) == 0 || source.rfind("fitted", 0) == 0;
}

struct SourceCount {
  int measured = 0, other = 0;
  void add(const std::string& source) { (is_measured(source) ? measured : other) += 1; }
};

SourceCount count_sources(const CalibrationProfile& p) {
  SourceCount c;
  for (const auto& g : p.gemm) c.add(g.source);
  for (const auto& a : p.attention_forward) c.add(a.source);
  for (const auto& a : p.attention_backward) c.add(a.source);
  c.add(p.hbm_bandwidth_fraction.source);
  for (LinkTier tier : planner::kLinkTiers) {
    for (CollectiveKind kind : planner::kCollectiveKinds) {
      const auto& measured = p.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      if (measured.empty()) {
        c.add(p.collective(kind, tier).source);
      } else {
        for (const auto& e : measured) c.add(e.source);
      }
    }
  }
  for (const auto* v :
       {&p.overheads.cuda_context_bytes, &p.overheads.allocator_reserve_fraction,
        &p.overheads.nccl_buffer_bytes_per_communicator, &p.overheads.memory_headroom_fraction})
    c.add(v->source);
  return c;
}

void row(std::ostream& out, const std::string& what, const std::string& achieved, const std::string& peak,
         const std::string& fraction) {
  out << "  " << pad(what, 36) << pad(achieved, 16) << pad(peak, 16) << fraction << '\n';
}

}  // namespace

void write_profile_summary(std::ostream& out, const CalibrationProfile& p, const planner::Gpu& gpu) {
  out << "calibration profile for " << p.gpu << " (" << gpu.device_name << ")\n";
  if (!p.description.empty()) out << p.description << '\n';
  const planner::Provenance& v = p.provenance;
  if (!v.empty()) {
    out << "measured on " << (v.gpu_device_name.empty() ? "?" : v.gpu_device_name);
    if (!v.driver_version.empty()) out << ", driver " << v.driver_version;
    if (!v.cuda_runtime_version.empty()) out << ", CUDA " << v.cuda_runtime_version;
    if (!v.nccl_version.empty()) out << ", NCCL " << v.nccl_version;
    if (!v.date.empty()) out << ", " << v.date;
    if (!v.host.empty()) out << ", host " << v.host;
    out << '\n';
    if (!v.command.empty()) out << "command: " << v.command << '\n';
  }
  const SourceCount sources = count_sources(p);
  out << "sources: " << sources.measured << " entries measured or fitted, " << sources.other
      << " from datasheets, publications or estimates (each with its source in the file)\n\n";

  const double peak = gpu.peak_dense_bf16_flops_per_s;
  row(out, "category", "achieved", "peak", "fraction");
  auto gemm_row = [&](int64_t m, int64_t n, int64_t k) {
    const double e = p.gemm_efficiency(m, n, k);
    row(out, "GEMM bf16 " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
        format("%.0f TFLOP/s", e * peak / 1e12), format("%.0f TFLOP/s", peak / 1e12), format("%.3f", e));
  };
  gemm_row(1024, 1024, 1024);
  gemm_row(4096, 4096, 4096);
  gemm_row(8192, 8192, 8192);
  gemm_row(16384, 4096, 4096);  // a 4-micro-batch MLP-like shape
  if (p.gemm_waves.enabled()) {
    out << "  (wave term: " << p.gemm_waves.tile_m << "x" << p.gemm_waves.tile_n << " tiles on "
        << p.gemm_waves.sm_count << " SMs)\n";
  }
  for (auto pass : {planner::AttentionPass::kForward, planner::AttentionPass::kBackward}) {
    for (int64_t seq : {2048, 8192}) {
      const double e = p.attention_efficiency(seq, 128, pass);
      row(out,
          std::string("attention ") + (pass == planner::AttentionPass::kForward ? "forward" : "backward") +
              " seq " + std::to_string(seq) + " hd 128",
          format("%.0f TFLOP/s", e * peak / 1e12), format("%.0f TFLOP/s", peak / 1e12), format("%.3f", e));
    }
  }
  const double hbm = p.memory_bound_bytes_per_s(gpu);
  row(out, "memory-bound kernels (HBM)", format("%.0f GB/s", hbm / 1e9),
      format("%.0f GB/s", gpu.hbm_bytes_per_s / 1e9), format("%.3f", p.hbm_bandwidth_fraction.value));
  for (planner::CopyKind kind : planner::kCopyKinds) {
    const planner::CopyCost& c = p.copy(kind);
    if (c.bytes_per_s <= 0) continue;
    row(out, "copy " + std::string(planner::copy_kind_name(kind)), format("%.1f GB/s", c.bytes_per_s / 1e9),
        "", format("latency %.1f us", c.latency_s * 1e6));
  }
  out << "\n  collectives: bus bandwidth at 1 GiB (nccl-tests' busbw), latency\n";
  for (LinkTier tier : planner::kLinkTiers) {
    for (CollectiveKind kind : planner::kCollectiveKinds) {
      const auto& measured = p.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      const std::string name =
          std::string(planner::link_tier_name(tier)) + " " + std::string(planner::collective_kind_name(kind));
      if (!measured.empty()) {
        for (const auto& e : measured) {
          const auto& last = e.segments.back();
          row(out, name + " " + std::to_string(e.ranks) + " ranks",
              format("%.1f GB/s", last.bus_bandwidth_bytes_per_s / 1e9), "measured",
              format("latency %.1f us", e.segments.front().latency_s * 1e6));
        }
        continue;
      }
      const planner::CollectiveCost& c = p.collective(kind, tier);
      row(out, name,
          c.bus_bandwidth_fraction > 0 ? format("%.2f of link", c.bus_bandwidth_fraction)
                                       : format("%.1f GB/s", c.bus_bandwidth_bytes_per_s / 1e9),
          "", format("latency %.1f us", c.latency_s * 1e6));
    }
  }
  const planner::MemoryOverheads& o = p.overheads;
  out << "\n  memory overheads: CUDA context " << format("%.2f GiB", o.cuda_context_bytes.value / (1 << 30))
      << ", NCCL " << format("%.2f GiB", o.nccl_buffer_bytes_per_communicator.value / (1 << 30))
      << " per communicator, allocator reserve " << format("%.1f%%", o.allocator_reserve_fraction.value * 100)
      << " of allocated, headroom " << format("%.1f%%", o.memory_headroom_fraction.value * 100)
      << " of the GPU\n";
}

}  // namespace pipescope::calibrate
