#include "output_guard.h"

#include <filesystem>

#include "pipescope/analysis/kineto_import.h"
#include "pipescope/export/output_file.h"

namespace pipescope::cli {

namespace fs = std::filesystem;

Status check_output(const std::string& path, const std::vector<std::string>& inputs,
                    const std::string& what) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  for (const std::string& input : inputs) {
    if (exists && fs::equivalent(path, input, ec) && !ec)
      return Error("refusing to write " + what + " " + path + ": it is one of this command's inputs (" +
                   fs::path(input).filename().string() + "); choose another file");
  }
  if (fs::path(path).extension() == ".pst")
    return Error("refusing to write " + what + " " + path +
                 ": *.pst names a pipescope trace, and the report reads every one; choose another name");
  if (exists && fs::is_regular_file(path, ec) && analysis::looks_like_kineto_trace(path))
    return Error("refusing to write " + what + " " + path +
                 ": it is a PyTorch profiler trace; choose another file");
  // Creating (and dropping) the temporary file the output will be written through proves the
  // directory takes it.
  auto probe = exporter::OutputFile::create(path);
  if (!probe) return Error("cannot write " + what + " " + probe.error().message);
  return Status::Ok();
}

}  // namespace pipescope::cli
