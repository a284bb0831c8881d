// Writes the traces of a whole simulated training run, one .pst per rank with the project's own
// TraceWriter, shaped like what libpipescope.so leaves: communicator records (world + splits),
// NCCL calls joined to their kernels through external correlation records, compute kernels,
// NVTX step / forward / backward ranges and device memory records. The timeline comes from a
// small simulation on one true clock (1F1B per pipeline, p2p transfers, collectives that end
// when their last member has arrived), so a report's answers can be checked exactly against
// SyntheticRunTruth. Each rank writes on its own clock (true time + an offset), host records in
// time order and GPU records a step later, as CUPTI delivers them.
//
// Used by the report's tests (known answers) and by benches/cpu/report_benchmark.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::synthetic {

struct SyntheticRunSpec {
  // Megatron order: rank = tp_rank + tp * (dp_rank + dp * stage).
  int tp = 2, pp = 4, dp = 2;
  // > 1 (with tp = pp = 1): hierarchical ZeRO over shard groups of this many consecutive ranks,
  // replica groups across them (equal rank % zero_shard); parameters all-gathered in forward and
  // backward, gradients reduce-scattered in the shard group and all-reduced across replicas.
  int zero_shard = 1;
  int steps = 3;
  int microbatches = 8;
  int64_t forward_ns = 2'000'000;   // per micro-batch and stage
  int64_t backward_ns = 4'000'000;  // per micro-batch and stage
  int kernels_per_microbatch = 8;   // compute kernels a forward is split into (backward: twice)
  // Per stage, in place of forward_ns / backward_ns / static_bytes (empty: every stage alike).
  std::vector<int64_t> stage_forward_ns, stage_backward_ns;
  std::vector<uint64_t> stage_static_bytes;
  // Shares of every compute piece that a GEMM and an attention kernel take, the rest an
  // elementwise kernel; both 0: pieces cycle through gemm, attention, gemm, elementwise, norm.
  double gemm_share = 0, attention_share = 0;
  int64_t p2p_transfer_ns = 50'000;
  int64_t allreduce_ns = 1'000'000;          // data-parallel gradient reduction once all arrived
  int64_t optimizer_ns = 500'000;            // after the reduction, before the next step
  uint64_t activation_bytes = 256ull << 20;  // allocated at a forward, released at its backward
  uint64_t static_bytes = 8ull << 30;        // allocated before the first step
  std::vector<int64_t> clock_offset_ns;      // per rank; empty: seeded, within +-5 ms
  uint64_t seed = 1;
  int straggler_rank = -1;  // arrives this late at every data-parallel gradient reduction
  int64_t straggler_delay_ns = 0;
  std::vector<int64_t> straggler_delay_by_step;  // when given: its delay at each step (0 past the end)
  // Its forward and backward take this many times longer; its pipeline neighbours wait for it
  // in their sends and receives (its pipeline runs a schedule of its own).
  int slow_rank = -1;
  double slow_factor = 1.0;
  // The hang rank stops before step hang_step's gradient reduction and writes nothing after;
  // the others enter the reduction (their NCCL kernel never ends) and their traces end too,
  // none of them closed (no end chunk), as when a job is killed at a NCCL timeout.
  int hang_rank = -1;
  int hang_step = -1;
  // The reduction blocks the host, as NCCL calls that wait for their peers do: the others'
  // reduction is written by the flight recorder (nccl_call in flight, seen once a second for
  // 10 s), not as an nccl_op.
  bool hang_blocking = false;
  // The hang rank stops inside an NCCL call of its own that never returns (on a communicator no
  // other trace knows) rather than in its own code.
  bool hang_inside_call = false;
  // Ranks killed before their first flush (SIGKILL, an out-of-memory kill): their files hold the
  // header and process info only, no end chunk. The others' traces are as if they took part.
  std::vector<int> silent_ranks;
  // How ranks end, as format 1.3 records after their last step (on the true clock: the end of
  // the last completed step + delay_ns): a failed NCCL call's code (1 ms before), the signal
  // that ended the process, the status it exited with.
  struct RankEnding {
    int rank = 0;
    int64_t delay_ns = 0;
    int nccl_error = 0;    // a returned nccl_call with this ncclResult_t; 0: none
    int signal = 0;        // kProcessSignal; 0: none
    int exit_status = -1;  // kProcessExit when >= 0
  };
  std::vector<RankEnding> endings;
  bool gpu = true;  // kernel, memcpy-free GPU records (CUPTI); false: host records only
  // Compute kernels this long before the first step (model construction); under 0.99 s (the
  // run's clock starts at 1 s).
  int64_t setup_gpu_ns = 0;
  // false: the stages talk through something other than NCCL (no send/recv records), and
  // `stage_ranges` can declare them with docs/design.md's NVTX convention (a range "stage=<k>").
  bool pipeline_p2p = true;
  bool stage_ranges = false;
  bool nvtx = true;
  std::string step_range = "train_step", forward_range = "forward", backward_range = "backward";
  bool memory = true;
  // Tensors (static and activations) come from a stream-ordered pool (cudaMallocAsync: the
  // "allocated" figure); 1 GiB of workspace is cudaMalloc'ed beside them ("reserved").
  bool memory_pool = false;
  bool compress = false;
  std::string run_id = "synthetic";
  int attempt = 0;
};

struct SyntheticRunTruth {
  int world = 0;
  std::vector<int64_t> clock_offset_ns;  // per rank
  std::vector<int> stage, tp_rank, dp_rank;
  std::vector<uint64_t> peak_memory_bytes;  // per rank
  std::vector<double> bubble_fraction;      // per stage, mean over the completed steps
  // Per stage and step: first forward start to first backward start, last forward end to last
  // backward end (1F1B's warm-up and cool-down).
  std::vector<int64_t> warmup_ns, cooldown_ns;
  // Per stage and step: time its receives waited for their sender (the transfer itself aside).
  std::vector<int64_t> p2p_wait_ns;
  std::vector<int64_t> step_ns;                 // per completed step
  std::vector<uint64_t> peak_activation_bytes;  // per stage
  uint64_t records = 0;
  uint64_t record_bytes = 0;  // uncompressed record bytes, all ranks
};

// The default run with another layout.
inline SyntheticRunSpec with_layout(int tp, int pp, int dp) {
  SyntheticRunSpec spec;
  spec.tp = tp;
  spec.pp = pp;
  spec.dp = dp;
  return spec;
}

// Writes rank-<r>.<pid>.pst files into `dir` (which must exist).
Expected<SyntheticRunTruth> write_synthetic_run(const SyntheticRunSpec& spec, const std::string& dir);

}  // namespace pipescope::synthetic
