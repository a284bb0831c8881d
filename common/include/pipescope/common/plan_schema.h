// The plan document's schema: what `pipescope plan --json` writes (planner/core's plan_json.h) and
// what `report --plan` and `calibrate fit --plan` read. Both sides take the version and the names
// of the fields they share from here, and readers read through read_plan_side(), so that the
// report and calibrate do not link the planner. A leaf: nlohmann_json and common/ only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::plan_schema {

// 1 (2026-11-22): the first; fields were added under it until 2 (work by kind, memory_overheads,
// mfu_causal, ...), so a version 1 document may lack any field not required below.
// 2 (2026-11-27): each side's `layout` string and each stage's `chunk_layers`; `inputs.arguments`
// gained `pipeline_layout`. 3 (2026-11-28): every figure of work by kind gained `launch_gap_s`.
// Readers of older versions read the newer ones' other fields unchanged.
inline constexpr int kPlanSchemaVersion = 3;
inline constexpr int kOldestReadablePlanSchemaVersion = 1;

// The two splits a plan holds: "uniform" is the baseline (the framework's uniform split, or the
// user's --split: the document's "baseline" says which), "suggested" the optimizer's.
inline constexpr std::string_view kBaselineSide = "uniform";
inline constexpr std::string_view kSuggestedSide = "suggested";
inline constexpr std::string_view kGivenSplitBaseline = "given_split";

// A stage's work by kind, per micro-batch, keyed as planner::WorkKind names them with "_s".
inline constexpr std::array<std::string_view, 5> kWorkKindKeys = {"gemm_s", "attention_s", "memory_bound_s",
                                                                  "communication_s", "launch_gap_s"};

// One pass's seconds by kind (kWorkKindKeys' order); a kind a document lacks (launch_gap_s before
// version 3) is 0.
struct WorkByKind {
  std::array<double, kWorkKindKeys.size()> s{};
  double of(std::string_view key) const;
};

// What readers take of a stage; every field here has been written since version 1.
struct StageFigures {
  int64_t layers = 0;
  double forward_s = 0;                     // per micro-batch
  double backward_s = 0;                    // per micro-batch
  double peak_memory_bytes = 0;             // reserved, with the CUDA context and NCCL buffers
  double allocated_bytes = 0;               // what tensors use
  double optimizer_s = 0;                   // per step
  std::optional<WorkByKind> forward_work;   // absent in early version 1 documents
  std::optional<WorkByKind> backward_work;  // likewise
};

struct SideFigures {
  double iteration_s = 0;
  double bubble_fraction = 0;
  std::vector<StageFigures> stages;
};

// inputs.config as readers use it; each field absent in a document that lacks it.
struct ConfigFigures {
  std::optional<int64_t> tp, pp, dp, micro_batch, micro_batches;
};

struct MemoryOverheads {
  double cuda_context_bytes = 0;
  double nccl_buffer_bytes = 0;
};

// One side of a plan document, read and checked.
struct PlanSide {
  int schema_version = 0;
  std::string side;  // "uniform" or "suggested"
  bool baseline_is_given_split = false;
  SideFigures figures;
  std::optional<ConfigFigures> config;              // absent without inputs.config
  std::optional<MemoryOverheads> memory_overheads;  // absent in early version 1 documents
  std::string arguments;  // inputs.arguments as JSON text (to plan it again); empty when absent
};

// Reads `side` ("uniform" or "suggested") of a plan document. Refused, with one line naming the
// origin and what is wrong: text that is not a JSON object, a document of another kind, a
// schema_version outside kOldestReadablePlanSchemaVersion..kPlanSchemaVersion (naming both), and a
// field readers need that is missing or of the wrong type (naming its path, e.g.
// "suggested.stages[2].forward_s").
Expected<PlanSide> read_plan_side(std::string_view text, std::string_view origin, std::string_view side);

}  // namespace pipescope::plan_schema
