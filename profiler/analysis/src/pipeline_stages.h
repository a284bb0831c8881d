// Internal to layout inference: pipeline stages from p2p flows (or, when the stages talk
// through something other than NCCL, from the communicators inside each stage).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "layout_groups.h"
#include "pipescope/analysis/layout_inference.h"
#include "pipescope/common/expected.h"

namespace pipescope::analysis::layout {

struct PipelineStages {
  int32_t pp = 1;
  std::vector<int32_t> stage;  // per global rank; 0 without a pipeline
  std::vector<int32_t> chain;  // per global rank: index of its pipeline chain, -1 without one
  std::vector<std::string> notes;
};

// Every connected set of p2p flows must be a chain or a ring, all of one length. Flows between
// members of an all-to-all communicator are expert traffic and left out, unless they went
// through a known communicator outside `all_to_all_comms`. pp = 1 without flows.
Expected<PipelineStages> pipeline_from_flows(int32_t world_size, const std::vector<Group>& groups,
                                             const std::vector<P2pFlow>& flows,
                                             const std::unordered_set<uint64_t>& all_to_all_comms = {});

// `pp` stages of world_size / pp ranks each, found as the connected sets of the communicators of
// `tp` or `dp` ranks; ordered by their lowest global rank (traffic cannot order them).
PipelineStages pipeline_from_groups(int32_t world_size, int32_t pp, int32_t tp, int32_t dp,
                                    const std::vector<Group>& groups);

// Stages as the ranks declare them (`declared[r]`, -1: none): a rank without a declaration
// takes the one of its smallest communicator's declaring members. Fails when a rank stays
// without a stage or the stages differ in size.
Expected<PipelineStages> pipeline_from_declarations(int32_t world_size, const std::vector<int32_t>& declared,
                                                    const std::vector<Group>& groups);

}  // namespace pipescope::analysis::layout
