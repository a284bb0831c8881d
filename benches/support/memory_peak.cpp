#include "memory_peak.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

namespace pipescope::bench {
namespace {

// Heap bytes in use (allocated and not freed), all arenas; mapped trace pages are not in it.
int64_t heap_in_use_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 when absent.
int64_t status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(status, line);)
    if (line.starts_with(prefix)) return std::stoll(line.substr(prefix.size())) * 1024;
  return -1;
}

// Starts the kernel's peak resident set size (VmHWM) over from the current size (Linux 4.0+).
bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace

MemoryPeak::MemoryPeak() : heap_base_(heap_in_use_bytes()), heap_peak_(heap_base_) {
  // Free heap pages go back to the system first, so that the work's heap shows in its resident
  // memory rather than reusing pages an earlier run (or a fixture's writer) left resident.
  malloc_trim(0);
  exact_resident_ = reset_peak_resident();
  resident_base_ = status_bytes("VmRSS");
  resident_peak_ = resident_base_;
  sampler_ = std::thread([this] {
    while (!stop_.load()) {
      heap_peak_.store(std::max(heap_peak_.load(), heap_in_use_bytes()));
      if (!exact_resident_) resident_peak_.store(std::max(resident_peak_.load(), status_bytes("VmRSS")));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
}

void MemoryPeak::stop() {
  if (!sampler_.joinable()) return;
  stop_.store(true);
  sampler_.join();
  heap_peak_.store(std::max(heap_peak_.load(), heap_in_use_bytes()));
  resident_peak_.store(exact_resident_ ? status_bytes("VmHWM")
                                       : std::max(resident_peak_.load(), status_bytes("VmRSS")));
}

int64_t MemoryPeak::heap_bytes() const { return std::max<int64_t>(0, heap_peak_.load() - heap_base_); }
int64_t MemoryPeak::resident_bytes() const {
  return std::max<int64_t>(0, resident_peak_.load() - resident_base_);
}

}  // namespace pipescope::bench
