#include "plan_output.h"

#include "pipescope/planner/pipeline_layout.h"
#include "pipescope/planner/plan_json.h"
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

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(int64_t bytes) { return printf_string("%.1f", static_cast<double>(bytes) / kGiB); }
std::string ms(double seconds) { return printf_string("%.1f", seconds * 1e3); }

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
  planner::PlanDocumentText text;
  text.calibration_gpu = p.profile.gpu;
  text.calibration_origin = p.calibration_origin;
  text.arguments = &p.arguments;
  text.notes = plan_notes(o);
  text.optimality = optimality_text(o);
  for (const planner::FitSuggestion& f : o.suggestions)
    text.suggestion_changes.push_back(changed_flags(o.config, f.config));
  text.emit_framework = p.emit_framework;
  text.emit_text = p.emit_text;
  return planner::plan_json(p.model, p.cluster, o, text).dump(2) + "\n";
}

}  // namespace pipescope::cli
