// A GPU as the planner's cost models see it: the datasheet numbers that bound compute, memory
// and NVLink. What a kernel achieves against them lives in the calibration profile, never here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::planner {

// schema_version of the GPU, cluster and GPU-node JSON files this build reads and writes.
inline constexpr int kHardwareSchemaVersion = 1;

struct Gpu {
  std::string name;         // the --gpu name: a100-80gb, h100-80gb, h200-141gb
  std::string device_name;  // what CUDA calls it, e.g. "NVIDIA A100-SXM4-80GB"
  // The device memory nvidia-smi reports as memory.total. The CUDA runtime sees slightly less
  // (a driver reservation); the calibration profile's headroom covers the difference.
  int64_t memory_bytes = 0;
  double peak_dense_bf16_flops_per_s = 0;
  double peak_dense_fp8_flops_per_s = 0;  // 0: no FP8 tensor cores
  double hbm_bytes_per_s = 0;
  // NVLink bandwidth of one GPU in ONE direction (datasheets quote both directions together:
  // A100 "600 GB/s" is 300e9 here). Every bandwidth in pipescope is per direction.
  double nvlink_bytes_per_s = 0;
  std::string source;  // where the numbers come from (datasheet, measurement)

  bool operator==(const Gpu&) const = default;
};

// Bundled GPU names, sorted.
std::vector<std::string> known_gpu_names();

// A bundled GPU by name; an unknown name lists the known ones.
Expected<Gpu> find_gpu(std::string_view name);

// The bundled GPU a device is, from the name CUDA reports (cudaDeviceProp::name, which
// nvidia-smi shows too): its device_name exactly, or a known spelling of the same part
// ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"). Parts sold under the same chip name with other
// datasheet figures (H100 PCIe and NVL, H200 NVL, A100 40GB and PCIe) are refused with what
// differs, as is a name that does not tell which part it is.
Expected<Gpu> identify_gpu(std::string_view device_name);

// A GPU JSON document (docs/calibration-format.md, "GPU files"). `origin` names it in errors,
// e.g. "GPU file 'my-gpu.json'".
Expected<Gpu> parse_gpu_json(std::string_view text, std::string_view origin);

}  // namespace pipescope::planner
