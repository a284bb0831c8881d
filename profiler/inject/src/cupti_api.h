// The CUPTI functions pipescope calls, as a table of pointers resolved with dlsym from a libcupti
// handle. The library never links CUPTI: a preloaded helper process that never initializes CUDA
// never loads it, and a copy the application already loaded (PyTorch's) is reused rather than
// a second one brought in. Tests fill the table with fakes, which is the seam that lets the CUPTI
// source run on a machine without a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::inject {

// The CUPTI major version whose record structs cupti_records.cpp reads. CUPTI 13 emits one
// current struct per activity kind; another major may lay them out differently.
inline constexpr uint32_t kCuptiBuildMajor = CUPTI_API_VERSION / 10000;

struct CuptiApi {
  void* handle = nullptr;  // the libcupti these came from; null for a test's fakes
  std::string path;        // where it was found, for messages

  // Required: without these, nothing can be captured.
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  // Optional: a missing one costs a feature, which the trace then says.
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) activity_register_timestamp_callback = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) activity_push_external_correlation_id = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) activity_pop_external_correlation_id = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;
  // Optional tuning (cupti_tuning.h): where missing, CUPTI's own behaviour stays.
  decltype(&cuptiActivityEnableRuntimeApi) activity_enable_runtime_api = nullptr;
  decltype(&cuptiActivityEnableDriverApi) activity_enable_driver_api = nullptr;
  decltype(&cuptiActivitySetAttribute) activity_set_attribute = nullptr;
  decltype(&cuptiActivityEnableLatencyTimestamps) activity_enable_latency_timestamps = nullptr;
  decltype(&cuptiActivityFlushPeriod) activity_flush_period = nullptr;
  decltype(&cuptiActivityEnableAllSyncRecords) activity_enable_all_sync_records = nullptr;

  bool complete() const {
    return get_version != nullptr && activity_enable != nullptr && activity_disable != nullptr &&
           activity_register_callbacks != nullptr && activity_flush_all != nullptr &&
           activity_get_next_record != nullptr;
  }
};

// The major version of a cuptiGetVersion() value: 130001 -> 13. Before CUDA 13 CUPTI counted
// API versions 1 to 28 (28 = CUDA 12.9); those give 0.
uint32_t cupti_major_version(uint32_t api_version);

// Ok when the run-time CUPTI is the major version this build reads; else a message saying
// what was found, what the build expects, and what to do.
Status check_cupti_version(uint32_t api_version);

// The table resolved from `handle`; an error names the first required symbol that is missing.
Expected<CuptiApi> resolve_cupti_api(void* handle, std::string path);

// Finds libcupti: a copy already loaded in the process (however it was loaded), else
// libcupti.so.<build major> on the loader's path, else next to the CUDA toolkit
// ($CUDA_HOME/lib64, /usr/local/cuda/lib64, /usr/local/cuda/extras/CUPTI/lib64). The error says
// where it looked. `cuda_home` is $CUDA_HOME (null when unset).
Expected<CuptiApi> load_cupti_api(const char* cuda_home);

// "CUPTI_ERROR_NOT_INITIALIZED (15)", or "CUPTI error 15" when the table cannot name it.
std::string cupti_result_text(const CuptiApi& api, CUptiResult result);

// The real libcupti's `name`, for the interposers that forward another tool's calls: the
// source's own handle when CUPTI was loaded, else a loaded libcupti, else the next definition
// after this library. Null when no libcupti is loaded.
void* real_cupti_symbol(const char* name) noexcept;

// Remembers the handle real_cupti_symbol() prefers (set once CUPTI is loaded).
void set_cupti_handle_for_forwarding(void* handle) noexcept;

}  // namespace pipescope::inject
