// nccl_benchmark: the collectives of the calibration suite (docs/calibration-results.md), one
// process per GPU. The job's shape comes from the launcher's environment (launch_env.h); with
// none it is one rank, which NCCL supports. Flags: --quick, --rendezvous FILE, then Google
// Benchmark's. Only rank 0 reports; the others run the same benchmarks silently.
// Without a usable GPU: one "no GPU" line on stderr, no output file, exit 0.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cuda_check.h"
#include "device_context.h"
#include "device_state.h"
#include "gpu_timing.h"
#include "launch_env.h"
#include "nccl_benchmark.h"
#include "nccl_comm.h"
#include "suite_args.h"

namespace {

using namespace pipescope::benches;

// How long a rank waits for rank 0's NCCL id: PIPESCOPE_RENDEZVOUS_TIMEOUT_S, default 300 s
// (rank 0 may start late on a busy node).
double rendezvous_timeout_s() {
  const char* text = std::getenv("PIPESCOPE_RENDEZVOUS_TIMEOUT_S");
  const double value = text != nullptr ? std::atof(text) : 0;
  return value > 0 ? value : 300;
}

// What the ranks other than 0 report: nothing (but the context must be accepted, or Google
// Benchmark would run nothing there and leave rank 0 alone in its collectives).
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// Ranks other than 0 write no file, whatever --benchmark_out says.
void drop_output_flags(int& argc, char** argv) {
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.rfind("--benchmark_out=", 0) == 0 || arg.rfind("--benchmark_out_format=", 0) == 0) continue;
    argv[kept++] = argv[i];
  }
  argc = kept;
}

}  // namespace

int main(int argc, char** argv) {
  set_program_name("nccl_benchmark");
  const SuiteArgs args = take_suite_args(argc, argv);
  if (!args.error.empty()) {
    std::fprintf(stderr, "nccl_benchmark: %s\n", args.error.c_str());
    return 2;
  }
  const auto env = read_launch_env([](const char* name) { return std::getenv(name); });
  if (!env.ok()) {
    std::fprintf(stderr, "nccl_benchmark: %s\n", env.error().message.c_str());
    return 2;
  }
  if (const std::string reason = no_gpu_reason(); !reason.empty()) {
    std::fprintf(stderr, "%s\n", reason.c_str());
    return 0;
  }
  int devices = 0;
  PIPESCOPE_CUDA(cudaGetDeviceCount(&devices));
  const int device = (env->local_rank >= 0 ? env->local_rank : env->rank) % devices;
  open_device(device, "nccl", args.command);
  std::string rendezvous = args.rendezvous;
  if (const char* from_env = std::getenv("PIPESCOPE_RENDEZVOUS"); rendezvous.empty() && from_env != nullptr)
    rendezvous = from_env;

  // The benchmarks' buffers first, so that the communicator's own memory is measured alone.
  const size_t buffer_bytes = static_cast<size_t>(nccl_buffer_bytes(args.quick));
  void* send = nullptr;
  void* recv = nullptr;
  const cudaStream_t stream = gpu_timer().stream;
  NcclJob job;
  job.rank = env->rank;
  job.ranks = env->world_size;
  if (!args.list_only) {
    PIPESCOPE_CUDA(cudaMalloc(&send, buffer_bytes));
    PIPESCOPE_CUDA(cudaMalloc(&recv, buffer_bytes));
    PIPESCOPE_CUDA(cudaMemset(send, 0, buffer_bytes));
    PIPESCOPE_CUDA(cudaMemset(recv, 0, buffer_bytes));
  }
  register_device_state_benchmark("warm");
  register_nccl_benchmarks(job, env->world_size, args.quick, send, recv, stream);
  register_device_state_benchmark("end");
  // A listing creates no communicator: `pipescope calibrate run` lists before it runs.
  if (!args.list_only) {
    job = open_nccl_job(*env, rendezvous, rendezvous_timeout_s(), stream, recv, buffer_bytes);
    benchmark::AddCustomContext("nccl_buffer_bytes_per_communicator", job.buffer_bytes);
    benchmark::AddCustomContext("nodes", std::to_string(job.nodes));
    benchmark::AddCustomContext("gpus_per_node", std::to_string(job.gpus_per_node));
  }
  benchmark::AddCustomContext("nccl_version", nccl_version_text());
  benchmark::AddCustomContext("ranks", std::to_string(env->world_size));
  if (env->rank != 0) drop_output_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (env->rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  if (job.comm != nullptr) PIPESCOPE_NCCL(ncclCommDestroy(job.comm));
  return 0;
}
