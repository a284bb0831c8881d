#include "cupti_api.h"

#include <dlfcn.h>

#include <atomic>
#include <vector>

#include "loaded_library.h"

namespace pipescope::inject {

// cupti_records.cpp reads CUPTI 13's record structs. A toolkit whose header has another major
// (or has changed one of these structs under the same name) must be looked at before it is
// built against: the sizes below are those of CUDA 13.0's cupti_activity.h.
static_assert(CUPTI_API_VERSION >= 130000 && CUPTI_API_VERSION < 140000,
              "pipescope's CUPTI record conversion is written for CUPTI 13 (CUDA 13.x)");
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96);
static_assert(sizeof(CUpti_ActivityMemcpyPtoP4) == 96);
static_assert(sizeof(CUpti_ActivityMemset4) == 88);
static_assert(sizeof(CUpti_ActivityMemory4) == 128);
static_assert(sizeof(CUpti_ActivityMemoryPool3) == 80);
static_assert(sizeof(CUpti_ActivitySynchronization2) == 56);
static_assert(sizeof(CUpti_ActivityAPI) == 40);
static_assert(sizeof(CUpti_ActivityOverhead3) == 56);
static_assert(sizeof(CUpti_ActivityDevice5) == 184);
static_assert(sizeof(CUpti_ActivityContext3) == 32);
static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24);

namespace {

std::atomic<void*> g_forwarding_handle{nullptr};

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

uint32_t cupti_major_version(uint32_t api_version) { return api_version >= 10000 ? api_version / 10000 : 0; }

Status check_cupti_version(uint32_t api_version) {
  const uint32_t major = cupti_major_version(api_version);
  if (major == kCuptiBuildMajor) return Status::Ok();
  const std::string found =
      major == 0
          ? "CUPTI API version " + std::to_string(api_version) + " (CUDA 12.9 or older)"
          : "CUPTI API version " + std::to_string(api_version) + " (CUDA " + std::to_string(major) + ".x)";
  return Error{
      found + " is not the major version this pipescope reads (CUPTI " + std::to_string(kCuptiBuildMajor) +
      ", API version " + std::to_string(CUPTI_API_VERSION) +
      "); GPU activity is not captured. Use a pipescope built with the CUDA toolkit of the run's CUPTI."};
}

Expected<CuptiApi> resolve_cupti_api(void* handle, std::string path) {
  CuptiApi api;
  api.handle = handle;
  api.path = std::move(path);
  struct Required {
    const char* name;
    bool found;
  };
  const Required required[] = {
      {"cuptiGetVersion", resolve(handle, "cuptiGetVersion", api.get_version)},
      {"cuptiActivityEnable", resolve(handle, "cuptiActivityEnable", api.activity_enable)},
      {"cuptiActivityDisable", resolve(handle, "cuptiActivityDisable", api.activity_disable)},
      {"cuptiActivityRegisterCallbacks",
       resolve(handle, "cuptiActivityRegisterCallbacks", api.activity_register_callbacks)},
      {"cuptiActivityFlushAll", resolve(handle, "cuptiActivityFlushAll", api.activity_flush_all)},
      {"cuptiActivityGetNextRecord",
       resolve(handle, "cuptiActivityGetNextRecord", api.activity_get_next_record)},
  };
  for (const Required& r : required) {
    if (!r.found) return Error{api.path + " has no " + r.name + ": not a usable libcupti"};
  }
  resolve(handle, "cuptiGetResultString", api.get_result_string);
  resolve(handle, "cuptiActivityRegisterTimestampCallback", api.activity_register_timestamp_callback);
  resolve(handle, "cuptiActivityGetNumDroppedRecords", api.activity_get_num_dropped_records);
  resolve(handle, "cuptiActivityPushExternalCorrelationId", api.activity_push_external_correlation_id);
  resolve(handle, "cuptiActivityPopExternalCorrelationId", api.activity_pop_external_correlation_id);
  resolve(handle, "cuptiGetTimestamp", api.get_timestamp);
  resolve(handle, "cuptiGetCallbackName", api.get_callback_name);
  resolve(handle, "cuptiActivityEnableRuntimeApi", api.activity_enable_runtime_api);
  resolve(handle, "cuptiActivityEnableDriverApi", api.activity_enable_driver_api);
  resolve(handle, "cuptiActivitySetAttribute", api.activity_set_attribute);
  resolve(handle, "cuptiActivityEnableLatencyTimestamps", api.activity_enable_latency_timestamps);
  resolve(handle, "cuptiActivityFlushPeriod", api.activity_flush_period);
  resolve(handle, "cuptiActivityEnableAllSyncRecords", api.activity_enable_all_sync_records);
  return api;
}

Expected<CuptiApi> load_cupti_api(const char* cuda_home) {
  // A copy the process already has (PyTorch links one) must be the one used: two CUPTIs in one
  // process would both hook the driver.
  if (void* loaded = find_loaded_library("libcupti.so")) {
    Dl_info info{};
    std::string path = "libcupti (already loaded)";
    void* symbol = dlsym(loaded, "cuptiGetVersion");
    if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) path = info.dli_fname;
    return resolve_cupti_api(loaded, std::move(path));
  }
  const std::string soname = "libcupti.so." + std::to_string(kCuptiBuildMajor);
  std::vector<std::string> candidates = {soname};
  if (cuda_home != nullptr && cuda_home[0] != '\0')
    candidates.push_back(std::string(cuda_home) + "/lib64/" + soname);
  candidates.push_back("/usr/local/cuda/lib64/" + soname);
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/" + soname);
  std::string tried;
  for (const std::string& candidate : candidates) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      Dl_info info{};
      void* symbol = dlsym(handle, "cuptiGetVersion");
      const bool named = symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr;
      return resolve_cupti_api(handle, named ? std::string(info.dli_fname) : candidate);
    }
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  return Error{"CUPTI not found (tried " + tried + "); set CUDA_HOME or LD_LIBRARY_PATH to a CUDA " +
               std::to_string(kCuptiBuildMajor) + " toolkit"};
}

std::string cupti_result_text(const CuptiApi& api, CUptiResult result) {
  const char* name = nullptr;
  if (api.get_result_string != nullptr && api.get_result_string(result, &name) == CUPTI_SUCCESS &&
      name != nullptr) {
    return std::string(name) + " (" + std::to_string(static_cast<int>(result)) + ")";
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

void set_cupti_handle_for_forwarding(void* handle) noexcept {
  g_forwarding_handle.store(handle, std::memory_order_release);
}

void* real_cupti_symbol(const char* name) noexcept {
  if (void* handle = g_forwarding_handle.load(std::memory_order_acquire)) {
    if (void* symbol = dlsym(handle, name)) return symbol;
  }
  if (void* loaded = find_loaded_library("libcupti.so")) {
    if (void* symbol = dlsym(loaded, name)) return symbol;
  }
  return dlsym(RTLD_NEXT, name);
}

}  // namespace pipescope::inject
