// InternEvo settings. Checked against InternLM/InternEvo at commit c628a8c8 (2024-03), the
// newest snapshot at hand: configs/7B_sft.py (data.seq_len/micro_bsz/micro_num,
// model.num_layers/checkpoint/num_chunks, parallel.zero1/tensor/pipeline/weight and the tensor
// modes mtp/msp/fsp/isp), internlm/initialize/launch.py (model.checkpoint is True, False or a
// fraction; zero1.fsdp is refused with pipeline size > 1), internlm/model/modeling_llama.py
// (each chunk checkpoints its first fraction x layers), internlm/solver/pipeline_utils.py
// (partition_uniform: the only split, later stages take the remainder) and
// internlm/core/context/parallel_context.py (expert parallel size = min(dp, num_experts)).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "pipescope/planner/framework_settings.h"
#include "pipescope/planner/pipeline_layout.h"
#include "pipescope/planner/stage_split.h"
#include "settings_text.h"

namespace pipescope::planner {

using detail::num;

namespace {

// InternEvo's partition_uniform() for one chunk per stage: L / p each, the last L % p stages one
// more.
std::vector<int> internevo_split(int64_t layers, int64_t stages) {
  std::vector<int> split;
  const int64_t base = layers / stages, left = stages - layers % stages;
  for (int64_t s = 0; s < stages; ++s) split.push_back(static_cast<int>(base + (s >= left ? 1 : 0)));
  return split;
}

}  // namespace

FrameworkSettings emit_internevo(const models::ModelDesc& model, const PlanOutcome& outcome,
                                 const RecomputePricer* pricer) {
  const ParallelConfig& c = outcome.config;
  const StageSplit split = stage_split(outcome.suggested);
  FrameworkSettings out;

  if (c.schedule != ScheduleKind::kInterleaved) {
    const std::vector<int> uniform = internevo_split(model.num_layers, c.pp);
    if (uniform != split.layers) {
      out.not_expressible.push_back("The suggested split (" + join_layers(split.layers) +
                                    "): InternEvo splits layers with partition_uniform() only. Closest: its "
                                    "uniform split (" +
                                    join_layers(uniform) + ").");
    }
  } else {
    const std::vector<int64_t> chunks = model_order_chunks(outcome.suggested, static_cast<int>(c.vpp));
    if (std::adjacent_find(chunks.begin(), chunks.end(), std::not_equal_to<>()) != chunks.end()) {
      out.not_expressible.push_back("The suggested layout (\"" + pipeline_layout_string(chunks) +
                                    "\"): InternEvo cuts every stage into num_chunks equal chunks "
                                    "(partition_uniform) only; it runs the uniform chunks, whose memory "
                                    "is the plan's baseline.");
    }
  }

  // model.checkpoint recomputes whole layers (a fraction of each stage's), the same on every stage.
  const CommonRecompute recompute = common_recompute(split.recompute);
  bool checkpoint = recompute.mode != "none";
  const std::string per_stage = "Per-stage recompute (" + describe_recompute(split.recompute) +
                                "): model.checkpoint is one fraction for every stage.";
  const auto priced = detail::whole_layers_only(split, recompute)
                          ? std::nullopt
                          : detail::fastest_expressible(detail::kWholeLayerSettings, pricer);
  if (priced) {
    checkpoint = priced->setting.mode != RecomputeChoice::kNone;
    out.not_expressible.push_back(per_stage + " " + detail::planned_instead(*priced, outcome, "InternEvo"));
  } else if (!recompute.exact) {
    out.not_expressible.push_back(per_stage +
                                  " Closest: " + (checkpoint ? std::string("full") : std::string("none")) +
                                  " on every stage.");
  }
  if (recompute.mode == "selective" && !priced) {
    out.not_expressible.push_back(
        "Selective (attention-core) recompute: model.checkpoint recomputes whole layers. Closest: "
        "checkpoint=True (full).");
  }

  // ZeRO: zero1 shards the optimizer state over a group (-1: all of DP, 1: none); torch FSDP
  // (zero1.fsdp) shards everything but refuses pipeline parallelism.
  std::string zero1_size = c.zero_stage == 0 ? "1" : (c.zero_shard > 0 ? num(c.zero_shard) : "-1");
  bool fsdp = false;
  if (c.zero_stage == 3 && c.pp == 1) {
    fsdp = true;
  } else if (c.zero_stage >= 2) {
    out.not_expressible.push_back(
        "ZeRO-" + num(c.zero_stage) + ": InternEvo's zero1 shards the optimizer state only" +
        std::string(c.zero_stage == 3 ? ", and zero1.fsdp refuses pipeline parallelism" : "") +
        ". Closest: zero1 (below); `pipescope plan ... --zero 1` predicts it.");
  }

  const std::string tensor_mode = c.sequence_parallel ? "msp" : "mtp";
  if (c.cp > 1) {
    out.not_expressible.push_back("Context parallelism " + num(c.cp) +
                                  ": InternEvo's sequence-parallel modes (fsp, isp) are different schemes.");
  }
  if (c.ep > 1 && c.ep != std::min<int64_t>(c.dp(), model.moe.num_experts)) {
    out.not_expressible.push_back("Expert parallelism " + num(c.ep) +
                                  ": InternEvo sets it to min(data-parallel size, num_experts) = " +
                                  num(std::min<int64_t>(c.dp(), model.moe.num_experts)) + ".");
  }
  if (c.schedule == ScheduleKind::kGPipe) {
    out.not_expressible.push_back(
        "The GPipe schedule: InternEvo runs 1F1B, which keeps fewer micro-batches in flight than the GPipe "
        "plan.");
  }

  if (std::string note = detail::recipe_mismatch(c.optimizer, Framework::kInternEvo, c.zero_stage);
      !note.empty()) {
    out.not_expressible.push_back(note);
  }

  out.text = detail::comment("InternEvo settings for " + detail::plan_summary(model, outcome));
  out.text += "# Keys of InternEvo's config files (configs/7B_sft.py); merge them into your config.\n";
  out.text += "data = dict(\n";
  out.text += "    seq_len=" + num(c.seq_length) + ",\n";
  out.text += "    micro_bsz=" + num(c.micro_batch) + ",\n";
  out.text +=
      "    micro_num=" + num(c.micro_batches()) + ",  # micro-batches per step on each data-parallel rank\n";
  out.text += ")\n";
  out.text += "model = dict(\n";
  out.text += "    num_layers=" + num(model.num_layers) + ",\n";
  out.text += "    checkpoint=" + std::string(checkpoint ? "True" : "False") + ",\n";
  out.text += "    num_chunks=" + num(c.vpp) + ",\n";
  out.text += ")\n";
  out.text += "parallel = dict(\n";
  out.text += "    zero1=dict(size=" + zero1_size + ", fsdp=" + (fsdp ? "True" : "False") + "),\n";
  out.text += "    tensor=dict(size=" + num(c.tp) + ", mode=\"" + tensor_mode + "\"),\n";
  out.text += "    pipeline=dict(size=" + num(c.pp) + ", interleaved_overlap=True),\n";
  out.text += "    weight=dict(size=1, overlap=True, memory_pool=True),\n";
  out.text += ")\n";
  detail::close_with_limits(out, Framework::kInternEvo);
  return out;
}

}  // namespace pipescope::planner
