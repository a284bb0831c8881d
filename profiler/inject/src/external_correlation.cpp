#include "external_correlation.h"

namespace pipescope::inject {

ExternalCorrelationHooks& external_correlation_hooks() noexcept {
  static ExternalCorrelationHooks hooks;
  return hooks;
}

uint64_t next_external_correlation_id() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pipescope::inject
