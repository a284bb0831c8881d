#include "split_rendezvous.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace pipescope::fake_nccl {
namespace {

std::string entry_path(const SplitMeeting& meeting, int rank) {
  return meeting.dir + "/split-" + meeting.comm_name + "-" + std::to_string(meeting.split_index) + "-" +
         std::to_string(rank);
}

bool read_entry(const std::string& path, SplitEntry& entry) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return false;
  const bool ok = std::fscanf(file, "%d %d", &entry.color, &entry.key) == 2;
  std::fclose(file);
  return ok;
}

}  // namespace

bool publish_split(const SplitMeeting& meeting, int rank, SplitEntry entry, std::string& error) {
  const std::string path = entry_path(meeting, rank);
  // Readers must never see half a file: write a private name, then rename into place.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) {
    error = "cannot create " + temporary;
    return false;
  }
  const bool written = std::fprintf(file, "%d %d\n", entry.color, entry.key) > 0;
  if (std::fclose(file) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path;
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

bool gather_split(const SplitMeeting& meeting, int size, int timeout_ms, std::vector<SplitEntry>& entries,
                  std::string& error) {
  entries.assign(static_cast<size_t>(size), SplitEntry{});
  std::vector<bool> seen(static_cast<size_t>(size), false);
  int missing = size;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    for (int rank = 0; rank < size; ++rank) {
      const auto index = static_cast<size_t>(rank);
      if (!seen[index] && read_entry(entry_path(meeting, rank), entries[index])) {
        seen[index] = true;
        --missing;
      }
    }
    if (missing == 0) return true;
    if (timeout_ms > 0 && std::chrono::steady_clock::now() >= deadline) break;  // 0: wait for ever
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  error = "split " + std::to_string(meeting.split_index) + " of communicator " + meeting.comm_name +
          ": no entry after " + std::to_string(timeout_ms) + " ms from rank(s)";
  for (int rank = 0; rank < size; ++rank) {
    if (!seen[static_cast<size_t>(rank)]) error += " " + std::to_string(rank);
  }
  return false;
}

SplitPlace place_in_split(const std::vector<SplitEntry>& entries, int rank) {
  const SplitEntry& mine = entries[static_cast<size_t>(rank)];
  SplitPlace place;
  for (int other = 0; other < static_cast<int>(entries.size()); ++other) {
    const SplitEntry& theirs = entries[static_cast<size_t>(other)];
    if (theirs.color != mine.color) continue;
    ++place.size;
    if (theirs.key < mine.key || (theirs.key == mine.key && other < rank)) ++place.rank;
  }
  return place;
}

}  // namespace pipescope::fake_nccl
