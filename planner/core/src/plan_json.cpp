#include "pipescope/planner/plan_json.h"

#include <algorithm>

#include "pipescope/common/plan_schema.h"
#include "pipescope/planner/pipeline_layout.h"

namespace pipescope::planner {
namespace {

using ordered_json = nlohmann::ordered_json;
namespace schema = plan_schema;

static_assert(schema::kWorkKindKeys.size() == kWorkKinds, "plan_schema names every kind of work");

// Seconds by kind of work, keyed as plan_schema::kWorkKindKeys.
ordered_json work_json(const WorkTimes& w) {
  ordered_json out;
  for (size_t k = 0; k < kWorkKinds; ++k) out[std::string(schema::kWorkKindKeys[k])] = w.s[k];
  return out;
}

// The interleaved schedule's chunks per stage, from a report (1 without per-chunk counts).
int chunks_per_stage(const PlanReport& r) {
  return r.stages.empty() ? 1 : std::max<int>(1, static_cast<int>(r.stages.front().chunk_layers.size()));
}

ordered_json stage_json(const StageReport& s) {
  ordered_json chunk_layers = ordered_json::array();
  for (int layers : s.chunk_layers) chunk_layers.push_back(layers);
  return ordered_json{
      {"index", s.index},
      {"layers", s.layers},
      {"chunk_layers", chunk_layers},
      {"has_embedding", s.has_embedding},
      {"has_head", s.has_head},
      {"first_unit", s.first_unit},
      {"end_unit", s.end_unit},
      {"parameters", s.parameters},
      {"in_flight", s.in_flight},
      {"recompute", s.recompute},
      {"full_recompute_layers", s.full_recompute_layers},
      {"static_bytes", s.static_bytes},
      {"activation_bytes", s.activation_bytes},
      {"transient_bytes", s.transient_bytes},
      {"step_bytes", s.step_bytes},
      {"allocated_bytes", s.allocated_bytes},
      {"reserved_bytes", s.reserved_bytes},
      {"peak_memory_bytes", s.peak_memory_bytes},
      {"forward_s", s.forward_s},
      {"backward_s", s.backward_s},
      {"work", {{"forward", work_json(s.work.forward)}, {"backward", work_json(s.work.backward)}}},
      {"idle_s", s.idle_s},
      {"dp_sync_exposed_s", s.dp_sync_exposed_s},
      {"optimizer_s", s.optimizer_s},
      {"overflows", s.overflows}};
}

ordered_json report_json(const PlanReport& r, int64_t micro_batches) {
  ordered_json stages = ordered_json::array();
  for (const StageReport& s : r.stages) stages.push_back(stage_json(s));
  const StageStepWork busiest = busiest_stage_work(r, micro_batches);
  ordered_json step_work = work_json(busiest.pipeline);
  step_work["optimizer_s"] = busiest.optimizer_s;
  step_work["dp_sync_exposed_s"] = busiest.dp_sync_exposed_s;
  return ordered_json{{"fits", r.fits},
                      {"layout", pipeline_layout_string(model_order_chunks(r, chunks_per_stage(r)))},
                      {"peak_memory_bytes", r.peak_memory_bytes},
                      {"reserved_bytes", r.reserved_bytes},
                      {"iteration_s", r.iteration_s},
                      {"pipeline_s", r.pipeline_s},
                      {"bubble_fraction", r.bubble_fraction},
                      {"tokens_per_s", r.tokens_per_s},
                      {"tflops_per_gpu", r.tflops_per_gpu},
                      {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
                      {"model_flops_per_s_per_gpu", r.tflops_per_gpu * 1e12},
                      {"mfu", r.mfu},
                      {"mfu_causal", r.mfu_causal},
                      {"busiest_stage", busiest.stage},
                      {"busiest_stage_work_per_step", step_work},
                      {"stages", stages}};
}

}  // namespace

ordered_json config_json(const ParallelConfig& c) {
  return ordered_json{{"gpus", c.gpus},
                      {"tp", c.tp},
                      {"pp", c.pp},
                      {"vpp", c.vpp},
                      {"vpp_group", c.vpp > 1 ? (c.vpp_group > 0 ? c.vpp_group : c.pp) : 0},
                      {"cp", c.cp},
                      {"ep", c.ep},
                      {"dp", c.dp()},
                      {"micro_batch", c.micro_batch},
                      {"global_batch", c.global_batch},
                      {"micro_batches", c.micro_batches()},
                      {"seq_length", c.seq_length},
                      {"zero_stage", c.zero_stage},
                      {"zero_shard", c.zero_shard},
                      {"recompute", std::string(to_string(c.recompute))},
                      {"sequence_parallel", c.sequence_parallel},
                      {"schedule", std::string(to_string(c.schedule))},
                      {"balance", std::string(to_string(c.balance))},
                      {"optimizer", std::string(to_string(c.optimizer))},
                      {"framework", std::string(to_string(c.framework))},
                      {"grad_sync_overlaps_backward", sync_overlaps_backward(c)},
                      {"description", describe(c)}};
}

ordered_json plan_json(const models::ModelDesc& model, const Cluster& cluster, const PlanOutcome& o,
                       const PlanDocumentText& text) {
  ordered_json doc;
  doc["schema_version"] = schema::kPlanSchemaVersion;
  doc["inputs"] =
      ordered_json{{"model",
                    {{"name", model.name},
                     {"architecture", model.architecture},
                     {"num_layers", model.num_layers},
                     {"source", model.source}}},
                   {"cluster",
                    {{"name", cluster.name},
                     {"gpu", cluster.gpu.name},
                     {"gpus_per_node", cluster.gpus_per_node},
                     {"gpu_memory_bytes", cluster.gpu.memory_bytes}}},
                   {"calibration", {{"gpu", text.calibration_gpu}, {"origin", text.calibration_origin}}},
                   {"config", config_json(o.config)}};
  if (text.arguments != nullptr && !text.arguments->is_null()) doc["inputs"]["arguments"] = *text.arguments;
  doc["memory_figure"] = ordered_json{
      {"predicted", "reserved"},
      {"peak_memory_bytes",
       "reserved: what the CUDA caching allocator holds from the driver, plus the CUDA context and NCCL "
       "buffers; what runs out"},
      {"reserved_bytes",
       "reserved as held once the first optimizer step ran, what nvidia-smi shows: above peak_memory_bytes "
       "when the step's buffers (step_bytes) take new allocator segments while the activations' stay "
       "cached"},
      {"allocated_bytes",
       "allocated: what tensors use (static + the larger of activation + transient and step)"},
      {"capacity_bytes", o.capacity_bytes}};
  // The same on every stage and both sides: what the peaks hold besides the allocator's reserve.
  doc["memory_overheads"] = ordered_json{{"cuda_context_bytes", o.cuda_context_bytes},
                                         {"nccl_buffer_bytes", o.nccl_buffer_bytes},
                                         {"allocator_reserve_fraction", o.allocator_reserve_fraction}};
  doc["baseline"] = o.baseline_is_given_split ? schema::kGivenSplitBaseline : schema::kBaselineSide;
  doc[std::string(schema::kBaselineSide)] = report_json(o.uniform, o.config.micro_batches());
  doc[std::string(schema::kSuggestedSide)] = report_json(o.suggested, o.config.micro_batches());
  doc["suggested_is_optimal"] = o.suggested_is_optimal;
  // time_limit_s is 0 where there is no limit: --balance time, the interleaved schedule, no fit.
  const bool within_limit = o.config.balance == BalanceGoal::kTime || o.time_limit_s == 0 ||
                            o.suggested.pipeline_s <= o.time_limit_s * (1 + 1e-9);
  doc["optimality"] = ordered_json{
      {"proven", o.suggested_is_optimal},
      {"objective", o.config.balance == BalanceGoal::kTime ? "iteration_s" : "peak_memory_bytes"},
      {"gap_fraction", o.optimality_gap},
      {"meets_time_limit", within_limit},
      {"time_limit_s", o.time_limit_s},
      {"time_limit_proven", o.time_limit_proven},
      {"fastest_fitting_s", o.fastest_fitting_s},
      {"fastest_fitting_lower_bound_s", o.fastest_fitting_lower_s},
      {"text", text.optimality}};
  const double u_peak = static_cast<double>(o.uniform.peak_memory_bytes);
  const int64_t saved = o.uniform.peak_memory_bytes - o.suggested.peak_memory_bytes;
  const double added_s = o.suggested.iteration_s - o.uniform.iteration_s;
  doc["comparison"] = ordered_json{
      {"peak_memory_gain_bytes", saved},
      {"peak_memory_gain_fraction", u_peak > 0 ? static_cast<double>(saved) / u_peak : 0.0},
      {"iteration_cost_s", added_s},
      {"iteration_cost_fraction", o.uniform.iteration_s > 0 ? added_s / o.uniform.iteration_s : 0.0}};
  doc["fits"] = o.suggested.fits;
  doc["notes"] = text.notes;
  ordered_json suggestions = ordered_json::array();
  for (size_t i = 0; i < o.suggestions.size(); ++i) {
    const FitSuggestion& f = o.suggestions[i];
    suggestions.push_back(ordered_json{
        {"change", i < text.suggestion_changes.size() ? text.suggestion_changes[i] : std::string()},
        {"fits", f.fits},
        {"peak_memory_bytes", f.peak_memory_bytes},
        {"iteration_s", f.iteration_s}});
  }
  doc["suggestions"] = suggestions;
  if (!text.emit_framework.empty()) {
    doc["emit_framework"] = text.emit_framework;
    doc["emit"] = text.emit_text;
  }
  return doc;
}

}  // namespace pipescope::planner
