// A calibration profile: what one GPU type achieves against its datasheet - GEMM and attention
// efficiency, memory-bound bandwidth, collective costs per link tier, fixed memory overheads.
// Every number carries its source (a measurement here, or a cited datasheet or paper); the
// planner takes every efficiency from here, none from code. Format: docs/calibration-format.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/cluster.h"
#include "pipescope/planner/collective_model.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::planner {

inline constexpr int kCalibrationSchemaVersion = 1;

struct SourcedValue {
  double value = 0;
  std::string source;
  bool operator==(const SourcedValue&) const = default;
};

// Achieved fraction of peak dense BF16 FLOP/s for one m x n x k GEMM (2*m*n*k FLOPs).
struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 0;
  std::string source;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
  bool operator==(const GemmPoint&) const = default;
};

// Achieved fraction of peak for fused (flash) attention, FLOPs counted as FlashAttention does:
// forward 4*seq^2*head_dim*heads (halved when causal), backward 2.5x forward.
struct AttentionPoint {
  int64_t seq_len = 0, head_dim = 0;
  double efficiency = 0;
  std::string source;
  bool operator==(const AttentionPoint&) const = default;
};
enum class AttentionPass { kForward, kBackward };

// time = latency_s + bytes * bus_bandwidth_factor(kind, ranks) / busbw, where busbw is either
// absolute (bus_bandwidth_bytes_per_s) or a fraction of the tier's link bandwidth taken from the
// cluster (bus_bandwidth_fraction) - exactly one of the two is non-zero. The fraction form lets
// one profile serve clusters with different NIC counts.
struct CollectiveCost {
  double latency_s = 0;
  double bus_bandwidth_bytes_per_s = 0;
  double bus_bandwidth_fraction = 0;
  std::string source;
  bool operator==(const CollectiveCost&) const = default;
};

struct MemoryOverheads {
  SourcedValue cuda_context_bytes;                  // per process, outside the allocator
  SourcedValue allocator_reserve_fraction;          // reserved beyond allocated, of allocated
  SourcedValue nccl_buffer_bytes_per_communicator;  // per communicator a rank belongs to
  SourcedValue memory_headroom_fraction;            // of Gpu::memory_bytes, kept free by the planner
  bool operator==(const MemoryOverheads&) const = default;
};

struct CalibrationProfile {
  std::string gpu;  // the Gpu::name it describes
  std::string description;
  std::vector<GemmPoint> gemm;  // strictly increasing FLOPs
  // Full grids: every (seq_len, head_dim) combination of the values present, exactly once.
  std::vector<AttentionPoint> attention_forward;
  std::vector<AttentionPoint> attention_backward;
  SourcedValue hbm_bandwidth_fraction;  // memory-bound ops: achieved / datasheet HBM bandwidth
  std::array<std::array<CollectiveCost, kCollectiveKinds.size()>, kLinkTiers.size()> collectives;
  MemoryOverheads overheads;

  // Piecewise linear in log(FLOPs) between points. Above the largest point: its efficiency.
  // Below the smallest: that point's time (a GEMM is not faster than the smallest measured one).
  double gemm_efficiency(int64_t m, int64_t n, int64_t k) const;
  // Bilinear: linear in log(seq_len) and in head_dim between grid values, clamped outside.
  double attention_efficiency(int64_t seq_len, int64_t head_dim, AttentionPass pass) const;
  // `bytes` is nccl-tests' size (docs/calibration-format.md); `link_bytes_per_s` the tier's link
  // bandwidth available to this collective. 0 when ranks <= 1 or bytes <= 0.
  double collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                           double link_bytes_per_s) const;
  // Link bandwidth from the cluster: intra_node_bytes_per_s, or all of a node's NICs. Groups that
  // share the NICs concurrently should pass their share to the overload above.
  double collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                           const Cluster& cluster) const;
  double memory_bound_bytes_per_s(const Gpu& device) const;
  const MemoryOverheads& memory_overheads() const { return overheads; }
  const CollectiveCost& collective(CollectiveKind kind, LinkTier tier) const;

  bool operator==(const CalibrationProfile&) const = default;
};

// Bundled profile names (the GPU names they describe), sorted.
std::vector<std::string> known_profile_names();

// `--calibration NAME|FILE`: a bundled name or a path (anything with '/' or ending in .json).
Expected<CalibrationProfile> load_calibration_profile(std::string_view name_or_path);
// The bundled profile for `gpu`; names --calibration when there is none.
Expected<CalibrationProfile> profile_for_gpu(const Gpu& gpu);
// A profile measured on one GPU must not silently price another.
Status check_profile_matches(const CalibrationProfile& profile, const Gpu& gpu);

Expected<CalibrationProfile> parse_calibration_profile(std::string_view text, std::string_view origin);
// JSON that parse_calibration_profile reads back equal.
std::string write_calibration_profile(const CalibrationProfile& profile);

}  // namespace pipescope::planner
