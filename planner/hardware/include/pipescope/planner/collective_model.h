// Collective kinds, link tiers and the nccl-tests bus-bandwidth convention the calibration
// profile's collective costs are written in (NVIDIA/nccl-tests, doc/PERFORMANCE.md).
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace pipescope::planner {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
inline constexpr std::array<CollectiveKind, 5> kCollectiveKinds = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
    CollectiveKind::kAllToAll, CollectiveKind::kSendRecv};

// Which links a collective crosses: NVLink inside a node, or the nodes' NICs.
enum class LinkTier { kIntraNode, kInterNode };
inline constexpr std::array<LinkTier, 2> kLinkTiers = {LinkTier::kIntraNode, LinkTier::kInterNode};

// JSON names: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv; intra_node, inter_node.
std::string_view collective_kind_name(CollectiveKind kind);
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);
std::string_view link_tier_name(LinkTier tier);

// busbw / algbw for `ranks` participants, as nccl-tests defines it: all_reduce 2(n-1)/n;
// all_gather, reduce_scatter, all_to_all (n-1)/n; send_recv 1. With algbw = bytes / time and
// bytes = nccl-tests' "size" (see docs/calibration-format.md), time = bytes * factor / busbw.
double bus_bandwidth_factor(CollectiveKind kind, int ranks);

}  // namespace pipescope::planner
