#include "nccl_real.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdio>

#include "loaded_library.h"

namespace pipescope::inject::nccl {
namespace {

// The base address of the object this code is in (libpipescope.so, or a test executable).
const void* own_base() noexcept {
  static const void* base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<const void*>(&own_base), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  return base;
}

bool is_own(const void* symbol) noexcept {
  Dl_info info{};
  return dladdr(symbol, &info) != 0 && info.dli_fbase == own_base();
}

// Tries p<name>, then <name>, on `handle` (the loaded libnccl), then after this object in the
// lookup order.
void* find_symbol(void* handle, const char* name) noexcept {
  char twin[64];
  std::snprintf(twin, sizeof(twin), "p%s", name);
  const char* candidates[] = {twin, name};
  void* const scopes[] = {handle, RTLD_NEXT};
  for (void* scope : scopes) {
    if (scope == nullptr) continue;
    for (const char* candidate : candidates) {
      void* symbol = dlsym(scope, candidate);
      if (symbol != nullptr && !is_own(symbol)) return symbol;
    }
  }
  return nullptr;
}

template <class F>
void bind(F& slot, void* handle, const char* name) noexcept {
  slot = reinterpret_cast<F>(find_symbol(handle, name));
}

}  // namespace

NcclLibrary& NcclLibrary::instance() noexcept {
  // Never destroyed: NCCL calls can come from threads still running while statics unwind.
  static NcclLibrary* library = new NcclLibrary();
  return *library;
}

std::unique_ptr<NcclLibrary> NcclLibrary::with_functions(const NcclFunctions& functions,
                                                         StreamIsCapturingFn stream_is_capturing) {
  auto library = std::make_unique<NcclLibrary>();
  library->functions_ = functions;
  library->resolved_.store(true, std::memory_order_release);
  library->stream_is_capturing_.store(stream_is_capturing, std::memory_order_release);
  library->driver_searched_.store(true, std::memory_order_release);
  return library;
}

const NcclFunctions* NcclLibrary::resolve() noexcept {
  const int saved_errno = errno;  // the caller's errno must not change on our account
  const NcclFunctions* functions = resolve_locked();
  errno = saved_errno;
  return functions;
}

const NcclFunctions* NcclLibrary::resolve_locked() noexcept {
  std::lock_guard lock(resolve_mutex_);
  if (resolved_.load(std::memory_order_acquire)) return &functions_;
  void* handle = find_loaded_library("libnccl.so");
  NcclFunctions found;
  bind(found.comm_init_rank, handle, "ncclCommInitRank");
  bind(found.comm_init_rank_config, handle, "ncclCommInitRankConfig");
  bind(found.comm_init_rank_scalable, handle, "ncclCommInitRankScalable");
  bind(found.comm_init_all, handle, "ncclCommInitAll");
  bind(found.comm_split, handle, "ncclCommSplit");
  bind(found.comm_shrink, handle, "ncclCommShrink");
  bind(found.comm_finalize, handle, "ncclCommFinalize");
  bind(found.comm_destroy, handle, "ncclCommDestroy");
  bind(found.comm_abort, handle, "ncclCommAbort");
  bind(found.comm_revoke, handle, "ncclCommRevoke");
  bind(found.all_reduce, handle, "ncclAllReduce");
  bind(found.all_gather, handle, "ncclAllGather");
  bind(found.reduce_scatter, handle, "ncclReduceScatter");
  bind(found.broadcast, handle, "ncclBroadcast");
  bind(found.bcast, handle, "ncclBcast");
  bind(found.reduce, handle, "ncclReduce");
  bind(found.all_to_all, handle, "ncclAlltoAll");
  bind(found.gather, handle, "ncclGather");
  bind(found.scatter, handle, "ncclScatter");
  bind(found.send, handle, "ncclSend");
  bind(found.recv, handle, "ncclRecv");
  bind(found.group_start, handle, "ncclGroupStart");
  bind(found.group_end, handle, "ncclGroupEnd");
  bind(found.comm_get_async_error, handle, "ncclCommGetAsyncError");
  bind(found.comm_user_rank, handle, "ncclCommUserRank");
  bind(found.comm_count, handle, "ncclCommCount");
  bind(found.comm_cu_device, handle, "ncclCommCuDevice");
  // Every NCCL since 2.0 has the group calls: without them, no NCCL is loaded at all. The
  // handle's reference is kept for the life of the process (NCCL is never unloaded under us).
  if (found.group_start == nullptr || found.group_end == nullptr) {
    if (handle != nullptr) dlclose(handle);
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fputs(
          "pipescope: an NCCL function was called but no NCCL library is loaded; the call returns "
          "ncclSystemError\n",
          stderr);
    }
    return nullptr;
  }
  functions_ = found;
  resolved_.store(true, std::memory_order_release);
  return &functions_;
}

Capture NcclLibrary::stream_capture(cudaStream_t stream) const noexcept {
  const StreamIsCapturingFn is_capturing = stream_is_capturing_.load(std::memory_order_acquire);
  // The legacy default stream cannot be captured, and asking about it while another stream
  // captures is an error: skip the question.
  if (is_capturing == nullptr || stream == nullptr ||
      stream == reinterpret_cast<cudaStream_t>(CU_STREAM_LEGACY)) {
    return is_capturing == nullptr ? Capture::kUnknown : Capture::kNo;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (is_capturing(reinterpret_cast<CUstream>(stream), &status) != CUDA_SUCCESS) return Capture::kUnknown;
  return status == CU_STREAM_CAPTURE_STATUS_NONE ? Capture::kNo : Capture::kYes;
}

void NcclLibrary::find_driver() noexcept {
  if (driver_searched_.load(std::memory_order_acquire)) return;
  const int saved_errno = errno;
  find_driver_locked();
  errno = saved_errno;
}

void NcclLibrary::find_driver_locked() noexcept {
  std::lock_guard lock(resolve_mutex_);
  if (driver_searched_.load(std::memory_order_acquire)) return;
  void* driver = find_loaded_library("libcuda.so");
  if (driver == nullptr) return;  // not loaded yet (or a fake NCCL without CUDA): ask again later
  void* symbol = dlsym(driver, "cuStreamIsCapturing");
  stream_is_capturing_.store(reinterpret_cast<StreamIsCapturingFn>(symbol), std::memory_order_release);
  driver_searched_.store(true, std::memory_order_release);
}

}  // namespace pipescope::inject::nccl
