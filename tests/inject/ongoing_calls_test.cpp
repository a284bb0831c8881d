// The flight recorder's table: what a flush writes of the calls in flight, what the thread that
// returns learns, held (grouped) calls, and a flusher racing the calling thread.
#include "ongoing_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "session.h"

namespace pipescope::inject {
namespace {

using trace::NcclCallRecord;

// Collects the records write_open() makes, from its byte form.
std::vector<NcclCallRecord> open_calls(OngoingCalls& calls, uint64_t now_ns) {
  std::vector<std::byte> bytes(64 * sizeof(NcclCallRecord));
  uint32_t count = 0;
  const size_t used = calls.write_open(bytes, now_ns, count);
  EXPECT_EQ(used, count * sizeof(NcclCallRecord));
  std::vector<NcclCallRecord> out(count);
  if (used > 0) std::memcpy(out.data(), bytes.data(), used);
  return out;
}

CallFacts facts(uint64_t comm_id, uint64_t sequence) {
  CallFacts f;
  f.comm_id = comm_id;
  f.sequence = sequence;
  f.bytes = 4096;
  f.enter_ns = 1000 + sequence;
  f.peer = 3;
  f.rank = 1;
  f.size = 8;
  f.group_id = 9;
  f.what = static_cast<uint8_t>(trace::NcclOpType::kSend);
  f.flags = trace::kNcclFlagInGroup;
  f.datatype = 7;
  f.reduce_op = 0xFF;
  return f;
}

TEST(OngoingCalls, AFlushWritesEveryOpenCallEachTimeWithWhatWasKnownAtEntry) {
  OngoingCalls calls;
  calls.set_global_rank(12);
  const OngoingCalls::Ticket ticket = calls.enter(facts(0xAB, 4));
  ASSERT_TRUE(ticket);
  const auto first = open_calls(calls, 5000);
  const auto second = open_calls(calls, 6000);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  const NcclCallRecord& c = first[0];
  EXPECT_EQ(c.header.kind, static_cast<uint16_t>(trace::RecordKind::kNcclCall));
  EXPECT_EQ(c.header.size_bytes, sizeof(NcclCallRecord));
  EXPECT_EQ(c.state, static_cast<uint8_t>(trace::NcclCallState::kInFlight));
  EXPECT_EQ(c.comm_id, 0xABu);
  EXPECT_EQ(c.sequence, 4u);
  EXPECT_EQ(c.bytes, 4096u);
  EXPECT_EQ(c.enter_ns, 1004u);
  EXPECT_EQ(c.at_ns, 5000u);
  EXPECT_EQ(c.peer, 3);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.size, 8);
  EXPECT_EQ(c.group_id, 9u);
  EXPECT_EQ(c.what, static_cast<uint8_t>(trace::NcclOpType::kSend));
  EXPECT_EQ(c.flags, trace::kNcclFlagInGroup);
  EXPECT_EQ(c.datatype, 7);
  EXPECT_EQ(c.reduce_op, 0xFF);
  EXPECT_EQ(c.global_rank, 12);
  EXPECT_EQ(c.thread_id, Session::thread_id());
  EXPECT_EQ(second[0].at_ns, 6000u);
  EXPECT_EQ(second[0].call_serial, c.call_serial);
  NcclCallRecord returned;
  ASSERT_TRUE(calls.leave(ticket, returned));
  EXPECT_EQ(returned.call_serial, c.call_serial);
  EXPECT_EQ(returned.comm_id, 0xABu);
  EXPECT_TRUE(open_calls(calls, 7000).empty());
}

TEST(OngoingCalls, ACallNoFlushSawLeavesNothingToWrite) {
  OngoingCalls calls;
  NcclCallRecord returned;
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(calls.leave(calls.enter(facts(1, i)), returned));
  EXPECT_TRUE(open_calls(calls, 1).empty());
  EXPECT_EQ(calls.untracked(), 0u);
}

TEST(OngoingCalls, HeldCallsCloseTogetherAtTheGroupsEnd) {
  OngoingCalls calls;
  NcclCallRecord returned;
  const OngoingCalls::Ticket a = calls.enter(facts(1, 0), /*held=*/true);
  const OngoingCalls::Ticket b = calls.enter(facts(1, 1), /*held=*/true);
  EXPECT_FALSE(calls.leave(a, returned));  // returned, but the group has not ended
  EXPECT_FALSE(calls.leave(b, returned));
  EXPECT_TRUE(calls.holds_calls());
  EXPECT_EQ(open_calls(calls, 10).size(), 2u);
  std::vector<uint64_t> completed;
  calls.leave_held([&](const NcclCallRecord& r) { completed.push_back(r.sequence); });
  EXPECT_EQ(completed, (std::vector<uint64_t>{0, 1}));
  EXPECT_FALSE(calls.holds_calls());
  EXPECT_TRUE(open_calls(calls, 11).empty());
}

TEST(OngoingCalls, CallsBeyondAThreadsSlotsAreCountedNotTracked) {
  OngoingCalls calls;
  std::vector<OngoingCalls::Ticket> tickets;
  for (size_t i = 0; i < OngoingCalls::kCallsPerThread + 5; ++i)
    tickets.push_back(calls.enter(facts(1, i), true));
  EXPECT_EQ(calls.untracked(), 5u);
  EXPECT_FALSE(tickets.back());
  calls.leave_held([](const NcclCallRecord&) {});
  EXPECT_TRUE(calls.enter(facts(1, 0)));  // room again
}

TEST(OngoingCalls, EachThreadHasItsOwnCalls) {
  OngoingCalls calls;
  const OngoingCalls::Ticket mine = calls.enter(facts(1, 0));
  uint32_t other_tid = 0;
  std::thread([&] {
    calls.enter(facts(2, 0));  // left open: that thread ends inside it, as far as the table knows
    other_tid = Session::thread_id();
  }).join();
  const auto written = open_calls(calls, 5);
  ASSERT_EQ(written.size(), 2u);
  std::map<uint64_t, uint32_t> tid_by_comm;
  for (const NcclCallRecord& r : written) tid_by_comm[r.comm_id] = r.thread_id;
  EXPECT_EQ(tid_by_comm[1], Session::thread_id());
  EXPECT_EQ(tid_by_comm[2], other_tid);
  NcclCallRecord returned;
  EXPECT_TRUE(calls.leave(mine, returned));
}

// The calling thread enters and leaves calls as fast as it can while a flusher writes: every
// record written is whole (its fields belong to one call), and every call written in flight is
// learned as such by its thread, so that its return is written.
TEST(OngoingCalls, AFlusherRacingTheCallerNeverWritesATornOrUnreturnedCall) {
  OngoingCalls calls;
  std::atomic<bool> done{false};
  std::vector<std::pair<uint32_t, uint64_t>> written;  // (serial, sequence)
  std::atomic<size_t> written_count{0};
  std::thread flusher([&] {
    std::vector<std::byte> bytes(16 * sizeof(NcclCallRecord));
    while (!done.load(std::memory_order_acquire)) {
      uint32_t count = 0;
      (void)calls.write_open(bytes, 1, count);
      for (uint32_t i = 0; i < count; ++i) {
        NcclCallRecord r;
        std::memcpy(&r, bytes.data() + i * sizeof(r), sizeof(r));
        EXPECT_EQ(r.comm_id, r.sequence * 3);
        EXPECT_EQ(r.bytes, r.sequence * 5);
        written.emplace_back(r.call_serial, r.sequence);
        written_count.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  std::map<uint32_t, uint64_t> returned_serials;
  // Until the flusher caught calls in flight a few times (a loaded machine may run it late).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (uint64_t i = 1;
       i <= 200'000 || (written_count.load() < 20 && std::chrono::steady_clock::now() < give_up); ++i) {
    CallFacts f;
    f.comm_id = i * 3;
    f.sequence = i;
    f.bytes = i * 5;
    const OngoingCalls::Ticket t = calls.enter(f);
    NcclCallRecord returned;
    if (calls.leave(t, returned)) {
      EXPECT_EQ(returned.sequence, i);
      returned_serials[returned.call_serial] = returned.sequence;
    }
  }
  done.store(true, std::memory_order_release);
  flusher.join();
  EXPECT_GE(written.size(), 20u);
  for (const auto& [serial, sequence] : written) {
    const auto it = returned_serials.find(serial);
    ASSERT_NE(it, returned_serials.end())
        << "call " << sequence << " written in flight, its return never learned";
    EXPECT_EQ(it->second, sequence);
  }
}

}  // namespace
}  // namespace pipescope::inject
