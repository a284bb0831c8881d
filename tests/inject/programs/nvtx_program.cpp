// A program that uses the NVTX3 C API the way training frameworks do: nested ranges on two
// threads, wide names, a domain with a registered string, start/end ranges, NCCL's own domain,
// and a second module with NVTX of its own. Its output and exit status must not change when
// libpipescope.so is preloaded; the test reads the ranges back from the trace.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <thread>

extern "C" int nvtx_module_work(int value);

int main() {
  nvtxRangePushA("program_main");
  nvtxMarkA("program_mark");
  std::thread worker([] {
    for (int i = 0; i < 3; ++i) {
      nvtxRangePushA("worker_step");
      nvtxRangePop();
    }
  });
  worker.join();

  nvtxRangePushW(L"wide_r\u00e4nge");
  nvtxRangePop();

  nvtxDomainHandle_t domain = nvtxDomainCreateA("program_domain");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.colorType = NVTX_COLOR_ARGB;
  attributes.color = 0xFF76B900;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = nvtxDomainRegisterStringA(domain, "registered_range");
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);

  // NCCL's own ranges: the trace leaves them out unless asked (PIPESCOPE_KINDS=...,nvtx-nccl).
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  nvtxEventAttributes_t nccl_attributes{};
  nccl_attributes.version = NVTX_VERSION;
  nccl_attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  nccl_attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  nccl_attributes.message.ascii = "nccl_internal";
  nvtxDomainRangePushEx(nccl, &nccl_attributes);
  nvtxDomainRangePop(nccl);

  const nvtxRangeId_t range = nvtxRangeStartA("program_start_end");
  nvtxRangeEnd(range);

  const int doubled = nvtx_module_work(21);
  nvtxRangePop();
  nvtxDomainDestroy(domain);
  std::printf("nvtx program: the module doubled 21 into %d\n", doubled);
  return 3;  // a status of its own, which the preloaded library must pass through unchanged
}
