// The training losses of a calibration profile (planner::TrainingLosses) from the suite's
// sustained-clock, backward-layout and interference benchmarks: what each measured, in words,
// and the profile's figure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/fit_quality.h"
#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {

// The held SMs whose interference the profile prices: NCCL runs one block per channel, and the
// suite measures 8, 16 and 32; 16 stands for a collective beside compute (docs/calibration-format.md).
inline constexpr int kInterferenceSms = 16;

struct LossFit {
  planner::SourcedValue value;
  std::string summary;  // the measurement in words, for `calibrate fit`
  FitQuality quality;
};

// Sustained over the table's throughput for the measured shape. The table's figure is the same
// shape's bf16 GEMM in `table` (the same results) where there, else `profile`'s table at that
// shape (its efficiency times `peak_flops_per_s`). Empty when nothing was measured. A sustained
// figure above the table's is held at 1, with a note.
std::optional<LossFit> fit_sustained(const std::vector<SustainedSample>& sustained,
                                     const std::vector<GemmSample>& table,
                                     const planner::CalibrationProfile& profile, double peak_flops_per_s,
                                     const std::string& source, std::vector<std::string>& notes);

// Each backward pass's time in its own layout over the forward layout's, the geometric mean over
// the shapes measured in both (a shape measured in one only is noted and left out). dgrad and
// wgrad, each empty when not measured.
struct LayoutFits {
  std::optional<LossFit> dgrad, wgrad;
};
LayoutFits fit_layouts(const std::vector<GemmLayoutSample>& samples, const std::string& source,
                       std::vector<std::string>& notes);

// The median slowdown of `work` (gemm or memory) beside kInterferenceSms held SMs, over the
// shapes and background paces measured there (the nearest SM count measured when not 16); the
// summary gives it for every SM count. Empty when not measured.
std::optional<LossFit> fit_interference(const std::vector<InterferenceSample>& samples,
                                        const std::string& work, const std::string& source);

// What launching kernels one at a time costs, in words, for `calibrate fit`. Empty when not
// measured.
std::optional<std::string> launch_gaps_summary(const std::vector<LaunchGapSample>& samples);

// The GPU time a kernel launch costs beyond the kernel's own work while the host keeps ahead:
// the empty kernel's time per kernel replayed from a CUDA graph (the GPU's own gap between
// queued kernels; launched one at a time, the host's launch cost shows instead). The summary
// gives every measured kernel. Empty when the empty kernel was not measured.
std::optional<LossFit> fit_launch_gap(const std::vector<LaunchGapSample>& samples, const std::string& source);

// PyTorch's own memory-bound kernels (eager/*): a line, time = fixed + bytes / bandwidth, per op.
// `kernel_fixed`: the median op's fixed time less `launch_gap_s` (the graph's own gap between
// kernels, which the benchmark's replay includes and the planner prices apart), at least 0.
// `unvectorized`: the median unvectorized op's bandwidth (casts, layout copies) over
// `memory_bound_bytes_per_s`, held at 1 with a note where faster. Each empty when not measured
// (unvectorized also when no unvectorized op was); an op whose line does not fit is noted and left
// out.
struct EagerFits {
  std::optional<LossFit> kernel_fixed, unvectorized;
};
EagerFits fit_eager_kernels(const std::vector<EagerKernelSample>& samples, double launch_gap_s,
                            double memory_bound_bytes_per_s, const std::string& source,
                            std::vector<std::string>& notes);

// Unfused attention (attention_unfused/*): each pass's time less its batched GEMMs, priced as one
// GEMM of all their rows at `profile`'s table on a GPU of `peak_flops_per_s` (the benchmark runs a
// fraction of a second, at the clocks the table's GEMMs ran at), is its score traffic
// (planner::UnfusedScoreTraffic); its bandwidth over `memory_bound_bytes_per_s` is the fraction,
// the median over the pass's timings. A timing the GEMMs alone exceed is noted and left out. Each
// empty when its pass was not measured.
struct UnfusedAttentionFits {
  std::optional<LossFit> forward, backward;
};
UnfusedAttentionFits fit_unfused_attention(const std::vector<UnfusedAttentionSample>& samples,
                                           const planner::CalibrationProfile& profile,
                                           double peak_flops_per_s, double memory_bound_bytes_per_s,
                                           const std::string& source, std::vector<std::string>& notes);

}  // namespace pipescope::calibrate
