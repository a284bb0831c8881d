// How many GPUs a CUDA program started by `pipescope calibrate run` will see: nvidia-smi lists
// every GPU of the machine, CUDA_VISIBLE_DEVICES narrows them. Pure logic over the two texts.
#pragma once

#include <string_view>

namespace pipescope::calibrate {

// `cuda_visible_devices`: the variable's value, or null when unset. `nvidia_smi_list`: the output
// of `nvidia-smi -L` ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d1b...)" per GPU). As CUDA reads
// the variable: comma-separated indices or UUIDs (a unique prefix is enough), the list ending at
// the first entry that names no GPU; an empty value hides every GPU.
int visible_gpu_count(const char* cuda_visible_devices, std::string_view nvidia_smi_list);

}  // namespace pipescope::calibrate
