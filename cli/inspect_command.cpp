// `pipescope inspect FILE|DIR... [--json]`: what one trace file holds and how much of it a
// crashed or killed process left readable. The first thing to run on traces from a dead job.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "pipescope/trace/record_schema.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::cli {
namespace {

namespace fs = std::filesystem;
using trace::TraceSummary;

struct InspectArgs {
  std::vector<std::string> paths;
  bool json = false;
};

constexpr int kInspectSchemaVersion = 1;

const char* clock_name(trace::TraceClock clock) {
  switch (clock) {
    case trace::TraceClock::kGpuTimestamp: return "gpu_timestamp";
    case trace::TraceClock::kRealtime: return "realtime";
    case trace::TraceClock::kMonotonic: return "monotonic";
    case trace::TraceClock::kMonotonicRaw: return "monotonic_raw";
  }
  return "unknown";
}

// Files named on the command line, and every *.pst inside directories named there.
Expected<std::vector<std::string>> expand_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (entry.path().extension() == ".pst") found.push_back(entry.path().string());
      }
      if (ec) return Error{"cannot list " + p + ": " + ec.message()};
      if (found.empty()) return Error{p + " holds no *.pst trace files"};
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  return files;
}

nlohmann::json optional_json(const std::optional<int32_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// How far a CLOCK_MONOTONIC trace clock strayed from the kernel's at the anchors (the profiler
// may read it from the TSC); null for another clock or a file without anchors.
nlohmann::json monotonic_stray(const TraceSummary& s) {
  if (s.header.trace_clock != trace::TraceClock::kMonotonic || s.anchors.empty()) return nullptr;
  return trace::anchor_stray_ns(s.anchors);
}

nlohmann::json to_json(const std::string& path, const TraceSummary& s) {
  nlohmann::json records = nlohmann::json::object();
  for (const trace::RecordSchema& schema : trace::record_schemas()) {
    records[schema.name] = s.records_by_kind[static_cast<size_t>(schema.kind)];
  }
  if (s.records_of_unknown_kind > 0) records["unknown"] = s.records_of_unknown_kind;
  nlohmann::json j = {
      {"path", path},
      {"format_version",
       std::to_string(s.header.version_major) + "." + std::to_string(s.header.version_minor)},
      {"host", s.header.host},
      {"pid", s.header.pid},
      {"trace_clock", clock_name(s.header.trace_clock)},
      {"start_realtime_ns", s.header.start_realtime_ns},
      {"records", records},
      {"records_total", s.records},
      {"strings", s.strings.size()},
      {"clock_anchors", s.anchors.size()},
      {"trace_clock_stray_ns", monotonic_stray(s)},
      {"closed_cleanly", s.end.has_value()},
      {"records_dropped", s.end ? s.end->records_dropped : s.dropped_notices},
      {"recovery",
       {{"status", trace::stop_reason_name(s.stop_reason)},
        {"detail", s.stop_detail},
        {"chunks", s.chunks},
        {"valid_bytes", s.valid_bytes},
        {"total_bytes", s.total_bytes}}},
  };
  if (s.process) {
    const trace::ProcessInfo& p = *s.process;
    nlohmann::json devices = nlohmann::json::array();
    for (const trace::DeviceInfo& d : p.devices) {
      devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"memory_bytes", d.memory_bytes}});
    }
    j["process"] = {{"rank", optional_json(p.rank)},
                    {"local_rank", optional_json(p.local_rank)},
                    {"world_size", optional_json(p.world_size)},
                    {"restart_attempt", optional_json(p.restart_attempt)},
                    {"run_id", p.run_id},
                    {"launcher", p.launcher},
                    {"devices", devices}};
  } else {
    j["process"] = nullptr;
  }
  return j;
}

std::string mib(uint64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

void print_text(const std::string& path, const TraceSummary& s) {
  std::cout << path << ": pipescope trace " << s.header.version_major << '.' << s.header.version_minor
            << ", host " << s.header.host << ", pid " << s.header.pid << ", clock "
            << clock_name(s.header.trace_clock) << '\n';
  if (s.process) {
    const trace::ProcessInfo& p = *s.process;
    std::cout << "  rank " << (p.rank ? std::to_string(*p.rank) : "?") << " of "
              << (p.world_size ? std::to_string(*p.world_size) : "?");
    if (p.local_rank) std::cout << " (local " << *p.local_rank << ')';
    if (!p.run_id.empty()) std::cout << ", run " << p.run_id;
    if (p.restart_attempt) std::cout << ", attempt " << *p.restart_attempt;
    if (!p.launcher.empty()) std::cout << ", launcher " << p.launcher;
    std::cout << '\n';
    for (const trace::DeviceInfo& d : p.devices) {
      std::cout << "  device " << d.ordinal << ": " << d.name << " (" << mib(d.memory_bytes) << ")\n";
    }
  } else {
    std::cout << "  rank unknown (no process info was written)\n";
  }
  std::cout << "  records: " << s.records;
  const char* sep = " (";
  for (const trace::RecordSchema& schema : trace::record_schemas()) {
    const uint64_t n = s.records_by_kind[static_cast<size_t>(schema.kind)];
    if (n == 0) continue;
    std::cout << sep << schema.name << ' ' << n;
    sep = ", ";
  }
  std::cout << (std::string(sep) == ", " ? ")" : "") << '\n';
  std::cout << "  strings: " << s.strings.size() << ", clock anchors: " << s.anchors.size();
  if (const nlohmann::json stray = monotonic_stray(s); !stray.is_null())
    std::cout << " (the trace clock within " << stray.get<uint64_t>() << " ns of CLOCK_MONOTONIC at them)";
  std::cout << '\n';
  if (s.end) {
    std::cout << "  closed cleanly: " << s.end->records_written << " records written, "
              << s.end->records_dropped << " dropped\n";
  } else {
    std::cout << "  not closed cleanly: the process stopped before pipescope could finish the file\n";
  }
  std::cout << "  recovered " << mib(s.valid_bytes) << " of " << mib(s.total_bytes) << " ("
            << trace::stop_reason_name(s.stop_reason) << ')';
  if (!s.stop_detail.empty()) std::cout << ": " << s.stop_detail;
  std::cout << '\n';
}

int run_inspect(const InspectArgs& args) {
  auto files = expand_paths(args.paths);
  if (!files.ok()) return usage_error("pipescope inspect", files.error().message);
  nlohmann::json traces = nlohmann::json::array();
  nlohmann::json errors = nlohmann::json::array();
  int rc = kExitOk;
  for (const std::string& path : *files) {
    auto summary = trace::summarize_trace_file(path);
    if (!summary.ok()) {
      // Report the others anyway: one bad file must not hide what the rest recovered.
      rc = kExitUsage;
      std::cerr << "pipescope inspect: " << summary.error().message << '\n';
      errors.push_back({{"path", path}, {"message", summary.error().message}});
      continue;
    }
    if (args.json) {
      traces.push_back(to_json(path, *summary));
    } else {
      print_text(path, *summary);
    }
  }
  if (args.json) {
    std::cout << nlohmann::json{{"schema_version", kInspectSchemaVersion},
                                {"traces", traces},
                                {"errors", errors}}
                     .dump(2)
              << '\n';
  }
  return rc;
}

}  // namespace

Command add_inspect_command(CLI::App& root) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* app =
      root.add_subcommand("inspect", "Show what trace files hold and how much of each was recovered");
  app->add_option("paths", args->paths, "Trace files, or directories of *.pst")->required();
  app->add_flag("--json", args->json, "Print JSON");
  return {app, [args] { return run_inspect(*args); }};
}

}  // namespace pipescope::cli
