// libFuzzer target for the plan JSON that `pipescope report --plan` reads: the first byte picks
// the split compared (suggested or baseline), the rest is the plan's text. It is compared with
// one small synthetic 4-stage run, loaded once; every input must come back as a report or an
// error, never a crash, a hang or a sanitizer report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "pipescope/analysis/report_builder.h"
#include "pipescope/analysis/run_loader.h"
#include "synthetic_run.h"

namespace {

using namespace pipescope;

analysis::LoadedRun load_synthetic_run() {
  synthetic::SyntheticRunSpec spec = synthetic::with_layout(1, 4, 1);
  spec.steps = 2;
  spec.microbatches = 4;
  spec.kernels_per_microbatch = 2;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pipescope-plan-fuzz-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto truth = synthetic::write_synthetic_run(spec, dir.string());
  auto run = truth.ok() ? analysis::load_run(dir.string(), analysis::LoadOptions{})
                        : Expected<analysis::LoadedRun>(truth.error());
  std::filesystem::remove_all(dir);
  if (!run.ok()) {
    std::fprintf(stderr, "plan_json_fuzz: the synthetic run: %s\n", run.error().message.c_str());
    std::abort();
  }
  return std::move(*run);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const analysis::LoadedRun run = load_synthetic_run();
  if (size == 0) return 0;
  analysis::ReportOptions options;
  options.plan_path = "fuzz.json";
  options.plan_split = data[0] % 2 == 0 ? analysis::PlanSplit::kSuggested : analysis::PlanSplit::kBaseline;
  options.plan_json.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (options.plan_json.empty()) return 0;  // no --plan at all
  (void)analysis::build_run_report(run, options);
  return 0;
}
