#include "plan_output.h"

#include "pipescope/planner/pipeline_layout.h"
#include "pipescope/planner/stage_split.h"
#include "text_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <string>
#include <vector>

namespace pipescope::cli {
namespace {

using planner::PlanReport;
using planner::StageReport;
using ordered_json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(int64_t bytes) { return printf_string("%.1f", static_cast<double>(bytes) / kGiB); }
std::string ms(double seconds) { return printf_string("%.1f", seconds * 1e3); }
std::string percent(double fraction) { return printf_string("%.1f%%", fraction * 100); }
std::string signed_percent(double fraction) { return printf_string("%+.1f%%", fraction * 100); }

std::string parameters(int64_t count) {
  const double n = static_cast<double>(count);
  return n >= 1e9 ? printf_string("%.2fB", n / 1e9) : printf_string("%.0fM", n / 1e6);
}

std::string cluster_text(const planner::Cluster& c) {
  const std::string per_node = std::to_string(c.gpus_per_node) + " per node";
  if (c.name.rfind("gpu:", 0) == 0) return c.gpu.name + " (" + per_node + ")";
  return "cluster " + c.name + " (" + c.gpu.name + ", " + per_node + ")";
}

// The flags that turn `from` into `to`, as the user would type them, e.g. "--pp 8 --gpus 16".
std::string changed_flags(const planner::ParallelConfig& from, const planner::ParallelConfig& to) {
  std::string flags;
  const auto add = [&flags](const std::string& flag) { flags += (flags.empty() ? "" : " ") + flag; };
  if (to.recompute != from.recompute) add("--recompute " + std::string(planner::to_string(to.recompute)));
  if (to.zero_stage != from.zero_stage) add("--zero " + std::to_string(to.zero_stage));
  if (to.sequence_parallel && !from.sequence_parallel) add("--sequence-parallel");
  if (to.micro_batch != from.micro_batch) add("--mbs " + std::to_string(to.micro_batch));
  if (to.pp != from.pp) add("--pp " + std::to_string(to.pp));
  if (to.gpus != from.gpus) add("--gpus " + std::to_string(to.gpus));
  return flags;
}

// The cost model's notes, then what the plan itself chose or could not show.
std::vector<std::string> plan_notes(const planner::PlanOutcome& o) {
  std::vector<std::string> notes = o.notes;
  if (o.interleaved_recompute) {
    notes.push_back("interleaved schedule: --recompute auto takes one mode on every stage: " +
                    std::string(planner::to_string(*o.interleaved_recompute)) +
                    (o.suggested.fits ? ", the fastest that fits" : ", the least peak (no mode fits)"));
  }
  if (o.layout_search) {
    const planner::LayoutSearch& l = *o.layout_search;
    const std::string within = "a pipeline time within " + printf_string("%.3f", l.time_limit_s) + " s";
    notes.push_back(
        "interleaved schedule: the suggested layout " +
        (l.exhaustive
             ? "has the least peak memory of all layouts with " + within
             : "is where a descent from the baseline, one layer at a time, stopped lowering the peak "
               "memory within " +
                   within) +
        " (baseline: " +
        (o.config.chunk_layers.empty() ? "Megatron-LM's uniform chunks" : "the --pipeline-layout chunks") +
        "); one recompute mode on every stage");
  }
  if (o.uniform_split_has_empty_stage)
    notes.emplace_back("the uniform split leaves a stage without layers; only the suggested split is shown");
  return notes;
}

// One side of the stage table: layers, params, in flight, recompute, activations, peak, fwd,
// bwd, idle. Widths line up with side_header().
constexpr size_t kWidths[] = {6, 7, 6, 9, 6, 7, 8, 8, 8};

std::string side_header(int row) {
  // The peak column ends in the overflow mark ('!' or a space).
  static const char* kTop[] = {"layers", "params", "in", "recompute", "act", "peak ", "fwd", "bwd", "idle"};
  static const char* kBottom[] = {"", "", "flight", "", "GiB", "GiB ", "ms", "ms", "ms"};
  std::string text;
  for (size_t i = 0; i < std::size(kWidths); ++i)
    text += " " + right(row == 0 ? kTop[i] : kBottom[i], kWidths[i]);
  return text;
}

// "full 2/5" when a stage recomputes only some of its layers fully.
std::string recompute_text(const StageReport& s) {
  if (s.recompute != "full" || s.full_recompute_layers >= s.layers) return s.recompute;
  return "full " + std::to_string(s.full_recompute_layers) + "/" + std::to_string(s.layers);
}

std::string side_row(const StageReport& s) {
  const std::string cells[] = {std::to_string(s.layers),
                               parameters(s.parameters),
                               std::to_string(s.in_flight),
                               recompute_text(s),
                               gib(s.activation_bytes),
                               gib(s.peak_memory_bytes) + (s.overflows ? "!" : " "),
                               ms(s.forward_s),
                               ms(s.backward_s),
                               ms(s.idle_s)};
  std::string text;
  for (size_t i = 0; i < std::size(kWidths); ++i) text += " " + right(cells[i], kWidths[i]);
  return text;
}

std::string overflowing_stages(const PlanReport& r) {
  std::string text;
  for (const StageReport& s : r.stages) {
    if (s.overflows) text += (text.empty() ? "" : ", ") + std::to_string(s.index);
  }
  return text;
}

void write_stage_table(std::ostream& out, const planner::PlanOutcome& o) {
  const size_t side_width = side_header(0).size();
  const std::string title_u = !o.baseline_is_given_split ? " uniform split"
                              : !o.config.chunk_layers.empty()
                                  ? " given chunks (--pipeline-layout)"
                                  : " given split (--split or --pipeline-layout)";
  const std::string title_s = " suggested split";
  out << "stage |" << left(title_u, side_width) << " |" << title_s << '\n';
  out << "      |" << side_header(0) << " |" << side_header(0) << '\n';
  out << "      |" << side_header(1) << " |" << side_header(1) << '\n';
  const size_t rows = std::max(o.uniform.stages.size(), o.suggested.stages.size());
  for (size_t i = 0; i < rows; ++i) {
    const std::string u =
        i < o.uniform.stages.size() ? side_row(o.uniform.stages[i]) : std::string(side_width, ' ');
    const std::string s = i < o.suggested.stages.size() ? side_row(o.suggested.stages[i]) : "";
    out << right(std::to_string(i), 5) << " |" << u << " |" << s << '\n';
  }
}

void write_totals(std::ostream& out, const planner::PlanOutcome& o) {
  const PlanReport& u = o.uniform;
  const PlanReport& s = o.suggested;
  auto line = [&](const std::string& name, const std::string& a, const std::string& b) {
    out << left(name, 25) << column(a, 15) << column(b, 14) << '\n';
  };
  line("", o.baseline_is_given_split ? "given" : "uniform", "suggested");
  line("iteration time", printf_string("%.3f s", u.iteration_s), printf_string("%.3f s", s.iteration_s));
  line("pipeline bubble", percent(u.bubble_fraction), percent(s.bubble_fraction));
  line("tokens/s", thousands(u.tokens_per_s), thousands(s.tokens_per_s));
  line("TFLOP/s per GPU", printf_string("%.1f", u.tflops_per_gpu), printf_string("%.1f", s.tflops_per_gpu));
  // Two conventions are published: attention's full s x s per layer (Megatron-LM, PaLM), and the
  // causal half of it (FlashAttention); at long sequences they differ by a third.
  line("MFU, full s x s attention", percent(u.mfu), percent(s.mfu));
  line("MFU, causal halved", percent(u.mfu_causal), percent(s.mfu_causal));
  line("peak memory (reserved)", gib(u.peak_memory_bytes) + " GiB", gib(s.peak_memory_bytes) + " GiB");
  if (u.reserved_bytes > u.peak_memory_bytes || s.reserved_bytes > s.peak_memory_bytes)
    line("held after step", gib(u.reserved_bytes) + " GiB", gib(s.reserved_bytes) + " GiB");
  line("fits in " + gib(o.capacity_bytes) + " GiB", u.fits ? "yes" : "no", s.fits ? "yes" : "no");

  const int64_t saved_bytes = u.peak_memory_bytes - s.peak_memory_bytes;
  const double added_s = s.iteration_s - u.iteration_s;
  out << "\nsuggested vs " << (o.baseline_is_given_split ? "given" : "uniform") << ": peak memory "
      << gib(u.peak_memory_bytes) << " -> " << gib(s.peak_memory_bytes) << " GiB (gain " << gib(saved_bytes)
      << " GiB, "
      << percent(u.peak_memory_bytes > 0
                     ? static_cast<double>(saved_bytes) / static_cast<double>(u.peak_memory_bytes)
                     : 0)
      << "); step time " << printf_string("%.3f", u.iteration_s) << " -> "
      << printf_string("%.3f", s.iteration_s) << " s (cost " << printf_string("%+.3f", added_s) << " s, "
      << signed_percent(u.iteration_s > 0 ? added_s / u.iteration_s : 0) << ")\n";
}

// Where the suggested split's busiest stage spends a step, in the report's terms.
void write_step_work(std::ostream& out, const planner::PlanOutcome& o) {
  const planner::StageStepWork w = planner::busiest_stage_work(o.suggested, o.config.micro_batches());
  const double total_s = w.total_s();
  if (total_s <= 0) return;
  auto part = [&](const char* name, double s) {
    return std::string(name) + " " + ms(s) + " ms (" + printf_string("%.0f%%", 100 * s / total_s) + ")";
  };
  using planner::WorkKind;
  out << "work per step of suggested stage " << w.stage
      << " (the busiest): " << part("GEMM", w.pipeline[WorkKind::kGemm]) << ", "
      << part("attention", w.pipeline[WorkKind::kAttention]) << ", "
      << part("memory-bound", w.pipeline[WorkKind::kMemoryBound]) << ", "
      << part("communication", w.pipeline[WorkKind::kCommunication]) << ", ";
  if (w.pipeline[WorkKind::kLaunchGap] > 0)
    out << part("launch gaps", w.pipeline[WorkKind::kLaunchGap]) << ", ";
  out << part("optimizer step", w.optimizer_s);
  if (w.dp_sync_exposed_s > 0) out << ", " << part("exposed gradient sync", w.dp_sync_exposed_s);
  out << '\n';
}

// --balance memory / headroom: what the suggested split's time was held to.
void write_time_limit(std::ostream& out, const planner::PlanOutcome& o) {
  if (o.config.balance == planner::BalanceGoal::kTime || o.time_limit_s == 0) return;
  const bool proven_fastest = o.fastest_fitting_lower_s == o.fastest_fitting_s;
  const bool headroom = o.config.balance == planner::BalanceGoal::kHeadroom;
  out << "time limit: pipeline time within " << printf_string("%.3f", o.time_limit_s) << " s, "
      << (headroom ? "the larger of " : "") << printf_string("%.0f%%", 100 * o.time_slack)
      << " over the fastest fitting split found (" << printf_string("%.3f", o.fastest_fitting_s) << " s, "
      << (proven_fastest ? "proven" : "not proven") << " fastest)"
      << (headroom ? " and the uniform split's time (--balance headroom)" : "") << '\n';
}

void write_fit(std::ostream& out, const planner::PlanOutcome& o) {
  if (!o.uniform.fits || !o.suggested.fits) {
    out << "! peak above the usable " << gib(o.capacity_bytes) << " GiB: the stage runs out of memory\n";
  }
  if (o.suggested.fits) {
    if (!o.uniform.fits) out << "the suggested split fits where the uniform one does not\n";
    return;
  }
  out << "\ndoes not fit: suggested stages " << overflowing_stages(o.suggested) << " overflow";
  if (o.suggestions.empty()) {
    out << "; no single change the planner tried fits\n";
    return;
  }
  out << ". What would make it fit (each change planned):\n";
  out << "  " << left("change", 28) << column("fits", 5) << column("peak GiB", 10)
      << column("iteration s", 13) << '\n';
  for (const planner::FitSuggestion& f : o.suggestions) {
    out << "  " << left(changed_flags(o.config, f.config), 28) << column(f.fits ? "yes" : "no", 5)
        << column(gib(f.peak_memory_bytes), 10) << column(printf_string("%.3f", f.iteration_s), 13) << '\n';
  }
}

// Seconds by kind of work, keyed "gemm_s", "attention_s", "memory_bound_s", "communication_s",
// "launch_gap_s".
ordered_json work_json(const planner::WorkTimes& w) {
  ordered_json out;
  for (size_t k = 0; k < planner::kWorkKinds; ++k)
    out[std::string(planner::work_kind_name(static_cast<planner::WorkKind>(k))) + "_s"] = w.s[k];
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
  const planner::StageStepWork busiest = planner::busiest_stage_work(r, micro_batches);
  ordered_json step_work = work_json(busiest.pipeline);
  step_work["optimizer_s"] = busiest.optimizer_s;
  step_work["dp_sync_exposed_s"] = busiest.dp_sync_exposed_s;
  return ordered_json{
      {"fits", r.fits},
      {"layout", planner::pipeline_layout_string(planner::model_order_chunks(r, chunks_per_stage(r)))},
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

ordered_json config_json(const planner::ParallelConfig& c) {
  return ordered_json{{"gpus", c.gpus},
                      {"tp", c.tp},
                      {"pp", c.pp},
                      {"vpp", c.vpp},
                      {"cp", c.cp},
                      {"ep", c.ep},
                      {"dp", c.dp()},
                      {"micro_batch", c.micro_batch},
                      {"global_batch", c.global_batch},
                      {"micro_batches", c.micro_batches()},
                      {"seq_length", c.seq_length},
                      {"zero_stage", c.zero_stage},
                      {"zero_shard", c.zero_shard},
                      {"recompute", std::string(planner::to_string(c.recompute))},
                      {"sequence_parallel", c.sequence_parallel},
                      {"schedule", std::string(planner::to_string(c.schedule))},
                      {"balance", std::string(planner::to_string(c.balance))},
                      {"optimizer", std::string(planner::to_string(c.optimizer))},
                      {"framework", std::string(planner::to_string(c.framework))},
                      {"grad_sync_overlaps_backward", planner::sync_overlaps_backward(c)},
                      {"description", planner::describe(c)}};
}

// Whether the suggested split is proven optimal, or how close to it it is proven to be.
std::string optimality_text(const planner::PlanOutcome& o) {
  if (o.suggested_is_optimal) return "the suggested split is proven optimal";
  if (o.layout_search) {
    return "the interleaved layout search is a descent, not exhaustive: the suggested layout's peak memory "
           "is "
           "within " +
           printf_string("%.1f%%", 100 * o.optimality_gap) +
           " of a lower bound on any layout's (which ignores the time limit and lets a stage take a share "
           "of a layer)";
  }
  const bool memory = o.config.balance != planner::BalanceGoal::kTime;
  if (memory && !o.time_limit_proven) {
    // The limit itself is on the text's "time limit:" line and in the JSON's time_limit_s.
    const std::string peak =
        o.optimality_gap == 0
            ? "the suggested split has the least peak memory of the splits within the time limit"
            : "the exact split search ran out of budget (--search-time): the suggested split's "
              "peak memory is within " +
                  printf_string("%.1f%%", 100 * o.optimality_gap) +
                  " of the least peak of the splits within the time limit";
    // A budget spent before any bound on T_fit leaves nothing proven about it: say so.
    const std::string fastest_bound =
        o.fastest_fitting_lower_s > 0
            ? "no split is faster than " + printf_string("%.3f", o.fastest_fitting_lower_s) + " s"
            : "the budget ran out before any bound on it";
    return peak + " (proven); the time limit is stated against the fastest fitting split found (" +
           printf_string("%.3f", o.fastest_fitting_s) + " s), which the search could not prove fastest (" +
           fastest_bound +
           "); a longer --search-time may find a faster split (and so a lower limit) or a lower peak";
  }
  return "the exact split search ran out of budget (--search-time): the suggested split's " +
         std::string(memory ? "peak memory" : "iteration time") + " is within " +
         printf_string("%.1f%%", 100 * o.optimality_gap) +
         " of the optimum (proven); a longer --search-time may close the gap";
}

// The suggested split as Megatron-LM's layout string, and the interleaved schedule's chunks per
// stage.
void write_layout(std::ostream& out, const planner::PlanOutcome& o) {
  out << "layout (Megatron-LM --pipeline-model-parallel-layout): \""
      << planner::pipeline_layout_string(
             planner::model_order_chunks(o.suggested, static_cast<int>(o.config.vpp)))
      << "\"\n";
  if (o.config.schedule != planner::ScheduleKind::kInterleaved) return;
  out << "decoder layers of each stage's chunks, in the order it runs them:\n";
  for (const StageReport& st : o.suggested.stages) {
    std::string chunks;
    for (int layers : st.chunk_layers) chunks += (chunks.empty() ? "" : " + ") + std::to_string(layers);
    out << "  stage " << std::setw(3) << st.index << ": " << chunks
        << (st.has_embedding ? " (and the embedding)" : "") << (st.has_head ? " (and the output layer)" : "")
        << '\n';
  }
}

}  // namespace

void write_plan_text(std::ostream& out, const PlanPrintout& p) {
  const planner::PlanOutcome& o = p.outcome;
  out << "pipescope plan: " << p.model.name << " (" << p.model.num_layers << " layers) on " << o.config.gpus
      << " GPUs, " << cluster_text(p.cluster) << "; calibration "
      << (p.calibration_origin == "bundled" ? "bundled " + p.profile.gpu : p.calibration_origin) << '\n';
  out << "configuration: " << planner::describe(o.config) << " (" << o.config.micro_batches()
      << (o.config.micro_batches() == 1 ? " micro-batch" : " micro-batches") << " per step)\n";
  out << "memory: peak = reserved (what runs out): what the CUDA caching allocator holds, allocated + "
      << std::lround(o.allocator_reserve_fraction * 100) << " %, plus the CUDA context ("
      << gib(o.cuda_context_bytes) << " GiB) and NCCL buffers (" << gib(o.nccl_buffer_bytes)
      << " GiB); usable " << gib(o.capacity_bytes) << " of " << gib(p.cluster.gpu.memory_bytes)
      << " GiB. allocated (what tensors use) is in --json.\n\n";
  write_stage_table(out, o);
  write_layout(out, o);
  out << '\n';
  write_totals(out, o);
  write_step_work(out, o);
  write_time_limit(out, o);
  write_fit(out, o);
  if (!o.suggested_is_optimal) out << "note: " << optimality_text(o) << '\n';
  for (const std::string& note : plan_notes(o)) out << "note: " << note << '\n';
  if (!p.emit_text.empty()) out << '\n' << p.emit_text;
}

std::string plan_json(const PlanPrintout& p) {
  const planner::PlanOutcome& o = p.outcome;
  ordered_json doc;
  doc["schema_version"] = kPlanSchemaVersion;
  doc["inputs"] = ordered_json{{"model",
                                {{"name", p.model.name},
                                 {"architecture", p.model.architecture},
                                 {"num_layers", p.model.num_layers},
                                 {"source", p.model.source}}},
                               {"cluster",
                                {{"name", p.cluster.name},
                                 {"gpu", p.cluster.gpu.name},
                                 {"gpus_per_node", p.cluster.gpus_per_node},
                                 {"gpu_memory_bytes", p.cluster.gpu.memory_bytes}}},
                               {"calibration", {{"gpu", p.profile.gpu}, {"origin", p.calibration_origin}}},
                               {"config", config_json(o.config)}};
  if (!p.arguments.is_null()) doc["inputs"]["arguments"] = p.arguments;
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
  // "uniform" holds the baseline: the framework's uniform split, or the user's --split.
  doc["baseline"] = o.baseline_is_given_split ? "given_split" : "uniform";
  doc["uniform"] = report_json(o.uniform, o.config.micro_batches());
  doc["suggested"] = report_json(o.suggested, o.config.micro_batches());
  doc["suggested_is_optimal"] = o.suggested_is_optimal;
  // time_limit_s is 0 where there is no limit: --balance time, the interleaved schedule, no fit.
  const bool within_limit = o.config.balance == planner::BalanceGoal::kTime || o.time_limit_s == 0 ||
                            o.suggested.pipeline_s <= o.time_limit_s * (1 + 1e-9);
  doc["optimality"] = ordered_json{
      {"proven", o.suggested_is_optimal},
      {"objective", o.config.balance == planner::BalanceGoal::kTime ? "iteration_s" : "peak_memory_bytes"},
      {"gap_fraction", o.optimality_gap},
      {"meets_time_limit", within_limit},
      {"time_limit_s", o.time_limit_s},
      {"time_limit_proven", o.time_limit_proven},
      {"fastest_fitting_s", o.fastest_fitting_s},
      {"fastest_fitting_lower_bound_s", o.fastest_fitting_lower_s},
      {"text", optimality_text(o)}};
  const double u_peak = static_cast<double>(o.uniform.peak_memory_bytes);
  const int64_t saved = o.uniform.peak_memory_bytes - o.suggested.peak_memory_bytes;
  const double added_s = o.suggested.iteration_s - o.uniform.iteration_s;
  doc["comparison"] = ordered_json{
      {"peak_memory_gain_bytes", saved},
      {"peak_memory_gain_fraction", u_peak > 0 ? static_cast<double>(saved) / u_peak : 0.0},
      {"iteration_cost_s", added_s},
      {"iteration_cost_fraction", o.uniform.iteration_s > 0 ? added_s / o.uniform.iteration_s : 0.0}};
  doc["fits"] = o.suggested.fits;
  doc["notes"] = plan_notes(o);
  ordered_json suggestions = ordered_json::array();
  for (const planner::FitSuggestion& f : o.suggestions) {
    suggestions.push_back(ordered_json{{"change", changed_flags(o.config, f.config)},
                                       {"fits", f.fits},
                                       {"peak_memory_bytes", f.peak_memory_bytes},
                                       {"iteration_s", f.iteration_s}});
  }
  doc["suggestions"] = suggestions;
  if (!p.emit_framework.empty()) {
    doc["emit_framework"] = p.emit_framework;
    doc["emit"] = p.emit_text;
  }
  return doc.dump(2) + "\n";
}

}  // namespace pipescope::cli
