#include "collective_plan.h"

#include <algorithm>

namespace pipescope::benches {

std::string_view collective_name(Collective op) {
  switch (op) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kSendRecv: return "send_recv";
    case Collective::kAllToAll: return "all_to_all";
  }
  return "unknown";
}

std::optional<CollectivePlan> plan_collective(Collective op, int64_t size_bytes, int ranks,
                                              int element_bytes) {
  if (size_bytes <= 0 || ranks < 1 || element_bytes < 1) return std::nullopt;
  CollectivePlan p;
  const int64_t n = ranks, e = element_bytes;
  switch (op) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      p.count = size_bytes / e;
      p.bytes = p.send_bytes = p.recv_bytes = p.count * e;
      break;
    case Collective::kAllGather:
      p.count = size_bytes / (e * n);
      p.send_bytes = p.count * e;
      p.bytes = p.recv_bytes = p.count * e * n;
      break;
    case Collective::kReduceScatter:
      p.count = size_bytes / (e * n);
      p.bytes = p.send_bytes = p.count * e * n;
      p.recv_bytes = p.count * e;
      break;
    case Collective::kAllToAll:
      p.count = size_bytes / (e * n);
      p.bytes = p.send_bytes = p.recv_bytes = p.count * e * n;
      break;
  }
  if (p.count == 0) return std::nullopt;
  return p;
}

double bus_bandwidth_factor(Collective op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Collective::kAllReduce: return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kSendRecv: return 1;
  }
  return 1;
}

std::vector<int64_t> collective_sizes(bool quick) {
  constexpr int64_t kMax = int64_t{1} << 30;
  constexpr int64_t kQuickMax = int64_t{256} << 20;
  std::vector<int64_t> sizes;
  for (int64_t s = 8; s <= (quick ? kQuickMax : kMax); s *= quick ? 16 : 2) sizes.push_back(s);
  if (quick && sizes.back() != kQuickMax) sizes.push_back(kQuickMax);
  return sizes;
}

int operations_per_iteration(int64_t bytes) {
  constexpr int64_t kTargetBytes = int64_t{64} << 20;
  return static_cast<int>(std::clamp<int64_t>(kTargetBytes / std::max<int64_t>(bytes, 1), 1, 100));
}

}  // namespace pipescope::benches
