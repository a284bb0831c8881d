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

// 2 added the shape-grid GEMM table with its wave-quantization term, measured collectives per
// rank count and message-size regime, copy bandwidths and provenance; 3 the training losses.
// Older files still read.
inline constexpr int kCalibrationSchemaVersion = 3;

struct SourcedValue {
  double value = 0;
  std::string source;
  bool operator==(const SourcedValue&) const = default;
};

// Whether a source says the number was measured (or fitted from measurements) on the profile's own
// GPU, rather than taken from a datasheet, a publication or an estimate.
inline bool is_measured_source(std::string_view source) {
  return source.rfind("measured", 0) == 0 || source.rfind("fitted", 0) == 0;
}

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

// How the GEMM table is read: 1-D in log(2mnk) over points in FLOP order (schema 1), or a full
// m x n x k grid, trilinear in (ln m, ln n, ln k), whose points hold the efficiency without the
// wave-quantization loss, which `GemmWaves` puts back per shape.
enum class GemmInterpolation { kLogFlops, kLogShapeGrid };

// A GEMM runs as ceil(m/tile_m) * ceil(n/tile_n) output tiles over sm_count SMs in waves; the
// last wave leaves SMs idle, so achieved efficiency carries the factor w / ceil(w), w = tiles / SMs.
// Off when sm_count is 0.
struct GemmWaves {
  int64_t sm_count = 0, tile_m = 0, tile_n = 0;
  std::string source;
  bool enabled() const { return sm_count > 0; }
  double factor(int64_t m, int64_t n) const;
  bool operator==(const GemmWaves&) const = default;
};

// time = latency_s + bytes * bus_bandwidth_factor(kind, ranks) / busbw, where busbw is either
// absolute (bus_bandwidth_bytes_per_s) or a fraction of the tier's link bandwidth taken from the
// cluster (bus_bandwidth_fraction) - exactly one of the two is non-zero. The fraction form lets
// one profile serve clusters with different NIC counts.
//
// latency_ranks and latency_nodes, when given (inter-node entries), state the group the latency
// was measured on. Groups over other node counts are then priced with NCCL's tuning model
// (nccl_tuning.h): the latency grows from that group's as NCCL's rings and trees do, and NCCL
// chooses the algorithm and protocol. 0: the one latency is taken at every scale.
struct CollectiveCost {
  double latency_s = 0;
  double bus_bandwidth_bytes_per_s = 0;
  double bus_bandwidth_fraction = 0;
  std::string source;
  int latency_ranks = 0;
  int latency_nodes = 0;
  bool operator==(const CollectiveCost&) const = default;
};

// A measured collective for one rank count: latency + bytes * factor / busbw in size regimes,
// each up to max_bytes (0 on the last: no bound). From `pipescope calibrate`.
struct CollectiveSegment {
  double max_bytes = 0;
  double latency_s = 0;
  double bus_bandwidth_bytes_per_s = 0;
  std::string source;
  bool operator==(const CollectiveSegment&) const = default;
};
struct MeasuredCollective {
  int ranks = 0;
  std::vector<CollectiveSegment> segments;  // increasing max_bytes, the last unbounded
  std::string source;                       // the run the entry was measured on
  bool operator==(const MeasuredCollective&) const = default;
};

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
inline constexpr std::array<CopyKind, 3> kCopyKinds = {CopyKind::kHostToDevice, CopyKind::kDeviceToHost,
                                                       CopyKind::kDeviceToDevice};
std::string_view copy_kind_name(CopyKind kind);  // host_to_device, device_to_host, device_to_device
// time = latency_s + bytes / bytes_per_s; absent (bytes_per_s 0) unless measured.
struct CopyCost {
  double latency_s = 0;
  double bytes_per_s = 0;
  std::string source;
  bool operator==(const CopyCost&) const = default;
};

// Where a measured profile comes from; empty fields were not known. Strings only.
struct Provenance {
  std::string gpu_device_name, driver_version, cuda_runtime_version, cublaslt_version, nccl_version,
      torch_version, date, host, command, tool;
  bool empty() const { return *this == Provenance{}; }
  bool operator==(const Provenance&) const = default;
};

struct MemoryOverheads {
  SourcedValue cuda_context_bytes;                  // per process, outside the allocator
  SourcedValue allocator_reserve_fraction;          // reserved beyond allocated, of allocated
  SourcedValue nccl_buffer_bytes_per_communicator;  // per communicator a rank belongs to
  SourcedValue memory_headroom_fraction;            // of Gpu::memory_bytes, kept free by the planner
  bool operator==(const MemoryOverheads&) const = default;
};

// What training loses against the GEMM table, whose GEMMs run for a tenth of a second each in the
// forward's operand layout on a GPU doing nothing else (docs/calibration-format.md, "losses").
// Each is measured by the calibration suite; an absent one (value 0) prices no loss.
struct TrainingLosses {
  // A GEMM's throughput once the clocks have settled under the power cap, over the table's for the
  // same shape; the planner prices GEMMs and attention (tensor-core work alike) with it. (0, 1].
  SourcedValue sustained_gemm_fraction;
  // A backward GEMM's time in its own operand layout over the same shape's in the forward's: the
  // input gradient (dx = dy W) and the weight gradient (dW = dy^T x).
  SourcedValue dgrad_time_ratio, wgrad_time_ratio;
  // How much longer a GEMM and a memory-bound kernel take while a communication kernel runs
  // beside them (time x (1 + slowdown)); priced wherever a plan overlaps the two.
  SourcedValue overlap_gemm_slowdown, overlap_memory_bound_slowdown;
  // Seconds of GPU time each kernel launch costs beyond the kernel's own work while the host keeps
  // ahead: an empty kernel's time, replayed 1,000 at a time from a CUDA graph. Priced per kernel
  // where the planner knows a framework's kernels (--framework pytorch-eager).
  SourcedValue launch_gap_s;
  // PyTorch's own memory-bound kernels (eager/* of the suite), priced where the planner knows a
  // framework's kernels: the GPU time each kernel takes beyond its bytes and the launch gap (the
  // ramp and tail of a kernel too short to fill the GPU), and the bandwidth of the kernels that
  // take ATen's unvectorized path (casts, mixed dtypes, copies into another layout) over the
  // memory-bound bandwidth. (0, 1].
  SourcedValue eager_kernel_fixed_s;
  SourcedValue unvectorized_bandwidth_fraction;
  // Unfused attention (--no-flash-attention): the bandwidth at which its batched GEMMs, softmax and
  // dropout move the s x s scores through memory in the forward and in the backward, over the
  // memory-bound bandwidth; their FLOPs are priced apart, as one GEMM of all the batch's rows.
  SourcedValue unfused_scores_forward_fraction, unfused_scores_backward_fraction;

  double sustained_fraction() const {
    return sustained_gemm_fraction.value > 0 ? sustained_gemm_fraction.value : 1;
  }
  double dgrad_ratio() const { return dgrad_time_ratio.value > 0 ? dgrad_time_ratio.value : 1; }
  double wgrad_ratio() const { return wgrad_time_ratio.value > 0 ? wgrad_time_ratio.value : 1; }
  double unvectorized_fraction() const {
    return unvectorized_bandwidth_fraction.value > 0 ? unvectorized_bandwidth_fraction.value : 1;
  }
  double unfused_scores_fraction(bool backward) const {
    const SourcedValue& fraction =
        backward ? unfused_scores_backward_fraction : unfused_scores_forward_fraction;
    return fraction.value > 0 ? fraction.value : 1;
  }
  bool empty() const { return *this == TrainingLosses{}; }
  bool operator==(const TrainingLosses&) const = default;
};

// Unfused attention's s x s traffic, in bf16 score matrices (one per micro-batch row and head) per
// pass, which the unfused_scores fractions are a bandwidth for. Forward: Q K^T writes S, the fused
// scale-mask-softmax reads S and writes P, P V reads P. Backward: dO V^T writes dP, P^T dO reads P,
// the softmax's backward reads dP and P and writes dS, dS K and dS^T Q read dS. Dropout reads P and
// writes the dropped P and its one-byte mask forward, reads dP and the mask and writes the gradient
// backward.
struct UnfusedScoreTraffic {
  static constexpr double kForward = 4, kBackward = 7, kDropout = 2.5;
  // ALiBi's bias as BLOOM's Megatron-DeepSpeed adds it (bigscience-workshop/Megatron-DeepSpeed
  // megatron/model/transformer.py since 7ab5c05a of 2022-01-06): the first GEMM is a baddbmm with
  // the bias as its input and beta != 0, which PyTorch's baddbmm copies into the whole output
  // before the GEMM reads it back: two score matrices more in the forward, none in the backward.
  static constexpr double kAlibiForward = 2;
  static constexpr double matrices(bool backward, bool dropout) {
    return (backward ? kBackward : kForward) + (dropout ? kDropout : 0);
  }
};

// The values a loss may take, which reading a profile checks.
enum class LossDomain { kFraction, kPositive, kNonNegative };

// Every loss by its name in a profile's "losses" object, with what it is in words: the one list
// that reading, writing, relabelling and showing a profile's losses go through.
struct TrainingLossField {
  std::string_view name;
  SourcedValue TrainingLosses::*member;
  LossDomain domain;
  std::string_view description;
};
inline constexpr std::array<TrainingLossField, 10> kTrainingLossFields = {{
    {"sustained_gemm_fraction", &TrainingLosses::sustained_gemm_fraction, LossDomain::kFraction,
     "sustained clocks: GEMMs and attention at this fraction of the table"},
    {"dgrad_time_ratio", &TrainingLosses::dgrad_time_ratio, LossDomain::kPositive,
     "input-gradient GEMMs: time in their own layout over the forward layout's"},
    {"wgrad_time_ratio", &TrainingLosses::wgrad_time_ratio, LossDomain::kPositive,
     "weight-gradient GEMMs: time in their own layout over the forward layout's"},
    {"overlap_gemm_slowdown", &TrainingLosses::overlap_gemm_slowdown, LossDomain::kNonNegative,
     "GEMMs and attention beside an overlapped collective: slowdown"},
    {"overlap_memory_bound_slowdown", &TrainingLosses::overlap_memory_bound_slowdown,
     LossDomain::kNonNegative, "memory-bound kernels beside an overlapped collective: slowdown"},
    {"launch_gap_s", &TrainingLosses::launch_gap_s, LossDomain::kNonNegative,
     "GPU time per kernel launched, beyond its own work (seconds)"},
    {"eager_kernel_fixed_s", &TrainingLosses::eager_kernel_fixed_s, LossDomain::kNonNegative,
     "PyTorch's own kernels: GPU time per kernel beyond its bytes and the launch gap (seconds)"},
    {"unvectorized_bandwidth_fraction", &TrainingLosses::unvectorized_bandwidth_fraction,
     LossDomain::kFraction,
     "PyTorch's unvectorized kernels (casts, layout copies): bandwidth over the memory-bound bandwidth"},
    {"unfused_scores_forward_fraction", &TrainingLosses::unfused_scores_forward_fraction,
     LossDomain::kPositive,
     "unfused attention's s x s scores in the forward: bandwidth over the memory-bound bandwidth"},
    {"unfused_scores_backward_fraction", &TrainingLosses::unfused_scores_backward_fraction,
     LossDomain::kPositive,
     "unfused attention's s x s scores in the backward: bandwidth over the memory-bound bandwidth"},
}};
static_assert(sizeof(TrainingLosses) == kTrainingLossFields.size() * sizeof(SourcedValue),
              "a loss added to TrainingLosses goes into kTrainingLossFields too");

// A collective's time in two parts: the fixed latency and the transfer of its bytes.
struct CollectiveTime {
  double latency_s = 0;
  double transfer_s = 0;
  double total_s() const { return latency_s + transfer_s; }
};

struct CalibrationProfile {
  std::string gpu;  // the Gpu::name it describes
  std::string description;
  GemmInterpolation gemm_interpolation = GemmInterpolation::kLogFlops;
  std::vector<GemmPoint> gemm;  // kLogFlops: strictly increasing FLOPs; kLogShapeGrid: a full grid
  GemmWaves gemm_waves;         // kLogShapeGrid only
  // Full grids: every (seq_len, head_dim) combination of the values present, exactly once.
  std::vector<AttentionPoint> attention_forward;
  std::vector<AttentionPoint> attention_backward;
  SourcedValue hbm_bandwidth_fraction;  // memory-bound ops: achieved / datasheet HBM bandwidth
  std::array<std::array<CollectiveCost, kCollectiveKinds.size()>, kLinkTiers.size()> collectives;
  // Measured entries per tier and kind, by increasing rank count; when a kind has some, they
  // replace the single latency + busbw above for that tier.
  std::array<std::array<std::vector<MeasuredCollective>, kCollectiveKinds.size()>, kLinkTiers.size()>
      measured_collectives;
  std::array<CopyCost, kCopyKinds.size()> copies;
  MemoryOverheads overheads;
  TrainingLosses losses;
  Provenance provenance;

  // kLogFlops: piecewise linear in log(FLOPs) between points; above the largest point its
  // efficiency; below the smallest that point's time (a GEMM is not faster than the smallest
  // measured one). kLogShapeGrid: trilinear in log m, n, k, each clamped to the grid, times the
  // wave factor; below the grid's smallest corner, that corner's time as above.
  double gemm_efficiency(int64_t m, int64_t n, int64_t k) const;
  // Bilinear: linear in log(seq_len) and in head_dim between grid values, clamped outside.
  double attention_efficiency(int64_t seq_len, int64_t head_dim, AttentionPass pass) const;
  // `bytes` is nccl-tests' size (docs/calibration-format.md); `link_bytes_per_s` the tier's link
  // bandwidth available to this collective; `nodes` the nodes an inter-node group spans, its
  // ranks spread evenly (0: not known). 0 when ranks <= 1 or bytes <= 0. Measured entries,
  // where the tier has them for `kind`, win: the one nearest `ranks` in log2, then the size
  // regime holding `bytes` (a measured busbw already reflects the links it ran on). Otherwise
  // the tier's entry, through NCCL's tuning model where it states its latency's scale.
  CollectiveTime collective_cost(CollectiveKind kind, double bytes, int ranks, int nodes, LinkTier tier,
                                 double link_bytes_per_s) const;
  double collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                           double link_bytes_per_s) const {
    return collective_cost(kind, bytes, ranks, 0, tier, link_bytes_per_s).total_s();
  }
  // Link bandwidth from the cluster: intra_node_bytes_per_s, or all of a node's NICs. Groups that
  // share the NICs concurrently should pass their share to the overload above.
  double collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                           const Cluster& cluster) const;
  double memory_bound_bytes_per_s(const Gpu& device) const;
  // Unfused attention's batched GEMMs over `matrices` q x kv score matrices of head width d, each
  // batch priced as one GEMM of all its rows at the table, on a GPU doing `flops_per_s` at an
  // efficiency of 1: the forward's Q K^T and P V, or the backward's dP, dV, dQ and dK.
  double unfused_attention_gemm_s(double flops_per_s, double matrices, double q, double kv, double d,
                                  bool backward) const;
  const CopyCost& copy(CopyKind kind) const { return copies[static_cast<size_t>(kind)]; }
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
