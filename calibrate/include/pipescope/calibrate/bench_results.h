// The calibration suite's Google Benchmark JSON, read into typed samples
// (docs/calibration-results.md is the contract with benches/gpu/).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::calibrate {

// One timed entry: `name` as the file has it, for messages and flags.
struct SampleId {
  std::string name;
  std::string file;
};

struct GemmSample {
  SampleId id;
  std::string dtype;  // bf16, fp16, fp8
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

struct AttentionSample {
  SampleId id;
  bool backward = false;
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  bool causal = false;
  double flops = 0;  // FlashAttention's count, as the benchmark reports it
  double seconds = 0;
  std::string kernel;  // the label: which kernel was measured
};

// hbm/<copy|scale|add|norm> and memcpy/<h2d|d2h|d2d>: `bytes` moved per iteration.
struct BandwidthSample {
  SampleId id;
  std::string family;   // hbm or memcpy
  std::string variant;  // copy, scale, add, norm; h2d, d2h, d2d
  double bytes = 0;     // moved: read plus written
  double seconds = 0;
  int64_t operand_bytes = 0;  // the name's bytes: one operand's size; 0 when the name has none
  int64_t hidden = 0;         // norm: the row width; 0 otherwise
};

struct CollectiveSample {
  SampleId id;
  std::string kind;  // all_reduce, all_gather, reduce_scatter, broadcast, send_recv, all_to_all
  int ranks = 0;
  int nodes = 1;
  double bytes = 0;  // nccl-tests' size
  double seconds = 0;
};

// device/state/at:<at>: what NVML read while the GPU worked (0: not read).
struct DeviceStateSample {
  SampleId id;
  std::string at;  // warm (after warm-up), end (after the last benchmark)
  double sm_clock_mhz = 0, memory_clock_mhz = 0, power_w = 0, temperature_c = 0;
  std::string clock_event_reasons;  // "none", "sw_power_cap,...", or empty when unknown
};

// gemm_layout/bf16/m:/n:/k:/pass:<forward|dgrad|wgrad>: one GEMM in one pass's operand layout.
struct GemmLayoutSample {
  SampleId id;
  int64_t m = 0, n = 0, k = 0;
  std::string pass;  // forward, dgrad, wgrad
  double seconds = 0;
};

// sustained/gemm/m:/n:/k:: one GEMM run without a break until the clocks settled.
struct SustainedSample {
  SampleId id;
  int64_t m = 0, n = 0, k = 0;
  double burst_flops_per_s = 0, sustained_flops_per_s = 0, seconds = 0;
  double burst_sm_clock_mhz = 0, sustained_sm_clock_mhz = 0, sustained_power_w = 0, power_limit_w = 0;
  std::string clock_event_reasons;  // at the end, as device states have them
};

// interference/<gemm|memory>/.../sms:/pause_ns:: work timed alone and beside a background copy
// holding `sms` SMs.
struct InterferenceSample {
  SampleId id;
  std::string work;  // gemm, memory
  int sms = 0;
  int64_t pause_ns = 0;
  double alone_s = 0, beside_s = 0, background_bytes_per_s = 0;
  double slowdown() const { return beside_s / alone_s - 1; }
};

// launch/gap/bytes:: kernels launched one at a time from the host against the same kernels
// replayed from a CUDA graph, per kernel.
struct LaunchGapSample {
  SampleId id;
  int64_t bytes = 0;  // each kernel's copy; 0: an empty kernel
  double stream_s = 0, graph_s = 0, host_s = 0;
  double gap_s() const { return stream_s > graph_s ? stream_s - graph_s : 0; }
};

// eager/<op>/elements:: one of PyTorch's own memory-bound kernels (benches/gpu/eager_elementwise.py),
// its GPU time per kernel replayed from a CUDA graph.
struct EagerKernelSample {
  SampleId id;
  std::string op;  // mul_bf16, add_bf16, silu_bf16, mul_fp32, cast_bf16_fp32, transpose_bf16, cat_bf16
  int64_t elements = 0;
  double bytes = 0;  // read plus written
  double seconds = 0;
  // ATen's unvectorized path: a cast (another dtype) or a copy into another layout.
  bool unvectorized() const { return op.rfind("cast_", 0) == 0 || op.rfind("transpose_", 0) == 0; }
};

// attention_unfused/bf16/matrices:/seq:/head_dim:/dropout_percent:/pass:: Megatron-LM's attention
// before flash attention (batched Q K^T and P V, softmax, dropout) timed alone, one pass of it
// (benches/gpu/attention_unfused.py).
struct UnfusedAttentionSample {
  SampleId id;
  int64_t matrices = 0, seq = 0, head_dim = 0;  // matrices: micro-batch x heads
  bool dropout = false, backward = false;
  double seconds = 0;
};

struct BenchResults {
  std::vector<GemmSample> gemm;
  std::vector<GemmLayoutSample> gemm_layouts;
  std::vector<SustainedSample> sustained;
  std::vector<InterferenceSample> interference;
  std::vector<LaunchGapSample> launch_gaps;
  std::vector<EagerKernelSample> eager_kernels;
  std::vector<UnfusedAttentionSample> unfused_attention;
  std::vector<AttentionSample> attention;
  std::vector<BandwidthSample> bandwidth;
  std::vector<CollectiveSample> collectives;
  std::vector<DeviceStateSample> device_states;
  // Context keys of every file; the first file's value wins, a different value later is noted.
  std::map<std::string, std::string> context;
  std::vector<std::string> files;
  std::vector<std::map<std::string, std::string>> file_contexts;  // each file's own, as `files`
  std::vector<std::string> notes;  // entries skipped (errors, unknown families), context clashes
  int batched_gemms_skipped = 0;   // gemm_batched entries, not fitted (one note says so)
  bool empty() const {
    return gemm.empty() && attention.empty() && bandwidth.empty() && collectives.empty() &&
           gemm_layouts.empty() && sustained.empty() && interference.empty() && launch_gaps.empty() &&
           eager_kernels.empty() && unfused_attention.empty();
  }
  std::string context_value(std::string_view key) const;
};

// Adds one file's samples. Refuses what is not a benchmark result (not JSON, no "benchmarks"),
// and a time that is not a positive finite number, naming the entry.
Status add_bench_results(std::string_view text, const std::string& origin, BenchResults& into);
Status read_bench_file(const std::string& path, BenchResults& into);

}  // namespace pipescope::calibrate
