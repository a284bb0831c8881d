// `pipescope record [-o DIR] [--kinds LIST] [...] -- CMD ...`: runs CMD with the injection
// library preloaded; every flag maps one to one onto a PIPESCOPE_* variable (docs/design.md), and
// the command ends exactly as CMD did.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "arg_specs.h"
#include "child_process.h"
#include "command.h"

// unistd.h declares it only under _GNU_SOURCE.
extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace pipescope::cli {
namespace {

struct RecordArgs {
  std::string output_dir = "./pipescope-traces";
  std::string kinds = "default";
  int64_t flush_ms = 1000;
  int64_t buffer_mb = 0;
  std::string window;
  std::string steps;
  std::string nvtx_step;
  int64_t kernel_sample = 1;
  std::vector<std::string> command;
};

// Where libpipescope.so sits relative to this binary: an install (bin/ and its libdir), a bundle
// (bin/ and lib/), side by side, or this build tree.
std::string find_injection_library() {
  if (const char* forced = std::getenv("PIPESCOPE_LIBRARY"); forced != nullptr && forced[0] != '\0') {
    return forced;
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path dir = exe.parent_path();
  for (const auto& candidate :
       {dir / PIPESCOPE_LIBDIR_FROM_BINDIR / "libpipescope.so", dir / "../lib/libpipescope.so",
        dir / "libpipescope.so", dir / "../profiler/inject/libpipescope.so"}) {
    if (std::filesystem::exists(candidate, ec))
      return std::filesystem::weakly_canonical(candidate, ec).string();
  }
  return "";
}

// The environment of the child: ours, with LD_PRELOAD led by the library and each flag the
// user gave set (a flag left at its default keeps whatever the environment already says).
std::vector<std::string> child_environment(const std::string& library,
                                           const std::vector<std::pair<std::string, std::string>>& settings) {
  std::vector<std::string> env;
  std::string preload = library;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name == "LD_PRELOAD") {
      const std::string rest = text.substr(name.size() + 1);
      if (!rest.empty()) preload += ":" + rest;
      continue;
    }
    bool overridden = false;
    for (const auto& [key, value] : settings) overridden = overridden || key == name;
    if (!overridden) env.push_back(text);
  }
  env.push_back("LD_PRELOAD=" + preload);
  for (const auto& [key, value] : settings) {
    std::string assignment = key;
    assignment += '=';
    assignment += value;
    env.push_back(std::move(assignment));
  }
  return env;
}

// The trace files in `dir` (names), to tell this run's from those already there.
std::set<std::string> trace_files_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".pst") names.insert(it->path().filename().string());
  }
  return names;
}

// One line on stderr: what this run wrote, or that no process traced and why that happens.
void say_what_was_written(const std::filesystem::path& dir, const std::set<std::string>& before) {
  uint64_t files = 0, bytes = 0;
  for (const std::string& name : trace_files_in(dir)) {
    if (before.count(name) != 0) continue;
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(dir / name, ec);
    ++files;
    if (!ec) bytes += size;
  }
  if (files == 0) {
    std::fprintf(
        stderr,
        "pipescope record: no process traced, nothing written to %s (a process traces once it initializes "
        "CUDA, creates an NCCL communicator or opens an NVTX range; workers started over ssh, srun or a "
        "container runtime may not inherit LD_PRELOAD)\n",
        dir.c_str());
    return;
  }
  std::fprintf(stderr, "pipescope record: %llu trace%s, %.1f MiB, in %s\n",
               static_cast<unsigned long long>(files), files == 1 ? "" : "s",
               static_cast<double>(bytes) / (1 << 20), dir.c_str());
}

int run_record(const RecordArgs& args, const CLI::App& app) {
  const std::string library = find_injection_library();
  if (library.empty() && !kProfilerBuilt) {
    return needs_profiler_build("pipescope record", "the preload library (libpipescope.so)",
                                "PIPESCOPE_LIBRARY");
  }
  if (library.empty()) {
    return usage_error("pipescope record",
                       "cannot find libpipescope.so next to this binary; set PIPESCOPE_LIBRARY to its path");
  }
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  if (ec || access(args.output_dir.c_str(), W_OK | X_OK) != 0) {
    return usage_error("pipescope record", "cannot write traces to " + args.output_dir + ": " +
                                               (ec ? ec.message() : std::string(std::strerror(errno))));
  }
  std::vector<std::pair<std::string, std::string>> settings;
  settings.emplace_back("PIPESCOPE_OUTPUT", std::filesystem::absolute(args.output_dir).string());
  if (app.count("--kinds") > 0) settings.emplace_back("PIPESCOPE_KINDS", args.kinds);
  if (app.count("--flush-ms") > 0) settings.emplace_back("PIPESCOPE_FLUSH_MS", std::to_string(args.flush_ms));
  if (app.count("--buffer-mb") > 0)
    settings.emplace_back("PIPESCOPE_BUFFER_MB", std::to_string(args.buffer_mb));
  if (app.count("--window") > 0) settings.emplace_back("PIPESCOPE_WINDOW", args.window);
  if (app.count("--steps") > 0) settings.emplace_back("PIPESCOPE_STEPS", args.steps);
  if (app.count("--nvtx-step") > 0) settings.emplace_back("PIPESCOPE_NVTX_STEP", args.nvtx_step);
  if (app.count("--kernel-sample") > 0)
    settings.emplace_back("PIPESCOPE_KERNEL_SAMPLE", std::to_string(args.kernel_sample));

  const std::filesystem::path output = std::filesystem::absolute(args.output_dir);
  const std::set<std::string> before = trace_files_in(output);
  const ChildEnd end = run_child(args.command, child_environment(library, settings));
  if (!end.started) return kExitFailure;
  // A command that could not be run (126, 127) has said so in its one line, and traced nothing.
  const bool never_ran =
      end.signal == 0 && (end.exit_code == 126 || end.exit_code == 127) && trace_files_in(output) == before;
  if (!never_ran) say_what_was_written(output, before);
  end_like(end);
}

}  // namespace

Command add_record_command(CLI::App& root) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* app =
      root.add_subcommand("record", "Run a command with the profiler preloaded into every process");
  app->add_option("-o,--output", args->output_dir, "Trace directory (PIPESCOPE_OUTPUT)")
      ->capture_default_str();
  app->add_option("--kinds", args->kinds, "Kinds to record, comma-separated (PIPESCOPE_KINDS)")
      ->check(CLI::Validator(validator_of(parse_kind_list), "LIST"))
      ->capture_default_str();
  app->add_option("--flush-ms", args->flush_ms, "Flush period in ms (PIPESCOPE_FLUSH_MS)")
      ->check(CLI::Range(int64_t{1}, int64_t{3'600'000}))
      ->capture_default_str();
  app->add_option("--buffer-mb", args->buffer_mb, "Record buffer per thread in MiB (PIPESCOPE_BUFFER_MB)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app->add_option("--window", args->window,
                  "Capture only START:END seconds from process start (PIPESCOPE_WINDOW)")
      ->check(CLI::Validator(validator_of(parse_time_window), "START:END"));
  app->add_option("--steps", args->steps, "Capture only steps N:M of the step range (PIPESCOPE_STEPS)")
      ->check(CLI::Validator(validator_of(parse_step_range), "N:M"));
  app->add_option("--nvtx-step", args->nvtx_step, "Regex of the NVTX step range (PIPESCOPE_NVTX_STEP)")
      ->check(CLI::Validator(validator_of(parse_regex), "REGEX"));
  app->add_option(
         "--kernel-sample", args->kernel_sample,
         "GPU activity (kernels, copies, memsets) for 1 step in N, counted on the step range; everything "
         "else every step "
         "(PIPESCOPE_KERNEL_SAMPLE)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))
      ->capture_default_str();
  app->add_option("command", args->command, "The command to run, after --")->required();
  return {app, [args, app] { return run_record(*args, *app); }};
}

}  // namespace pipescope::cli
