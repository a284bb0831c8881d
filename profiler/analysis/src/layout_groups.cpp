#include "layout_groups.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

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

// Which collective a communicator mostly runs, to tell apart families of one size.
namespace {

int dominant_op(const Traffic& t) {
  const uint64_t bytes[] = {t.all_reduce_bytes, t.all_gather_bytes, t.reduce_scatter_bytes,
                            t.all_to_all_bytes, t.rooted_bytes};
  return static_cast<int>(std::max_element(std::begin(bytes), std::end(bytes)) - std::begin(bytes));
}

}  // namespace

double distance(const Traffic& a, const Traffic& b) {
  return std::abs(std::log1p(a.collective_bytes()) - std::log1p(b.collective_bytes())) +
         (dominant_op(a) == dominant_op(b) ? 0.0 : 100.0);
}

const Family* most_traffic(const std::vector<const Family*>& candidates) {
  const Family* best = nullptr;
  for (const Family* f : candidates) {
    if (best == nullptr || f->traffic.collective_bytes() > best->traffic.collective_bytes() ||
        (f->traffic.collective_bytes() == best->traffic.collective_bytes() &&
         (f->span < best->span || (f->span == best->span && f->size < best->size)))) {
      best = f;
    }
  }
  return best;
}

double call_rate(const Family& f) {
  return f.traced > 0 ? static_cast<double>(f.traffic.collective_calls) / f.traced : 0.0;
}

// Tensor parallelism runs collectives in every layer of every micro-batch (forward and
// backward), data parallelism a few per step (the gradient reduction, the parameter gather), so
// the family that calls most often per rank is tensor parallel, however many bytes the gradients
// weigh. Bytes decide only between families within 2x of the most frequent (`close` says so).
const Family* tensor_family(const std::vector<const Family*>& candidates, bool& close) {
  close = false;
  double most = 0;
  for (const Family* f : candidates) most = std::max(most, call_rate(*f));
  std::vector<const Family*> frequent;
  for (const Family* f : candidates)
    if (2 * call_rate(*f) >= most) frequent.push_back(f);
  close = frequent.size() > 1;
  return most_traffic(frequent);
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
