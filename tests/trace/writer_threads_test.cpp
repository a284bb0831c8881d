// TraceWriter fed by several threads at once: per-thread rings that wrap, drain inline or
// drop when full, and are handed on when a thread retires.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "pipescope/trace/trace_summary.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::ScratchDir;

WriterOptions options_with_ring(size_t ring_bytes) {
  WriterOptions o;
  o.host = "node0017";
  o.pid = 4242;
  o.thread_buffer_bytes = ring_bytes;
  return o;
}

std::string block_name(int producer, uint32_t block) {
  return "producer-" + std::to_string(producer) + "/block-" + std::to_string(block);
}

// Calls flush() over and over until told to stop; counts the calls and any failure.
class Flusher {
 public:
  explicit Flusher(TraceWriter& writer)
      : thread_([this, &writer] {
          while (!stop_.load()) {
            if (!writer.flush().ok()) failures_.fetch_add(1);
            flushes_.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        }) {}
  ~Flusher() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int flushes() const { return flushes_.load(); }
  int failures() const { return failures_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> flushes_{0};
  std::atomic<int> failures_{0};
  std::thread thread_;
};

TEST(TraceWriter, ConcurrentProducersKeepEveryRecordInOrderWhileAnotherThreadFlushes) {
  constexpr int kProducers = 4;
  constexpr uint32_t kPerProducer = 25'000;
  constexpr uint32_t kRecordsPerName = 1000;
  ScratchDir dir;
  const std::string path = dir.file("threads.pst");
  // 256 KiB rings hold 4096 kernels, so producers also drain inline when the flusher lags.
  auto created = TraceWriter::create(path, options_with_ring(256 << 10));
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;

  std::atomic<int> append_failures{0};
  {
    Flusher flusher(writer);
    std::vector<std::thread> producers;
    producers.reserve(kProducers);
    for (int t = 0; t < kProducers; ++t) {
      producers.emplace_back([&, t] {
        ThreadBuffer* buffer = writer.register_thread();
        if (buffer == nullptr) {
          append_failures.fetch_add(1);
          return;
        }
        uint32_t name_id = 0;
        for (uint32_t seq = 0; seq < kPerProducer; ++seq) {
          // Halfway, wait for the flusher's first flush: on a loaded machine its thread could
          // otherwise start only after every producer is done, and nothing would run concurrently.
          if (seq == kPerProducer / 2)
            while (flusher.flushes() == 0) std::this_thread::yield();
          if (seq % kRecordsPerName == 0) name_id = writer.intern(block_name(t, seq / kRecordsPerName));
          KernelRecord r = make_record<KernelRecord>();
          r.device = static_cast<uint32_t>(t);
          r.correlation_id = seq;
          r.name_id = name_id;
          if (!buffer->append(r)) append_failures.fetch_add(1);
        }
      });
    }
    for (auto& p : producers) p.join();
    flusher.stop();
    EXPECT_GT(flusher.flushes(), 0);
    EXPECT_EQ(flusher.failures(), 0);
  }
  ASSERT_TRUE(writer.close().ok());
  EXPECT_EQ(append_failures.load(), 0);
  EXPECT_EQ(writer.records_written(), uint64_t{kProducers} * kPerProducer);
  EXPECT_EQ(writer.records_dropped(), 0u);

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->stop_reason, StopReason::kEndOfData) << trace->stop_detail;
  // Walk the file in order: every producer's sequence numbers appear once each, ascending,
  // and every name a record uses was defined by a strings chunk before the record's chunk.
  std::vector<uint32_t> next_seq(kProducers, 0);
  StringTable strings;
  for (const auto& chunk : trace->chunks) {
    if (chunk.type == ChunkType::kStrings) read_strings_chunk(chunk.payload, strings);
    if (chunk.type != ChunkType::kRecords) continue;
    RecordCursor cursor(chunk.payload);
    RecordView view{};
    while (cursor.next(view)) {
      KernelRecord r;
      ASSERT_TRUE(view.decode(r));
      ASSERT_LT(r.device, uint32_t{kProducers});
      const int t = static_cast<int>(r.device);
      ASSERT_EQ(r.correlation_id, next_seq[t]) << "producer " << t;
      ++next_seq[t];
      ASSERT_LE(r.name_id, strings.size()) << "name used before its strings chunk";
      ASSERT_EQ(strings.get(r.name_id), block_name(t, r.correlation_id / kRecordsPerName));
    }
  }
  for (int t = 0; t < kProducers; ++t) EXPECT_EQ(next_seq[t], kPerProducer) << "producer " << t;
  EXPECT_EQ(strings.size(), size_t{kProducers} * (kPerProducer / kRecordsPerName));
}

TEST(TraceWriter, RecordThatWouldCrossTheRingEndStartsAtTheBeginningAfterPadding) {
  ScratchDir dir;
  const std::string path = dir.file("wrap.pst");
  auto created = TraceWriter::create(path, options_with_ring(64 << 10));
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  ThreadBuffer* buffer = writer.register_thread();
  auto sync = [](uint32_t seq) {
    SyncRecord r = make_record<SyncRecord>();  // 40 bytes
    r.correlation_id = seq;
    return r;
  };
  // 1000 records fill bytes [0, 40000); the flush empties the ring with its tail at 40000.
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_TRUE(buffer->append(sync(i)));
  ASSERT_TRUE(writer.flush().ok());
  // 65536 - 40000 = 25536 = 638 * 40 + 16: record 639 of the next batch does not fit before
  // the end, so 16 bytes of padding go there and it lands at offset 0 with the 361 after it.
  for (uint32_t i = 1000; i < 2000; ++i) ASSERT_TRUE(buffer->append(sync(i)));
  ASSERT_TRUE(writer.close().ok());

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  std::vector<uint32_t> counts;
  for (const auto& chunk : trace->chunks) {
    if (chunk.type == ChunkType::kRecords) counts.push_back(chunk.item_count);
  }
  EXPECT_EQ(counts, (std::vector<uint32_t>{1000, 638, 362}));
  ASSERT_EQ(trace->records.size(), 2000u);
  const auto syncs = trace->all_of<SyncRecord>();
  ASSERT_EQ(syncs.size(), 2000u) << "the padding must never reach the file as a record";
  for (uint32_t i = 0; i < 2000; ++i) ASSERT_EQ(syncs[i].correlation_id, i);
}

// The sequence tag of a mixed-size record: producer in the high half, sequence in the low.
uint64_t tag(int producer, uint32_t seq) { return (uint64_t(producer) << 32) | seq; }

// Five sizes (64, 56, 40, 32 and 88 bytes): 280 bytes per round, which divides no power of two,
// so records end at ever different places relative to the end of the ring.
bool append_mixed(ThreadBuffer& buffer, int producer, uint32_t seq) {
  const uint64_t t = tag(producer, seq);
  switch (seq % 5) {
    case 0: {
      auto r = make_record<KernelRecord>();
      r.start_ns = t;
      return buffer.append(r);
    }
    case 1: {
      auto r = make_record<MemcpyRecord>();
      r.start_ns = t;
      return buffer.append(r);
    }
    case 2: {
      auto r = make_record<SyncRecord>();
      r.start_ns = t;
      return buffer.append(r);
    }
    case 3: {
      auto r = make_record<OverheadRecord>();
      r.start_ns = t;
      return buffer.append(r);
    }
    default: {
      auto r = make_record<NcclOpRecord>();
      r.host_enter_ns = t;
      return buffer.append(r);
    }
  }
}

uint64_t tag_of(const RecordView& view) {
  KernelRecord k;
  MemcpyRecord m;
  SyncRecord s;
  OverheadRecord o;
  NcclOpRecord n;
  if (view.decode(k)) return k.start_ns;
  if (view.decode(m)) return m.start_ns;
  if (view.decode(s)) return s.start_ns;
  if (view.decode(o)) return o.start_ns;
  if (view.decode(n)) return n.host_enter_ns;
  return ~uint64_t{0};
}

TEST(TraceWriter, MixedSizeRecordsSurviveManyRingWrapsUnderConcurrentFlushes) {
  constexpr int kProducers = 4;
  constexpr uint32_t kPerProducer = 20'000;  // 20000 * 56 bytes on average: 17 turns of a 64 KiB ring
  ScratchDir dir;
  const std::string path = dir.file("mixed.pst");
  auto created = TraceWriter::create(path, options_with_ring(64 << 10));
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  std::atomic<int> append_failures{0};
  {
    Flusher flusher(writer);
    std::vector<std::thread> producers;
    producers.reserve(kProducers);
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        ThreadBuffer* buffer = writer.register_thread();
        for (uint32_t seq = 0; seq < kPerProducer; ++seq) {
          if (buffer == nullptr || !append_mixed(*buffer, p, seq)) append_failures.fetch_add(1);
        }
      });
    }
    for (auto& t : producers) t.join();
  }
  ASSERT_TRUE(writer.close().ok());
  EXPECT_EQ(append_failures.load(), 0);

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->stop_reason, StopReason::kEndOfData) << trace->stop_detail;
  ASSERT_EQ(trace->records.size(), size_t{kProducers} * kPerProducer);
  constexpr RecordKind kCycle[] = {RecordKind::kKernel, RecordKind::kMemcpy, RecordKind::kSync,
                                   RecordKind::kOverhead, RecordKind::kNcclOp};
  std::vector<uint32_t> next_seq(kProducers, 0);
  for (const auto& bytes : trace->records) {
    const RecordView view{static_cast<RecordKind>(test::DecodedTrace::kind_of(bytes)), bytes};
    const uint64_t t = tag_of(view);
    const auto producer = static_cast<size_t>(t >> 32);
    const auto seq = static_cast<uint32_t>(t);
    ASSERT_LT(producer, size_t{kProducers}) << "record of kind " << static_cast<int>(view.kind);
    ASSERT_EQ(seq, next_seq[producer]) << "producer " << producer;
    ASSERT_EQ(view.kind, kCycle[seq % 5]);
    ++next_seq[producer];
  }
}

TEST(TraceWriter, DropPolicyRefusesRecordsBeyondTheRingAndCountsThem) {
  ScratchDir dir;
  const std::string path = dir.file("drop.pst");
  WriterOptions o = options_with_ring(64 << 10);
  o.when_full = FullBufferPolicy::kDrop;
  auto created = TraceWriter::create(path, o);
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  ThreadBuffer* buffer = writer.register_thread();

  // 65536 / 64 = 1024 kernels fill the ring exactly; nothing drains it without a flush.
  for (uint32_t i = 0; i < 1024; ++i) {
    KernelRecord r = make_record<KernelRecord>();
    r.correlation_id = i;
    ASSERT_TRUE(buffer->append(r)) << "record " << i;
  }
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(buffer->append(make_record<KernelRecord>()));
  EXPECT_FALSE(buffer->append(make_record<OverheadRecord>()));  // even 32 bytes do not fit
  EXPECT_EQ(buffer->dropped_records(), 11u);
  EXPECT_EQ(writer.records_dropped(), 11u);

  // A flush makes room again.
  ASSERT_TRUE(writer.flush().ok());
  KernelRecord after = make_record<KernelRecord>();
  after.correlation_id = 5000;
  EXPECT_TRUE(buffer->append(after));
  ASSERT_TRUE(writer.close().ok());

  auto summary = summarize_trace_file(path);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  ASSERT_TRUE(summary->end.has_value());
  EXPECT_EQ(summary->end->records_written, 1025u);
  EXPECT_EQ(summary->end->records_dropped, 11u);
  EXPECT_EQ(summary->records, 1025u);
  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok());
  const auto kernels = trace->all_of<KernelRecord>();
  ASSERT_EQ(kernels.size(), 1025u);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(kernels[i].correlation_id, i);
  EXPECT_EQ(kernels[1024].correlation_id, 5000u);
}

TEST(TraceWriter, FullRingDrainsInlineByDefault) {
  ScratchDir dir;
  const std::string path = dir.file("inline.pst");
  auto created = TraceWriter::create(path, options_with_ring(64 << 10));
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  ThreadBuffer* buffer = writer.register_thread();
  for (uint32_t i = 0; i < 3000; ++i) ASSERT_TRUE(buffer->append(make_record<KernelRecord>()));
  // Three rings' worth with no flush: the producer wrote two full rings itself.
  EXPECT_EQ(writer.records_written(), 2048u);
  ASSERT_TRUE(writer.close().ok());
  EXPECT_EQ(writer.records_written(), 3000u);
  EXPECT_EQ(writer.records_dropped(), 0u);
}

TEST(TraceWriter, RetiredBufferIsReusedOnlyOnceDrained) {
  ScratchDir dir;
  const std::string path = dir.file("retire.pst");
  WriterOptions o = options_with_ring(64 << 10);
  o.max_threads = 1;
  auto created = TraceWriter::create(path, o);
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  auto nvtx = [](uint64_t range) {
    NvtxRecord r = make_record<NvtxRecord>();
    r.range_id = range;
    return r;
  };

  ThreadBuffer* first = writer.register_thread();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(writer.register_thread(), nullptr) << "max_threads is 1";
  for (uint64_t i = 1; i <= 3; ++i) ASSERT_TRUE(first->append(nvtx(i)));
  writer.retire_thread(first);
  // Its records are still in the ring: handing it on now could reorder them.
  EXPECT_EQ(writer.register_thread(), nullptr);
  ASSERT_TRUE(writer.flush().ok());
  ThreadBuffer* second = writer.register_thread();
  EXPECT_EQ(second, first);
  ASSERT_NE(second, nullptr);
  for (uint64_t i = 4; i <= 5; ++i) ASSERT_TRUE(second->append(nvtx(i)));
  ASSERT_TRUE(writer.close().ok());

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const auto ranges = trace->all_of<NvtxRecord>();
  ASSERT_EQ(ranges.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(ranges[i].range_id, i + 1);
}

TEST(TraceWriter, RetiringANeverUsedBufferFreesItAtOnce) {
  ScratchDir dir;
  WriterOptions o = options_with_ring(64 << 10);
  o.max_threads = 2;
  auto created = TraceWriter::create(dir.file("reuse.pst"), o);
  ASSERT_TRUE(created.ok()) << created.error().message;
  TraceWriter& writer = **created;
  ThreadBuffer* a = writer.register_thread();
  ThreadBuffer* b = writer.register_thread();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(writer.register_thread(), nullptr);
  writer.retire_thread(b);  // empty, so already drained
  EXPECT_EQ(writer.register_thread(), b);
  writer.retire_thread(nullptr);  // harmless
  ASSERT_TRUE(writer.close().ok());
}

// close() while producers append as fast as they can: every record whose append returned true is
// in the file, and the end chunk counts no more drops than appends that returned false. A
// producer that read the closed flag as clear just before close() took its last look at the
// rings used to publish its record after it, where nothing wrote or counted it.
TEST(TraceWriter, CloseWhileProducersAppendLosesNoAcceptedRecord) {
  constexpr int kRounds = 40;
  constexpr int kProducers = 3;
  ScratchDir dir;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir.file("close-race-" + std::to_string(round) + ".pst");
    auto created = TraceWriter::create(path, options_with_ring(64 << 10));
    ASSERT_TRUE(created.ok()) << created.error().message;
    TraceWriter& writer = **created;
    std::atomic<uint64_t> accepted{0};
    std::atomic<uint64_t> refused{0};
    std::atomic<int> running{0};
    std::vector<std::thread> producers;
    producers.reserve(kProducers);
    for (int t = 0; t < kProducers; ++t) {
      producers.emplace_back([&] {
        ThreadBuffer* buffer = writer.register_thread();
        if (buffer == nullptr) return;
        running.fetch_add(1);
        uint64_t mine = 0;
        KernelRecord r = make_record<KernelRecord>();
        while (true) {
          r.correlation_id = mine;
          if (!buffer->append(r)) break;
          ++mine;
        }
        accepted.fetch_add(mine);
        refused.fetch_add(1);
      });
    }
    while (running.load() < kProducers) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(200 + 50 * round));
    ASSERT_TRUE(writer.close().ok());
    for (auto& p : producers) p.join();

    auto summary = summarize_trace_file(path);
    ASSERT_TRUE(summary.ok()) << summary.error().message;
    ASSERT_TRUE(summary->end.has_value());
    ASSERT_EQ(summary->records, accepted.load()) << "round " << round;
    EXPECT_EQ(summary->end->records_written, accepted.load()) << "round " << round;
    EXPECT_LE(summary->end->records_dropped, refused.load()) << "round " << round;
  }
}

}  // namespace
}  // namespace pipescope::trace
