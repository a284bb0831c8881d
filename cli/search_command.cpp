// `pipescope search`: the model, cluster and batch options of `pipescope plan` (plan_options.h)
// without a fixed layout. Prints the fastest configurations that fit as a table (or JSON,
// schema_version 1), then every reason configurations were refused with how many it refused.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "arg_specs.h"
#include "command.h"
#include "pipescope/models/model_catalog.h"
#include "pipescope/planner/pipeline_layout.h"
#include "pipescope/planner/plan_json.h"
#include "pipescope/planner/search.h"
#include "plan_options.h"
#include "text_format.h"

namespace pipescope::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

const char* const kSearch = "pipescope search";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct SearchArgs {
  PlanArgs plan;
  int64_t top = 20;
  bool mbs_given = false;
  // Dimensions pinned to one value; unset: searched.
  std::optional<int64_t> tp, pp, vpp, zero;
  std::string recompute, schedule;
};

std::string split_name(const planner::RankedPlan& p) { return p.balanced_split ? "balanced" : "uniform"; }

// The `pipescope plan` flags of a configuration, to plan it stage by stage.
std::string plan_flags(const planner::RankedPlan& p) {
  const planner::ParallelConfig& c = p.config;
  std::string flags = "--tp " + std::to_string(c.tp) + " --pp " + std::to_string(c.pp);
  if (c.vpp > 1) flags += " --vpp " + std::to_string(c.vpp);
  // Chunks that do not split the layers evenly, as the search's baseline spread them.
  if (!c.chunk_layers.empty())
    flags += " --pipeline-layout '" + planner::pipeline_layout_string(c.chunk_layers) + "'";
  if (c.cp > 1) flags += " --cp " + std::to_string(c.cp);
  if (c.ep > 1) flags += " --ep " + std::to_string(c.ep);
  flags += " --mbs " + std::to_string(c.micro_batch);
  if (c.zero_stage > 0) flags += " --zero " + std::to_string(c.zero_stage);
  if (c.zero_shard > 0) flags += " --zero-shard " + std::to_string(c.zero_shard);
  flags += " --recompute " + std::string(planner::to_string(c.recompute));
  if (c.sequence_parallel) flags += " --sequence-parallel";
  flags += " --schedule " + std::string(planner::to_string(c.schedule));
  if (c.framework != planner::TrainingFramework::kGeneric) {
    flags += " --framework " + std::string(planner::to_string(c.framework));
  }
  if (c.grad_sync != planner::GradSync::kFrameworkDefault) {
    flags += " --grad-sync " + std::string(planner::to_string(c.grad_sync));
  }
  if (c.optimizer != planner::framework_optimizer(c.framework)) {
    flags += " --optimizer " + std::string(planner::to_string(c.optimizer));
  }
  // The search ranks a split that fits on time (plan's --balance time); an interleaved layout is the
  // one plan suggests by default.
  if (!p.uniform_fits && c.schedule != planner::ScheduleKind::kInterleaved) flags += " --balance time";
  return flags;
}

struct Column {
  const char* title;
  size_t width;
  bool left;
};
constexpr Column kColumns[] = {
    {"rank", 4, false},      {"tp", 3, false},           {"pp", 3, false},       {"vpp", 3, false},
    {"dp", 5, false},        {"mbs", 3, false},          {"zero", 4, false},     {"shard", 5, false},
    {"recompute", 9, true},  {"schedule", 11, true},     {"peak GiB", 8, false}, {"iteration s", 11, false},
    {"tokens/s", 11, false}, {"TFLOP/s/GPU", 11, false}, {"MFU", 6, false},      {"split", 8, true}};

std::string row(const std::string (&cells)[std::size(kColumns)]) {
  std::string line;
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    if (i > 0) line += "  ";
    line += kColumns[i].left ? left(cells[i], kColumns[i].width) : right(cells[i], kColumns[i].width);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

std::string cluster_text(const planner::Cluster& c) {
  const std::string gpus = c.gpu.name + ", " + std::to_string(c.gpus_per_node) + " per node";
  return c.name.rfind("gpu:", 0) == 0 ? gpus : "cluster " + c.name + " (" + gpus + ")";
}

void write_text(std::ostream& out, const planner::SearchRequest& request, const planner::SearchResult& r) {
  const planner::SearchStats& s = r.stats;
  out << "search: " << request.model.name << " on " << request.gpus << " GPUs of "
      << cluster_text(request.cluster) << ", gbs " << request.global_batch << ", seq " << r.seq_length
      << "\n";
  out << thousands(static_cast<double>(s.candidates))
      << " configurations: " << thousands(static_cast<double>(s.feasible)) << " fit, "
      << (s.might_fit > 0 ? thousands(static_cast<double>(s.might_fit)) + " might fit, " : std::string())
      << thousands(static_cast<double>(s.rejected)) << " refused, "
      << thousands(static_cast<double>(s.duplicates)) << " duplicates; " << s.exact_plans
      << " planned exactly in " << printf_string("%.3f", s.elapsed_s) << " s; "
      << printf_string("%.1f", static_cast<double>(r.capacity_bytes) / kGiB) << " GiB usable per GPU\n\n";
  if (r.ranked.empty()) {
    out << "no configuration fits: every one was refused for a reason below\n";
  } else {
    std::string titles[std::size(kColumns)];
    for (size_t i = 0; i < std::size(kColumns); ++i) titles[i] = kColumns[i].title;
    out << row(titles);
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const planner::RankedPlan& p = r.ranked[i];
      const planner::ParallelConfig& c = p.config;
      const std::string cells[] = {std::to_string(i + 1),
                                   std::to_string(c.tp),
                                   std::to_string(c.pp),
                                   std::to_string(c.vpp),
                                   std::to_string(c.dp()),
                                   std::to_string(c.micro_batch),
                                   std::to_string(c.zero_stage),
                                   c.zero_shard > 0 ? std::to_string(c.zero_shard) : "-",
                                   std::string(planner::to_string(c.recompute)),
                                   std::string(planner::to_string(c.schedule)),
                                   printf_string("%.1f", static_cast<double>(p.peak_memory_bytes) / kGiB),
                                   printf_string("%.3f", p.iteration_s),
                                   thousands(p.tokens_per_s),
                                   printf_string("%.1f", p.tflops_per_gpu),
                                   printf_string("%.1f%%", p.mfu * 100),
                                   split_name(p)};
      out << row(cells);
    }
  }
  out << "\n";
  if (!r.ranked.empty()) {
    out << "note: MFU counts attention over the full s x s per layer, as Megatron-LM and PaLM do; with "
           "causal "
           "attention halved, as FlashAttention counts it, the first configuration's is "
        << printf_string("%.1f%%", r.ranked.front().mfu_causal * 100) << " (--json: mfu_causal)\n";
  }
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
  if (!r.rejected.empty()) {
    out << "\nrejected (configurations, reason):\n";
    for (const planner::Rejection& j : r.rejected) {
      out << right(thousands(static_cast<double>(j.configs)), 9) << "  " << j.reason << "\n";
    }
  }
}

// A ranked configuration: its fields as a plan's inputs.config gives them, then the search's figures.
ordered_json ranked_json(size_t rank, const planner::RankedPlan& p) {
  ordered_json out{{"rank", rank}};
  out.update(planner::config_json(p.config));
  out.update(ordered_json{{"split", split_name(p)},
                          {"stage_layers", p.stage_layers},
                          {"stage_recompute", p.stage_recompute},
                          {"iteration_s", p.iteration_s},
                          {"pipeline_s", p.pipeline_s},
                          {"bubble_fraction", p.bubble_fraction},
                          {"tokens_per_s", p.tokens_per_s},
                          {"tflops_per_gpu", p.tflops_per_gpu},
                          {"mfu", p.mfu},
                          {"mfu_causal", p.mfu_causal},
                          {"peak_memory_bytes", p.peak_memory_bytes},
                          {"fits", p.fits},
                          {"uniform_fits", p.uniform_fits},
                          {"uniform_peak_memory_bytes", p.uniform_peak_memory_bytes},
                          {"plan_flags", plan_flags(p)}});
  return out;
}

std::string search_json(const planner::SearchRequest& request, const planner::SearchResult& r) {
  ordered_json ranked = ordered_json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) ranked.push_back(ranked_json(i + 1, r.ranked[i]));
  ordered_json rejected = ordered_json::array();
  for (const planner::Rejection& j : r.rejected)
    rejected.push_back({{"reason", j.reason}, {"configs", j.configs}});
  const planner::SearchStats& s = r.stats;
  const ordered_json doc{{"schema_version", planner::kSearchSchemaVersion},
                         {"model", request.model.name},
                         {"cluster", request.cluster.name},
                         {"gpu", request.cluster.gpu.name},
                         {"gpus", request.gpus},
                         {"global_batch", request.global_batch},
                         {"seq_length", r.seq_length},
                         {"capacity_bytes", r.capacity_bytes},
                         {"memory_figure", "reserved"},
                         {"ranked", ranked},
                         {"rejected", rejected},
                         {"stats",
                          {{"candidates", s.candidates},
                           {"feasible", s.feasible},
                           {"might_fit", s.might_fit},
                           {"rejected", s.rejected},
                           {"duplicates", s.duplicates},
                           {"cost_models", s.cost_models},
                           {"exact_plans", s.exact_plans},
                           {"elapsed_s", s.elapsed_s}}},
                         {"notes", r.notes}};
  return doc.dump(2) + "\n";
}

int run_search(const SearchArgs& args) {
  const PlanArgs& a = args.plan;
  if (int rc = check_cluster_choice(kSearch, a); rc != kExitOk) return rc;
  if (a.gbs == 0)
    return usage_error(kSearch, "give --gbs: configurations are compared at one global batch size");
  auto model = models::load_model(a.model);
  if (!model.ok()) return usage_error(kSearch, model.error().message);
  auto cluster = cluster_of(a);
  if (!cluster.ok()) return usage_error(kSearch, cluster.error().message);
  auto profile = profile_of(a, cluster->gpu);
  if (!profile.ok()) return usage_error(kSearch, profile.error().message);

  planner::SearchRequest request;
  request.model = std::move(*model);
  request.cluster = std::move(*cluster);
  request.profile = std::move(*profile);
  request.gpus = a.gpus;
  request.global_batch = a.gbs;
  request.seq_length = a.seq;
  request.flash_attention = !a.no_flash_attention;
  request.optimizer = optimizer_of(a);
  request.framework =
      planner::parse_training_framework(a.framework).value_or(planner::TrainingFramework::kGeneric);
  request.grad_sync = planner::parse_grad_sync(a.grad_sync).value_or(planner::GradSync::kFrameworkDefault);
  request.top = args.top;
  planner::SearchConstraints& k = request.constraints;
  if (args.mbs_given) k.micro_batches = {a.mbs};
  k.tp = args.tp;
  k.pp = args.pp;
  k.vpp = args.vpp;
  if (args.zero) k.zero_stages = {static_cast<int>(*args.zero)};
  if (!args.recompute.empty()) {
    for (planner::RecomputeChoice r : {planner::RecomputeChoice::kNone, planner::RecomputeChoice::kSelective,
                                       planner::RecomputeChoice::kFull, planner::RecomputeChoice::kAuto})
      if (planner::to_string(r) == args.recompute) k.recompute = {r};
  }
  if (!args.schedule.empty()) {
    for (planner::ScheduleKind kind : {planner::ScheduleKind::kOneFOneB, planner::ScheduleKind::kInterleaved,
                                       planner::ScheduleKind::kGPipe})
      if (planner::to_string(kind) == args.schedule) k.schedules = {kind};
  }
  if (args.vpp && *args.vpp > 1 && !args.schedule.empty() && args.schedule != "interleaved") {
    return usage_error(kSearch, "--vpp " + std::to_string(*args.vpp) +
                                    " needs the interleaved schedule, not --schedule " + args.schedule);
  }
  auto result = planner::search(request);
  if (!result.ok()) return usage_error(kSearch, result.error().message);
  if (a.json) {
    std::cout << search_json(request, *result);
  } else {
    write_text(std::cout, request, *result);
  }
  return kExitOk;
}

}  // namespace

Command add_search_command(CLI::App& root) {
  auto args = std::make_shared<SearchArgs>();
  CLI::App* app = root.add_subcommand("search", "Rank every feasible parallel configuration");
  add_shared_options(app, args->plan);
  app->add_option("--top", args->top, "Configurations to rank and print (0: all that fit)")
      ->check(CLI::Validator(whole_number_at_least(0), "N"))
      ->capture_default_str();
  CLI::Option* mbs = app->get_option("--mbs");
  mbs->description("Micro-batch size, pinned (default: 1, 2, 4 and 8 are searched)")->default_str("");
  const CLI::Validator count(whole_number_at_least(1), "N");
  app->add_option("--tp", args->tp,
                  "Tensor-parallel size, pinned (default: every divisor up to a node's GPUs)")
      ->check(count);
  app->add_option("--pp", args->pp, "Pipeline-parallel size, pinned (default: every divisor)")->check(count);
  app->add_option(
         "--vpp", args->vpp,
         "Virtual stages per pipeline rank, pinned; 1: no interleaving (default: 1 and every count "
         "that splits the layers evenly; a pinned count that does not is searched on the layers spread "
         "as evenly as they go, a --pipeline-layout in plan_flags)")
      ->check(count);
  app->add_option("--zero", args->zero, "ZeRO stage, pinned (default: 0, 1, 2 and 3, with shard groups)")
      ->check(CLI::Range(0, 3));
  app->add_option("--recompute", args->recompute,
                  "none, selective, full or auto, pinned (default: all four; auto not with interleaving)")
      ->check(CLI::IsMember({"none", "selective", "full", "auto"}));
  app->add_option("--schedule", args->schedule, "1f1b, interleaved or gpipe, pinned (default: all three)")
      ->check(CLI::IsMember({"1f1b", "interleaved", "gpipe"}));
  return {app, [args, mbs] {
            args->mbs_given = mbs->count() > 0;
            return run_search(*args);
          }};
}

}  // namespace pipescope::cli
