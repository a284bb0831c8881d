#include "fake_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_set>

namespace pipescope::fake_nccl {
namespace {

constexpr uint64_t kLiveMagic = 0x66616b656e63636cull;  // "fakenccl"

struct Registry {
  std::mutex mutex;
  std::unordered_set<const ncclComm*> live;
};
Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: calls may come during exit
  return *instance;
}

struct CallLog {
  std::mutex mutex;
  pid_t pid = 0;  // the process the file was opened for; a forked child opens its own
  int fd = -1;
};
CallLog& call_log() {
  static CallLog* instance = new CallLog;
  return *instance;
}

thread_local char t_last_error[512] = "";
thread_local int t_group_depth = 0;

}  // namespace

ncclComm* make_comm(std::string name, int rank, int size, int device) {
  auto* comm = new ncclComm;
  comm->magic = kLiveMagic;
  comm->name = std::move(name);
  comm->rank = rank;
  comm->size = size;
  comm->device = device;
  std::lock_guard lock(registry().mutex);
  registry().live.insert(comm);
  return comm;
}

bool is_live(const ncclComm* comm) {
  if (comm == nullptr) return false;
  std::lock_guard lock(registry().mutex);
  return registry().live.count(comm) != 0 && comm->magic == kLiveMagic;
}

void forget_comm(ncclComm* comm) {
  {
    std::lock_guard lock(registry().mutex);
    registry().live.erase(comm);
  }
  comm->magic = 0;
  delete comm;
}

ncclResult_t fail(ncclResult_t rc, const std::string& message) {
  std::snprintf(t_last_error, sizeof(t_last_error), "fake NCCL: %s", message.c_str());
  return rc;
}

const char* last_error() { return t_last_error; }

ncclResult_t check_usable(const ncclComm* comm, const char* function) {
  if (!is_live(comm)) return fail(ncclInvalidArgument, std::string(function) + ": not a live communicator");
  if (comm->finalized) return fail(ncclInvalidUsage, std::string(function) + ": communicator was finalized");
  if (comm->revoked) return fail(ncclInvalidUsage, std::string(function) + ": communicator was revoked");
  return ncclSuccess;
}

int& group_depth() { return t_group_depth; }

void log_call(const std::string& line) {
  const char* dir = std::getenv("FAKE_NCCL_LOG");
  if (dir == nullptr || dir[0] == '\0') return;
  CallLog& log = call_log();
  std::lock_guard lock(log.mutex);
  if (log.pid != getpid()) {
    if (log.fd >= 0) close(log.fd);  // the parent's file, inherited across fork
    const char* rank = std::getenv("RANK");
    const std::string path = std::string(dir) + "/calls." +
                             (rank != nullptr && rank[0] != '\0' ? rank : "x") + "." +
                             std::to_string(getpid()) + ".log";
    log.fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    log.pid = getpid();
  }
  if (log.fd < 0) return;
  const std::string text = line + "\n";
  // One write per line: a process killed right after a call still leaves whole lines.
  [[maybe_unused]] const ssize_t written = write(log.fd, text.data(), text.size());
}

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || text[0] == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' ? static_cast<int>(value) : fallback;
}

}  // namespace pipescope::fake_nccl
