// The peak memory of a piece of work inside a benchmark process: the highest heap in use and
// the highest resident memory (heap, stacks, and every mapped page the work holds) while a
// MemoryPeak lives, above what was there when it started. Heap is sampled every millisecond;
// resident memory is the kernel's own peak (VmHWM, reset through /proc/self/clear_refs), exact.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace pipescope::bench {

class MemoryPeak {
 public:
  MemoryPeak();
  ~MemoryPeak() { stop(); }
  MemoryPeak(const MemoryPeak&) = delete;
  MemoryPeak& operator=(const MemoryPeak&) = delete;

  void stop();
  int64_t heap_bytes() const;
  int64_t resident_bytes() const;

 private:
  int64_t heap_base_;
  std::atomic<int64_t> heap_peak_;
  bool exact_resident_ = false;
  int64_t resident_base_ = 0;
  std::atomic<int64_t> resident_peak_{0};
  std::atomic<bool> stop_{false};
  std::thread sampler_;
};

}  // namespace pipescope::bench
