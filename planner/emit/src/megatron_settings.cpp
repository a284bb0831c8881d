// Megatron-LM flags. Checked against NVIDIA/Megatron-LM at commit d98e8a64 (2026-08):
// megatron/training/arguments.py (--decoder-first/last-pipeline-num-layers,
// --pipeline-model-parallel-layout, --num-layers-per-virtual-pipeline-stage,
// --use-distributed-optimizer, --num-distributed-optimizer-instances, --use-megatron-fsdp,
// --data-parallel-sharding-strategy; there is no --virtual-pipeline-model-parallel-size flag),
// megatron/core/transformer/transformer_config.py (the recompute flags, generated from its
// fields; first/last counts must be >= 1 and the middle stages even) and
// megatron/core/transformer/pipeline_parallel_layer_layout.py (the layout grammar: E, t, L, '|',
// x*n). Megatron-LM refuses a layer count its pipeline does not divide unless one of these
// uneven-split flags is given. megatron/core/distributed/distributed_data_parallel_config.py:
// overlap_grad_reduce and overlap_param_gather are off unless asked for. Megatron-FSDP's required
// flags: docs/discussions/megatron-fsdp-user-guide/megatron-fsdp-user-guide.md.
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

FrameworkSettings emit_megatron(const models::ModelDesc& model, const PlanOutcome& outcome,
                                const RecomputePricer* pricer) {
  const ParallelConfig& c = outcome.config;
  const StageSplit split = stage_split(outcome.suggested);
  FrameworkSettings out;
  std::vector<std::string> flags;
  std::vector<std::string> notes;
  auto flag = [&](const std::string& name, const std::string& value = "") {
    flags.push_back(value.empty() ? name : name + " " + value);
  };

  flag("--num-layers", num(model.num_layers));
  flag("--tensor-model-parallel-size", num(c.tp));
  flag("--pipeline-model-parallel-size", num(c.pp));
  if (c.sequence_parallel) flag("--sequence-parallel");
  if (c.cp > 1) flag("--context-parallel-size", num(c.cp));
  if (c.ep > 1) flag("--expert-model-parallel-size", num(c.ep));
  flag("--micro-batch-size", num(c.micro_batch));
  flag("--global-batch-size", num(c.global_batch));
  flag("--seq-length", num(c.seq_length));

  // The split: the interleaved schedule's suggested layout, as uniform chunks where it is.
  if (c.schedule == ScheduleKind::kInterleaved) {
    const std::vector<int64_t> chunks = model_order_chunks(outcome.suggested, static_cast<int>(c.vpp));
    const bool uniform =
        std::adjacent_find(chunks.begin(), chunks.end(), std::not_equal_to<>()) == chunks.end();
    if (uniform) {
      flag("--num-layers-per-virtual-pipeline-stage", num(chunks.front()));
    } else {
      flag("--pipeline-model-parallel-layout", "\"" + pipeline_layout_string(chunks) + "\"");
      const auto first_last =
          megatron_first_last_interleaved(chunks, static_cast<int>(c.pp), static_cast<int>(c.vpp));
      if (first_last) {
        std::string older = "--num-virtual-stages-per-pipeline-rank " + num(c.vpp);
        if (first_last->first) older += " --decoder-first-pipeline-num-layers " + num(*first_last->first);
        if (first_last->last) older += " --decoder-last-pipeline-num-layers " + num(*first_last->last);
        notes.push_back(
            "The same layout in the uneven-split flags, for a Megatron-LM without "
            "--pipeline-model-parallel-layout (it refuses the two together): " +
            older + ".");
      }
    }
    if (c.vpp_group > 0 && c.vpp_group != c.pp) {
      flag("--microbatch-group-size-per-virtual-pipeline-stage", num(c.vpp_group));
      notes.emplace_back(
          "--microbatch-group-size-per-virtual-pipeline-stage needs a Megatron-LM of November 2024 "
          "or later (its tunable schedule).");
    }
  } else if (c.pp > 1 && !all_equal(split.layers)) {
    const auto first_last = megatron_first_last(split.layers);
    if (first_last && first_last->exact) {
      if (first_last->first) flag("--decoder-first-pipeline-num-layers", num(*first_last->first));
      if (first_last->last) flag("--decoder-last-pipeline-num-layers", num(*first_last->last));
    } else {
      flag("--pipeline-model-parallel-layout", "\"" + megatron_layout(split.layers) + "\"");
      std::string note =
          "The suggested split (" + join_layers(split.layers) +
          ") has middle stages of different sizes, which --decoder-first-pipeline-num-layers / "
          "--decoder-last-pipeline-num-layers cannot express; --pipeline-model-parallel-layout "
          "gives it exactly (marked experimental in Megatron-LM).";
      if (first_last) {
        note += " For a Megatron-LM without that flag, the closest first/last split is ";
        if (!first_last->first && !first_last->last) note += "the even one, no flag";
        if (first_last->first) note += "--decoder-first-pipeline-num-layers " + num(*first_last->first);
        if (first_last->first && first_last->last) note += " ";
        if (first_last->last) note += "--decoder-last-pipeline-num-layers " + num(*first_last->last);
        note += " (" + join_layers(first_last->layers) + "); pipescope has not planned its memory.";
      }
      notes.push_back(note);
    }
  }

  // ZeRO: Megatron-LM's distributed optimizer shards what ZeRO-1 shards; Megatron-FSDP's
  // sharding strategies are ZeRO-2 (optim_grads) and ZeRO-3 (optim_grads_params).
  if (c.zero_stage == 1) {
    flag("--use-distributed-optimizer");
    if (c.zero_shard > 0 && c.zero_shard < c.dp()) {
      flag("--num-distributed-optimizer-instances", num(c.dp() / c.zero_shard));
    }
  } else if (c.zero_stage >= 2) {
    flag("--use-megatron-fsdp");
    flag("--data-parallel-sharding-strategy", c.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
    flag("--use-distributed-optimizer");
    flag("--no-gradient-accumulation-fusion");
    flag("--ckpt-format", "fsdp_dtensor");
    if (c.zero_shard > 0 && c.zero_shard < c.dp()) {
      out.not_expressible.push_back("ZeRO-" + num(c.zero_stage) + " sharded within groups of " +
                                    num(c.zero_shard) +
                                    " data-parallel ranks: these flags shard over all of data parallelism "
                                    "(Megatron-FSDP's hybrid sharding has its own options; not emitted).");
    }
  }

  // The plan hides the gradient sync behind the last backward, and ZeRO's weight gather behind
  // compute, unless its framework syncs after the backward (--framework megatron-2021 or
  // megatron-2022, whose Megatron-LM has no such flag, or --grad-sync after-backward);
  // Megatron-LM does either only when asked.
  if (c.dp() > 1 && sync_overlaps_backward(c)) {
    flag("--overlap-grad-reduce");
    if (c.zero_stage >= 1) flag("--overlap-param-gather");
  }

  // Recompute: one setting for every stage. --recompute-num-layers counts the same number of
  // layers on every stage, so a per-stage choice has no flag.
  CommonRecompute recompute = common_recompute(split.recompute);
  // Full recomputation of the same first k layers on every stage is --recompute-method block.
  // Without a pricer, stages that each keep none or recompute their first k_s layers are held at
  // or below the plan by block recomputation of the largest k_s everywhere, which costs less than
  // all layers.
  const std::vector<int>& full = split.full_recompute_layers;
  const bool no_selective = std::none_of(split.recompute.begin(), split.recompute.end(),
                                         [](const std::string& mode) { return mode == "selective"; });
  const int block_layers = full.empty() ? 0 : *std::max_element(full.begin(), full.end());
  const int most_layers =
      split.layers.empty() ? 0 : *std::max_element(split.layers.begin(), split.layers.end());
  const bool block = recompute.mode == "full" && no_selective && block_layers < most_layers;
  const bool exact_block =
      block && std::all_of(full.begin(), full.end(), [&](int k) { return k == block_layers; });
  if (exact_block) recompute.exact = true;
  UniformRecompute setting;  // what the flags run
  if (recompute.mode == "selective") {
    setting.mode = RecomputeChoice::kSelective;
  } else if (recompute.mode == "full") {
    setting = UniformRecompute{RecomputeChoice::kFull, block ? block_layers : 0};
  }
  std::optional<detail::PricedRecompute> priced;
  if (!recompute.exact && c.schedule != ScheduleKind::kInterleaved) {
    std::vector<UniformRecompute> candidates = {{RecomputeChoice::kNone, 0},
                                                {RecomputeChoice::kSelective, 0}};
    for (int k = 1; k < most_layers; ++k) candidates.push_back({RecomputeChoice::kFull, k});
    candidates.push_back({RecomputeChoice::kFull, 0});
    priced = detail::fastest_expressible(candidates, pricer);
    if (priced) setting = priced->setting;
  }
  if (setting.mode == RecomputeChoice::kSelective) {
    flag("--recompute-granularity", "selective");  // recompute_modules defaults to core_attn
  } else if (setting.mode == RecomputeChoice::kFull && setting.block_layers > 0) {
    flag("--recompute-granularity", "full");
    flag("--recompute-method", "block");
    flag("--recompute-num-layers", num(setting.block_layers));
  } else if (setting.mode == RecomputeChoice::kFull) {
    flag("--recompute-granularity", "full");
    flag("--recompute-method", "uniform");
    flag("--recompute-num-layers", "1");
  }
  const std::string per_stage = "Per-stage recompute (" + describe_recompute(split.recompute) +
                                "): Megatron-LM applies one --recompute-granularity to every stage, and "
                                "--recompute-num-layers is the same count on every stage.";
  if (priced) {
    out.not_expressible.push_back(per_stage + " " + detail::planned_instead(*priced, outcome, "Megatron-LM"));
  } else if (!recompute.exact && block) {
    out.not_expressible.push_back(
        per_stage + " Closest: full recomputation of the first " + num(block_layers) +
        " layers on every stage (the flags above, the largest count planned): no stage keeps more "
        "activations than planned, and the stages planned with fewer run slower than planned; pipescope has "
        "not planned that split of recompute.");
  } else if (!recompute.exact) {
    out.not_expressible.push_back(
        per_stage + " Closest: " + recompute.mode +
        " on every stage (the flags above): no stage keeps more activations than planned, and the stages "
        "planned with less recompute run slower than planned; `pipescope plan ... --recompute " +
        recompute.mode + "` predicts it.");
  }
  if (c.schedule == ScheduleKind::kGPipe) {
    out.not_expressible.emplace_back(
        "The GPipe schedule: Megatron-LM runs 1F1B (or interleaved 1F1B); with these flags it runs 1F1B, "
        "which keeps fewer micro-batches in flight than the GPipe plan.");
  }

  out.text = detail::comment("Megatron-LM settings for " + detail::plan_summary(model, outcome));
  out.text += detail::comment(
      "Flags as megatron/training/arguments.py defines them; pass \"${PIPESCOPE_ARGS[@]}\" to "
      "pretrain_gpt.py "
      "together with your model, data and optimizer flags.");
  out.text += "PIPESCOPE_ARGS=(\n";
  for (const std::string& f : flags) out.text += "  " + f + "\n";
  out.text += ")\n";
  for (const std::string& note : notes) out.text += detail::comment(note);
  if (std::string note = detail::recipe_mismatch(c.optimizer, Framework::kMegatron, c.zero_stage);
      !note.empty()) {
    out.not_expressible.push_back(note);
  }
  detail::close_with_limits(out, Framework::kMegatron);
  return out;
}

}  // namespace pipescope::planner
