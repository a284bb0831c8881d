// Groups the sampled instances of a communicator (or of one p2p direction's two sides) by
// sequence number without a map: every member's samples are in sequence order (rank_digest.h),
// so one merging pass over the members' lists meets each instance once, in increasing sequence.
// Clock alignment, the NCCL table and the stragglers all read instances so.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "pipescope/analysis/rank_digest.h"

namespace pipescope::analysis {

// One member's samples.
struct MemberSamples {
  int32_t member;  // index into LoadedRun::ranks
  std::span<const InstanceSample> samples;
};

struct MemberSample {
  int32_t member;
  uint32_t position;  // in the list given to merge_by_sequence
  const InstanceSample* sample;
};

// Calls visit(sequence, std::span<const MemberSample>) for every sequence that `stride` keeps
// (sampled()) and some member holds, in increasing order; the span lists the samples of that
// sequence in the order of `members` (a member's repeated sequence, from a damaged trace,
// appears as often as it is held). `group` and `at` are scratch space.
template <class Visit>
void merge_by_sequence(std::span<const MemberSamples> members, uint32_t stride,
                       std::vector<MemberSample>& group, std::vector<size_t>& at, Visit&& visit) {
  at.assign(members.size(), 0);
  const auto skip_unsampled = [&](size_t k) {
    const auto& samples = members[k].samples;
    while (at[k] < samples.size() && !sampled(samples[at[k]].sequence, stride)) ++at[k];
  };
  for (size_t k = 0; k < members.size(); ++k) skip_unsampled(k);
  for (;;) {
    bool any = false;
    uint64_t next = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      if (at[k] == members[k].samples.size()) continue;
      const uint64_t sequence = members[k].samples[at[k]].sequence;
      next = any ? std::min(next, sequence) : sequence;
      any = true;
    }
    if (!any) return;
    group.clear();
    for (size_t k = 0; k < members.size(); ++k) {
      const auto& samples = members[k].samples;
      while (at[k] < samples.size() && samples[at[k]].sequence == next) {
        group.push_back(MemberSample{members[k].member, static_cast<uint32_t>(k), &samples[at[k]]});
        ++at[k];
        skip_unsampled(k);
      }
    }
    visit(next, std::span<const MemberSample>(group));
  }
}

}  // namespace pipescope::analysis
