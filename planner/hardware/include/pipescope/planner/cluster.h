// A cluster: nodes of identical GPUs, NVLink inside a node, NICs between nodes. The bundled
// ones are the paper's two clusters (seren, kalos) and DGX A100 / DGX H100 nodes; a user file
// in the same JSON format describes any other (docs/calibration-format.md, "Cluster files").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::planner {

struct Cluster {
  std::string name;
  Gpu gpu;
  int gpus_per_node = 0;
  int nodes = 0;  // 0: not stated (a --gpu cluster, a DGX node type)
  int nics_per_node = 0;
  double nic_bytes_per_s = 0;         // one NIC, one direction
  double intra_node_bytes_per_s = 0;  // one GPU to the rest of its node, one direction
  double inter_node_bytes_per_s = 0;  // one node's NICs together: nics_per_node * nic_bytes_per_s
  std::string source;

  bool operator==(const Cluster&) const = default;
};

// Bundled cluster names, sorted.
std::vector<std::string> known_cluster_names();

// `--cluster NAME|FILE`: a bundled name, or a path (anything with '/' or ending in .json).
Expected<Cluster> load_cluster(std::string_view name_or_path);

Expected<Cluster> parse_cluster_json(std::string_view text, std::string_view origin);

// `--gpu NAME`: nodes of that GPU on NVLink with the bundled default node (8 GPUs, 8x400 Gb/s,
// data/gpu-node.json) unless `--gpus-per-node` / `--inter-node-gbps` (Gb/s per node) override it.
Expected<Cluster> make_gpu_cluster(std::string_view gpu_name, std::optional<int> gpus_per_node = std::nullopt,
                                   std::optional<double> inter_node_gbps = std::nullopt);

// The same two overrides on any cluster. A new GPU count keeps the NICs; a new per-node rate is
// spread over the cluster's NICs.
Expected<Cluster> with_node_overrides(Cluster cluster, std::optional<int> gpus_per_node,
                                      std::optional<double> inter_node_gbps);

// Network rates are quoted in Gb/s; pipescope counts bytes.
constexpr double gbps_to_bytes_per_s(double gbps) { return gbps * 1e9 / 8; }

}  // namespace pipescope::planner
