#include "op_rendezvous.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fake_state.h"

namespace pipescope::fake_nccl {
namespace {

struct Wait {
  std::vector<std::string> markers;  // all must exist
  std::vector<int> ranks;            // whose marker each is, for the error message
  std::string what;
};

thread_local std::vector<Wait> t_deferred;

std::string meeting_dir() {
  const char* dir = std::getenv("FAKE_NCCL_RENDEZVOUS");
  return dir != nullptr ? dir : ".";
}

std::string comm_key(const ncclComm* comm) { return std::to_string(std::hash<std::string>{}(comm->name)); }

bool post(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

ncclResult_t wait_for(const Wait& wait) {
  const int timeout_ms = env_int("FAKE_NCCL_TIMEOUT_MS", 30000);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<bool> seen(wait.markers.size(), false);
  size_t missing = wait.markers.size();
  auto sleep = std::chrono::microseconds(50);
  while (true) {
    for (size_t i = 0; i < wait.markers.size(); ++i) {
      if (!seen[i] && ::access(wait.markers[i].c_str(), F_OK) == 0) {
        seen[i] = true;
        --missing;
      }
    }
    if (missing == 0) return ncclSuccess;
    if (timeout_ms > 0 && std::chrono::steady_clock::now() >= deadline)
      break;  // 0: wait for ever, as NCCL does
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
  }
  std::string message =
      wait.what + ": timed out after " + std::to_string(timeout_ms) + " ms waiting for rank(s)";
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) message += " " + std::to_string(wait.ranks[i]);
  return fail(ncclSystemError, message);
}

ncclResult_t wait_or_defer(Wait wait) {
  if (group_depth() > 0) {
    t_deferred.push_back(std::move(wait));
    return ncclSuccess;
  }
  return wait_for(wait);
}

}  // namespace

bool waiting_enabled() { return env_int("FAKE_NCCL_WAIT", 0) == 1; }

ncclResult_t arrive_collective(ncclComm* comm, const char* function) {
  const std::string base =
      meeting_dir() + "/op-" + comm_key(comm) + "-" + std::to_string(comm->collectives++) + ".";
  if (!post(base + std::to_string(comm->rank)))
    return fail(ncclSystemError, std::string(function) + ": cannot post " + base);
  Wait wait{{}, {}, std::string(function) + " #" + std::to_string(comm->collectives - 1)};
  for (int member = 0; member < comm->size; ++member) {
    wait.markers.push_back(base + std::to_string(member));
    wait.ranks.push_back(member);
  }
  return wait_or_defer(std::move(wait));
}

ncclResult_t arrive_p2p(ncclComm* comm, bool send, int peer, const char* function) {
  const int src = send ? comm->rank : peer, dst = send ? peer : comm->rank;
  const uint64_t sequence = comm->p2p_sequences[{peer, send ? 1 : 0}]++;
  const std::string base = meeting_dir() + "/p2p-" + comm_key(comm) + "-" + std::to_string(src) + "-" +
                           std::to_string(dst) + "-" + std::to_string(sequence);
  if (!post(base + (send ? ".send" : ".recv")))
    return fail(ncclSystemError, std::string(function) + ": cannot post " + base);
  return wait_or_defer(Wait{
      {base + (send ? ".recv" : ".send")}, {peer}, std::string(function) + " #" + std::to_string(sequence)});
}

ncclResult_t arrive_creation(ncclComm* comm, const char* function) {
  const std::string base = meeting_dir() + "/init-" + comm_key(comm) + ".";
  if (!post(base + std::to_string(comm->rank)))
    return fail(ncclSystemError, std::string(function) + ": cannot post " + base);
  Wait wait{{}, {}, std::string(function)};
  for (int member = 0; member < comm->size; ++member) {
    wait.markers.push_back(base + std::to_string(member));
    wait.ranks.push_back(member);
  }
  return wait_or_defer(std::move(wait));
}

ncclResult_t finish_group_waits() {
  const std::vector<Wait> waits = std::move(t_deferred);
  t_deferred.clear();
  for (const Wait& wait : waits)
    if (ncclResult_t rc = wait_for(wait); rc != ncclSuccess) return rc;
  return ncclSuccess;
}

}  // namespace pipescope::fake_nccl
