#include "pipescope/export/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

namespace pipescope::exporter {
namespace {

namespace fs = std::filesystem;

std::atomic<unsigned> next_serial{0};

}  // namespace

Expected<OutputFile> OutputFile::create(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Error(path + ": is a directory; name a file");
  const fs::path target(path);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") return Error(path + ": names no file");
  // Hidden, and never *.pst or *.json, so that a report reading the directory meanwhile skips it.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string temp = (target.parent_path() / ("." + name + ".partial-" + std::to_string(::getpid()) +
                                                      "-" + std::to_string(next_serial++)))
                                 .string();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return OutputFile(path, temp);
    }
    if (errno != EEXIST) {
      const int err = errno;
      return Error(path + ": " + std::strerror(err));
    }
  }
  return Error(path + ": no free temporary name beside it");
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)), temp_path_(std::exchange(other.temp_path_, std::string())) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_path_ = std::exchange(other.temp_path_, std::string());
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

Status OutputFile::commit() {
  if (temp_path_.empty()) return Error("cannot write " + path_ + ": nothing was written");
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    discard();
    return Error("cannot write " + path_ + ": " + std::strerror(err));
  }
  temp_path_.clear();
  return Status::Ok();
}

}  // namespace pipescope::exporter
