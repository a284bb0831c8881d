#include "pipescope/planner/gpu.h"

#include "bundled_data.h"
#include "gpu_json.h"

namespace pipescope::planner {
namespace detail {

Gpu read_gpu(JsonFieldReader& reader, const json& object, const std::string& path, bool top_level) {
  Gpu gpu;
  if (!reader.expect_object(object, path)) return gpu;
  if (top_level) {
    reader.check_schema_version(object, kHardwareSchemaVersion);
    reader.only_fields(
        object, path,
        {"schema_version", "name", "device_name", "memory_bytes", "peak_dense_bf16_flops_per_s",
         "peak_dense_fp8_flops_per_s", "hbm_bytes_per_s", "nvlink_bytes_per_s", "source"});
  } else {
    reader.only_fields(object, path,
                       {"name", "device_name", "memory_bytes", "peak_dense_bf16_flops_per_s",
                        "peak_dense_fp8_flops_per_s", "hbm_bytes_per_s", "nvlink_bytes_per_s", "source"});
  }
  gpu.name = reader.string(object, "name", path);
  gpu.device_name = reader.optional_string(object, "device_name", path).value_or("");
  gpu.memory_bytes = reader.integer(object, "memory_bytes", path, JsonRange::kPositive);
  gpu.peak_dense_bf16_flops_per_s =
      reader.number(object, "peak_dense_bf16_flops_per_s", path, JsonRange::kPositive);
  // Zero is meaningful here: the GPU has no FP8 tensor cores.
  gpu.peak_dense_fp8_flops_per_s =
      reader.number(object, "peak_dense_fp8_flops_per_s", path, JsonRange::kNonNegative);
  gpu.hbm_bytes_per_s = reader.number(object, "hbm_bytes_per_s", path, JsonRange::kPositive);
  gpu.nvlink_bytes_per_s = reader.number(object, "nvlink_bytes_per_s", path, JsonRange::kPositive);
  gpu.source = reader.string(object, "source", path);
  return gpu;
}

}  // namespace detail

std::vector<std::string> known_gpu_names() {
  std::vector<std::string> names;
  for (const auto& file : detail::bundled_gpus()) names.emplace_back(file.name);
  return names;
}

Expected<Gpu> parse_gpu_json(std::string_view text, std::string_view origin) {
  JsonFieldReader reader{std::string(origin)};
  const detail::json root = reader.parse(text);
  Gpu gpu = detail::read_gpu(reader, root, "", /*top_level=*/true);
  if (!reader.ok()) return reader.error();
  return gpu;
}

Expected<Gpu> find_gpu(std::string_view name) {
  const auto* file = detail::find_bundled(detail::bundled_gpus(), name);
  if (file == nullptr) {
    return Error{"unknown GPU '" + std::string(name) +
                 "'; known GPUs: " + detail::bundled_names(detail::bundled_gpus())};
  }
  return parse_gpu_json(file->text, "bundled GPU '" + std::string(name) + "'");
}

}  // namespace pipescope::planner
