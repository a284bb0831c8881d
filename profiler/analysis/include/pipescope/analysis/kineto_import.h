// Reads a PyTorch profiler (Kineto) trace, Chrome trace-event JSON (plain or gzip), and writes
// it as a pipescope trace, so that report and export run on it unchanged (docs/kineto.md).
//
// What maps to what:
//   distributedInfo.rank / world_size  -> process info rank, world size; run id
//                                         "kineto:<backend>:<world_size>" (shared by a job's ranks)
//   cat kernel                          -> kernel records (device, stream, correlation, grid, block,
//                                         registers, shared memory)
//   cat gpu_memcpy / gpu_memset         -> memcpy / memset records (copy kind from the name)
//   user_annotation "nccl:<op>" (else record_param_comms naming its collective, else c10d:: cpu
//                                         ops) -> nccl_op records on the process group's
//                                         communicator, numbered per communicator, sizes in the
//                                         profiler's convention (kineto_collectives.h); the NCCL
//                                         kernel launched inside the call (a cuda_runtime launch
//                                         on the same thread) is linked by an external_correlation
//                                         record
//   user_annotation (incl. ProfilerStep#N) -> NVTX push/pop ranges per thread
//   "[memory]" instant events           -> memory records (tensor allocations: the "allocated"
//                                         figure, flagged as pool allocations)
//   cuda_runtime / cuda_driver events with a correlation -> API records (when GPU work was
//                                         launched: HTA's figures cut the last step by it)
// Lost: CPU ops (other than the NCCL ones) and runtime calls without a correlation. Process groups are known
// where record_param_comms lists their ranks (PyTorch 2.1 and later); docs/kineto.md says what is assumed
// where it does not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::analysis {

Status convert_kineto_trace(const std::string& json_path, const std::string& pst_path);
// The same for a document already read (and inflated); `origin` names it in errors.
Status convert_kineto_text(std::string_view text, const std::string& origin, const std::string& pst_path);

// Several ranks' traces, each on a worker of its own, as many at once as there are cores (each
// holds one inflated document); the first failure in the inputs' order is the one returned.
Status convert_kineto_traces(const std::vector<std::string>& json_paths,
                             const std::vector<std::string>& pst_paths);

// A cheap sniff: a .json / .json.gz file whose first bytes hold a trace-event document that is
// not a pipescope Perfetto export.
bool looks_like_kineto_trace(const std::string& path);

}  // namespace pipescope::analysis
