// The PyTorch profiler (Kineto) reader: two real traces, counted independently in the test, and
// small hand-made documents for the edge cases and the refusals.
#include "pipescope/analysis/kineto_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gzip_json.h"
#include "kineto_trace.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"
#include "trace_test_support.h"

namespace pipescope::analysis {
namespace {

using trace::test::read_gz_json;
using trace::test::ScratchDir;

const std::string kData = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/";

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
    for (const auto& e : doc["traceEvents"]) {
      if (e.value("cat", "") == "user_annotation" && e.value("name", "").rfind("nccl:", 0) == 0) {
        ++nccl_annotations;
      }
    }
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclOp), nccl_annotations);
    // The world, and the 64-rank group of the all-gathers (output 64 times the input).
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclComm), 2u);
    EXPECT_GT(by_kind(trace::RecordKind::kExternalCorrelation), 0u);  // NCCL kernels tied to their calls
    EXPECT_EQ(summary->stop_reason, trace::StopReason::kEndOfData);
  }
}

// A generated trace of an FSDP-style job, several times the reader's window, plain and gzip:
// every kernel, copy, memset, allocation, collective and step the generator wrote is in the trace.
TEST(KinetoImport, AGeneratedLlmTraceKeepsEveryEventItWrote) {
  ScratchDir dir;
  for (const bool gzip : {false, true}) {
    synthetic::KinetoTraceSpec spec;
    spec.rank = 2;
    spec.world_size = 8;
    spec.json_bytes = 5'000'000;
    spec.gzip = gzip;
    spec.layers = 4;
    const std::string json = dir.file(gzip ? "rank-2.json.gz" : "rank-2.json");
    auto truth = synthetic::write_kineto_trace(spec, json);
    ASSERT_TRUE(truth.ok()) << truth.error().message;
    ASSERT_GE(truth->json_bytes, spec.json_bytes);
    const std::string pst = dir.file(gzip ? "gz.pst" : "plain.pst");
    const Status converted = convert_kineto_trace(json, pst);
    ASSERT_TRUE(converted.ok()) << converted.error().message;
    auto summary = trace::summarize_trace_file(pst);
    ASSERT_TRUE(summary.ok()) << summary.error().message;
    const auto by_kind = [&](trace::RecordKind k) {
      return summary->records_by_kind[static_cast<size_t>(k)];
    };
    EXPECT_EQ(summary->process->rank, 2);
    EXPECT_EQ(summary->process->world_size, 8);
    EXPECT_EQ(by_kind(trace::RecordKind::kKernel), truth->kernels);
    EXPECT_EQ(by_kind(trace::RecordKind::kMemcpy), truth->memcpys);
    EXPECT_EQ(by_kind(trace::RecordKind::kMemset), truth->memsets);
    EXPECT_EQ(by_kind(trace::RecordKind::kMemory), truth->allocations + truth->releases);
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclOp), truth->nccl_calls);
    EXPECT_EQ(by_kind(trace::RecordKind::kNcclComm), 1u);  // the world, named in every call
    EXPECT_EQ(by_kind(trace::RecordKind::kExternalCorrelation), truth->nccl_kernels);
    EXPECT_EQ(by_kind(trace::RecordKind::kNvtx), 2 * (truth->steps + truth->nccl_calls));  // push and pop
  }
}

std::string write_json(const ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.file(name);
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

struct NcclRecords {
  std::vector<trace::NcclOpRecord> ops;
  std::vector<trace::NcclCommRecord> comms;
};

NcclRecords nccl_records_of(const std::string& pst) {
  NcclRecords out;
  auto file = trace::MappedFile::open(pst);
  EXPECT_TRUE(file.ok());
  if (!file.ok()) return out;
  auto decoder = trace::TraceDecoder::open(file->bytes());
  EXPECT_TRUE(decoder.ok());
  if (!decoder.ok()) return out;
  trace::ChunkView chunk;
  while (decoder->next_chunk(chunk)) {
    if (chunk.type != trace::ChunkType::kRecords) continue;
    trace::RecordCursor cursor(chunk.payload);
    trace::RecordView r;
    trace::NcclOpRecord op{};
    trace::NcclCommRecord comm{};
    while (cursor.next(r)) {
      if (r.decode(op)) out.ops.push_back(op);
      if (r.decode(comm)) out.comms.push_back(comm);
    }
  }
  return out;
}

// A collective at time 0 (hand-made traces start there): its communicator is announced at 0,
// not a nanosecond before, which would wrap to the end of time.
TEST(KinetoImport, ACollectiveAtTimeZeroAnnouncesItsCommunicatorAtZero) {
  ScratchDir dir;
  const std::string json = write_json(dir, "t.json", R"JSON({
    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
    "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
       "args": {"Input Dims": [[1024]], "Input type": ["c10::BFloat16"]}}
    ]})JSON");
  const std::string pst = dir.file("t.pst");
  ASSERT_TRUE(convert_kineto_trace(json, pst).ok());
  const NcclRecords records = nccl_records_of(pst);
  ASSERT_EQ(records.comms.size(), 1u);
  EXPECT_EQ(records.comms[0].start_ns, 0u);
  EXPECT_EQ(records.comms[0].end_ns, 0u);
  ASSERT_EQ(records.ops.size(), 1u);
  EXPECT_EQ(records.ops[0].host_enter_ns, 0u);
}

// A PyTorch 2.x trace of one rank: record_param_comms states counts, dtype and process group.
std::string param_comms_trace(int rank, const std::string& subgroup_ranks) {
  return R"JSON({
    "distributedInfo": {"backend": "nccl", "rank": )JSON" +
         std::to_string(rank) + R"JSON(, "world_size": 4},
    "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1000, "dur": 100,
       "args": {"Collective name": "reduce_scatter_tensor", "dtype": "Float", "In msg nelems": 4096,
                "Out msg nelems": 2048, "Group size": 2, "Process Group Name": "3",
                "Process Group Ranks": ")JSON" +
         subgroup_ranks + R"JSON("}},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:_reduce_scatter_base", "pid": 1, "tid": 1, "ts": 1010,
       "dur": 80, "args": {"Input Dims": [[4096]], "Input type": ["float"]}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 2000, "dur": 100,
       "args": {"Collective name": "all_to_all", "dtype": "BFloat16", "In msg nelems": 1000,
                "Out msg nelems": 1600, "Group size": 4, "Process Group Name": "0",
                "Process Group Ranks": "[0, 1, 2, 3]"}},
      {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 1, "tid": 1, "ts": 2010, "dur": 80,
       "args": {"Input Dims": [[1000]], "Input type": ["c10::BFloat16"]}}
    ]})JSON";
}

TEST(KinetoImport, CollectivesFollowNcclTestsSizesOnTheirOwnProcessGroups) {
  ScratchDir dir;
  std::vector<NcclRecords> ranks;
  for (int rank : {0, 2}) {
    const std::string json =
        write_json(dir, "r" + std::to_string(rank) + ".json", param_comms_trace(rank, "[0, 2]"));
    const std::string pst = dir.file("r" + std::to_string(rank) + ".pst");
    const Status s = convert_kineto_trace(json, pst);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ranks.push_back(nccl_records_of(pst));
    ASSERT_EQ(ranks.back().ops.size(), 2u);
    ASSERT_EQ(ranks.back().comms.size(), 2u);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    const NcclRecords& r = ranks[i];
    const trace::NcclOpRecord& scatter = r.ops[0];
    const trace::NcclOpRecord& exchange = r.ops[1];
    EXPECT_EQ(scatter.op, static_cast<uint8_t>(trace::NcclOpType::kReduceScatter));
    EXPECT_EQ(scatter.bytes, 2048u * 4);  // NCCL's count: this rank's output
    EXPECT_EQ(exchange.op, static_cast<uint8_t>(trace::NcclOpType::kAllToAll));
    EXPECT_EQ(exchange.bytes, 1600u * 2 / 4);  // one peer's share of the larger direction
    EXPECT_NE(scatter.comm_id, exchange.comm_id);
    EXPECT_EQ(scatter.sequence, 0u);  // numbered per communicator
    EXPECT_EQ(exchange.sequence, 0u);
    // Rank 0 is the group's first member, rank 2 its second; both name the same communicator.
    EXPECT_EQ(r.comms[0].comm_id, scatter.comm_id);
    EXPECT_EQ(r.comms[0].size, 2);
    EXPECT_EQ(r.comms[0].rank, static_cast<int32_t>(i));
    EXPECT_EQ(r.comms[1].size, 4);
    EXPECT_EQ(r.comms[1].rank, static_cast<int32_t>(2 * i));
    EXPECT_EQ(scatter.comm_id, ranks[0].ops[0].comm_id);
    EXPECT_EQ(exchange.comm_id, ranks[0].ops[1].comm_id);
  }

  // A rank list the profiler cut short: the group's size is known, its members are not, so the
  // calls are priced on a group of 2 of this rank's own rather than paired with other ranks'.
  std::vector<uint64_t> cut_ids;
  for (int rank : {0, 2}) {
    const std::string json =
        write_json(dir, "cut" + std::to_string(rank) + ".json", param_comms_trace(rank, "[0, 2, ...]"));
    const std::string pst = dir.file("cut" + std::to_string(rank) + ".pst");
    ASSERT_TRUE(convert_kineto_trace(json, pst).ok());
    const NcclRecords r = nccl_records_of(pst);
    ASSERT_EQ(r.comms.size(), 2u);
    EXPECT_EQ(r.comms[0].size, 2);
    EXPECT_EQ(r.ops[0].bytes, 2048u * 4);
    cut_ids.push_back(r.comms[0].comm_id);
  }
  EXPECT_NE(cut_ids[0], cut_ids[1]);
}

// Without nccl: annotations, record_param_comms that names its collective is the call; a trace
// with neither falls back on the c10d:: operators.
TEST(KinetoImport, RecordParamCommsAloneIsTheCallWhenNoAnnotationNamesIt) {
  ScratchDir dir;
  const std::string json = write_json(dir, "p.json", R"JSON({
    "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 8},
    "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1000, "dur": 100,
       "args": {"Collective name": "allgather_into_tensor", "dtype": "BFloat16", "In msg nelems": 1024,
                "Out msg nelems": 8192, "Group size": 8}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 2000, "dur": 100,
       "args": {"dtype": "Float"}}
    ]})JSON");
  const std::string pst = dir.file("p.pst");
  ASSERT_TRUE(convert_kineto_trace(json, pst).ok());
  const NcclRecords r = nccl_records_of(pst);
  ASSERT_EQ(r.ops.size(), 1u);  // the second names no collective
  EXPECT_EQ(r.ops[0].op, static_cast<uint8_t>(trace::NcclOpType::kAllGather));
  EXPECT_EQ(r.ops[0].bytes, 1024u * 2);  // this rank's input
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].size, 8);  // the world
  EXPECT_EQ(r.comms[0].rank, 1);
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
      // Times past what a trace's nanoseconds hold (2^63 ns, in 2262), by start or by duration.
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.8e19, "dur": 1}],
           "distributedInfo": {"rank": 0, "world_size": 1}})",
       "event \"k\" ends at 1.8e+19 us, past what a trace's clock holds"},
      {R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1700000000000000, "dur": 1e16}],
           "distributedInfo": {"rank": 0, "world_size": 1}})",
       "event \"aten::mm\" ends at"},
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

// gzip files may hold several members one after another (`cat a.gz b.gz`, some writers' flushes),
// and the size stated in the trailer is the last member's only: the reader inflates every member
// and grows its output past that guess. A trace split into a large member and a small one reads
// as the plain file does.
TEST(KinetoImport, AGzipTraceOfSeveralMembersReadsAsThePlainOne) {
  ScratchDir dir;
  synthetic::KinetoTraceSpec spec;
  spec.rank = 1;
  spec.world_size = 8;
  spec.json_bytes = 3'000'000;
  spec.layers = 4;
  const std::string plain = dir.file("rank-1.json");
  ASSERT_TRUE(synthetic::write_kineto_trace(spec, plain).ok());
  std::ifstream in(plain, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t split = text.size() - 1000;
  std::string members;
  for (const std::string& part : {text.substr(0, split), text.substr(split)}) {
    const std::string path = dir.file("member.gz");
    gzFile out = gzopen(path.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(gzwrite(out, part.data(), static_cast<unsigned>(part.size())), static_cast<int>(part.size()));
    ASSERT_EQ(gzclose(out), Z_OK);
    std::ifstream member(path, std::ios::binary);
    members.append(std::istreambuf_iterator<char>(member), std::istreambuf_iterator<char>());
  }
  const std::string gz = dir.file("rank-1.json.gz");
  std::ofstream(gz, std::ios::binary) << members;

  ASSERT_TRUE(convert_kineto_trace(plain, dir.file("plain.pst")).ok());
  const Status converted = convert_kineto_trace(gz, dir.file("members.pst"));
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  auto from_plain = trace::summarize_trace_file(dir.file("plain.pst"));
  auto from_members = trace::summarize_trace_file(dir.file("members.pst"));
  ASSERT_TRUE(from_plain.ok() && from_members.ok());
  EXPECT_GT(from_plain->records, 1000u);
  EXPECT_EQ(from_members->records, from_plain->records);
  EXPECT_EQ(from_members->records_by_kind, from_plain->records_by_kind);
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
