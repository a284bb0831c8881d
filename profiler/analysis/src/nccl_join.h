// Joins each NCCL call (nccl_op record, external id) with the kernel it launched: CUPTI's
// external_correlation record links the launch's correlation id to the external id, and the
// kernel record carries the correlation id. The three arrive in any order (host rings and CUPTI
// buffers are flushed independently), so whichever comes first waits in a map; entries older
// than a horizon are dropped, so the maps stay as small as the records in flight.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace pipescope::analysis {

struct KernelSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

template <class Op>
class NcclKernelJoin {
 public:
  explicit NcclKernelJoin(int64_t horizon_ns) : horizon_ns_(horizon_ns) {}

  // `on_match(op, span)` is called once per op whose kernel is known.
  template <class OnMatch>
  void add_op(uint64_t external_id, const Op& op, int64_t now_ns, OnMatch&& on_match) {
    if (auto k = kernels_by_external_.find(external_id); k != kernels_by_external_.end()) {
      on_match(op, k->second.span);
      return;
    }
    ops_by_external_.emplace(external_id, Pending{op, now_ns});
    maybe_collect(now_ns);
  }

  template <class OnMatch>
  void add_link(uint32_t correlation_id, uint64_t external_id, int64_t now_ns, OnMatch&& on_match) {
    if (auto k = kernels_by_correlation_.find(correlation_id); k != kernels_by_correlation_.end()) {
      const KernelSpan span = k->second.span;
      kernels_by_correlation_.erase(k);
      on_kernel(external_id, span, now_ns, on_match);
      return;
    }
    external_by_correlation_[correlation_id] = Link{external_id, now_ns};
    maybe_collect(now_ns);
  }

  template <class OnMatch>
  void add_kernel(uint32_t correlation_id, KernelSpan span, int64_t now_ns, OnMatch&& on_match) {
    if (auto l = external_by_correlation_.find(correlation_id); l != external_by_correlation_.end()) {
      const uint64_t external_id = l->second.external_id;
      external_by_correlation_.erase(l);
      on_kernel(external_id, span, now_ns, on_match);
      return;
    }
    kernels_by_correlation_[correlation_id] = Kernel{span, now_ns};
    maybe_collect(now_ns);
  }

  // Calls given up on: no kernel within the horizon, plus those still waiting at the end.
  uint64_t ops_without_kernel() const { return ops_without_kernel_ + ops_by_external_.size(); }

 private:
  struct Pending {
    Op op;
    int64_t seen_ns;
  };
  struct Link {
    uint64_t external_id;
    int64_t seen_ns;
  };
  struct Kernel {
    KernelSpan span;
    int64_t seen_ns;
  };

  // A group's calls share one external id and may launch several kernels: every call of the
  // group gets the envelope of the kernels seen so far.
  template <class OnMatch>
  void on_kernel(uint64_t external_id, KernelSpan span, int64_t now_ns, OnMatch& on_match) {
    auto [k, fresh] = kernels_by_external_.try_emplace(external_id, Kernel{span, now_ns});
    if (!fresh) {
      k->second.span.start_ns = std::min(k->second.span.start_ns, span.start_ns);
      k->second.span.end_ns = std::max(k->second.span.end_ns, span.end_ns);
    }
    auto [first, last] = ops_by_external_.equal_range(external_id);
    for (auto it = first; it != last; ++it) on_match(it->second.op, k->second.span);
    ops_by_external_.erase(first, last);
    maybe_collect(now_ns);
  }

  // Drops entries older than the horizon, at most once per doubling of the maps.
  void maybe_collect(int64_t now_ns) {
    const size_t size = ops_by_external_.size() + external_by_correlation_.size() +
                        kernels_by_correlation_.size() + kernels_by_external_.size();
    if (size < next_collect_at_) return;
    const int64_t cutoff = now_ns - horizon_ns_;
    std::erase_if(external_by_correlation_, [cutoff](const auto& e) { return e.second.seen_ns < cutoff; });
    std::erase_if(kernels_by_correlation_, [cutoff](const auto& e) { return e.second.seen_ns < cutoff; });
    // A kernel already joined waits only for the rest of its group and for calls whose host
    // record comes a flush later than CUPTI's: seconds, not the whole horizon.
    const int64_t joined_cutoff = now_ns - std::min<int64_t>(horizon_ns_, 3'000'000'000);
    std::erase_if(kernels_by_external_,
                  [joined_cutoff](const auto& e) { return e.second.seen_ns < joined_cutoff; });
    // A call older than the horizon will not see its kernel any more (or it never ran: the
    // communicator's progress in CommDigest keeps what the hang view needs).
    const size_t before = ops_by_external_.size();
    std::erase_if(ops_by_external_, [cutoff](const auto& e) { return e.second.seen_ns < cutoff; });
    ops_without_kernel_ += before - ops_by_external_.size();
    const size_t kept = ops_by_external_.size() + external_by_correlation_.size() +
                        kernels_by_correlation_.size() + kernels_by_external_.size();
    next_collect_at_ = std::max<size_t>(4096, 2 * kept);
  }

  int64_t horizon_ns_;
  size_t next_collect_at_ = 4096;
  uint64_t ops_without_kernel_ = 0;
  std::unordered_multimap<uint64_t, Pending> ops_by_external_;
  std::unordered_map<uint32_t, Link> external_by_correlation_;
  std::unordered_map<uint32_t, Kernel> kernels_by_correlation_;
  std::unordered_map<uint64_t, Kernel> kernels_by_external_;
};

}  // namespace pipescope::analysis
