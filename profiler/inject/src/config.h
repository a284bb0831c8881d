// The injection library's configuration: DESIGN.md's PIPESCOPE_* variables, read once. A value
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

struct InjectConfig {
  std::string output_dir = "./pipescope-traces";               // PIPESCOPE_OUTPUT
  trace::CaptureKinds kinds = trace::default_capture_kinds();  // PIPESCOPE_KINDS
  uint32_t flush_ms = 1000;                                    // PIPESCOPE_FLUSH_MS
  size_t buffer_bytes = size_t{4} << 20;                      // PIPESCOPE_BUFFER_MB, per thread, power of two
  std::optional<CaptureWindow> window;                        // PIPESCOPE_WINDOW
  std::optional<StepWindow> steps;                            // PIPESCOPE_STEPS
  std::string nvtx_step_regex = "step|iteration|train_step";  // PIPESCOPE_NVTX_STEP
  // PIPESCOPE_STAGE: the pipeline stage of this process, for runs whose stages do not talk
  // through NCCL; written into the trace as an NVTX mark "stage=<k>" (DESIGN.md's convention).
  std::optional<int32_t> declared_stage;
  bool compress = true;   // PIPESCOPE_COMPRESS (0/1)
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
