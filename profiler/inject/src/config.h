// The injection library's configuration: docs/design.md's PIPESCOPE_* variables, read once. A value
// that does not parse gives one warning and the documented default; it never stops the job.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/trace/capture_kinds.h"

namespace pipescope::inject {

struct CaptureWindow {
  double start_s = 0;           // seconds from process start
  std::optional<double> end_s;  // open end when absent
};

struct StepWindow {
  int64_t first = 0;  // steps counted from 0, in the order step ranges open
  int64_t last = 0;   // inclusive
};

// What CUPTI's capture costs, knob by knob (docs/profiler.md, "What capture costs"). An unset
// optional leaves CUPTI's own default in place; the others are pipescope's choices.
struct CuptiTuning {
  size_t activity_buffer_bytes = size_t{8} << 20;     // PIPESCOPE_CUPTI_BUFFER_MB: host buffers CUPTI fills
  std::optional<size_t> device_buffer_bytes;          // PIPESCOPE_CUPTI_DEVICE_BUFFER_MB (CUPTI: ~3 MB)
  std::optional<size_t> device_buffers_preallocated;  // PIPESCOPE_CUPTI_DEVICE_BUFFERS (CUPTI: 3)
  std::optional<bool> host_pinned_device_buffers;     // PIPESCOPE_CUPTI_HOST_PINNED (CUPTI: 0)
  std::optional<bool> per_thread_buffers;             // PIPESCOPE_CUPTI_PER_THREAD_BUFFERS (CUPTI: 1)
  bool latency_timestamps = false;                    // PIPESCOPE_CUPTI_LATENCY_TIMESTAMPS
  bool clock_callback = true;                         // PIPESCOPE_CUPTI_CLOCK: callback | offset
  uint32_t flush_period_ms = 0;       // PIPESCOPE_CUPTI_FLUSH_PERIOD_MS (0: CUPTI's heuristics)
  bool all_sync_records = false;      // PIPESCOPE_CUPTI_ALL_SYNC_RECORDS
  bool nccl_launch_api_only = true;   // PIPESCOPE_CUPTI_NCCL_API: launches | all
  bool zeroed_buffers = true;         // PIPESCOPE_CUPTI_ZEROED_BUFFERS
  bool convert_on_own_thread = true;  // PIPESCOPE_CUPTI_CONVERT: thread | callback
};

struct InjectConfig {
  std::string output_dir = "./pipescope-traces";               // PIPESCOPE_OUTPUT
  trace::CaptureKinds kinds = trace::default_capture_kinds();  // PIPESCOPE_KINDS
  uint32_t flush_ms = 1000;                                    // PIPESCOPE_FLUSH_MS
  size_t buffer_bytes = size_t{4} << 20;                      // PIPESCOPE_BUFFER_MB, per thread, power of two
  std::optional<CaptureWindow> window;                        // PIPESCOPE_WINDOW
  std::optional<StepWindow> steps;                            // PIPESCOPE_STEPS
  std::string nvtx_step_regex = "step|iteration|train_step";  // PIPESCOPE_NVTX_STEP
  // PIPESCOPE_STAGE: the pipeline stage of this process, for runs whose stages do not talk
  // through NCCL; written into the trace as an NVTX mark "stage=<k>" (docs/design.md's convention).
  std::optional<int32_t> declared_stage;
  // PIPESCOPE_KERNEL_SAMPLE: GPU activity (kernels, copies, memsets) recorded for one step in N
  // (steps counted on the step range), everything else in every step; 1 records every step.
  uint32_t kernel_sample_steps = 1;
  CuptiTuning cupti;
  bool compress = true;   // PIPESCOPE_COMPRESS (0/1)
  bool read_tsc = true;   // PIPESCOPE_TSC=0: the trace clock is clock_gettime's, never the TSC's
  bool disabled = false;  // PIPESCOPE_DISABLE=1: load, record nothing
};

struct ConfigResult {
  InjectConfig config;
  std::vector<std::string> warnings;  // one line each, without the "pipescope: " prefix
};

using EnvLookup = std::function<const char*(const char* name)>;

// Reads every PIPESCOPE_* variable through `env` (getenv in the library, a map in tests).
ConfigResult read_config(const EnvLookup& env);

}  // namespace pipescope::inject
