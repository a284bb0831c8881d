// A traced program that dies on purpose, for the kill tests: it makes a few NCCL calls on a
// one-rank world communicator (its own unique id), prints "crash_program: <mode> ready",
// flushes stdout, and then ends the way MODE says:
//   segv          writes through a null struct pointer (a real SIGSEGV, not raise)
//   stack-overflow  recurses until the stack runs out (SIGSEGV with no stack left to handle it on)
//   segv-two-threads  two threads, each having made an NCCL call, fault at the same moment
//   abort         std::abort() (SIGABRT)
//   sigterm-self  raise(SIGTERM)
//   sigint-self   raise(SIGINT)
//   sigkill-self  raise(SIGKILL)
//   sigint-handled  installs its own SIGINT handler first (as Python does at start-up), then
//                 raise(SIGINT); exits 42 when its handler ran (the library deferred to it)
//   exit3         std::exit(3), through the atexit handlers
//   sleep [S]     keeps calling ncclAllReduce every 10 ms for S seconds (default 60) so that a
//                 test can signal it mid-run; exits 0 if nobody does
// A process that survives its own signal exits 99 (the library swallowed it). Bad usage: 2.
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

constexpr int kSurvived = 99;

bool ok(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return true;
  std::fprintf(stderr, "crash_program: %s failed: %s\n", what, ncclGetErrorString(rc));
  return false;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: crash_program "
      "segv|stack-overflow|segv-two-threads|abort|sigterm-self|sigint-self|sigint-handled|sigkill-self|"
      "exit3|sleep [SECONDS]\n");
  return 2;
}

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

void fault() {
  // A field of a null struct pointer: a real fault. The pointer is volatile so that the compiler
  // cannot see what it holds and emit a trap (SIGILL) instead; not null itself so that UBSan
  // builds fault rather than report (ASan builds need ASAN_OPTIONS=handle_segv=0).
  int* volatile null_pointer = reinterpret_cast<int*>(uintptr_t{8});
  *null_pointer = 42;
}

// Each frame holds a page the compiler cannot drop; the sum keeps the call out of tail position
// and the limit (never reached) keeps the compiler from calling the recursion infinite.
volatile int g_depth_limit = 1 << 30;
[[gnu::noinline]] int recurse(int depth) {
  volatile char page[4096];
  page[0] = static_cast<char>(depth);
  return depth < g_depth_limit ? recurse(depth + 1) + page[0] : page[0];
}

int die_by_signal(int signal_number) {
  std::raise(signal_number);
  std::fprintf(stderr, "crash_program: survived signal %d\n", signal_number);
  return kSurvived;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  const bool known = mode == "segv" || mode == "stack-overflow" || mode == "segv-two-threads" ||
                     mode == "abort" || mode == "sigterm-self" || mode == "sigint-self" ||
                     mode == "sigkill-self" || mode == "exit3" || mode == "sleep" || mode == "sigint-handled";
  if (!known) return usage();
  const int sleep_s = argc > 2 ? std::atoi(argv[2]) : 60;

  if (mode == "sigint-handled") std::signal(SIGINT, on_interrupt);
  static char send[4096];
  static char recv[4096];
  const auto stream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5000});
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (!ok(ncclGetUniqueId(&id), "ncclGetUniqueId") ||
      !ok(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank") ||
      !ok(ncclAllReduce(send, recv, 256, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce") ||
      !ok(ncclGroupStart(), "ncclGroupStart") ||
      !ok(ncclSend(send, 64, ncclInt8, 0, comm, stream), "ncclSend") ||
      !ok(ncclRecv(recv, 64, ncclInt8, 0, comm, stream), "ncclRecv") || !ok(ncclGroupEnd(), "ncclGroupEnd")) {
    return 1;
  }
  std::printf("crash_program: %s ready\n", mode.c_str());
  std::fflush(stdout);

  if (mode == "segv") {
    fault();
    std::fprintf(stderr, "crash_program: survived SIGSEGV\n");
    return kSurvived;
  }
  if (mode == "stack-overflow") {
    const int depth = recurse(0);
    std::fprintf(stderr, "crash_program: survived a stack overflow (%d)\n", depth);
    return kSurvived;
  }
  if (mode == "segv-two-threads") {
    // Both threads record (an NCCL call each), meet, and fault together.
    std::atomic<int> ready{0};
    auto worker = [&] {
      ok(ncclAllReduce(send, recv, 64, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      fault();
    };
    std::thread a(worker), b(worker);
    a.join();
    b.join();
    std::fprintf(stderr, "crash_program: survived SIGSEGV in two threads\n");
    return kSurvived;
  }
  if (mode == "abort") std::abort();
  if (mode == "sigterm-self") return die_by_signal(SIGTERM);
  if (mode == "sigint-self") return die_by_signal(SIGINT);
  if (mode == "sigkill-self") return die_by_signal(SIGKILL);
  if (mode == "exit3") std::exit(3);
  if (mode == "sigint-handled") {
    std::raise(SIGINT);
    return g_interrupted != 0 ? 42 : 1;
  }

  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(sleep_s);
  while (std::chrono::steady_clock::now() < until) {
    if (!ok(ncclAllReduce(send, recv, 256, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce")) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ncclCommDestroy(comm);
  return 0;
}
