// A file written whole or not at all. The bytes go to a temporary file beside the target (same
// directory, so the same file system), which replaces the target with rename() only once every
// byte is written; a failed write leaves the target as it was and removes the temporary file.
// Used by every output `report` and `export` write, so that no failure destroys a user's file.
// A target that is a symbolic link is written through it (the link stays a link); an existing
// target keeps its permission bits; an interruption by SIGINT, SIGTERM, SIGHUP or SIGPIPE removes
// the temporary file before the signal ends the process (pipescope/common/interrupted_cleanup.h).
#pragma once

#include <cstddef>
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
  OutputFile(std::string path, std::string final_path, std::string temp_path, size_t watch_slot)
      : path_(std::move(path)),
        final_path_(std::move(final_path)),
        temp_path_(std::move(temp_path)),
        watch_slot_(watch_slot) {}
  void discard();
  void stop_watching();
  std::string path_;        // as the user named it (messages)
  std::string final_path_;  // where the bytes end up: path_ with symbolic links followed
  std::string temp_path_;   // empty once committed or discarded
  size_t watch_slot_;       // pipescope/common/interrupted_cleanup.h
};

}  // namespace pipescope::exporter
