// The PyTorch profiler (Kineto) reader: two real traces, counted independently in the test, and
// small hand-made documents for the edge cases and the refusals.
#include "pipescope/analysis/kineto_import.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"
#include "trace_test_support.h"

namespace pipescope::analysis {
namespace {

using trace::test::ScratchDir;

const std::string kData = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/";

nlohmann::json read_gz_json(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(file, buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<size_t>(n));
  gzclose(file);
  return nlohmann::json::parse(text);
}

uint64_t count_cat(const nlohmann::json& doc, const std::string& cat) {
  uint64_t n = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.value("cat", "") == cat) ++n;
  return n;
}

TEST(KinetoImport, RealTracesKeepTheirKernelsCopiesStepsAndRank) {
  ScratchDir dir;
  for (int rank : {0, 1}) {
    const std::string json = kData + "rank-" + std::to_string(rank) + ".json.gz";
    ASSERT_TRUE(looks_like_kineto_trace(json));
    const std::string pst = dir.file("rank-" + std::to_string(rank) + ".pst");
    const Status converted = convert_kineto_trace(json, pst);
    ASSERT_TRUE(converted.ok()) << converted.error().message;
    const auto doc = read_gz_json(json);
    auto summary = trace::summarize_trace_file(pst);
    ASSERT_TRUE(summary.ok()) << summary.error().message;
    ASSERT_TRUE(summary->process.has_value());
    EXPECT_EQ(summary->process->rank, rank);
    EXPECT_EQ(summary->process->world_size, 128);
    EXPECT_EQ(summary->process->run_id, "kineto:nccl:128");
    const auto by_kind = [&](trace::RecordKind k) {
      return summary->records_by_kind[static_cast<size_t>(k)];
    };
    EXPECT_EQ(by_kind(trace::RecordKind::kKernel), count_cat(doc, "kernel"));
    EXPECT_EQ(by_kind(trace::RecordKind::kMemcpy), count_cat(doc, "gpu_memcpy"));
    EXPECT_EQ(by_kind(trace::RecordKind::kMemset), count_cat(doc, "gpu_memset"));
    // Every user annotation is a push and a pop, unless it overlaps its parent without nesting.
    EXPECT_EQ(by_kind(trace::RecordKind::kNvtx) % 2, 0u);
    EXPECT_LE(by_kind(trace::RecordKind::kNvtx), 2 * count_cat(doc, "user_annotation"));
    uint64_t nccl_annotations = 0;
    for (const auto& e : doc["traceEvents"])
      if (e.value("cat", "") == "user_annotation" && e.value("name", "").rfind("nccl:", 0) == 0)
        ++nccl_annotations;
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclOp), nccl_annotations);
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclComm), 1u);
    EXPECT_GT(by_kind(trace::RecordKind::kExternalCorrelation), 0u);  // NCCL kernels tied to their calls
    EXPECT_EQ(summary->stop_reason, trace::StopReason::kEndOfData);
  }
}

std::string write_json(const ScratchDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

TEST(KinetoImport, HandMadeTraceMapsEachEventKind) {
  ScratchDir dir;
  const std::string json = write_json(dir, "t.json", R"JSON({
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4},
    "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1000, "dur": 500},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 1100, "dur": 50,
       "args": {"External id": 9, "Input Dims": [[1024]], "Input type": ["c10::BFloat16"]}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1110, "dur": 5,
       "args": {"correlation": 77}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7,
       "ts": 1120.5, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 77, "grid": [4, 1, 1], "block": [512, 1, 1]}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1200, "dur": 10,
       "args": {"device": 0, "stream": 7, "correlation": 78, "bytes": 4096}},
      {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1300,
       "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 2048}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "not a number"}
    ]})JSON");
  const std::string pst = dir.file("t.pst");
  ASSERT_TRUE(convert_kineto_trace(json, pst).ok());
  auto file = trace::MappedFile::open(pst);
  ASSERT_TRUE(file.ok());
  auto decoder = trace::TraceDecoder::open(file->bytes());
  ASSERT_TRUE(decoder.ok());
  trace::ChunkView chunk;
  trace::KernelRecord kernel{};
  trace::NcclOpRecord op{};
  trace::ExternalCorrelationRecord link{};
  trace::MemcpyRecord copy{};
  trace::MemoryRecord memory{};
  int kernels = 0;
  while (decoder->next_chunk(chunk)) {
    if (chunk.type != trace::ChunkType::kRecords) continue;
    trace::RecordCursor cursor(chunk.payload);
    trace::RecordView r;
    while (cursor.next(r)) {
      if (r.decode(kernel)) ++kernels;
      r.decode(op);
      r.decode(link);
      r.decode(copy);
      r.decode(memory);
    }
  }
  EXPECT_EQ(kernels, 1);  // the one with a bad timestamp is left out
  EXPECT_EQ(kernel.start_ns, 1'120'500u);
  EXPECT_EQ(kernel.end_ns, 1'150'500u);
  EXPECT_EQ(kernel.grid_x, 4u);
  EXPECT_EQ(op.op, static_cast<uint8_t>(trace::NcclOpType::kAllReduce));
  EXPECT_EQ(op.bytes, 2048u);  // 1024 bf16
  EXPECT_EQ(op.host_enter_ns, 1'100'000u);
  EXPECT_EQ(link.correlation_id, 77u);
  EXPECT_EQ(link.external_id, op.external_correlation_id);
  EXPECT_EQ(copy.copy_kind, static_cast<uint8_t>(trace::CopyKind::kHostToDevice));
  EXPECT_EQ(copy.bytes, 4096u);
  EXPECT_EQ(memory.bytes, 2048u);
  EXPECT_EQ(memory.operation, static_cast<uint8_t>(trace::MemoryOperation::kAllocate));
  EXPECT_EQ(memory.flags & trace::kMemoryFlagFromPool, trace::kMemoryFlagFromPool);
}

TEST(KinetoImport, RefusesWhatIsNotADistributedProfilerTrace) {
  ScratchDir dir;
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"this is not json", "is not JSON"},
      {R"({"schemaVersion": 1})", "no traceEvents"},
      {R"({"traceEvents": []})", "no distributedInfo.rank"},
      {R"({"traceEvents": [], "distributedInfo": {"rank": "zero"}})", "no distributedInfo.rank"},
      {R"({"traceEvents": [], "distributedInfo": {"rank": 5, "world_size": 4}})", "does not fit"},
      {R"({"traceEvents": [1, "x", null], "distributedInfo": {"rank": 0, "world_size": 1}})",
       "no timed events"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string json = write_json(dir, "bad" + std::to_string(i) + ".json", c.text);
    const Status s = convert_kineto_trace(json, dir.file("bad" + std::to_string(i++) + ".pst"));
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.error().message.find(c.why), std::string::npos) << s.error().message;
  }
  EXPECT_FALSE(looks_like_kineto_trace(write_json(dir, "plain.txt", R"({"traceEvents": []})")));
  EXPECT_FALSE(looks_like_kineto_trace(write_json(dir, "other.json", R"({"hello": 1})")));
  // pipescope's own Perfetto export holds trace events too.
  EXPECT_FALSE(looks_like_kineto_trace(write_json(
      dir, "export.json", R"({"displayTimeUnit":"ns","otherData":{"tool":"pipescope"},"traceEvents":[]})")));
}

TEST(KinetoImport, ACutOffOrDamagedGzipTraceSaysSoRatherThanNotJson) {
  ScratchDir dir;
  std::ifstream in(kData + "rank-0.json.gz", std::ios::binary);
  const std::string whole{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_GT(whole.size(), 100'000u);
  const std::string cut = dir.file("cut.json.gz");
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 2);
  EXPECT_TRUE(looks_like_kineto_trace(cut));  // its beginning is fine
  const Status truncated = convert_kineto_trace(cut, dir.file("cut.pst"));
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("is truncated: its gzip data ends early"), std::string::npos)
      << truncated.error().message;

  std::string flipped = whole;
  flipped[whole.size() - 6] = static_cast<char>(flipped[whole.size() - 6] ^ 0x55);  // the gzip CRC-32 trailer
  const std::string damaged = dir.file("damaged.json.gz");
  std::ofstream(damaged, std::ios::binary) << flipped;
  const Status corrupt = convert_kineto_trace(damaged, dir.file("damaged.pst"));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.error().message.find("is corrupt gzip data"), std::string::npos)
      << corrupt.error().message;
}

}  // namespace
}  // namespace pipescope::analysis
