#include "trace_dir.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "pipescope/analysis/kineto_import.h"

namespace pipescope::cli {
namespace {

namespace fs = std::filesystem;

bool holds_pst(const std::string& dir) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".pst") return true;
  return false;
}

}  // namespace

Expected<TraceDir> prepare_trace_dir(const std::string& dir) {
  if (holds_pst(dir)) return TraceDir{dir, "pipescope", nullptr};
  std::vector<fs::path> kineto;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && analysis::looks_like_kineto_trace(entry.path().string()))
      kineto.push_back(entry.path());
  if (ec) return Error("cannot read " + dir + ": " + ec.message());
  if (kineto.empty())
    return Error("no *.pst traces (nor PyTorch profiler JSON traces) in " + dir +
                 " (record a run with 'pipescope record -o " + dir + " -- ...')");

  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/pipescope-kineto-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return Error("cannot create a temporary directory under " + pattern);
  auto cleanup = std::shared_ptr<void>(nullptr, [path = pattern](void*) {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  });
  for (size_t i = 0; i < kineto.size(); ++i) {
    const std::string out = pattern + "/kineto-" + std::to_string(i) + ".pst";
    if (Status s = analysis::convert_kineto_trace(kineto[i].string(), out); !s) return s.error();
  }
  return TraceDir{pattern, "kineto", cleanup};
}

Expected<ChosenRun> load_chosen_run(const std::string& dir, analysis::LoadOptions options,
                                    const std::string& run_id, int64_t attempt) {
  if (!run_id.empty()) options.run_id = run_id;
  if (attempt >= 0) options.attempt = static_cast<int32_t>(attempt);
  auto traces = prepare_trace_dir(dir);
  if (!traces) return traces.error();
  auto run = analysis::load_run(traces->dir, options);
  if (!run) return run.error();
  run->dir = dir;
  return ChosenRun{std::move(*traces), std::move(*run)};
}

}  // namespace pipescope::cli
