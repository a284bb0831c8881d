// A file written whole or not at all. The bytes go to a temporary file beside the target (same
// directory, so the same file system), which replaces the target with rename() only once every
// byte is written; a failed write leaves the target as it was and removes the temporary file.
// Used by every output `report` and `export` write, so that no failure destroys a user's file.
#pragma once

#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::exporter {

class OutputFile {
 public:
  // Creates the temporary file (exclusively; mode 0666 less the umask, as a plain create would),
  // so that a path whose directory is missing or not writable fails here, before any work. The
  // error reads "PATH: reason", for the caller to say what it was writing.
  static Expected<OutputFile> create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  const std::string& path() const { return path_; }            // the target
  const std::string& temp_path() const { return temp_path_; }  // where to write
  // Renames the temporary file over the target.
  Status commit();

 private:
  OutputFile(std::string path, std::string temp_path)
      : path_(std::move(path)), temp_path_(std::move(temp_path)) {}
  void discard();
  std::string path_;
  std::string temp_path_;  // empty once committed or discarded
};

}  // namespace pipescope::exporter
