// The capture kinds of docs/design.md (`--kinds`, PIPESCOPE_KINDS) and the record kinds each one
// turns on. The bit set is the one a trace's process info stores: bit k = RecordKind k.
#pragma once

#include <cstdint>
#include <string_view>

#include "pipescope/common/expected.h"
#include "pipescope/trace/records.h"

namespace pipescope::trace {

constexpr uint32_t record_bit(RecordKind kind) { return uint32_t{1} << static_cast<uint32_t>(kind); }

struct CaptureKinds {
  uint32_t record_bits = 0;  // notices are always recorded and always set here
  // NCCL's own NVTX domain repeats what the interposer records; only `nvtx-nccl` keeps it.
  bool nccl_nvtx_domain = false;

  bool has(RecordKind kind) const { return (record_bits & record_bit(kind)) != 0; }
  bool operator==(const CaptureKinds&) const = default;
};

// Every kind except `api`.
CaptureKinds default_capture_kinds();

// "kernel,nccl,..." from kernel, memcpy, memset, memory, sync, api, nccl, nvtx, overhead and
// nvtx-nccl; or "default", or "all" (the nine kinds of docs/design.md), each alone.
Expected<CaptureKinds> parse_capture_kinds(std::string_view text);

}  // namespace pipescope::trace
