// A second module using NVTX, as a framework's extension library would: NVTX keeps separate
// state in every module that includes it, so this one initializes the injection on its own.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) int nvtx_module_work(int value) {
  nvtxRangePushA("module_range");
  nvtxDomainHandle_t domain = nvtxDomainCreateA("module_domain");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = nvtxDomainRegisterStringA(domain, "module_registered");
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);
  nvtxMarkA("module_mark");
  nvtxRangePop();
  nvtxDomainDestroy(domain);
  return value * 2;
}
