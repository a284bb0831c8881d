// `pipescope export DIR --format perfetto|sqlite [-o FILE] [--ranks SPEC] [--window T0:T1]`
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "arg_specs.h"
#include "command.h"
#include "output_guard.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/export/export.h"
#include "trace_dir.h"

namespace pipescope::cli {
namespace {

struct ExportArgs {
  std::string dir;
  std::string format;
  std::string output;
  std::string ranks;
  std::string window;
  std::optional<std::string> run_id;
  int64_t attempt = -1;
};

bool rank_selected(const std::vector<RankRange>& ranges, int32_t rank) {
  if (ranges.empty()) return true;
  for (const RankRange& r : ranges)
    if (rank >= r.first && rank <= r.last) return true;
  return false;
}

// For the SQLite tables: every communicator the traces show, with its members, and, when the
// report's layout inference succeeds, each one's role and every rank's place.
void add_layout(const analysis::LoadedRun& run, exporter::ExportOptions& options) {
  std::map<uint64_t, exporter::ExportCommunicator> comms;
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    for (const analysis::CommDigest& c : run.ranks[i].comms) {
      exporter::ExportCommunicator& e = comms[c.comm_id];
      e.comm_id = c.comm_id;
      if (c.size > e.size) {
        e.size = c.size;
        e.members.resize(static_cast<size_t>(c.size), -1);
      }
      if (c.nccl_rank >= 0 && c.nccl_rank < e.size)
        e.members[static_cast<size_t>(c.nccl_rank)] = run.global_rank[i];
    }
  }
  auto report = analysis::build_run_report(run, {});
  if (report && (report->layout.source == "inferred" || report->layout.source == "stated")) {
    for (const analysis::RankReport& r : report->ranks)
      options.places.push_back(exporter::ExportRankPlace{r.rank, r.stage, r.tp_rank, r.dp_rank});
    for (const analysis::CommunicatorReport& c : report->layout.communicators)
      if (auto it = comms.find(c.comm_id); it != comms.end()) it->second.role = c.role;
  }
  for (auto& [id, c] : comms) options.communicators.push_back(std::move(c));
}

int run_export(const ExportArgs& args) {
  const std::string command = "pipescope export";
  std::vector<RankRange> ranges;
  if (!args.ranks.empty()) {
    auto parsed = parse_rank_spec(args.ranks);
    if (!parsed) return usage_error(command, parsed.error().message);
    ranges = std::move(*parsed);
  }
  const std::string output = !args.output.empty()      ? args.output
                             : args.format == "sqlite" ? "pipescope-export.sqlite"
                                                       : "pipescope-export.json";
  auto traces = prepare_trace_dir(args.dir);
  if (!traces) return usage_error(command, traces.error().message);
  if (Status s = check_output(output, traces->inputs, "-o"); !s)
    return usage_error(command, s.error().message);
  if (args.format == "sqlite")
    if (Status s = exporter::check_sqlite_output(output); !s) return usage_error(command, s.error().message);
  std::optional<std::pair<int64_t, int64_t>> window_ns;
  if (!args.window.empty()) {
    auto window = parse_time_window(args.window);
    if (!window) return usage_error(command, window.error().message);
    const auto to_ns = [](double s) {
      return std::isinf(s) || s > 9e9 ? INT64_MAX : static_cast<int64_t>(std::llround(s * 1e9));
    };
    window_ns = std::make_pair(to_ns(window->start_s), to_ns(window->end_s));
  }

  // One pass over every rank for the clock alignment; the export reads the files again.
  auto chosen = load_chosen_run(std::move(*traces), {}, args.run_id, args.attempt);
  if (!chosen) return usage_error(command, chosen.error().message);
  const analysis::LoadedRun* run = &chosen->run;
  for (const std::string& warning : run->warnings) std::cerr << command << ": warning: " << warning << '\n';
  const analysis::RunTimebase base = analysis::align_run_clocks(*run);

  exporter::ExportOptions options;
  for (size_t i = 0; i < run->ranks.size(); ++i) {
    if (!rank_selected(ranges, run->global_rank[i])) continue;
    options.ranks.push_back(exporter::ExportRank{chosen->trace_files[i], run->ranks[i].path,
                                                 run->global_rank[i], base.shift_ns[i] - base.origin_ns});
  }
  if (options.ranks.empty()) return usage_error(command, "--ranks " + args.ranks + " matches no traced rank");
  options.window_ns = window_ns;
  options.output_path = output;
  if (args.format == "sqlite") add_layout(*run, options);
  auto summary =
      args.format == "sqlite" ? exporter::export_sqlite(options) : exporter::export_perfetto(options);
  if (!summary) return usage_error(command, summary.error().message);
  for (const std::string& warning : summary->warnings)
    std::cerr << command << ": warning: " << warning << '\n';
  std::cerr << command << ": wrote " << options.output_path << " (" << summary->records_written
            << " records from " << options.ranks.size() << " ranks)\n";
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& root) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* app = root.add_subcommand("export", "Convert traces for Perfetto UI or SQLite");
  app->add_option("dir", args->dir,
                  "Directory of *.pst traces (or PyTorch profiler JSON traces), or one such trace file")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--format", args->format, "perfetto or sqlite")
      ->required()
      ->check(CLI::IsMember({"perfetto", "sqlite"}));
  app->add_option("-o,--output", args->output,
                  "Output file (default pipescope-export.json / pipescope-export.sqlite)");
  app->add_option("--ranks", args->ranks, "Ranks to keep, e.g. 0-7,12,16-31")
      ->check(CLI::Validator(validator_of(parse_rank_spec), "SPEC"));
  app->add_option("--window", args->window, "Keep START:END seconds from the run's first event")
      ->check(CLI::Validator(validator_of(parse_time_window), "T0:T1"));
  app->add_option("--run", args->run_id, "Pick one run when DIR holds several");
  app->add_option("--attempt", args->attempt, "Pick one restart attempt")
      ->check(CLI::Validator(whole_number_at_least(0), "N"));
  return {app, [args] { return run_export(*args); }};
}

}  // namespace pipescope::cli
