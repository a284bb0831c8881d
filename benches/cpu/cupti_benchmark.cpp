// Cost of turning CUPTI kernel records into trace records (issue 3's target: < 50 ns each), on
// the path the CUPTI buffer-completed callback takes: walk a completed activity buffer, convert
// each CUpti_ActivityKernel10, look its name up, append a KernelRecord to the thread's ring.
// docs/benchmarks.md records the results and the command.
//
// The activity buffer is a realistic one built here: 4,096 kernel records (about 880 KB, a
// fifth of a 4 MiB CUPTI buffer) from a transformer layer's launch sequence over 50 distinct
// mangled names, each name one pointer as CUPTI hands it out. The walker stands in for
// cuptiActivityGetNextRecord (libcupti's own cost is not pipescope's to measure, and needs a
// GPU); it is a pointer increment.
//
// Trace files go to $PIPESCOPE_BENCH_DIR, default /var/tmp, in a directory of this process's own
// that is removed at exit.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cupti_records.h"
#include "pipescope/trace/trace_writer.h"

namespace pi = pipescope::inject;
namespace pt = pipescope::trace;

namespace {

constexpr int kRecordsPerBuffer = 4096;
constexpr int kDistinctNames = 50;

std::string g_bench_dir;  // set in main before any benchmark runs

// 50 names of the lengths real ones have: library GEMMs, PyTorch's templated elementwise and
// reduction kernels, attention, NCCL.
std::vector<std::string> kernel_names() {
  const char* const families[] = {
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
      "kernel__5x_cublas",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
      "at::detail::Array<char*, 3>)",
      "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
      "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true>",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
      "at::native::sum_functor<float, float, float>::operator()>, unsigned int, float, 4> >",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
  };
  std::vector<std::string> names;
  names.reserve(kDistinctNames);
  for (int i = 0; i < kDistinctNames; ++i) {
    names.push_back(std::string(families[i % std::size(families)]) + "_v" + std::to_string(i));
  }
  return names;
}

struct KernelBuffer {
  std::vector<std::string> names;  // the storage CUPTI's name pointers point into
  std::vector<CUpti_ActivityKernel10> records;
};

KernelBuffer make_buffer() {
  KernelBuffer buffer;
  buffer.names = kernel_names();
  buffer.records.resize(kRecordsPerBuffer);
  uint64_t t = 1'000'000'000;
  for (int i = 0; i < kRecordsPerBuffer; ++i) {
    CUpti_ActivityKernel10& a = buffer.records[static_cast<size_t>(i)];
    a = CUpti_ActivityKernel10{};
    a.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    // A layer launches its 50 kernels in one order, over and over; some share a name.
    a.name = buffer.names[static_cast<size_t>((i * 7) % kDistinctNames)].c_str();
    a.start = t;
    a.end = t + 20'000 + static_cast<uint64_t>((i * 2654435761u) % 400'000);
    t = a.end + 1'500;
    a.deviceId = 0;
    a.streamId = 7;
    a.correlationId = static_cast<uint32_t>(10'000 + i);
    a.gridX = 132;
    a.gridY = 2;
    a.gridZ = 1;
    a.blockX = 256;
    a.blockY = 1;
    a.blockZ = 1;
    a.registersPerThread = 168;
    a.dynamicSharedMemory = 73'728;
  }
  return buffer;
}

// cuptiActivityGetNextRecord over a buffer holding only kernel records.
CUptiResult next_kernel(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  uint8_t* next =
      *record == nullptr ? buffer : reinterpret_cast<uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10);
  if (next >= buffer + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

class WriterServices final : public pi::RecordServices {
 public:
  explicit WriterServices(pt::TraceWriter& writer) : writer_(writer) {}
  uint32_t intern(std::string_view text) override { return writer_.intern(text); }
  void add_device(const pt::DeviceInfo&) override {}

 private:
  pt::TraceWriter& writer_;
};

std::unique_ptr<pt::TraceWriter> open_writer(const std::string& path, size_t ring_bytes, bool compress) {
  pt::WriterOptions options;
  options.thread_buffer_bytes = ring_bytes;
  options.compress = compress;
  auto writer = pt::TraceWriter::create(path, options);
  return writer.ok() ? std::move(*writer) : nullptr;
}

pi::ConversionSettings kernels_wanted() {
  pi::ConversionSettings settings;
  settings.record_bits = pt::default_capture_kinds().record_bits;
  static uint32_t generation = 0;
  settings.string_generation = ++generation;  // each benchmark starts with cold name caches
  return settings;
}

// The conversion alone: records go into a 16 MiB ring that the timed loop never fills; it is
// drained, untimed, when it might.
void BM_CuptiKernelIntoRing(benchmark::State& state) {
  KernelBuffer buffer = make_buffer();
  const std::string path = g_bench_dir + "/ring.pst";
  auto writer = open_writer(path, size_t{16} << 20, false);
  if (writer == nullptr) {
    state.SkipWithError("cannot create the trace file");
    return;
  }
  pt::ThreadBuffer* ring = writer->register_thread(pt::FullBufferPolicy::kDrop);
  WriterServices services(*writer);
  pi::ContextDevices contexts;
  const pi::ConversionSettings settings = kernels_wanted();
  auto* bytes = reinterpret_cast<uint8_t*>(buffer.records.data());
  const size_t valid = buffer.records.size() * sizeof(CUpti_ActivityKernel10);
  const int buffers_per_ring =
      static_cast<int>((size_t{16} << 20) / (kRecordsPerBuffer * sizeof(pt::KernelRecord)));
  int in_ring = 0;
  uint64_t lost = 0;
  for (auto _ : state) {
    if (in_ring == buffers_per_ring - 1) {
      state.PauseTiming();
      (void)writer->flush();
      in_ring = 0;
      state.ResumeTiming();
    }
    const pi::BufferStats stats =
        pi::process_activity_buffer(bytes, valid, &next_kernel, settings, services, contexts, *ring);
    lost += stats.ring_full;
    ++in_ring;
  }
  if (lost != 0) state.SkipWithError("the ring filled up: the measurement includes dropped records");
  state.SetItemsProcessed(state.iterations() * kRecordsPerBuffer);
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kRecordsPerBuffer,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  (void)writer->close();
  std::error_code ec;
  std::filesystem::remove(path, ec);
}
BENCHMARK(BM_CuptiKernelIntoRing)->Unit(benchmark::kMillisecond);

// End to end on the CUPTI thread as the library runs it: a 4 MiB ring (PIPESCOPE_BUFFER_MB's
// default) that the converting thread drains itself when full, framing (and, with arg 1,
// zstd-compressing) chunks and writing them to a file. A new file every 16 MiB of records,
// untimed, keeps the disk use small.
void BM_CuptiKernelIntoTraceFile(benchmark::State& state) {
  const bool compress = state.range(0) != 0;
  KernelBuffer buffer = make_buffer();
  auto* bytes = reinterpret_cast<uint8_t*>(buffer.records.data());
  const size_t valid = buffer.records.size() * sizeof(CUpti_ActivityKernel10);
  const std::string path = g_bench_dir + "/file.pst";
  std::unique_ptr<pt::TraceWriter> writer;
  pt::ThreadBuffer* ring = nullptr;
  std::unique_ptr<WriterServices> services;
  pi::ContextDevices contexts;
  pi::ConversionSettings settings;
  constexpr int kBuffersPerFile = 64;
  int in_file = kBuffersPerFile;
  for (auto _ : state) {
    if (in_file == kBuffersPerFile) {
      state.PauseTiming();
      if (writer != nullptr) (void)writer->close();
      std::error_code ec;
      std::filesystem::remove(path, ec);
      writer = open_writer(path, size_t{4} << 20, compress);
      if (writer == nullptr) {
        state.SkipWithError("cannot create the trace file");
        break;
      }
      ring = writer->register_thread(pt::FullBufferPolicy::kDrainInline);
      services = std::make_unique<WriterServices>(*writer);
      settings = kernels_wanted();  // a new file: names are interned again
      in_file = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(
        pi::process_activity_buffer(bytes, valid, &next_kernel, settings, *services, contexts, *ring));
    ++in_file;
  }
  state.SetItemsProcessed(state.iterations() * kRecordsPerBuffer);
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kRecordsPerBuffer,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (writer != nullptr) (void)writer->close();
  std::error_code ec;
  std::filesystem::remove(path, ec);
}
BENCHMARK(BM_CuptiKernelIntoTraceFile)->ArgName("zstd")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  g_bench_dir = std::string(base != nullptr && *base != '\0' ? base : "/var/tmp") +
                "/pipescope-cupti-bench." + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(g_bench_dir, ec);
  if (ec) {
    std::fprintf(stderr, "cupti_benchmark: cannot create %s: %s\n", g_bench_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  benchmark::AddCustomContext("trace_dir", g_bench_dir);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(g_bench_dir, ec);
  return 0;
}
