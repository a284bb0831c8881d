// Parallel layout from communicators and p2p flows. The pipeline comes first (pipeline_stages),
// then each stage is read on its own: communicators of one size that partition the stage form a
// family, and the families' traffic names them (see the header for the rules).
#include "pipescope/analysis/layout_inference.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "layout_groups.h"
#include "pipeline_stages.h"
#include "stage_layout.h"

namespace pipescope::analysis {

const char* comm_role_name(CommRole role) {
  switch (role) {
    case CommRole::kWorld: return "world";
    case CommRole::kTensor: return "tensor";
    case CommRole::kPipeline: return "pipeline";
    case CommRole::kData: return "data";
    case CommRole::kShard: return "shard";
    case CommRole::kExpert: return "expert";
    case CommRole::kContext: return "context";
    case CommRole::kOther: return "other";
  }
  return "other";
}

namespace {

using layout::Family;
using layout::Group;
using layout::Traffic;

size_t at(int32_t rank) { return static_cast<size_t>(rank); }

Traffic traffic_of(const CommunicatorTraffic& c) {
  Traffic t;
  t.all_reduce_bytes = c.all_reduce_bytes;
  t.all_gather_bytes = c.all_gather_bytes;
  t.reduce_scatter_bytes = c.reduce_scatter_bytes;
  t.all_to_all_bytes = c.all_to_all_bytes;
  t.rooted_bytes = c.broadcast_bytes;
  t.p2p_bytes = c.p2p_bytes;
  t.collective_calls = c.collective_calls;
  t.p2p_calls = c.p2p_calls;
  return t;
}

Expected<std::vector<Group>> merge_groups(int32_t world_size, const std::vector<CommunicatorTraffic>& comms) {
  std::vector<Group> groups;
  std::vector<double> busiest;  // bytes of the communicator whose member order a group keeps
  std::map<std::vector<int32_t>, size_t> by_members;
  for (size_t i = 0; i < comms.size(); ++i) {
    const CommunicatorTraffic& c = comms[i];
    std::vector<int32_t> key = c.members;
    std::sort(key.begin(), key.end());
    Group probe{c.members, {}, c.comm_id, {}};
    if (!key.empty() && (key.front() < 0 || key.back() >= world_size)) {
      return Error{layout::describe(probe) + " names a rank outside 0.." + std::to_string(world_size - 1)};
    }
    if (std::adjacent_find(key.begin(), key.end()) != key.end()) {
      return Error{layout::describe(probe) + " lists a rank twice"};
    }
    if (key.empty()) continue;
    const auto [it, added] = by_members.try_emplace(std::move(key), groups.size());
    if (added) {
      groups.push_back(std::move(probe));
      busiest.push_back(-1);
    }
    // Several communicators over the same ranks may number them differently (the world
    // communicator in global order, a data-parallel one in its own): coordinates follow the
    // one that carries the traffic.
    const Traffic t = traffic_of(c);
    const double bytes = t.collective_bytes() + static_cast<double>(t.p2p_bytes);
    Group& group = groups[it->second];
    if (bytes > busiest[it->second]) {
      busiest[it->second] = bytes;
      group.members = c.members;
      group.comm_id = c.comm_id;
    }
    group.comms.push_back(i);
    group.traffic.add(t);
  }
  return groups;
}

}  // namespace

Expected<InferredLayout> infer_layout(int32_t world_size, const std::vector<CommunicatorTraffic>& comms,
                                      const std::vector<P2pFlow>& flows,
                                      const std::optional<StatedLayout>& stated) {
  LayoutEvidence evidence;
  evidence.stated = stated;
  return infer_layout(world_size, comms, flows, evidence);
}

Expected<InferredLayout> infer_layout(int32_t world_size, const std::vector<CommunicatorTraffic>& comms,
                                      const std::vector<P2pFlow>& flows, const LayoutEvidence& evidence) {
  const std::optional<StatedLayout>& stated = evidence.stated;
  if (world_size <= 0) return Error{"world size must be positive, got " + std::to_string(world_size)};
  if (stated) {
    const int64_t product = int64_t{stated->tp} * stated->pp * stated->dp;
    if (stated->tp < 1 || stated->pp < 1 || stated->dp < 1 || product != world_size) {
      return Error{"--layout tp=" + std::to_string(stated->tp) + ",pp=" + std::to_string(stated->pp) +
                   ",dp=" + std::to_string(stated->dp) + " makes " + std::to_string(product) +
                   " ranks, but the run has " + std::to_string(world_size)};
    }
  }
  auto merged = merge_groups(world_size, comms);
  if (!merged) return merged.error();
  const std::vector<Group>& groups = *merged;
  if (world_size > 1 && !stated && flows.empty() &&
      std::none_of(groups.begin(), groups.end(), [](const Group& g) { return g.size() > 1; })) {
    return Error{
        "no NCCL communicator of two ranks or more in the traces: nothing shows the layout (state it "
        "with --layout tp=T,pp=P,dp=D)"};
  }

  std::unordered_set<uint64_t> all_to_all_comms;
  for (const CommunicatorTraffic& c : comms)
    if (c.all_to_all_bytes > 0) all_to_all_comms.insert(c.comm_id);
  auto piped = layout::pipeline_from_flows(world_size, groups, flows, all_to_all_comms);
  if (!piped) return piped.error();
  layout::PipelineStages stages = std::move(*piped);
  if (stated && stages.pp > 1 && stages.pp != stated->pp) {
    return Error{"--layout says pp=" + std::to_string(stated->pp) +
                 " but the p2p flows form pipeline chains of " + std::to_string(stages.pp) + " stages"};
  }
  const bool declared = std::any_of(evidence.declared_stage.begin(), evidence.declared_stage.end(),
                                    [](int32_t s) { return s > 0; });
  if (stages.pp == 1 && declared) {
    auto from_nvtx = layout::pipeline_from_declarations(world_size, evidence.declared_stage, groups);
    if (!from_nvtx) return from_nvtx.error();
    if (stated && stated->pp != from_nvtx->pp) {
      return Error{"--layout says pp=" + std::to_string(stated->pp) +
                   " but the NVTX stage=<k> declarations make " + std::to_string(from_nvtx->pp) + " stages"};
    }
    stages = std::move(*from_nvtx);
  } else if (stated && stages.pp == 1 && stated->pp > 1) {
    stages = layout::pipeline_from_groups(world_size, stated->pp, stated->tp, stated->dp, groups);
  }

  InferredLayout out;
  out.world_size = world_size;
  out.pp = stages.pp;
  out.notes = stages.notes;
  out.ranks.resize(at(world_size));
  std::vector<std::vector<int32_t>> stage_ranks(at(stages.pp));
  for (int32_t r = 0; r < world_size; ++r) {
    out.ranks[at(r)].rank = r;
    out.ranks[at(r)].stage = stages.stage[at(r)];
    stage_ranks[at(stages.stage[at(r)])].push_back(r);
  }

  layout::StageInference inference(world_size, groups, stated, evidence.untraced, out);
  std::optional<layout::Dims> first;
  int32_t first_stage = 0;
  std::vector<int32_t> dark;  // stages none of whose ranks left a trace
  for (int32_t s = 0; s < stages.pp; ++s) {
    const auto& ranks = stage_ranks[at(s)];
    if (!evidence.untraced.empty() && std::all_of(ranks.begin(), ranks.end(), [&](int32_t r) {
          return std::binary_search(evidence.untraced.begin(), evidence.untraced.end(), r);
        })) {
      dark.push_back(s);
      continue;
    }
    std::vector<Family> families = inference.families(s, ranks);
    const auto analyzed = inference.analyze(s, ranks, families);
    if (!analyzed) return analyzed.error();
    const layout::Dims dims = *analyzed;
    if (!first) {
      first = dims;
      first_stage = s;
    }
    if (!(dims == *first)) {
      return Error{"pipeline stages disagree: stage " + std::to_string(first_stage) + " has " + first->str() +
                   ", stage " + std::to_string(s) + " has " + dims.str() +
                   " (its communicators do not partition the stages alike)"};
    }
  }
  if (!first) return Error{"no rank of any pipeline stage left a trace"};
  for (int32_t s : dark) {  // Megatron's order inside the stage: tensor parallel fastest
    const auto& ranks = stage_ranks[at(s)];
    for (size_t i = 0; i < ranks.size(); ++i) {
      out.ranks[at(ranks[i])].tp_rank = static_cast<int32_t>(i) % first->tp;
      out.ranks[at(ranks[i])].dp_rank = static_cast<int32_t>(i) / first->tp;
    }
    out.notes.push_back("stage " + std::to_string(s) +
                        ": no rank left a trace; tp_rank and dp_rank assumed from the rank order");
  }
  out.tp = first->tp;
  out.dp = first->dp;
  out.zero_shard = first->shard;
  out.ep = first->ep;

  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    std::optional<CommRole> role = inference.roles()[g];
    if (group.size() == world_size && world_size > 1) {
      role = CommRole::kWorld;
    } else if (!role && group.size() > 1 && stages.pp > 1) {
      const int32_t chain = stages.chain[at(group.members[0])];
      const bool one_chain =
          chain >= 0 && std::all_of(group.members.begin(), group.members.end(),
                                    [&](int32_t m) { return stages.chain[at(m)] == chain; });
      if (one_chain && (group.traffic.p2p_calls > 0 || group.size() == stages.pp)) role = CommRole::kPipeline;
    }
    for (size_t c : group.comms) out.roles.emplace_back(comms[c].comm_id, role.value_or(CommRole::kOther));
  }

  std::set<std::tuple<int32_t, int32_t, int32_t>> seen;
  for (const RankCoordinates& r : out.ranks) seen.insert({r.stage, r.tp_rank, r.dp_rank});
  if (seen.size() != out.ranks.size()) {
    out.notes.push_back(
        "the communicators' rank orders disagree: " + std::to_string(out.ranks.size() - seen.size()) +
        " ranks share (stage, tp_rank, dp_rank) with another");
  }
  out.notes.push_back("layout: tp " + std::to_string(out.tp) + " x pp " + std::to_string(out.pp) + " x dp " +
                      std::to_string(out.dp) + ", zero_shard " + std::to_string(out.zero_shard) + ", ep " +
                      std::to_string(out.ep) + (stated ? " (sizes stated)" : " (inferred)"));
  return out;
}

}  // namespace pipescope::analysis
