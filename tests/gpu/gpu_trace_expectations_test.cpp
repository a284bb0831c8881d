#include "gpu_trace_expectations.h"

#include <gtest/gtest.h>

#include <cstring>

namespace pipescope::inject::testing {
namespace {

template <class R>
void add(LoadedTrace& t, const R& record) {
  std::vector<std::byte> bytes(sizeof(R));
  std::memcpy(bytes.data(), &record, sizeof(R));
  t.records.push_back(std::move(bytes));
}

// One NCCL call (external id 7), the GPU work `Work` it launched (correlation id 40), and the
// CUPTI record that ties them, or ties the call to some other correlation id.
template <class Work = trace::KernelRecord>
LoadedTrace trace_with_linked_nccl_call(bool linked) {
  LoadedTrace t;
  t.path = "rank-0.1.pst";
  auto work = trace::make_record<Work>();
  work.correlation_id = 40;
  add(t, work);
  auto op = trace::make_record<trace::NcclOpRecord>();
  op.external_correlation_id = 7;
  add(t, op);
  auto link = trace::make_record<trace::ExternalCorrelationRecord>();
  link.correlation_id = linked ? 40 : 41;
  link.external_id = 7;
  add(t, link);
  add(t, trace::make_record<trace::NvtxRecord>());
  return t;
}

TEST(GpuTraceExpectations, ANcclCallReachesItsKernelThroughTheExternalId) {
  auto verdict =
      check_gpu_traces({trace_with_linked_nccl_call(true)}, {"kernel", "nccl", "nccl-linked", "nvtx"});
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->failures.empty()) << verdict->report;
}

TEST(GpuTraceExpectations, ACallWhoseCorrelationNamesNoKernelFails) {
  auto verdict = check_gpu_traces({trace_with_linked_nccl_call(false)}, {"nccl-linked"});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->failures, std::vector<std::string>{"not every NCCL call is linked to its GPU work"});
  auto any = check_gpu_traces({trace_with_linked_nccl_call(false)}, {"nccl-linked-any"});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->failures, std::vector<std::string>{"no NCCL call is linked to GPU work"});
}

TEST(GpuTraceExpectations, AOneRankCallIsLinkedToTheCopyItMade) {
  auto verdict = check_gpu_traces({trace_with_linked_nccl_call<trace::MemcpyRecord>(true)},
                                  {"nccl-linked", "nccl-linked-any"});
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->failures.empty()) << verdict->report;
}

TEST(GpuTraceExpectations, MissingKindsAndNoTracesFail) {
  auto verdict = check_gpu_traces({trace_with_linked_nccl_call(true)}, {"memcpy", "memory"});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->failures, (std::vector<std::string>{"no memcpy records", "no memory records"}));
  auto empty = check_gpu_traces({}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->failures, std::vector<std::string>{"no trace files"});
  EXPECT_FALSE(check_gpu_traces({}, {"cpu"}).ok());
}

TEST(GpuTraceExpectations, AnAnchorWhoseTraceClockStraysFromClockMonotonicFails) {
  LoadedTrace close = trace_with_linked_nccl_call(true);
  close.anchors.push_back({1'000'000'500, 1'700'000'000'000'000'000, 1'000'000'000, 600});
  auto verdict = check_gpu_traces({close}, {"kernel"});
  ASSERT_TRUE(verdict.ok());
  EXPECT_TRUE(verdict->failures.empty()) << verdict->report;

  LoadedTrace stray = trace_with_linked_nccl_call(true);
  stray.anchors.push_back({999'997'000, 1'700'000'000'000'000'000, 1'000'000'000, 600});
  auto failed = check_gpu_traces({stray}, {"kernel"});
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->failures,
            std::vector<std::string>{"the trace clock strays 2400 ns from CLOCK_MONOTONIC at an anchor"});
}

}  // namespace
}  // namespace pipescope::inject::testing
