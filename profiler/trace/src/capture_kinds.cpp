#include "pipescope/trace/capture_kinds.h"

#include <array>
#include <string>

namespace pipescope::trace {
namespace {

struct KindName {
  std::string_view name;
  uint32_t bits;
};

constexpr std::array<KindName, 9> kKinds = {{
    {"kernel", record_bit(RecordKind::kKernel)},
    {"memcpy", record_bit(RecordKind::kMemcpy)},
    {"memset", record_bit(RecordKind::kMemset)},
    {"memory", record_bit(RecordKind::kMemory)},
    {"sync", record_bit(RecordKind::kSync)},
    {"api", record_bit(RecordKind::kApi)},
    // External correlations tie NCCL calls to the kernels they launched; nccl_call records show
    // the calls that have not returned.
    {"nccl", record_bit(RecordKind::kNcclOp) | record_bit(RecordKind::kNcclComm) |
                 record_bit(RecordKind::kExternalCorrelation) | record_bit(RecordKind::kNcclCall)},
    {"nvtx", record_bit(RecordKind::kNvtx)},
    {"overhead", record_bit(RecordKind::kOverhead)},
}};
constexpr std::string_view kNcclNvtxKind = "nvtx-nccl";
constexpr uint32_t kAlwaysRecorded = record_bit(RecordKind::kNotice);

uint32_t all_bits() {
  uint32_t bits = kAlwaysRecorded;
  for (const KindName& kind : kKinds) bits |= kind.bits;
  return bits;
}

}  // namespace

CaptureKinds default_capture_kinds() {
  return CaptureKinds{all_bits() & ~record_bit(RecordKind::kApi), false};
}

Expected<CaptureKinds> parse_capture_kinds(std::string_view text) {
  if (text == "default") return default_capture_kinds();
  if (text == "all") return CaptureKinds{all_bits(), false};
  CaptureKinds kinds{kAlwaysRecorded, false};
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view part = text.substr(begin, comma - begin);
    bool known = false;
    for (const KindName& kind : kKinds) {
      if (part == kind.name) {
        kinds.record_bits |= kind.bits;
        known = true;
      }
    }
    if (part == kNcclNvtxKind) {
      kinds.nccl_nvtx_domain = true;
      kinds.record_bits |= record_bit(RecordKind::kNvtx);
      known = true;
    }
    if (!known) {
      return Error{"unknown kind '" + std::string(part) +
                   "' (kinds: kernel, memcpy, memset, memory, sync, api, nccl, nvtx, overhead, nvtx-nccl, "
                   "or all, or default)"};
    }
    begin = comma + 1;
  }
  return kinds;
}

}  // namespace pipescope::trace
