// DeepSpeed settings. Checked against deepspeedai/DeepSpeed at commit edaa7221 (2026-08):
// deepspeed/runtime/pipe/module.py (PipelineModule: partition_method is "uniform",
// "parameters" or "type:REGEX" only, no explicit boundaries; _partition_layers() sets
// self.parts and calls self._set_bounds(); activation_checkpoint_interval, 0 = off),
// deepspeed/runtime/pipe/engine.py ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
// parallelism"), deepspeed/runtime/pipe/topology.py (PipeModelDataParallelTopology(num_pp,
// num_mp, num_dp)), deepspeed/runtime/constants.py (train_batch_size,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps), deepspeed/runtime/zero/config.py
// (stage, mics_shard_size; overlap_comm defaults to on at stage 3 only) and deepspeed/moe/layer.py
// (MoE(..., ep_size)).
#include <string>

#include "pipescope/planner/framework_settings.h"
#include "pipescope/planner/stage_split.h"
#include "settings_text.h"

namespace pipescope::planner {

using detail::num;

FrameworkSettings emit_deepspeed(const models::ModelDesc& model, const PlanOutcome& outcome,
                                 const RecomputePricer* pricer) {
  const ParallelConfig& c = outcome.config;
  const StageSplit split = stage_split(outcome.suggested);
  FrameworkSettings out;

  // ZeRO: the pipeline engine takes stage 0 or 1 only; MiCS shards stage 3 within groups.
  int zero_stage = c.zero_stage;
  if (c.pp > 1 && zero_stage >= 2) {
    out.not_expressible.emplace_back(
        "ZeRO-" + num(zero_stage) +
        " with pipeline parallelism: DeepSpeed's pipeline engine refuses ZeRO-2 and "
        "ZeRO-3. Closest: ZeRO-1 (below); `pipescope plan ... --zero 1` predicts it.");
    zero_stage = 1;
  }
  std::string zero = "{\"stage\": " + num(zero_stage);
  if (c.zero_shard > 0 && c.zero_shard < c.dp()) {
    if (zero_stage == 3) {
      zero += ", \"mics_shard_size\": " + num(c.zero_shard);
    } else {
      out.not_expressible.emplace_back(
          "ZeRO-" + num(zero_stage) + " sharded within groups of " + num(c.zero_shard) +
          " data-parallel ranks: DeepSpeed shards within groups only at stage 3 (MiCS, "
          "mics_shard_size). Closest: sharding over all data-parallel ranks (below).");
    }
  }
  // ZeRO 2/3's optimizer hides the gradient reduce-scatter behind the backward only when asked
  // (stage 2's overlap_comm is off by default), as the plan assumes.
  if (zero_stage >= 2) zero += ", \"overlap_comm\": true";
  zero += "}";

  out.text = detail::comment("DeepSpeed settings for " + detail::plan_summary(model, outcome));
  out.text += "# ds_config.json (merge into yours):\n";
  out.text += "{\n";
  out.text += "  \"train_batch_size\": " + num(c.global_batch) + ",\n";
  out.text += "  \"train_micro_batch_size_per_gpu\": " + num(c.micro_batch) + ",\n";
  out.text += "  \"gradient_accumulation_steps\": " + num(c.micro_batches()) + ",\n";
  out.text += "  \"bf16\": {\"enabled\": true},\n";
  out.text += "  \"zero_optimization\": " + zero + "\n";
  out.text += "}\n";

  // Recompute: PipelineModule checkpoints whole layers every `interval` layers, the same on every
  // stage; it has no selective (attention-core) mode.
  const CommonRecompute recompute = common_recompute(split.recompute);
  int interval = recompute.mode == "none" ? 0 : 1;
  const std::string per_stage = "Per-stage recompute (" + describe_recompute(split.recompute) +
                                "): activation_checkpoint_interval is one value for every stage.";
  const auto priced = detail::whole_layers_only(split, recompute)
                          ? std::nullopt
                          : detail::fastest_expressible(detail::kWholeLayerSettings, pricer);
  if (priced) {
    interval = priced->setting.mode == RecomputeChoice::kNone ? 0 : 1;
    out.not_expressible.push_back(per_stage + " " + detail::planned_instead(*priced, outcome, "DeepSpeed"));
  } else if (!recompute.exact) {
    out.not_expressible.push_back(per_stage +
                                  " Closest: " + (interval ? std::string("full") : std::string("none")) +
                                  " on every stage.");
  }
  if (recompute.mode == "selective" && !priced) {
    out.not_expressible.emplace_back(
        "Selective (attention-core) recompute: PipelineModule checkpoints whole layers only. Closest: full "
        "(activation_checkpoint_interval=1), or selective recompute inside your layer's code.");
  }

  // The split: partition_method cannot take boundaries, so pin them by overriding the method that
  // computes them. Unit indices are exactly layer-spec indices for [embedding, layers..., head].
  std::string parts;
  for (size_t i = 0; i < split.unit_boundaries.size(); ++i) {
    parts += (i > 0 ? ", " : "") + std::to_string(split.unit_boundaries[i]);
  }
  out.text += "\n# PipelineModule (Python):\n";
  out.text += "from deepspeed.pipe import PipelineModule\n";
  out.text += "from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology\n\n";
  out.text += detail::comment(
      "partition_method takes \"uniform\", \"parameters\" or \"type:REGEX\", never boundaries, so this "
      "subclass "
      "pins the suggested split (" +
      join_layers(split.layers) + " decoder layers). PARTS indexes `layers` as [embedding, " +
      num(model.num_layers) +
      " decoder layers, head]; shift the numbers if your list holds other entries. _partition_layers is "
      "DeepSpeed-internal and may change between versions.");
  out.text += "class PlannedPipelineModule(PipelineModule):\n";
  out.text += "    PARTS = [" + parts + "]\n\n";
  out.text += "    def _partition_layers(self, method=\"uniform\"):\n";
  out.text += "        self.parts = list(self.PARTS)\n";
  out.text +=
      "        self._set_bounds(start=self.parts[self.stage_id], stop=self.parts[self.stage_id + 1])\n\n";
  out.text += "model = PlannedPipelineModule(\n";
  out.text += "    layers=layers,\n";
  out.text += "    loss_fn=loss_fn,\n";
  out.text += "    topology=PipeModelDataParallelTopology(num_pp=" + num(c.pp) + ", num_mp=" + num(c.tp) +
              ", num_dp=" + num(c.dp()) + "),\n";
  out.text += "    activation_checkpoint_interval=" + std::to_string(interval) + ",\n";
  out.text += ")\n";
  if (c.ep > 1) out.text += "# in each MoE layer: deepspeed.moe.layer.MoE(..., ep_size=" + num(c.ep) + ")\n";

  if (c.tp > 1) {
    out.not_expressible.push_back("Tensor parallelism" +
                                  std::string(c.sequence_parallel ? " with sequence parallelism" : "") +
                                  ": num_mp only lays out the ranks; the layers themselves must split over "
                                  "them (e.g. Megatron-DeepSpeed).");
  }
  if (c.cp > 1) {
    out.not_expressible.push_back("Context parallelism " + num(c.cp) +
                                  ": DeepSpeed's sequence parallelism (Ulysses, sequence_parallel_size) is a "
                                  "different scheme (all-to-all "
                                  "over heads) that pipescope does not plan.");
  }
  if (std::string note = detail::recipe_mismatch(c.optimizer, Framework::kDeepSpeed, zero_stage);
      !note.empty()) {
    out.not_expressible.push_back(note);
  }
  if (c.schedule == ScheduleKind::kInterleaved) {
    out.not_expressible.emplace_back(
        "The interleaved schedule: DeepSpeed's pipeline engine has one stage per rank.");
  } else if (c.schedule == ScheduleKind::kGPipe) {
    out.not_expressible.emplace_back(
        "The GPipe schedule: DeepSpeed's pipeline engine runs its own 1F1B-style schedule, which keeps fewer "
        "micro-batches in flight than the GPipe plan.");
  }
  detail::close_with_limits(out, Framework::kDeepSpeed);
  return out;
}

}  // namespace pipescope::planner
