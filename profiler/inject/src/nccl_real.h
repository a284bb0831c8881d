// The real NCCL behind the interposer: its functions, found where the library really is. Under
// Python, libnccl is a dependency of an extension module opened with RTLD_LOCAL, invisible to
// dlsym(RTLD_NEXT); so the loaded libnccl.so is found by walking the link map and its `pnccl*`
// twins (strong aliases NCCL exports next to the weak `nccl*` names) are taken, falling back to
// the `nccl*` name on that handle, then to RTLD_NEXT. Never one of this library's own exports.
//
// Also the one CUDA driver call the interposer makes: whether a stream is being captured into a
// graph, from a libcuda that is already loaded (never loaded by us).
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace pipescope::inject::nccl {

// The real functions; a null member is one the loaded NCCL does not export.
struct NcclFunctions {
  // Interposed.
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommInitRankScalable) comm_init_rank_scalable = nullptr;
  decltype(&::ncclCommInitAll) comm_init_all = nullptr;
  decltype(&::ncclCommSplit) comm_split = nullptr;
  decltype(&::ncclCommShrink) comm_shrink = nullptr;
  decltype(&::ncclCommFinalize) comm_finalize = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommRevoke) comm_revoke = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclBcast) bcast = nullptr;
  decltype(&::ncclReduce) reduce = nullptr;
  decltype(&::ncclAlltoAll) all_to_all = nullptr;
  decltype(&::ncclGather) gather = nullptr;
  decltype(&::ncclScatter) scatter = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
  // Asked after creation for what the arguments do not say.
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclCommUserRank) comm_user_rank = nullptr;
  decltype(&::ncclCommCount) comm_count = nullptr;
  decltype(&::ncclCommCuDevice) comm_cu_device = nullptr;
};

using StreamIsCapturingFn = CUresult (*)(CUstream, CUstreamCaptureStatus*);

enum class Capture : uint8_t { kUnknown, kNo, kYes };

class NcclLibrary {
 public:
  // The process's: resolves from whatever NCCL the process has loaded, on first use.
  static NcclLibrary& instance() noexcept;
  // Test seam: a library whose functions are `functions`, already resolved (a benchmark's
  // stand-in, a unit test's fakes); `stream_is_capturing` may be null (no driver).
  static std::unique_ptr<NcclLibrary> with_functions(const NcclFunctions& functions,
                                                     StreamIsCapturingFn stream_is_capturing = nullptr);

  NcclLibrary() = default;
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  // The real functions, or nullptr when no NCCL is loaded (one "pipescope:" warning; the next
  // call looks again). Thread-safe; after the first success a single acquire load.
  const NcclFunctions* functions() noexcept {
    if (resolved_.load(std::memory_order_acquire)) [[likely]]
      return &functions_;
    return resolve();
  }

  // Whether `stream` is being captured into a CUDA graph; kUnknown without a loaded driver.
  Capture stream_capture(cudaStream_t stream) const noexcept;
  // Looks for the driver's cuStreamIsCapturing if not found yet. Slow (walks the link map): the
  // interposer calls it after creating a communicator, when CUDA is certainly initialized.
  void find_driver() noexcept;

 private:
  const NcclFunctions* resolve() noexcept;
  const NcclFunctions* resolve_locked() noexcept;
  void find_driver_locked() noexcept;

  NcclFunctions functions_;
  std::atomic<bool> resolved_{false};
  std::atomic<StreamIsCapturingFn> stream_is_capturing_{nullptr};
  std::atomic<bool> driver_searched_{false};  // a test library never searches
  std::mutex resolve_mutex_;
};

}  // namespace pipescope::inject::nccl
