#include "layout_groups.h"

#include <cstdio>

namespace pipescope::analysis::layout {

void Traffic::add(const Traffic& other) {
  all_reduce_bytes += other.all_reduce_bytes;
  all_gather_bytes += other.all_gather_bytes;
  reduce_scatter_bytes += other.reduce_scatter_bytes;
  all_to_all_bytes += other.all_to_all_bytes;
  rooted_bytes += other.rooted_bytes;
  p2p_bytes += other.p2p_bytes;
  collective_calls += other.collective_calls;
  p2p_calls += other.p2p_calls;
}

// In double: sums of large byte counts must not wrap.
double Traffic::collective_bytes() const {
  return static_cast<double>(all_reduce_bytes) + static_cast<double>(all_gather_bytes) +
         static_cast<double>(reduce_scatter_bytes) + static_cast<double>(all_to_all_bytes) +
         static_cast<double>(rooted_bytes);
}

bool Traffic::all_to_all_dominated() const {
  return all_to_all_bytes > 0 && 2.0 * static_cast<double>(all_to_all_bytes) >= collective_bytes();
}

// ZeRO-3 gathers the parameters for the forward and again for the backward and reduce-scatters
// the gradients once (2:1); ZeRO-1/2 style groups that only gather the updated parameters are
// all-gather alone. Tensor parallelism with sequence parallelism gathers and reduce-scatters
// activations alike (1:1), a data-parallel distributed optimizer too. 1.5:1 sits between.
bool Traffic::parameter_gather_dominated() const {
  const auto gathered = static_cast<double>(all_gather_bytes);
  const double reduced = static_cast<double>(reduce_scatter_bytes) + static_cast<double>(all_reduce_bytes);
  return all_gather_bytes > 0 && 2.0 * gathered >= 3.0 * reduced;
}

std::string rank_list(const std::vector<int32_t>& ranks) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > kShown) out += ",... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

std::string describe(const Group& group) {
  char id[32];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(group.comm_id));
  return std::string("communicator ") + id + " (ranks " + rank_list(group.members) + ")";
}

}  // namespace pipescope::analysis::layout
