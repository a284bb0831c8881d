#include "kineto_trace.h"

#include <zlib.h>

#include <sys/stat.h>
#include <cstdarg>
#include <cstdio>
#include <memory>

namespace pipescope::synthetic {
namespace {

// Plain or gzip output, in large writes.
class Output {
 public:
  static Expected<std::unique_ptr<Output>> open(const std::string& path, bool gzip) {
    auto out = std::unique_ptr<Output>(new Output);
    if (gzip) {
      out->gz_ = gzopen(path.c_str(), "wb1");
      if (out->gz_ == nullptr) return Error("cannot write " + path);
    } else {
      out->file_ = std::fopen(path.c_str(), "wb");
      if (out->file_ == nullptr) return Error("cannot write " + path);
    }
    out->buffer_.reserve(kFlushBytes + 4096);
    return out;
  }
  ~Output() { close(); }

  void printf(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char line[2048];
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(line, sizeof(line), format, args);
    va_end(args);
    if (n > 0) append(line, std::min<size_t>(static_cast<size_t>(n), sizeof(line) - 1));
  }
  void append(const char* text, size_t n) {
    buffer_.append(text, n);
    written_ += n;
    if (buffer_.size() >= kFlushBytes) flush();
  }
  uint64_t written() const { return written_; }

  bool close() {
    flush();
    bool ok = ok_;
    if (gz_ != nullptr) ok = gzclose(gz_) == Z_OK && ok;
    if (file_ != nullptr) ok = std::fclose(file_) == 0 && ok;
    gz_ = nullptr;
    file_ = nullptr;
    return ok;
  }

 private:
  static constexpr size_t kFlushBytes = size_t{4} << 20;
  void flush() {
    if (buffer_.empty()) return;
    if (gz_ != nullptr) ok_ = gzwrite(gz_, buffer_.data(), static_cast<unsigned>(buffer_.size())) > 0 && ok_;
    if (file_ != nullptr)
      ok_ = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size() && ok_;
    buffer_.clear();
  }
  gzFile gz_ = nullptr;
  FILE* file_ = nullptr;
  std::string buffer_;
  uint64_t written_ = 0;
  bool ok_ = true;
};

struct Operator {
  const char* cpu_name;
  const char* kernel_name;
  double gpu_us;
  int grid, block, registers, shared_bytes;
};

// A decoder layer's operators as an H100 runs them under FSDP (times in microseconds).
constexpr Operator kForward[] = {
    {"aten::rms_norm",
     "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
     "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     18, 8192, 256, 40, 0},
    {"aten::mm",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
     "kernel__5x_cublas",
     210, 132, 384, 168, 213248},
    {"flash_attn::_flash_attn_forward",
     "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, "
     "false, true, true, false, false>(flash::Flash_fwd_params)",
     420, 1024, 128, 255, 49152},
    {"aten::mm",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
     "kernel__5x_cublas",
     95, 132, 256, 168, 164864},
    {"aten::add",
     "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "at::detail::Array<char*, 3>)",
     22, 16384, 128, 28, 0},
    {"aten::mm",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
     "kernel__5x_cublas",
     330, 132, 384, 168, 213248},
    {"aten::silu",
     "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
     "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
     "const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, "
     "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
     "const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
     35, 16384, 128, 24, 0},
    {"aten::mm",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
     "kernel__5x_cublas",
     170, 132, 384, 168, 213248},
};

class Writer {
 public:
  Writer(Output& out, const KinetoTraceSpec& spec, KinetoTraceTruth& truth)
      : out_(out), spec_(spec), truth_(truth) {}

  void header() {
    out_.printf(
        "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": \"NVIDIA "
        "H100 80GB "
        "HBM3\", \"totalGlobalMem\": 84929347584,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      "
        "\"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": "
        "65536, "
        "\"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    }\n  ],\n  "
        "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, \"pg_count\": 2},\n  "
        "\"traceEvents\": [\n",
        spec_.rank, spec_.world_size);
  }

  void steps() {
    while (out_.written() < spec_.json_bytes) step();
  }

  void footer() {
    out_.printf(
        "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": "
        "\"\",\n    "
        "\"ts\": %.3f\n  }\n],\n  \"traceName\": \"rank%d.pt.trace.json\",\n  \"displayTimeUnit\": "
        "\"ms\"\n}\n",
        cpu_us_, spec_.rank);
    ++truth_.events;
  }

 private:
  static constexpr int kPid = 412345;
  static constexpr int kTid = 412345;
  static constexpr int kComputeStream = 7;
  static constexpr int kNcclStream = 20;

  void step() {
    const double start = cpu_us_;
    const uint64_t external = next_external_++;
    for (int layer = 0; layer < spec_.layers; ++layer) {
      if (spec_.world_size > 1) collective(true, layer);
      for (const Operator& op : kForward) operator_call(op, 1.0);
    }
    for (int layer = spec_.layers - 1; layer >= 0; --layer) {
      for (const Operator& op : kForward) operator_call(op, 1.0);  // the recomputed forward
      for (const Operator& op : kForward) operator_call(op, 2.0);  // its gradients
      if (spec_.world_size > 1) collective(false, layer);
    }
    copy("Memcpy DtoD (Device -> Device)", 16 << 20);
    memset_call(8);
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lu\", \"pid\": %d, "
        "\"tid\": %d,\n"
        "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lu, \"Record function "
        "id\": 0, "
        "\"Ev Idx\": %lu\n    }\n  },\n",
        static_cast<unsigned long>(truth_.steps), kPid, kTid, start, cpu_us_ - start,
        static_cast<unsigned long>(external), static_cast<unsigned long>(truth_.events));
    ++truth_.events;
    ++truth_.steps;
    cpu_us_ += 50;
  }

  void cpu_op(const char* name, double ts, double dur, uint64_t external, const char* dims,
              const char* types) {
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n    "
        "\"ts\": %.3f, "
        "\"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lu,\"Record function id\": 0, \"Ev Idx\": "
        "%lu, "
        "\"Input Dims\": %s, \"Input type\": %s, \"Concrete Inputs\": [\"\", \"\"], \"Fwd thread id\": 0, "
        "\"Sequence number\": %lu\n    }\n  },\n",
        name, kPid, kTid, ts, dur, static_cast<unsigned long>(external),
        static_cast<unsigned long>(truth_.events), dims, types, static_cast<unsigned long>(external / 2));
    ++truth_.events;
  }

  // A launch on the CPU, its kernel on `stream`, and the flow events between them.
  void launch(const char* kernel, double gpu_us, int stream, uint64_t external, const Operator& shape) {
    const uint64_t correlation = next_correlation_++;
    const double launch_ts = cpu_us_;
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": %d, "
        "\"tid\": %d,\n "
        "   \"ts\": %.3f, \"dur\": 4.120,\n    \"args\": {\n      \"External id\": %lu, \"cbid\": 211, "
        "\"correlation\": %lu\n    }\n  },\n",
        kPid, kTid, launch_ts, static_cast<unsigned long>(external), static_cast<unsigned long>(correlation));
    double& free_at = stream == kNcclStream ? nccl_free_us_ : compute_free_us_;
    const double start = std::max(free_at, launch_ts + 6.0);
    free_at = start + gpu_us;
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d,\n    "
        "\"ts\": %.3f, "
        "\"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lu,\n      \"queued\": 0, \"device\": 0, "
        "\"context\": 1,\n      \"stream\": %d, \"correlation\": %lu,\n      \"registers per thread\": %d,\n "
        "     "
        "\"shared memory\": %d,\n      \"blocks per SM\": %.6f,\n      \"warps per SM\": %.6f,\n      "
        "\"grid\": [%d, 1, "
        "1],\n      \"block\": [%d, 1, 1],\n      \"est. achieved occupancy %%\": 0\n    }\n  },\n",
        kernel, stream, start, gpu_us, static_cast<unsigned long>(external), stream,
        static_cast<unsigned long>(correlation), shape.registers, shape.shared_bytes, shape.grid / 132.0,
        shape.grid * shape.block / 32.0 / 132.0, shape.grid, shape.block);
    out_.printf(
        "  {\n    \"ph\": \"s\", \"id\": %lu, \"pid\": %d, \"tid\": %d, \"ts\": %.3f,\n    \"cat\": "
        "\"ac2g\", \"name\": "
        "\"ac2g\"\n  },\n  {\n    \"ph\": \"f\", \"id\": %lu, \"pid\": 0, \"tid\": %d, \"ts\": %.3f,\n    "
        "\"cat\": "
        "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },\n",
        static_cast<unsigned long>(correlation), kPid, kTid, launch_ts,
        static_cast<unsigned long>(correlation), stream, start);
    truth_.events += 4;
    ++truth_.kernels;
    cpu_us_ += 5;
  }

  void memory(int64_t bytes, uint64_t address) {
    out_.printf(
        "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    "
        "\"pid\": %d, "
        "\"tid\": %d,\n    \"ts\": %.3f,\n    \"args\": {\n      \"Total Reserved\": 60129542144, \"Total "
        "Allocated\": "
        "%ld, \"Bytes\": %ld, \"Addr\": %lu, \"Device Id\": 0, \"Device Type\": 1\n    }\n  },\n",
        kPid, kTid, cpu_us_, static_cast<long>(allocated_), static_cast<long>(bytes),
        static_cast<unsigned long>(address));
    allocated_ += bytes;
    ++truth_.events;
    ++(bytes > 0 ? truth_.allocations : truth_.releases);
  }

  void operator_call(const Operator& op, double scale) {
    const uint64_t external = next_external_++;
    const double start = cpu_us_;
    const uint64_t address = 139'800'000'000'000ULL + (external % 4096) * (uint64_t{64} << 20);
    memory(int64_t{64} << 20, address);
    cpu_us_ += 3;
    launch(op.kernel_name, op.gpu_us * scale, kComputeStream, external, op);
    cpu_us_ += 2;
    cpu_op(op.cpu_name, start, cpu_us_ - start, external, "[[8192, 4096], [4096, 4096]]",
           "[\"c10::BFloat16\", \"c10::BFloat16\"]");
    memory(-(int64_t{64} << 20), address);
  }

  // A layer's parameters gathered before its forward, or its gradients reduce-scattered after
  // its backward, over the whole world: 8,192 x 4,096 bf16 elements per layer in all.
  void collective(bool gather, int layer) {
    const uint64_t external = next_external_++;
    const uint64_t whole = uint64_t{8192} * 4096;
    const uint64_t shard = whole / static_cast<uint64_t>(spec_.world_size);
    const double start = cpu_us_;
    std::string ranks = "[";
    for (int r = 0; r < spec_.world_size; ++r) ranks += (r > 0 ? ", " : "") + std::to_string(r);
    ranks += "]";
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": %d, "
        "\"tid\": %d,\n    "
        "\"ts\": %.3f, \"dur\": 40.000,\n    \"args\": {\n      \"External id\": %lu,\"Record function id\": "
        "0, "
        "\"Collective name\": \"%s\", \"dtype\": \"BFloat16\", \"In msg nelems\": %lu, \"Out msg nelems\": "
        "%lu, "
        "\"Group size\": %d, \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", "
        "\"Process Group Ranks\": \"%s\", \"Rank\": %d\n    }\n  },\n",
        kPid, kTid, start, static_cast<unsigned long>(external),
        gather ? "_allgather_base" : "_reduce_scatter_base",
        static_cast<unsigned long>(gather ? shard : whole),
        static_cast<unsigned long>(gather ? whole : shard), spec_.world_size, ranks.c_str(), spec_.rank);
    char dims[128];
    std::snprintf(dims, sizeof(dims), "[[%lu], [%lu]]", static_cast<unsigned long>(gather ? whole : shard),
                  static_cast<unsigned long>(gather ? shard : whole));
    cpu_op(gather ? "c10d::_allgather_base_" : "c10d::_reduce_scatter_base_", start + 1, 38, external, dims,
           "[\"c10::BFloat16\", \"c10::BFloat16\"]");
    cpu_us_ += 2;
    const double annotated = cpu_us_;
    const double gpu_us = 2.0 * static_cast<double>(whole) / 400e3;  // 400 GB/s of bus bandwidth
    const Operator nccl{"", "", gpu_us, 32, 640, 96, 0};
    launch(gather ? "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                  : "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           gpu_us, kNcclStream, external, nccl);
    ++truth_.nccl_kernels;
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:%s\", \"pid\": %d, \"tid\": "
        "%d,\n    "
        "\"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lu, \"Input Dims\": [[%lu]], "
        "\"Input type\": [\"c10::BFloat16\"], \"layer\": %d\n    }\n  },\n",
        gather ? "_all_gather_base" : "_reduce_scatter_base", kPid, kTid, annotated, cpu_us_ - annotated + 1,
        static_cast<unsigned long>(external), static_cast<unsigned long>(gather ? shard : whole), layer);
    truth_.events += 1;
    ++truth_.nccl_calls;
    cpu_us_ = std::max(cpu_us_, start + 40.0) + 1;
  }

  void copy(const char* name, uint64_t bytes) {
    const uint64_t correlation = next_correlation_++;
    const double start = std::max(compute_free_us_, cpu_us_ + 6);
    compute_free_us_ = start + static_cast<double>(bytes) / 2e6;
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d,\n    "
        "\"ts\": %.3f, "
        "\"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lu,\n      \"device\": 0, \"context\": "
        "1,\n      "
        "\"stream\": %d, \"correlation\": %lu,\n      \"bytes\": %lu, \"memory bandwidth (GB/s)\": 2000.0\n  "
        "  }\n  },\n",
        name, kComputeStream, start, compute_free_us_ - start, static_cast<unsigned long>(next_external_++),
        kComputeStream, static_cast<unsigned long>(correlation), static_cast<unsigned long>(bytes));
    ++truth_.events;
    ++truth_.memcpys;
  }

  void memset_call(uint64_t bytes) {
    const uint64_t correlation = next_correlation_++;
    const double start = std::max(compute_free_us_, cpu_us_ + 6);
    compute_free_us_ = start + 1;
    out_.printf(
        "  {\n    \"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, "
        "\"tid\": %d,\n    "
        "\"ts\": %.3f, \"dur\": 1.000,\n    \"args\": {\n      \"External id\": %lu,\n      \"device\": 0, "
        "\"context\": "
        "1,\n      \"stream\": %d, \"correlation\": %lu,\n      \"bytes\": %lu, \"memory bandwidth (GB/s)\": "
        "0.008\n    "
        "}\n  },\n",
        kComputeStream, start, static_cast<unsigned long>(next_external_++), kComputeStream,
        static_cast<unsigned long>(correlation), static_cast<unsigned long>(bytes));
    ++truth_.events;
    ++truth_.memsets;
  }

  Output& out_;
  const KinetoTraceSpec& spec_;
  KinetoTraceTruth& truth_;
  double cpu_us_ = 5'000'000'000.0;  // microseconds, to the nanosecond as Kineto writes them
  double compute_free_us_ = 0, nccl_free_us_ = 0;
  uint64_t next_external_ = 1, next_correlation_ = 1;
  int64_t allocated_ = int64_t{20} << 30;
};

}  // namespace

Expected<KinetoTraceTruth> write_kineto_trace(const KinetoTraceSpec& spec, const std::string& path) {
  if (spec.world_size < 1 || spec.rank < 0 || spec.rank >= spec.world_size || spec.layers < 1)
    return Error("write_kineto_trace: rank, world size or layers out of range");
  auto out = Output::open(path, spec.gzip);
  if (!out) return out.error();
  KinetoTraceTruth truth;
  Writer writer(**out, spec, truth);
  writer.header();
  writer.steps();
  writer.footer();
  truth.json_bytes = (*out)->written();
  if (!(*out)->close()) return Error("cannot write " + path);
  struct stat info {};
  if (stat(path.c_str(), &info) == 0) truth.file_bytes = static_cast<uint64_t>(info.st_size);
  return truth;
}

}  // namespace pipescope::synthetic
