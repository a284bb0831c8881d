// The analysis's one way of using several cores: the scan's ranks (run_loader.cpp) and the
// report's per-rank and per-communicator work (report_*.cpp) run body(i) for every index on the
// same kind of workers, the caller among them. Indices are handed out one at a time, in order,
// so a body must write only what belongs to its index; a result that combines indices is merged
// afterwards in index order, which keeps the report the same whatever the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace pipescope::analysis {

// `requested` threads (0: one per core), never more than there is work for.
inline unsigned worker_threads(unsigned requested, size_t work) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned wanted = requested != 0 ? requested : cores;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(wanted, work)));
}

template <class Body>
void parallel_for(size_t count, unsigned threads, Body&& body) {
  threads = worker_threads(threads, count);
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) body(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (unsigned w = 1; w < threads; ++w) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace pipescope::analysis
