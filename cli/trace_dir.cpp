#include "trace_dir.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "pipescope/analysis/kineto_import.h"
#include "scratch_dir.h"

namespace pipescope::cli {
namespace {

namespace fs = std::filesystem;

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// A message about converted traces, reworded to name the user's files and directory: whole paths
// first (a file given by itself), then file names, then the directory.
std::string name_user_files(std::string text, const TraceDir& traces) {
  for (const auto& [converted, original] : traces.original) replace_all(text, converted, original);
  for (const auto& [converted, original] : traces.original)
    replace_all(text, fs::path(converted).filename().string(), fs::path(original).filename().string());
  if (traces.dir != traces.user_dir) replace_all(text, traces.dir, traces.user_dir);
  return text;
}

// One trace file named by itself (`report rank-3.123.pst`): a private directory holds a link to
// it, or its conversion; messages and paths name the user's file.
Expected<TraceDir> prepare_trace_file(const std::string& file) {
  TraceDir traces;
  traces.user_dir = file;
  traces.inputs.push_back(file);
  const bool pst = fs::path(file).extension() == ".pst";
  if (!pst && !analysis::looks_like_kineto_trace(file))
    return Error(file + " is neither a pipescope trace (*.pst) nor a PyTorch profiler (Kineto) JSON trace");
  auto dir = make_scratch_dir("kineto", traces.cleanup);
  if (!dir) return dir.error();
  traces.dir = *dir;
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  const std::string inside = *dir + "/" + (pst ? fs::path(file).filename().string() : "kineto-0.pst");
  if (pst) {
    fs::create_symlink(absolute, inside, ec);
    if (ec) return Error("cannot link " + file + " into " + *dir + ": " + ec.message());
    traces.source_format = "pipescope";
  } else {
    if (Status s = analysis::convert_kineto_trace(file, inside); !s) return s.error();
    traces.source_format = "kineto";
  }
  traces.original[inside] = file;
  return traces;
}

}  // namespace

Expected<TraceDir> prepare_trace_dir(const std::string& dir) {
  std::error_code file_ec;
  if (fs::is_regular_file(dir, file_ec)) return prepare_trace_file(dir);
  std::vector<fs::path> pst, kineto;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec)) continue;
    if (entry.path().extension() == ".pst") {
      pst.push_back(entry.path());
    } else if (analysis::looks_like_kineto_trace(entry.path().string())) {
      kineto.push_back(entry.path());
    }
  }
  if (ec) return Error("cannot read " + dir + ": " + ec.message());
  std::sort(pst.begin(), pst.end());
  std::sort(kineto.begin(), kineto.end());
  if (!pst.empty() && !kineto.empty()) {
    return Error(dir + " holds pipescope traces (" + std::to_string(pst.size()) + " *.pst, e.g. " +
                 pst.front().filename().string() + ") and PyTorch profiler traces (" +
                 std::to_string(kineto.size()) + ", e.g. " + kineto.front().filename().string() +
                 "); keep one kind per directory");
  }
  TraceDir traces;
  traces.user_dir = dir;
  for (const auto& list : {pst, kineto})
    for (const fs::path& p : list) traces.inputs.push_back(p.string());
  if (!pst.empty() || kineto.empty()) {  // no trace at all: load_run says so
    traces.dir = dir;
    traces.source_format = "pipescope";
    return traces;
  }

  auto made = make_scratch_dir("kineto", traces.cleanup);
  if (!made) return made.error();
  const std::string& pattern = *made;
  std::vector<std::string> inputs, converted;
  for (size_t i = 0; i < kineto.size(); ++i) {
    inputs.push_back(kineto[i].string());
    converted.push_back(pattern + "/kineto-" + std::to_string(i) + ".pst");
    traces.original[converted.back()] = inputs.back();
  }
  if (Status s = analysis::convert_kineto_traces(inputs, converted); !s) return s.error();
  traces.dir = pattern;
  traces.source_format = "kineto";
  return traces;
}

Expected<ChosenRun> load_chosen_run(TraceDir traces, analysis::LoadOptions options,
                                    const std::optional<std::string>& run_id, int64_t attempt) {
  options.run_id = run_id;
  if (attempt >= 0) options.attempt = static_cast<int32_t>(attempt);
  auto run = analysis::load_run(traces.dir, options);
  if (!run) return Error(name_user_files(run.error().message, traces));
  run->dir = traces.user_dir;
  for (std::string& warning : run->warnings) warning = name_user_files(std::move(warning), traces);
  ChosenRun chosen{std::move(traces), std::move(*run), {}};
  for (analysis::RankDigest& digest : chosen.run.ranks) {
    chosen.trace_files.push_back(digest.path);
    if (auto it = chosen.traces.original.find(digest.path); it != chosen.traces.original.end())
      digest.path = it->second;
  }
  return chosen;
}

Expected<ChosenRun> load_chosen_run(const std::string& dir, analysis::LoadOptions options,
                                    const std::string& run_id, int64_t attempt) {
  auto traces = prepare_trace_dir(dir);
  if (!traces) return traces.error();
  return load_chosen_run(std::move(*traces), std::move(options),
                         run_id.empty() ? std::nullopt : std::optional<std::string>(run_id), attempt);
}

}  // namespace pipescope::cli
