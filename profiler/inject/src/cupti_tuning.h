// What CUPTI is told besides which kinds to record: the knobs of config.h's CuptiTuning, applied
// before the first kind is enabled (CUPTI reads most of them only then), and the CUDA calls whose
// API records the NCCL links need when `api` itself is not captured.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "config.h"
#include "cupti_api.h"

namespace pipescope::inject {

// NCCL launches its kernels through the driver (cuLaunchKernelEx, or cuLaunchKernel on older
// drivers) and copies through its statically linked runtime (cudaMemcpyAsync and kin); the
// driver's copy and memset calls are in too. CUPTI
// writes an external-correlation record only beside an API record, so these calls' records are
// what links an NCCL call to its GPU work; every other call's record would cost without use.
std::span<const CUpti_CallbackId> nccl_launch_runtime_calls();
std::span<const CUpti_CallbackId> nccl_launch_driver_calls();

// One knob CUPTI refused: the function, the call as text ("cuptiActivitySetAttribute(
// DEVICE_BUFFER_SIZE=8388608)"), CUPTI's answer and what is kept instead.
using TuningFailure = std::function<void(const char* function, const std::string& call, CUptiResult result,
                                         const std::string& kept)>;

// Applies every knob of `tuning` that differs from CUPTI's default: device buffers (size, how
// many made up front, where), per-thread buffers, latency timestamps, the worker's flush period,
// records of polls that found the work unfinished, and whether our host buffers come zeroed.
// A missing function or a refused value is reported through `failed`; CUPTI's default stays.
// Call before cuptiActivityRegisterCallbacks and before any kind is enabled.
void apply_cupti_tuning(const CuptiApi& api, const CuptiTuning& tuning, const TuningFailure& failed);

}  // namespace pipescope::inject
