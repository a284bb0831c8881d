#include "pipescope/planner/collective_model.h"

namespace pipescope::planner {

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kSendRecv: return "send_recv";
  }
  return "?";
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  for (CollectiveKind kind : kCollectiveKinds) {
    if (collective_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string_view link_tier_name(LinkTier tier) {
  return tier == LinkTier::kIntraNode ? "intra_node" : "inter_node";
}

double bus_bandwidth_factor(CollectiveKind kind, int ranks) {
  if (ranks <= 1) return 0;  // nothing leaves the GPU
  const double n = ranks;
  switch (kind) {
    // A ring all-reduce is a reduce-scatter then an all-gather: every rank sends 2(n-1)/n of the buffer.
    case CollectiveKind::kAllReduce: return 2 * (n - 1) / n;
    // Each rank sends (and receives) all but its own 1/n share of the buffer.
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (n - 1) / n;
    case CollectiveKind::kSendRecv: return 1;
  }
  return 1;
}

}  // namespace pipescope::planner
