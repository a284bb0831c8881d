#include "cupti_tuning.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <cstdint>

namespace pipescope::inject {
namespace {

// Copies and memsets of the runtime NCCL links statically, both stream flavours. Its kernels go
// through the driver on every driver CUDA 13 runs on (ncclLaunchKernel takes cuLaunchKernelEx
// from CUDA 11.8 drivers on), so the runtime's launch calls stay out: PyTorch launches each of its
// own kernels through them, and their records would be one more per kernel, of no use here.
constexpr CUpti_CallbackId kRuntimeLaunchCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
};

// The driver calls behind NCCL's kernel launches (cuLaunchKernelEx since CUDA 11.8 drivers) and
// its driver-side copies.
constexpr CUpti_CallbackId kDriverLaunchCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};

template <class Value>
void set_attribute(const CuptiApi& api, CUpti_ActivityAttribute attribute, const char* name, Value value,
                   const TuningFailure& failed) {
  const std::string call = std::string("cuptiActivitySetAttribute(") + name + "=" +
                           std::to_string(static_cast<uint64_t>(value)) + ")";
  if (api.activity_set_attribute == nullptr) {
    failed("cuptiActivitySetAttribute", call, CUPTI_ERROR_NOT_SUPPORTED, "CUPTI's default stays");
    return;
  }
  size_t size = sizeof(value);
  const CUptiResult r = api.activity_set_attribute(attribute, &size, &value);
  if (r != CUPTI_SUCCESS) failed("cuptiActivitySetAttribute", call, r, "CUPTI's default stays");
}

void set_switch(decltype(&cuptiActivityEnableLatencyTimestamps) function, const char* name, bool on,
                const TuningFailure& failed) {
  const std::string call = std::string(name) + "(" + (on ? "1" : "0") + ")";
  if (function == nullptr) {
    failed(name, call, CUPTI_ERROR_NOT_SUPPORTED, "CUPTI's default stays");
    return;
  }
  if (const CUptiResult r = function(on ? 1 : 0); r != CUPTI_SUCCESS)
    failed(name, call, r, "CUPTI's default stays");
}

}  // namespace

std::span<const CUpti_CallbackId> nccl_launch_runtime_calls() { return kRuntimeLaunchCalls; }
std::span<const CUpti_CallbackId> nccl_launch_driver_calls() { return kDriverLaunchCalls; }

void apply_cupti_tuning(const CuptiApi& api, const CuptiTuning& tuning, const TuningFailure& failed) {
  // Per-thread buffers must be chosen before the buffer callbacks are registered.
  if (tuning.per_thread_buffers) {
    set_attribute(api, CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, "PER_THREAD_ACTIVITY_BUFFER",
                  uint8_t{*tuning.per_thread_buffers}, failed);
  }
  if (tuning.device_buffer_bytes) {
    set_attribute(api, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, "DEVICE_BUFFER_SIZE",
                  *tuning.device_buffer_bytes, failed);
  }
  if (tuning.device_buffers_preallocated) {
    set_attribute(api, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
                  "DEVICE_BUFFER_PRE_ALLOCATE_VALUE", *tuning.device_buffers_preallocated, failed);
  }
  if (tuning.host_pinned_device_buffers) {
    set_attribute(api, CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, "MEM_ALLOCATION_TYPE_HOST_PINNED",
                  uint8_t{*tuning.host_pinned_device_buffers}, failed);
  }
  // Zeroed host buffers spare the application's thread CUPTI's own zeroing of each new buffer;
  // the source zeroes them when they come back, on CUPTI's delivery thread.
  if (tuning.zeroed_buffers) {
    set_attribute(api, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, "ZEROED_OUT_ACTIVITY_BUFFER",
                  uint8_t{1}, failed);
  }
  if (tuning.latency_timestamps) {
    set_switch(api.activity_enable_latency_timestamps, "cuptiActivityEnableLatencyTimestamps", true, failed);
  }
  // A poll (cudaEventQuery, cudaStreamQuery) that found the work unfinished waited for nothing:
  // its record would say only that the framework polled.
  if (!tuning.all_sync_records) {
    set_switch(api.activity_enable_all_sync_records, "cuptiActivityEnableAllSyncRecords", false, failed);
  }
  if (tuning.flush_period_ms > 0) {
    const std::string call = "cuptiActivityFlushPeriod(" + std::to_string(tuning.flush_period_ms) + ")";
    if (api.activity_flush_period == nullptr) {
      failed("cuptiActivityFlushPeriod", call, CUPTI_ERROR_NOT_SUPPORTED, "CUPTI's heuristics stay");
    } else if (const CUptiResult r = api.activity_flush_period(tuning.flush_period_ms); r != CUPTI_SUCCESS) {
      failed("cuptiActivityFlushPeriod", call, r, "CUPTI's heuristics stay");
    }
  }
}

}  // namespace pipescope::inject
