// What a GPU smoke trace must hold, as a pure function of the loaded traces so that the rules
// are tested without a GPU (gpu_trace_expectations_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "loaded_trace.h"
#include "pipescope/common/expected.h"

namespace pipescope::inject::testing {

struct GpuTraceVerdict {
  std::string report;                 // one line per fact, then one per failure
  std::vector<std::string> failures;  // empty when every expectation holds
};

// `expected` items: kernel, memcpy, memset, memory, sync, nccl, nvtx (at least one record),
// nccl-linked (every NCCL call tied to a kernel, copy or memset it launched), nccl-linked-any (at
// least one). An unknown item is an error. Always: every clock anchor's trace clock reading is
// within kMaxClockStrayNs (beyond the anchor's own uncertainty) of its CLOCK_MONOTONIC, the
// profiler's TSC-read clock following the kernel's on the GPU machine (docs/profiler.md).
inline constexpr uint64_t kMaxClockStrayNs = 2'000;
Expected<GpuTraceVerdict> check_gpu_traces(const std::vector<LoadedTrace>& traces,
                                           const std::vector<std::string>& expected);

}  // namespace pipescope::inject::testing
