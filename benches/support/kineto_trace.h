// A PyTorch profiler (Kineto) trace of one rank of an FSDP-style LLM training job, written as
// Kineto writes them (its field order and line breaks), to any size: ProfilerStep ranges; per
// layer, forward and backward operators with their CUDA launches, kernels and flow events; a
// parameter all-gather per layer forward and a gradient reduce-scatter per layer backward
// (record_param_comms, the c10d operator, the nccl: annotation and the NCCL kernel on its own
// stream); copies, memsets and allocator events. The Kineto reader's benchmark input, and a
// known-answer test of the reader at a size where its windows matter.
#pragma once

#include <cstdint>
#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::synthetic {

struct KinetoTraceSpec {
  int32_t rank = 0;
  int32_t world_size = 8;
  uint64_t json_bytes = 32'000'000;  // written until at least this much JSON
  bool gzip = false;                 // zlib at level 1, as torch.profiler's "*.json.gz" traces
  int32_t layers = 32;
};

// What was written: the counts the reader must find.
struct KinetoTraceTruth {
  uint64_t json_bytes = 0;  // uncompressed
  uint64_t file_bytes = 0;  // on disk
  uint64_t events = 0;
  uint64_t kernels = 0;  // NCCL kernels included
  uint64_t nccl_kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t nccl_calls = 0;   // one nccl: annotation each
  uint64_t steps = 0;        // ProfilerStep ranges
  uint64_t allocations = 0;  // "[memory]" events with positive bytes
  uint64_t releases = 0;
};

Expected<KinetoTraceTruth> write_kineto_trace(const KinetoTraceSpec& spec, const std::string& path);

}  // namespace pipescope::synthetic
