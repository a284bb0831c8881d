#include "pipescope/export/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "pipescope/common/interrupted_cleanup.h"

namespace pipescope::exporter {
namespace {

namespace fs = std::filesystem;

std::atomic<unsigned> next_serial{0};

// `path` with every symbolic link of its last component followed (a link to a link, a relative
// link); a dangling link gives the file it points to, which the write then creates.
Expected<fs::path> follow_links(const fs::path& path) {
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(at, ec)) return at;
    const fs::path to = fs::read_symlink(at, ec);
    if (ec) return Error(path.string() + ": " + ec.message());
    at = to.is_absolute() ? to : at.parent_path() / to;
  }
  return Error(path.string() + ": too many levels of symbolic links");
}

}  // namespace

Expected<OutputFile> OutputFile::create(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Error(path + ": is a directory; name a file");
  const auto followed = follow_links(path);
  if (!followed.ok()) return followed.error();
  const fs::path& target = *followed;
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") return Error(path + ": names no file");
  struct stat existing {};
  const bool replaces = ::stat(target.c_str(), &existing) == 0 && S_ISREG(existing.st_mode);
  // Hidden, and never *.pst or *.json, so that a report reading the directory meanwhile skips it.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = (target.parent_path() / ("." + name + ".partial-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(next_serial++)))
                           .string();
    int error = 0;
    const auto made = interrupted_cleanup::make_watched(temp, [&](std::string& file) {
      const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) {
        error = errno;
        return false;
      }
      if (replaces) (void)::fchmod(fd, existing.st_mode & 07777);
      ::close(fd);
      return true;
    });
    if (made.made) return OutputFile(path, target.string(), temp, made.slot);
    if (error != EEXIST) return Error(path + ": " + std::strerror(error));
  }
  return Error(path + ": no free temporary name beside it");
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      final_path_(std::move(other.final_path_)),
      temp_path_(std::exchange(other.temp_path_, std::string())),
      watch_slot_(std::exchange(other.watch_slot_, interrupted_cleanup::kNone)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::exchange(other.temp_path_, std::string());
    watch_slot_ = std::exchange(other.watch_slot_, interrupted_cleanup::kNone);
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::stop_watching() {
  interrupted_cleanup::forget(watch_slot_);
  watch_slot_ = interrupted_cleanup::kNone;
}

void OutputFile::discard() {
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
  stop_watching();
}

Status OutputFile::commit() {
  if (temp_path_.empty()) return Error("cannot write " + path_ + ": nothing was written");
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    const int err = errno;
    discard();
    return Error("cannot write " + path_ + ": " + std::strerror(err));
  }
  temp_path_.clear();
  stop_watching();
  return Status::Ok();
}

}  // namespace pipescope::exporter
