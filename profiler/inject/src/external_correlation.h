// The seam between the NCCL interposer and the CUPTI source: CUPTI, once running, installs
// push/pop functions; the interposer brackets each NCCL call (or a group's ncclGroupEnd) with
// an id so that CUPTI's external-correlation records tie the call to the kernels it launched.
#pragma once

#include <atomic>
#include <cstdint>

namespace pipescope::inject {

struct ExternalCorrelationHooks {
  // Both null until CUPTI is up and the `nccl` kind is on; set once, before `active`.
  void (*push)(uint64_t external_id) = nullptr;
  void (*pop)() = nullptr;
  std::atomic<bool> active{false};
};

ExternalCorrelationHooks& external_correlation_hooks() noexcept;

// Process-wide ids for calls and groups, never 0.
uint64_t next_external_correlation_id() noexcept;

}  // namespace pipescope::inject
