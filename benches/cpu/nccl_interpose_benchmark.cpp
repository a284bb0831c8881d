// Cost of an intercepted NCCL call over the uninstrumented call (target: < 100 ns). The "real"
// NCCL is a stand-in that returns at once, injected through NcclLibrary's test seam, so the
// difference between the two rows is what the interposer adds to every ncclAllReduce: the
// lookup of the communicator, the sequence number, two clock reads and the 88-byte record
// appended to the thread's ring. docs/benchmarks.md records the results and the command.
//
// The trace goes to $PIPESCOPE_BENCH_DIR (default /var/tmp) in a directory of this process's
// own, removed at exit. Rings are flushed outside the timed region every kFlushEvery calls, so
// every timed append lands in a ring with room (a full ring drops the record, which is cheaper).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "nccl_recorder.h"

namespace pin = pipescope::inject;
namespace pnccl = pipescope::inject::nccl;

namespace {

constexpr int kFlushEvery = 4096;  // 360 KiB of records, well inside a 4 MiB ring

std::string g_bench_dir;  // set in main before any benchmark runs

struct StandInComm {
  int rank = 0;
  int size = 8;
} g_comm;

__attribute__((noinline)) ncclResult_t stand_in_all_reduce(const void*, void*, size_t count, ncclDataType_t,
                                                           ncclRedOp_t, ncclComm_t, cudaStream_t) {
  benchmark::DoNotOptimize(count);
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t stand_in_send(const void*, size_t count, ncclDataType_t, int,
                                                     ncclComm_t, cudaStream_t) {
  benchmark::DoNotOptimize(count);
  return ncclSuccess;
}
ncclResult_t stand_in_init_rank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = reinterpret_cast<ncclComm_t>(&g_comm);
  return ncclSuccess;
}
ncclResult_t stand_in_group() { return ncclSuccess; }
ncclResult_t stand_in_async_error(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t stand_in_rank(ncclComm_t, int* rank) {
  *rank = g_comm.rank;
  return ncclSuccess;
}
ncclResult_t stand_in_count(ncclComm_t, int* size) {
  *size = g_comm.size;
  return ncclSuccess;
}
ncclResult_t stand_in_device(ncclComm_t, int* device) {
  *device = 0;
  return ncclSuccess;
}

pnccl::NcclFunctions stand_in_functions() {
  pnccl::NcclFunctions functions;
  functions.comm_init_rank = stand_in_init_rank;
  functions.all_reduce = stand_in_all_reduce;
  functions.send = stand_in_send;
  functions.group_start = stand_in_group;
  functions.group_end = stand_in_group;
  functions.comm_get_async_error = stand_in_async_error;
  functions.comm_user_rank = stand_in_rank;
  functions.comm_count = stand_in_count;
  functions.comm_cu_device = stand_in_device;
  return functions;
}

// What the application would call without the library: NCCL through its PLT, an indirect call.
decltype(&stand_in_all_reduce) volatile g_direct_all_reduce = stand_in_all_reduce;

// A recorder over the stand-in NCCL, a session writing a real trace file, one communicator.
struct Rig {
  // `flight_recorder`: false leaves nccl_call records (the calls in flight) out, for comparison.
  explicit Rig(bool window_open, bool flight_recorder = true) {
    // A directory per rig: each session writes its own rank-x.<pid>.pst.
    static int rigs = 0;
    pin::InjectConfig config;
    config.output_dir = g_bench_dir + "/rig-" + std::to_string(rigs++);
    config.compress = false;
    if (!window_open) config.steps = pin::StepWindow{1'000'000, 1'000'000};  // never reached
    if (!flight_recorder)
      config.kinds.record_bits &= ~pipescope::trace::record_bit(pipescope::trace::RecordKind::kNcclCall);
    session = std::make_unique<pin::Session>(config, pin::LauncherInfo{});
    library = pnccl::NcclLibrary::with_functions(stand_in_functions());
    recorder = std::make_unique<pnccl::NcclRecorder>(*session, *library, registry, 0);
    ncclUniqueId id{};
    recorder->comm_init_rank(&comm, g_comm.size, id, g_comm.rank);
  }
  ~Rig() { session->finish(); }

  std::unique_ptr<pin::Session> session;
  std::unique_ptr<pnccl::NcclLibrary> library;
  pnccl::CommRegistry registry;
  std::unique_ptr<pnccl::NcclRecorder> recorder;
  ncclComm_t comm = nullptr;
};

// Times `call` once per iteration, flushing the rings untimed every kFlushEvery calls.
template <class Call>
void run_recorded(benchmark::State& state, Rig& rig, Call&& call) {
  int since_flush = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(call());
    if (++since_flush == kFlushEvery) {
      since_flush = 0;
      state.PauseTiming();
      rig.session->flush_now();
      state.ResumeTiming();
    }
  }
}

void BM_AllReduceDirect(benchmark::State& state) {
  const auto comm = reinterpret_cast<ncclComm_t>(&g_comm);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        g_direct_all_reduce(nullptr, nullptr, 1024, ncclBfloat16, ncclSum, comm, nullptr));
  }
}
BENCHMARK(BM_AllReduceDirect);

void BM_AllReduceIntercepted(benchmark::State& state) {
  Rig rig(/*window_open=*/true);
  run_recorded(state, rig, [&] {
    return rig.recorder->all_reduce(nullptr, nullptr, 1024, ncclBfloat16, ncclSum, rig.comm, nullptr);
  });
}
BENCHMARK(BM_AllReduceIntercepted);

// The same without the flight recorder (publishing each call as it is entered, nccl_call records).
void BM_AllReduceInterceptedWithoutFlightRecorder(benchmark::State& state) {
  Rig rig(/*window_open=*/true, /*flight_recorder=*/false);
  run_recorded(state, rig, [&] {
    return rig.recorder->all_reduce(nullptr, nullptr, 1024, ncclBfloat16, ncclSum, rig.comm, nullptr);
  });
}
BENCHMARK(BM_AllReduceInterceptedWithoutFlightRecorder);

// Send: the per-(peer, direction) counter instead of the communicator's.
void BM_SendIntercepted(benchmark::State& state) {
  Rig rig(/*window_open=*/true);
  int peer = 0;
  run_recorded(state, rig, [&] {
    peer = (peer + 1) & 7;
    return rig.recorder->send(nullptr, 1024, ncclBfloat16, peer, rig.comm, nullptr);
  });
}
BENCHMARK(BM_SendIntercepted);

// Outside the capture window: only the sequence number advances.
void BM_AllReduceInterceptedOutsideWindow(benchmark::State& state) {
  Rig rig(/*window_open=*/false);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        rig.recorder->all_reduce(nullptr, nullptr, 1024, ncclBfloat16, ncclSum, rig.comm, nullptr));
  }
}
BENCHMARK(BM_AllReduceInterceptedOutsideWindow);

void BM_AllReduceInterceptedOutsideWindowWithoutFlightRecorder(benchmark::State& state) {
  Rig rig(/*window_open=*/false, /*flight_recorder=*/false);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        rig.recorder->all_reduce(nullptr, nullptr, 1024, ncclBfloat16, ncclSum, rig.comm, nullptr));
  }
}
BENCHMARK(BM_AllReduceInterceptedOutsideWindowWithoutFlightRecorder);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const char* base = std::getenv("PIPESCOPE_BENCH_DIR");
  g_bench_dir = std::string(base != nullptr && *base != '\0' ? base : "/var/tmp") + "/pipescope-nccl-bench." +
                std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(g_bench_dir, ec);
  if (ec) {
    std::fprintf(stderr, "nccl_interpose_benchmark: cannot create %s: %s\n", g_bench_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  benchmark::AddCustomContext("trace_dir", g_bench_dir);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(g_bench_dir, ec);
  return 0;
}
