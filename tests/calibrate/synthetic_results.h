// Calibration-suite results of a made-up GPU (an H100 unless told) with known behaviour, as the suite writes
// them (docs/calibration-results.md): for fit and command tests.
#pragma once

#include <string>

namespace pipescope::calibrate::testing {

struct SyntheticGpu {
  std::string gpu_name = "NVIDIA H100 80GB HBM3";
  double peak_bf16_flops_per_s = 989.4e12;  // the GPU's dense BF16 peak, which efficiencies are of
  double gemm_efficiency = 0.7;             // on the large corner of the grid, before wave losses
  double attention_efficiency = 0.5;        // forward; backward is 0.8x
  double hbm_bytes_per_s = 2.8e12;          // every hbm kernel
  double h2d_bytes_per_s = 50e9;
  double all_reduce_busbw = 360e9;  // 8 ranks, one node
  double all_reduce_latency_s = 20e-6;
  // Also all_gather, reduce_scatter, send_recv and all_to_all over the same 8 ranks (at busbw
  // 300 GB/s, 25 us) and the communicator's memory: every intra-node part the planner needs.
  bool every_collective = false;
  bool attention_backward = true;
};

// One Google Benchmark JSON document with every family.
std::string synthetic_results_json(const SyntheticGpu& gpu = {});

}  // namespace pipescope::calibrate::testing
