// The real 4-stage pipeline run on one H100 (tests/data/gpu/README.md): its traces (a CI fixture,
// four stage processes and their idle launcher) and the plan of its case, for the CLI tests that
// hold the report's stages and its plan comparison to it.
#pragma once

#include <string>

#include "run_command.h"

namespace pipescope::testing {

inline const std::string kH100Pp4Trace =
    std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/gpu/h100-pp4-llama-1b";
// The parent of torch.multiprocessing.spawn: no GPU work, NCCL or NVTX, and no rank.
inline const std::string kH100Pp4Launcher = "rank-x.763.pst";

// `pipescope plan --json` of the traced case: llama-1b in 4 pipeline stages on H100s, 8
// micro-batches of one 4,096-token sequence a step, no recomputation. It suggests 3,4,5,4 layers;
// its baseline is the uniform 4,4,4,4 the run used.
inline CommandResult plan_h100_pp4_llama_1b() {
  return run_pipescope({"plan",  "--model",   std::string(PIPESCOPE_SOURCE_DIR) + "/examples/llama-1b.json",
                        "--gpu", "h100-80gb", "--gpus",
                        "4",     "--tp",      "1",
                        "--pp",  "4",         "--mbs",
                        "1",     "--gbs",     "8",
                        "--seq", "4096",      "--recompute",
                        "none",  "--json"});
}

}  // namespace pipescope::testing
