#include "pipescope/planner/cluster.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "bundled_data.h"
#include "gpu_json.h"
#include "pipescope/common/data_dirs.h"

namespace pipescope::planner {
namespace {

using detail::json;
using pipescope::JsonFieldReader;
using pipescope::JsonRange;

// Counts are stored in an int.
constexpr int64_t kMaxCount = std::numeric_limits<int>::max();

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// "gpu" names a bundled GPU or describes one inline, for hardware pipescope does not ship.
Gpu read_cluster_gpu(JsonFieldReader& reader, const json& root) {
  const auto field = root.find("gpu");
  if (!reader.ok()) return {};
  if (field == root.end()) {
    reader.fail("field 'gpu' is missing");
    return {};
  }
  if (field->is_object()) return detail::read_gpu(reader, *field, "gpu", /*top_level=*/false);
  if (!field->is_string()) {
    reader.fail("field 'gpu' must be a GPU name or a GPU object, got " + field->dump());
    return {};
  }
  auto gpu = find_gpu(field->get<std::string>());
  if (!gpu.ok()) {
    reader.fail("field 'gpu': " + gpu.error().message);
    return {};
  }
  return std::move(*gpu);
}

Cluster read_cluster(JsonFieldReader& reader, const json& root) {
  Cluster cluster;
  reader.check_schema_version(root, kHardwareSchemaVersion);
  reader.only_fields(root, "",
                     {"schema_version", "name", "gpu", "gpus_per_node", "nodes", "nics_per_node",
                      "nic_bytes_per_s", "intra_node_bytes_per_s", "source"});
  cluster.name = reader.string(root, "name", "");
  cluster.gpu = read_cluster_gpu(reader, root);
  cluster.gpus_per_node =
      static_cast<int>(reader.integer(root, "gpus_per_node", "", JsonRange::kPositive, kMaxCount));
  if (root.contains("nodes")) {
    cluster.nodes = static_cast<int>(reader.integer(root, "nodes", "", JsonRange::kPositive, kMaxCount));
  }
  cluster.nics_per_node =
      static_cast<int>(reader.integer(root, "nics_per_node", "", JsonRange::kPositive, kMaxCount));
  cluster.nic_bytes_per_s = reader.number(root, "nic_bytes_per_s", "", JsonRange::kPositive);
  // NVSwitch nodes give every GPU its full NVLink bandwidth to the rest of the node; a file for
  // another topology states what one GPU actually gets.
  cluster.intra_node_bytes_per_s =
      root.contains("intra_node_bytes_per_s")
          ? reader.number(root, "intra_node_bytes_per_s", "", JsonRange::kPositive)
          : cluster.gpu.nvlink_bytes_per_s;
  cluster.inter_node_bytes_per_s = cluster.nics_per_node * cluster.nic_bytes_per_s;
  cluster.source = reader.string(root, "source", "");
  return cluster;
}

}  // namespace

std::vector<std::string> known_cluster_names() {
  std::vector<std::string> names;
  for (const auto& file : detail::bundled_clusters()) names.emplace_back(file.name);
  return names;
}

Expected<Cluster> parse_cluster_json(std::string_view text, std::string_view origin) {
  JsonFieldReader reader{std::string(origin)};
  const json root = reader.parse(text);
  Cluster cluster = read_cluster(reader, root);
  if (!reader.ok()) return reader.error();
  return cluster;
}

Expected<Cluster> load_cluster(std::string_view name_or_path) {
  if (detail::looks_like_path(name_or_path)) {
    const std::string path(name_or_path);
    auto text = detail::read_text_file(path, "cluster file");
    if (!text.ok()) return text.error();
    return parse_cluster_json(*text, "cluster file '" + path + "'");
  }
  const auto* file = detail::find_bundled(detail::bundled_clusters(), name_or_path);
  if (file == nullptr) {
    if (auto installed = find_data_file("clusters", name_or_path)) {
      auto text = detail::read_text_file(installed->string(), "cluster file");
      if (!text.ok()) return text.error();
      return parse_cluster_json(*text, "installed cluster '" + installed->string() + "'");
    }
    return Error{"unknown cluster '" + std::string(name_or_path) +
                 "'; known clusters: " + detail::bundled_names(detail::bundled_clusters()) +
                 " (or pass a cluster JSON file, see docs/calibration-format.md)"};
  }
  return parse_cluster_json(file->text, "bundled cluster '" + std::string(name_or_path) + "'");
}

Expected<Cluster> with_node_overrides(Cluster cluster, std::optional<int> gpus_per_node,
                                      std::optional<double> inter_node_gbps) {
  if (gpus_per_node) {
    if (*gpus_per_node <= 0) {
      return Error{"--gpus-per-node must be a positive integer, got " + std::to_string(*gpus_per_node)};
    }
    cluster.gpus_per_node = *gpus_per_node;
    cluster.source += "; --gpus-per-node " + std::to_string(*gpus_per_node);
  }
  if (inter_node_gbps) {
    if (!std::isfinite(*inter_node_gbps) || *inter_node_gbps <= 0) {
      return Error{"--inter-node-gbps must be a positive number of Gb/s per node, got " +
                   format_number(*inter_node_gbps)};
    }
    cluster.inter_node_bytes_per_s = gbps_to_bytes_per_s(*inter_node_gbps);
    cluster.nic_bytes_per_s = cluster.inter_node_bytes_per_s / cluster.nics_per_node;
    cluster.source += "; --inter-node-gbps " + format_number(*inter_node_gbps) + " per node";
  }
  return cluster;
}

Expected<Cluster> make_gpu_cluster(std::string_view gpu_name, std::optional<int> gpus_per_node,
                                   std::optional<double> inter_node_gbps) {
  auto gpu = find_gpu(gpu_name);
  if (!gpu.ok()) return gpu.error();
  // The default node is data, like every other hardware number: data/gpu-node.json.
  const auto defaults = detail::bundled_node_defaults();
  if (defaults.size() != 1) return Error{"pipescope was built without its bundled data/gpu-node.json"};
  JsonFieldReader reader{"bundled GPU node 'gpu-node'"};
  const json root = reader.parse(defaults[0].text);
  reader.check_schema_version(root, kHardwareSchemaVersion);
  reader.only_fields(root, "",
                     {"schema_version", "gpus_per_node", "nics_per_node", "nic_bytes_per_s", "source"});
  Cluster cluster;
  cluster.name = "gpu:" + gpu->name;
  cluster.gpus_per_node =
      static_cast<int>(reader.integer(root, "gpus_per_node", "", JsonRange::kPositive, kMaxCount));
  cluster.nics_per_node =
      static_cast<int>(reader.integer(root, "nics_per_node", "", JsonRange::kPositive, kMaxCount));
  cluster.nic_bytes_per_s = reader.number(root, "nic_bytes_per_s", "", JsonRange::kPositive);
  cluster.source = reader.string(root, "source", "");
  if (!reader.ok()) return reader.error();
  cluster.inter_node_bytes_per_s = cluster.nics_per_node * cluster.nic_bytes_per_s;
  cluster.intra_node_bytes_per_s = gpu->nvlink_bytes_per_s;
  cluster.gpu = std::move(*gpu);
  return with_node_overrides(std::move(cluster), gpus_per_node, inter_node_gbps);
}

}  // namespace pipescope::planner
