// Throughput of the trace format end to end: records appended to per-thread rings, framed into
// checksummed (optionally zstd) chunks and written to a real file; and a file mapped, checked
// and decoded record by record. Rates are of uncompressed record bytes (docs/design.md, "throughput
// figures"). docs/benchmarks.md records the results and the command.
//
// Trace files go to $PIPESCOPE_BENCH_DIR, default /var/tmp (disk-backed where /tmp may be tmpfs),
// in a directory of this process's own that is removed at exit.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_decoder.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_writer.h"

namespace pt = pipescope::trace;

namespace {

// 16 MiB of kernel records per thread and file: the 1 MiB ring fills and is drained inline
// 16 times, so the per-file costs (create, first anchor, close) weigh about 1%.
constexpr size_t kRecordsPerThread = size_t{1} << 18;

std::string g_bench_dir;  // set in main before any benchmark runs

enum class Workload { kKernels, kMix };

// The names a real run interns: a transformer layer's kernels, NVTX ranges.
constexpr const char* kKernelNames[] = {
    "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>",
    "void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<bf16, bf16, float, 4096, 1, 4, 1>>",
    "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
    "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8",
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, 4>",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper>>",
    "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>",
};
constexpr size_t kKernelShapes = std::size(kKernelNames);
constexpr const char* kRangeNames[] = {"forward", "backward", "optimizer_step", "micro_batch"};
constexpr size_t kFirstRangeName = kKernelShapes;  // index into the interned ids

// One launch configuration per kernel name, as a real layer repeats them.
struct KernelShape {
  uint32_t grid_x;
  uint16_t grid_y;
  uint16_t block_x;
  uint16_t registers_per_thread;
  uint32_t dynamic_shared_bytes;
  uint32_t mean_duration_ns;
};
constexpr KernelShape kShapes[kKernelShapes] = {
    {264, 4, 256, 232, 73728, 410'000}, {128, 32, 128, 255, 98304, 880'000}, {16384, 1, 128, 20, 0, 35'000},
    {2048, 1, 128, 64, 0, 42'000},      {132, 8, 256, 232, 73728, 390'000},  {16384, 1, 128, 32, 0, 61'000},
    {512, 2, 128, 168, 49152, 120'000}, {8192, 1, 256, 40, 0, 38'000},       {1024, 1, 512, 48, 0, 22'000},
    {320, 1, 512, 72, 0, 150'000},      {32, 1, 512, 96, 0, 1'200'000},      {4096, 1, 128, 24, 0, 12'000},
};
// The order kernels launch in within one layer.
constexpr uint8_t kLayerProgram[] = {3, 0, 1, 2, 7, 3, 4, 5, 6, 2, 7, 11, 8, 0, 4, 2};

// The training-like mix, one layer's worth: a range around kernels, one collective, one copy.
enum class Slot : uint8_t { kKernel, kPush, kPop, kNccl, kMemcpy };
constexpr Slot kMixProgram[] = {
    Slot::kPush,   Slot::kKernel, Slot::kKernel, Slot::kKernel, Slot::kKernel, Slot::kKernel,
    Slot::kKernel, Slot::kNccl,   Slot::kKernel, Slot::kKernel, Slot::kMemcpy, Slot::kKernel,
    Slot::kKernel, Slot::kKernel, Slot::kKernel, Slot::kPop,
};

// Makes records as a profiler would hand them over: increasing timestamps and correlation
// ids, a repeating kernel sequence, jittered durations. Cheap (a few ns per record) so that
// it does not hide the writer's cost; varied so that zstd's ratio is not flattered.
class RecordSource {
 public:
  RecordSource(uint32_t device, const std::vector<uint32_t>* name_ids)
      : device_(device), name_ids_(name_ids), rng_(0x9E3779B97F4A7C15ull ^ (device + 1)) {}

  uint64_t record_bytes() const { return record_bytes_; }

  void append_kernel(pt::ThreadBuffer& out) { emit(out, next_kernel()); }

  void append_mixed(pt::ThreadBuffer& out) {
    const Slot slot = kMixProgram[mix_at_];
    mix_at_ = (mix_at_ + 1) % std::size(kMixProgram);
    switch (slot) {
      case Slot::kKernel: emit(out, next_kernel()); break;
      case Slot::kPush: emit(out, nvtx(pt::NvtxEvent::kPush)); break;
      case Slot::kPop: emit(out, nvtx(pt::NvtxEvent::kPop)); break;
      case Slot::kNccl: emit(out, nccl()); break;
      case Slot::kMemcpy: emit(out, memcpy_record()); break;
    }
  }

 private:
  template <class R>
  void emit(pt::ThreadBuffer& out, const R& record) {
    out.append(record);
    record_bytes_ += sizeof(R);
  }

  uint32_t jitter() {  // xorshift64
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return static_cast<uint32_t>(rng_);
  }

  pt::KernelRecord next_kernel() {
    const uint8_t shape_index = kLayerProgram[layer_at_];
    layer_at_ = (layer_at_ + 1) % std::size(kLayerProgram);
    const KernelShape& shape = kShapes[shape_index];
    auto r = pt::make_record<pt::KernelRecord>();
    r.device = device_;
    now_ns_ += 900 + (jitter() & 2047);  // launch gap
    r.start_ns = now_ns_;
    now_ns_ += shape.mean_duration_ns + (jitter() & 8191);
    r.end_ns = now_ns_;
    r.stream = 7;
    r.correlation_id = ++correlation_id_;
    r.name_id = (*name_ids_)[shape_index];
    r.grid_x = shape.grid_x;
    r.grid_y = shape.grid_y;
    r.grid_z = 1;
    r.block_x = shape.block_x;
    r.block_y = 1;
    r.block_z = 1;
    r.registers_per_thread = shape.registers_per_thread;
    r.dynamic_shared_bytes = shape.dynamic_shared_bytes;
    return r;
  }

  pt::NvtxRecord nvtx(pt::NvtxEvent event) {
    auto r = pt::make_record<pt::NvtxRecord>();
    r.event = static_cast<uint8_t>(event);
    r.timestamp_ns = now_ns_ + (jitter() & 1023);
    if (event == pt::NvtxEvent::kPush) {
      r.name_id = (*name_ids_)[kFirstRangeName + (range_count_++ & 1)];  // forward / backward
    }
    r.thread_id = 4242 + device_;
    return r;
  }

  pt::NcclOpRecord nccl() {
    auto r = pt::make_record<pt::NcclOpRecord>();
    r.device = device_;
    r.comm_id = 0x51A7E0C0FFEEull;
    r.sequence = ++nccl_sequence_;
    r.count = 25'165'824;  // one bucket of bf16 gradients
    r.bytes = r.count * 2;
    r.stream = 0x7f3a5c001200ull;
    r.host_enter_ns = now_ns_ + (jitter() & 4095);
    r.host_exit_ns = r.host_enter_ns + 9'000 + (jitter() & 4095);
    r.external_correlation_id = correlation_id_;
    r.peer = pt::kNoPeer;
    r.thread_id = 4242 + device_;
    r.op = static_cast<uint8_t>(nccl_sequence_ & 1 ? pt::NcclOpType::kReduceScatter
                                                   : pt::NcclOpType::kAllGather);
    r.datatype = 9;  // ncclBfloat16
    r.reduce_op = (nccl_sequence_ & 1) ? 0 : 0xFF;
    return r;
  }

  pt::MemcpyRecord memcpy_record() {
    auto r = pt::make_record<pt::MemcpyRecord>();
    r.device = device_;
    now_ns_ += 500 + (jitter() & 1023);
    r.start_ns = now_ns_;
    now_ns_ += 20'000 + (jitter() & 16383);
    r.end_ns = now_ns_;
    r.stream = 13;
    r.correlation_id = ++correlation_id_;
    r.bytes = 4096u * (1 + (jitter() & 255));
    r.copy_kind = static_cast<uint8_t>(pt::CopyKind::kHostToDevice);
    r.src_kind = static_cast<uint8_t>(pt::MemoryKind::kPinned);
    r.dst_kind = static_cast<uint8_t>(pt::MemoryKind::kDevice);
    r.flags = pt::kActivityFlagAsync;
    r.peer_device = pt::kUnknownDevice;
    return r;
  }

  uint32_t device_;
  const std::vector<uint32_t>* name_ids_;
  uint64_t rng_;
  uint64_t now_ns_ = 1'700'000'000'000'000'000ull;
  uint32_t correlation_id_ = 0;
  uint64_t nccl_sequence_ = 0;
  uint32_t range_count_ = 0;
  size_t layer_at_ = 0;
  size_t mix_at_ = 0;
  uint64_t record_bytes_ = 0;
};

std::vector<uint32_t> intern_names(pt::TraceWriter& writer) {
  std::vector<uint32_t> ids;
  for (const char* name : kKernelNames) ids.push_back(writer.intern(name));
  for (const char* name : kRangeNames) ids.push_back(writer.intern(name));
  return ids;
}

void append_records(RecordSource& source, pt::ThreadBuffer& buffer, Workload workload, size_t count) {
  if (workload == Workload::kKernels) {
    for (size_t i = 0; i < count; ++i) source.append_kernel(buffer);
  } else {
    for (size_t i = 0; i < count; ++i) source.append_mixed(buffer);
  }
}

pt::WriterOptions writer_options(bool compress) {
  pt::WriterOptions options;
  options.compress = compress;
  // The producer does the whole path itself: no flusher thread to hide any of the cost.
  options.when_full = pt::FullBufferPolicy::kDrainInline;
  return options;
}

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// ---- Writing --------------------------------------------------------------------------------

// What the threads of one run share. Made by Setup before the threads start and destroyed by
// Teardown after they end, so no thread ever sees it half-built.
struct WriteRun {
  explicit WriteRun(int threads) : sync(threads) {}
  std::barrier<> sync;
  std::unique_ptr<pt::TraceWriter> writer;  // one file per iteration
  std::vector<uint32_t> name_ids;
  std::string error;  // written by thread 0 before a barrier, read by all after it
  uint64_t files = 0;
};
std::unique_ptr<WriteRun> g_write_run;

void SetupWriteRun(const benchmark::State& state) {
  g_write_run = std::make_unique<WriteRun>(state.threads());
}
void TeardownWriteRun(const benchmark::State&) { g_write_run.reset(); }

// Each iteration writes one whole file: thread 0 creates it, every thread appends
// kRecordsPerThread records through its own ThreadBuffer, thread 0 closes it (the final drain,
// the end chunk, close(2)), all inside the timed region. Deleting it is not timed.
void BM_Write(benchmark::State& state, Workload workload) {
  WriteRun& run = *g_write_run;
  const bool compress = state.range(0) != 0;
  const bool leader = state.thread_index() == 0;
  std::vector<uint32_t> name_ids;
  uint64_t stored_bytes_per_file = 0;
  uint64_t my_records = 0;
  uint64_t my_bytes = 0;
  std::unique_ptr<RecordSource> source;

  for (auto _ : state) {
    if (leader) {
      const std::string path = g_bench_dir + "/write-" + std::to_string(run.files++) + ".pst";
      auto writer = pt::TraceWriter::create(path, writer_options(compress));
      if (writer.ok()) {
        run.writer = std::move(*writer);
        run.name_ids = intern_names(*run.writer);
      } else {
        run.error = writer.error().message;
      }
    }
    run.sync.arrive_and_wait();
    if (!run.error.empty()) {
      state.SkipWithError(run.error.c_str());
      break;
    }
    if (!source) {
      name_ids = run.name_ids;
      source = std::make_unique<RecordSource>(static_cast<uint32_t>(state.thread_index()), &name_ids);
    }
    pt::ThreadBuffer* buffer = run.writer->register_thread();
    const uint64_t bytes_before = source->record_bytes();
    append_records(*source, *buffer, workload, kRecordsPerThread);
    run.writer->retire_thread(buffer);
    my_records += kRecordsPerThread;
    my_bytes += source->record_bytes() - bytes_before;
    run.sync.arrive_and_wait();

    if (leader) {
      const uint64_t expected = kRecordsPerThread * static_cast<uint64_t>(state.threads());
      if (pipescope::Status s = run.writer->close(); !s.ok()) {
        run.error = s.error().message;
      } else if (run.writer->records_written() != expected || run.writer->records_dropped() != 0) {
        run.error = "records lost: " + std::to_string(run.writer->records_written()) + " of " +
                    std::to_string(expected) + " written";
      }
    }
    run.sync.arrive_and_wait();  // every thread's clock includes the close
    if (!run.error.empty()) {
      state.SkipWithError(run.error.c_str());
      break;
    }

    state.PauseTiming();
    if (leader) {
      const std::string path = run.writer->path();
      stored_bytes_per_file = file_bytes(path);
      run.writer.reset();
      ::unlink(path.c_str());
    }
    run.sync.arrive_and_wait();
    state.ResumeTiming();
  }

  // Counters are summed over threads; rates are per second of wall-clock time (UseRealTime).
  state.counters["records"] =
      benchmark::Counter(static_cast<double>(my_records), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(my_bytes));
  if (leader && state.iterations() > 0 && stored_bytes_per_file > 0) {
    // Every thread appends the same records, so one file holds threads x this thread's share.
    const double raw_bytes_per_file =
        static_cast<double>(my_bytes) / static_cast<double>(state.iterations()) * state.threads();
    // Record bytes over file bytes: a little under 1 uncompressed (chunk headers, strings).
    state.counters["compression_ratio"] = raw_bytes_per_file / static_cast<double>(stored_bytes_per_file);
  }
}

void BM_WriteKernels(benchmark::State& state) { BM_Write(state, Workload::kKernels); }
void BM_WriteMix(benchmark::State& state) { BM_Write(state, Workload::kMix); }

// ---- Reading --------------------------------------------------------------------------------

struct DecodeFile {
  std::string path;
  uint64_t records = 0;
  uint64_t record_bytes = 0;
  uint64_t file_bytes = 0;
  std::string error;
};

// One file per (workload, compression), written on first use and kept for the process.
const DecodeFile& decode_file(Workload workload, bool compress) {
  static std::map<std::pair<Workload, bool>, DecodeFile> files;
  auto [it, inserted] = files.try_emplace({workload, compress});
  DecodeFile& file = it->second;
  if (!inserted) return file;
  file.path = g_bench_dir + "/decode-" + (workload == Workload::kKernels ? "kernels" : "mix") +
              (compress ? "-zstd" : "") + ".pst";
  auto writer = pt::TraceWriter::create(file.path, writer_options(compress));
  if (!writer.ok()) {
    file.error = writer.error().message;
    return file;
  }
  const std::vector<uint32_t> name_ids = intern_names(**writer);
  RecordSource source(0, &name_ids);
  pt::ThreadBuffer* buffer = (*writer)->register_thread();
  append_records(source, *buffer, workload, kRecordsPerThread);
  if (pipescope::Status s = (*writer)->close(); !s.ok()) file.error = s.error().message;
  file.records = kRecordsPerThread;
  file.record_bytes = source.record_bytes();
  file.file_bytes = file_bytes(file.path);
  return file;
}

// Something of every record, so that the decode cannot be optimized away.
struct Totals {
  uint64_t kernel_ns = 0;
  uint64_t kernel_threads = 0;
  uint64_t copy_bytes = 0;
  uint64_t nccl_bytes = 0;
  int64_t nvtx_depth = 0;
  uint64_t other = 0;
};

void accumulate(const pt::RecordView& record, Totals& totals) {
  switch (record.kind) {
    case pt::RecordKind::kKernel: {
      pt::KernelRecord k;
      if (record.decode(k)) {
        totals.kernel_ns += k.end_ns - k.start_ns;
        totals.kernel_threads += uint64_t{k.grid_x} * k.grid_y * k.grid_z * k.block_x * k.block_y * k.block_z;
      }
      break;
    }
    case pt::RecordKind::kMemcpy: {
      pt::MemcpyRecord m;
      if (record.decode(m)) totals.copy_bytes += m.bytes;
      break;
    }
    case pt::RecordKind::kNcclOp: {
      pt::NcclOpRecord n;
      if (record.decode(n)) totals.nccl_bytes += n.bytes;
      break;
    }
    case pt::RecordKind::kNvtx: {
      pt::NvtxRecord n;
      if (record.decode(n))
        totals.nvtx_depth += n.event == static_cast<uint8_t>(pt::NvtxEvent::kPush) ? 1 : -1;
      break;
    }
    default: ++totals.other; break;
  }
}

// Each iteration maps the file, opens it, checks and (when compressed) inflates every chunk,
// and decodes every record into its struct. The file sits in the page cache: this measures
// the decoder, not the disk.
void BM_Decode(benchmark::State& state, Workload workload) {
  const DecodeFile& file = decode_file(workload, state.range(0) != 0);
  if (!file.error.empty()) {
    state.SkipWithError(file.error.c_str());
    return;
  }
  for (auto _ : state) {
    auto mapped = pt::MappedFile::open(file.path);
    if (!mapped.ok()) {
      state.SkipWithError(mapped.error().message.c_str());
      break;
    }
    auto decoder = pt::TraceDecoder::open(mapped->bytes());
    if (!decoder.ok()) {
      state.SkipWithError(decoder.error().message.c_str());
      break;
    }
    Totals totals;
    uint64_t records = 0;
    pt::ChunkView chunk;
    while (decoder->next_chunk(chunk)) {
      if (chunk.type != pt::ChunkType::kRecords) continue;
      pt::RecordCursor cursor(chunk.payload);
      pt::RecordView record;
      while (cursor.next(record)) {
        accumulate(record, totals);
        ++records;
      }
    }
    benchmark::DoNotOptimize(totals);
    if (decoder->stop_reason() != pt::StopReason::kEndOfData || records != file.records) {
      state.SkipWithError("decoded a different number of records than were written");
      break;
    }
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["records"] = benchmark::Counter(iterations * file.records, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file.record_bytes));
  state.counters["compression_ratio"] = static_cast<double>(file.record_bytes) / file.file_bytes;
}

void BM_DecodeKernels(benchmark::State& state) { BM_Decode(state, Workload::kKernels); }
void BM_DecodeMix(benchmark::State& state) { BM_Decode(state, Workload::kMix); }

void write_args(benchmark::internal::Benchmark* b) {
  b->ArgName("zstd")->Arg(0)->Arg(1)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  b->Setup(SetupWriteRun)->Teardown(TeardownWriteRun);
}
void decode_args(benchmark::internal::Benchmark* b) {
  b->ArgName("zstd")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_WriteKernels)->Apply(write_args);
BENCHMARK(BM_WriteMix)->Apply(write_args);
BENCHMARK(BM_DecodeKernels)->Apply(decode_args);
BENCHMARK(BM_DecodeMix)->Apply(decode_args);

const char* filesystem_name(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0xEF53: return "ext4";  // the ext2/3/4 family share one magic
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794C7630: return "overlayfs";
    case 0x6969: return "nfs";
    case 0x2FC12FC1: return "zfs";
    default: return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  g_bench_dir = std::string(base != nullptr && *base != '\0' ? base : "/var/tmp") +
                "/pipescope-trace-bench." + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(g_bench_dir, ec);
  if (ec) {
    std::fprintf(stderr, "trace_benchmark: cannot create %s: %s\n", g_bench_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  const std::string fs = filesystem_name(g_bench_dir);
  if (fs == "tmpfs") {
    std::fprintf(stderr,
                 "trace_benchmark: %s is on tmpfs, so nothing reaches a disk; "
                 "set PIPESCOPE_BENCH_DIR to a disk-backed directory\n",
                 g_bench_dir.c_str());
  }
  benchmark::AddCustomContext("trace_dir", g_bench_dir);
  benchmark::AddCustomContext("trace_dir_filesystem", fs);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(g_bench_dir, ec);
  return 0;
}
