// The real H200 run of docs/validation.md (V10): its trace (a CI fixture), the profile fitted from
// that GPU's calibration suite, and the plan of its 1B case, for the CLI tests that hold the
// report and the calibration to it.
#pragma once

#include <string>

#include "run_command.h"

namespace pipescope::testing {

inline const std::string kH200Trace = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/gpu/h200-llama-1b";
inline const std::string kH200Profile =
    std::string(PIPESCOPE_SOURCE_DIR) + "/docs/gpu-runs/2026-11-26-h200/profile.json";

// `pipescope plan --json` of the traced case: llama-1b on one H200, micro-batch 4 of 2,048 tokens,
// one micro-batch a step, no recomputation.
inline CommandResult plan_h200_llama_1b() {
  return run_pipescope(
      {"plan",       "--model",     std::string(PIPESCOPE_SOURCE_DIR) + "/examples/llama-1b.json",
       "--gpu",      "h200-141gb",  "--calibration",
       kH200Profile, "--gpus",      "1",
       "--tp",       "1",           "--pp",
       "1",          "--mbs",       "4",
       "--gbs",      "4",           "--seq",
       "2048",       "--recompute", "none",
       "--json"});
}

}  // namespace pipescope::testing
