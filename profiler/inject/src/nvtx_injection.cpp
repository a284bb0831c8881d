// The NVTX injection entry point: NVTX (header-only, NVTX_INJECTION64_PATH naming this library)
// calls InitializeInjectionNvtx2 once per module that uses it, on that module's first NVTX call,
// and we write our callbacks into that module's function tables. Everything past the tables is
// NvtxRecorder's; this file only translates NVTX's types.
#define NVTX_NO_IMPL  // the types and tables, not NVTX's own implementation
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstddef>

#include "export.h"
#include "nvtx_recorder.h"

namespace pipescope::inject {
namespace {

std::atomic<NvtxRecorder*> g_recorder{nullptr};

// Made by the first module's initialization, on whichever thread that happens; never freed,
// since NVTX calls may come from threads still running while the process exits.
NvtxRecorder* shared_recorder() noexcept {
  static NvtxRecorder* const recorder = []() noexcept -> NvtxRecorder* {
    try {
      return new NvtxRecorder(Session::instance());
    } catch (...) {
      return nullptr;
    }
  }();
  return recorder;
}

// Only reached through tables we filled after g_recorder was set.
NvtxRecorder& recorder() noexcept { return *g_recorder.load(std::memory_order_acquire); }

NvtxDomain* domain_of(nvtxDomainHandle_t handle) noexcept { return reinterpret_cast<NvtxDomain*>(handle); }

NvtxAttributes attributes_of(const nvtxEventAttributes_t* event) noexcept {
  NvtxAttributes out;
  // Version 1 and 2 of the structure share this layout; `size` says how much the caller filled.
  constexpr size_t kFilled = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (event == nullptr || event->size < kFilled) return out;
  out.category = event->category;
  if (event->colorType == NVTX_COLOR_ARGB) out.color = event->color;
  switch (event->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: out.message = NvtxMessage::of(event->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: out.message = NvtxMessage::of(event->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      out.message = NvtxMessage::of(reinterpret_cast<const NvtxRegisteredString*>(event->message.registered));
      break;
    default: break;
  }
  return out;
}

template <class Text>
NvtxAttributes attributes_of(Text text) noexcept {
  NvtxAttributes out;
  out.message = NvtxMessage::of(text);
  return out;
}

// --- CORE: the default domain -----------------------------------------------------------------
void mark_ex(const nvtxEventAttributes_t* event) { recorder().mark(nullptr, attributes_of(event)); }
void mark_a(const char* text) { recorder().mark(nullptr, attributes_of(text)); }
void mark_w(const wchar_t* text) { recorder().mark(nullptr, attributes_of(text)); }
nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* event) {
  return recorder().start(nullptr, attributes_of(event));
}
nvtxRangeId_t range_start_a(const char* text) { return recorder().start(nullptr, attributes_of(text)); }
nvtxRangeId_t range_start_w(const wchar_t* text) { return recorder().start(nullptr, attributes_of(text)); }
void range_end(nvtxRangeId_t id) { recorder().end(nullptr, id); }
int range_push_ex(const nvtxEventAttributes_t* event) {
  return recorder().push(nullptr, attributes_of(event));
}
int range_push_a(const char* text) { return recorder().push(nullptr, attributes_of(text)); }
int range_push_w(const wchar_t* text) { return recorder().push(nullptr, attributes_of(text)); }
int range_pop() { return recorder().pop(nullptr); }

// --- CORE2: domains and registered strings ----------------------------------------------------
void domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  recorder().mark(domain_of(domain), attributes_of(event));
}
nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  return recorder().start(domain_of(domain), attributes_of(event));
}
void domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) { recorder().end(domain_of(domain), id); }
int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  return recorder().push(domain_of(domain), attributes_of(event));
}
int domain_range_pop(nvtxDomainHandle_t domain) { return recorder().pop(domain_of(domain)); }
nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t domain, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(
      recorder().register_string(domain_of(domain), std::string_view(text != nullptr ? text : "")));
}
nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) {
  return reinterpret_cast<nvtxStringHandle_t>(recorder().register_string(domain_of(domain), text));
}
nvtxDomainHandle_t domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(
      recorder().create_domain(std::string_view(name != nullptr ? name : "")));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(recorder().create_domain(name));
}
void domain_destroy(nvtxDomainHandle_t domain) { recorder().destroy_domain(domain_of(domain)); }

// One module's table of one callback module: slots are pointers to that module's function
// pointers, which NVTX calls through once initialization completes.
struct ModuleTable {
  NvtxFunctionTable slots = nullptr;
  unsigned int size = 0;
};

ModuleTable table_of(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module) {
  ModuleTable table;
  if (callbacks.GetModuleFunctionTable(module, &table.slots, &table.size) == 0) return {};
  return table;
}

// `Fn` is NVTX's type for the slot, so that a callback with the wrong signature does not compile.
template <class Fn>
void install(const ModuleTable& table, unsigned int slot, Fn function) {
  if (table.slots == nullptr || slot >= table.size || table.slots[slot] == nullptr) return;
  *table.slots[slot] = reinterpret_cast<NvtxFunctionPointer>(function);
}

void install_core(const ModuleTable& core) {
  install<nvtxMarkEx_impl_fntype>(core, NVTX_CBID_CORE_MarkEx, mark_ex);
  install<nvtxMarkA_impl_fntype>(core, NVTX_CBID_CORE_MarkA, mark_a);
  install<nvtxMarkW_impl_fntype>(core, NVTX_CBID_CORE_MarkW, mark_w);
  install<nvtxRangeStartEx_impl_fntype>(core, NVTX_CBID_CORE_RangeStartEx, range_start_ex);
  install<nvtxRangeStartA_impl_fntype>(core, NVTX_CBID_CORE_RangeStartA, range_start_a);
  install<nvtxRangeStartW_impl_fntype>(core, NVTX_CBID_CORE_RangeStartW, range_start_w);
  install<nvtxRangeEnd_impl_fntype>(core, NVTX_CBID_CORE_RangeEnd, range_end);
  install<nvtxRangePushEx_impl_fntype>(core, NVTX_CBID_CORE_RangePushEx, range_push_ex);
  install<nvtxRangePushA_impl_fntype>(core, NVTX_CBID_CORE_RangePushA, range_push_a);
  install<nvtxRangePushW_impl_fntype>(core, NVTX_CBID_CORE_RangePushW, range_push_w);
  install<nvtxRangePop_impl_fntype>(core, NVTX_CBID_CORE_RangePop, range_pop);
  // Category and OS-thread naming stay NVTX no-ops.
}

void install_core2(const ModuleTable& core2) {
  install<nvtxDomainMarkEx_impl_fntype>(core2, NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex);
  install<nvtxDomainRangeStartEx_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRangeStartEx,
                                              domain_range_start_ex);
  install<nvtxDomainRangeEnd_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end);
  install<nvtxDomainRangePushEx_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex);
  install<nvtxDomainRangePop_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRangePop, domain_range_pop);
  install<nvtxDomainRegisterStringA_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRegisterStringA,
                                                 domain_register_string_a);
  install<nvtxDomainRegisterStringW_impl_fntype>(core2, NVTX_CBID_CORE2_DomainRegisterStringW,
                                                 domain_register_string_w);
  install<nvtxDomainCreateA_impl_fntype>(core2, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
  install<nvtxDomainCreateW_impl_fntype>(core2, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
  install<nvtxDomainDestroy_impl_fntype>(core2, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
  // Resources, category names and nvtxInitialize stay NVTX no-ops.
}

}  // namespace
}  // namespace pipescope::inject

// Called by every module's NVTX on its first call, possibly from several threads at once (each
// module initializes under its own guard). Always 1: a 0 would make NVTX unload this library,
// which the process has preloaded. Where NVTX cannot matter, nothing is installed and NVTX keeps
// its no-ops.
PIPESCOPE_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace pipescope::inject;
  if (get_export_table == nullptr) return 1;
  NvtxRecorder* recorder = shared_recorder();
  if (recorder == nullptr || !recorder->active() || Session::instance().config().disabled) return 1;
  g_recorder.store(recorder, std::memory_order_release);
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 1;
  }
  install_core(table_of(*callbacks, NVTX_CB_MODULE_CORE));
  install_core2(table_of(*callbacks, NVTX_CB_MODULE_CORE2));
  return 1;
}
