// Layout inference read as a specification: generators build the communicators and p2p flows a
// real run of a known layout creates (Megatron's groups, PyTorch's per-pair p2p communicators,
// 1F1B first-operation times on clocks that disagree by up to 1,000 s), under several rank
// orders, and the tests check the recovered sizes and every rank's coordinates.
#include "pipescope/analysis/layout_inference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "synthetic_layouts.h"

namespace pipescope::analysis {
namespace {

using namespace synthetic;  // NOLINT(google-build-using-namespace): the generators

CommunicatorTraffic all_reducing(uint64_t id, std::vector<int32_t> members, uint64_t bytes) {
  CommunicatorTraffic c{.comm_id = id, .members = std::move(members)};
  c.all_reduce_bytes = bytes;
  c.collective_calls = 1;
  return c;
}

bool has_note(const InferredLayout& layout, const std::string& part) {
  return std::any_of(layout.notes.begin(), layout.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string context(const Spec& s, uint64_t seed) {
  return "tp " + std::to_string(s.tp) + " pp " + std::to_string(s.pp) + " dp " + std::to_string(s.dp) +
         " order " + std::to_string(static_cast<int>(s.order)) + " timing " + std::to_string(s.timing) +
         " interleaved " + std::to_string(s.interleaved) + " seed " + std::to_string(seed);
}

// Sizes, every rank's coordinates and every communicator's role. Without timing (and with flows
// both ways) the stage order may come out reversed or rotated, but one way for all ranks.
void expect_recovered(const Spec& spec, const SyntheticRun& run, const InferredLayout& got,
                      const std::string& ctx) {
  ASSERT_EQ(got.tp, spec.tp) << ctx;
  ASSERT_EQ(got.pp, spec.pp) << ctx;
  ASSERT_EQ(got.dp, spec.dp) << ctx;
  EXPECT_EQ(got.zero_shard, 1) << ctx;
  ASSERT_EQ(got.ranks.size(), static_cast<size_t>(run.world)) << ctx;
  std::map<int32_t, int32_t> stage_map;
  for (int32_t r = 0; r < run.world; ++r) {
    const auto& want = run.truth[static_cast<size_t>(r)];
    const auto& have = got.ranks[static_cast<size_t>(r)];
    ASSERT_EQ(have.rank, r);
    ASSERT_EQ(have.tp_rank, want.tp) << ctx << " rank " << r;
    ASSERT_EQ(have.dp_rank, want.dp) << ctx << " rank " << r;
    const auto [it, added] = stage_map.try_emplace(want.stage, have.stage);
    ASSERT_EQ(it->second, have.stage) << ctx << " rank " << r;
  }
  const bool ordered = spec.timing || spec.forward_only;
  std::set<int32_t> images;
  for (const auto& [truth, inferred] : stage_map) {
    images.insert(inferred);
    if (ordered) {
      EXPECT_EQ(truth, inferred) << ctx;
    }
  }
  EXPECT_EQ(images.size(), stage_map.size()) << ctx;
  if (!ordered && spec.pp > 1) {
    EXPECT_TRUE(has_note(got, "assumed (lowest global rank first)")) << ctx;
  }
  for (const auto& [id, role] : got.roles) {
    ASSERT_TRUE(run.role_of.count(id)) << ctx;
    EXPECT_STREQ(comm_role_name(role), comm_role_name(run.role_of.at(id))) << ctx << " comm " << id;
  }
  EXPECT_EQ(got.roles.size(), run.comms.size()) << ctx;
}

TEST(LayoutInference, RecoversRandomized3dLayoutsUnderEveryRankOrder) {
  const std::vector<int32_t> tps{1, 2, 4, 8}, pps{1, 2, 3, 4, 6, 8, 16}, dps{1, 2, 3, 4, 8, 16, 32, 64};
  int32_t checked = 0;
  for (uint64_t seed = 1; checked < 240; ++seed) {
    Generator gen(seed);
    auto& rng = gen.rng();
    Spec spec;
    spec.tp = tps[rng() % tps.size()];
    spec.pp = pps[rng() % pps.size()];
    spec.dp = dps[rng() % dps.size()];
    const int32_t world = spec.tp * spec.pp * spec.dp;
    // A stage that is one tensor-parallel group looks like one data-parallel group: that case
    // is ambiguous by construction and has its own test.
    if (world < 2 || world > 1024 || (spec.dp == 1 && spec.tp > 1)) continue;
    spec.order = static_cast<Order>(checked % 3);
    spec.sequence_parallel = rng() % 2;
    spec.distributed_optimizer = rng() % 2;
    spec.timing = rng() % 4 != 0;
    spec.interleaved = spec.pp >= 3 && rng() % 3 == 0;
    spec.forward_only = rng() % 6 == 0;
    spec.pipeline_comms = rng() % 2;
    spec.extra_groups = rng() % 2;
    spec.world_comm = rng() % 4 != 0;
    const SyntheticRun run = gen.build(spec);
    const auto got = infer_layout(run.world, run.comms, run.flows);
    ASSERT_TRUE(got.ok()) << context(spec, seed) << ": " << got.error().message;
    expect_recovered(spec, run, *got, context(spec, seed));
    if (::testing::Test::HasFatalFailure()) return;
    ++checked;
  }
}

TEST(LayoutInference, MegatronOrder1024RanksTensorFastest) {
  Spec spec{.tp = 8, .pp = 4, .dp = 32, .order = Order::kMegatron, .sequence_parallel = true};
  Generator gen(7);
  const SyntheticRun run = gen.build(spec);
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  expect_recovered(spec, run, *got, "megatron 8x4x32");
  // Megatron: rank = tp_rank + 8 * (dp_rank + 32 * stage); rank 17 is stage 0, tp 1, dp 2.
  EXPECT_EQ(got->ranks[17].stage, 0);
  EXPECT_EQ(got->ranks[17].tp_rank, 1);
  EXPECT_EQ(got->ranks[17].dp_rank, 2);
  EXPECT_EQ(got->ranks[1023].stage, 3);
  EXPECT_TRUE(has_note(*got, "from the rank whose first p2p operation is a send"));
}

TEST(LayoutInference, StageOrderComesFromFirstSendsNotFromRankNumbers) {
  // Stage 0 on the highest ranks: the order must come from the traffic, not from rank numbers.
  Spec spec{.tp = 2, .pp = 4, .dp = 2, .order = Order::kMegatron};
  Generator gen(3);
  SyntheticRun run = gen.build(spec);
  auto reversed = [&](int32_t r) { return run.world - 1 - r; };
  for (auto& c : run.comms)
    for (auto& m : c.members) m = reversed(m);
  for (auto& f : run.flows) {
    f.src = reversed(f.src);
    f.dst = reversed(f.dst);
  }
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  for (int32_t r = 0; r < run.world; ++r) {
    EXPECT_EQ(got->ranks[static_cast<size_t>(reversed(r))].stage, run.truth[static_cast<size_t>(r)].stage);
  }
}

TEST(LayoutInference, P2pThroughItsOwnCommunicatorIsPipelineBesideAWorldAllToAll) {
  // Every rank also joins a world all-to-all: flows between its members look like expert traffic
  // unless they name the communicator they went through.
  Spec spec{.tp = 2, .pp = 2, .dp = 2, .order = Order::kMegatron};
  Generator gen(5);
  SyntheticRun run = gen.build(spec);
  CommunicatorTraffic world{.comm_id = 0x77, .members = {0, 1, 2, 3, 4, 5, 6, 7}};
  world.all_to_all_bytes = 1 << 10;
  world.collective_calls = 1;
  run.comms.push_back(world);
  const auto without_ids = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(without_ids.ok()) << without_ids.error().message;
  EXPECT_EQ(without_ids->pp, 1);
  for (auto& f : run.flows) f.comm_id = 0x1000 + static_cast<uint64_t>(std::min(f.src, f.dst));
  const auto with_ids = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(with_ids.ok()) << with_ids.error().message;
  EXPECT_EQ(with_ids->pp, 2);
  for (int32_t r = 0; r < run.world; ++r)
    EXPECT_EQ(with_ids->ranks[static_cast<size_t>(r)].stage, run.truth[static_cast<size_t>(r)].stage);
}

TEST(LayoutInference, InterleavedRingStartsAtTheRankThatSendsFirst) {
  Spec spec{.tp = 2, .pp = 4, .dp = 2, .order = Order::kRandom, .interleaved = true};
  Generator gen(11);
  const SyntheticRun run = gen.build(spec);
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  expect_recovered(spec, run, *got, "interleaved");
  EXPECT_TRUE(has_note(*got, "closed into rings"));
}

TEST(LayoutInference, ForwardOnlyFlowsStartAtTheirSource) {
  Spec spec{.tp = 1, .pp = 8, .dp = 4, .order = Order::kRandom, .timing = false, .forward_only = true};
  Generator gen(5);
  const SyntheticRun run = gen.build(spec);
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  expect_recovered(spec, run, *got, "forward only");
}

TEST(LayoutInference, HierarchicalZeroShardGroupsOf64Of2048) {
  for (const bool shuffle_ranks : {false, true}) {
    const ZeroRun run = hierarchical_zero(shuffle_ranks ? 2 : 1, shuffle_ranks, /*world_reduces=*/false);
    const auto got = infer_layout(2048, run.comms, {});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->tp, 1);
    EXPECT_EQ(got->pp, 1);
    EXPECT_EQ(got->dp, 2048);
    EXPECT_EQ(got->zero_shard, 64);
    // dp_rank = (index across shard groups) * 64 + shard_rank; shard groups in NCCL order of
    // the cross-group communicators are the generator's g.
    for (int32_t g = 0; g < 32; ++g) {
      for (int32_t i = 0; i < 64; ++i) {
        const auto& rank =
            got->ranks[static_cast<size_t>(run.shard_groups[static_cast<size_t>(g)][static_cast<size_t>(i)])];
        ASSERT_EQ(rank.shard_rank, i);
        ASSERT_EQ(rank.dp_rank, g * 64 + i);
        ASSERT_EQ(rank.stage, 0);
        ASSERT_EQ(rank.tp_rank, 0);
      }
    }
    for (const auto& [id, role] : got->roles) EXPECT_EQ(role, run.role_of.at(id));
  }
}

TEST(LayoutInference, HierarchicalZeroWithWorldGradientReduceScatter) {
  const ZeroRun run = hierarchical_zero(9, /*shuffle_ranks=*/true, /*world_reduces=*/true);
  const auto got = infer_layout(2048, run.comms, {});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->tp, 1);
  EXPECT_EQ(got->dp, 2048);
  EXPECT_EQ(got->zero_shard, 64);
  for (size_t g = 0; g < run.shard_groups.size(); ++g) {
    for (size_t i = 0; i < 64; ++i) {
      const int32_t r = run.shard_groups[g][i];
      ASSERT_EQ(got->ranks[static_cast<size_t>(r)].shard_rank, static_cast<int32_t>(i));
      // The world communicator carries the data-parallel reduction: dp_rank is its NCCL rank,
      // which the generator gave in the same shuffled order.
      ASSERT_EQ(got->ranks[static_cast<size_t>(r)].dp_rank, static_cast<int32_t>(g * 64 + i));
    }
  }
}

TEST(LayoutInference, FlatZero3ShardsOverAllDataParallelRanks) {
  CommunicatorTraffic world{.comm_id = 1, .members = {3, 2, 1, 0}};
  world.all_gather_bytes = 2000;  // parameters gathered for forward and backward
  world.reduce_scatter_bytes = 1000;
  const auto got = infer_layout(4, {world}, {});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->dp, 4);
  EXPECT_EQ(got->zero_shard, 4);
  EXPECT_EQ(got->ranks[3].dp_rank, 0);
  EXPECT_EQ(got->ranks[3].shard_rank, 0);
  EXPECT_EQ(got->ranks[0].shard_rank, 3);
}

// tp x dp groups in Megatron's order (rank = t + tp * d), each member's records added up:
// `tp_calls` / `dp_calls` collectives and `tp_bytes` / `dp_bytes` per member.
std::vector<CommunicatorTraffic> tensor_and_data(int32_t tp, int32_t dp, uint64_t tp_calls, uint64_t tp_bytes,
                                                 uint64_t dp_calls, uint64_t dp_bytes) {
  std::vector<CommunicatorTraffic> comms;
  uint64_t id = 100;
  for (int32_t d = 0; d < dp; ++d) {
    CommunicatorTraffic c{.comm_id = id++, .members = {}};
    for (int32_t t = 0; t < tp; ++t) c.members.push_back(t + tp * d);
    c.all_reduce_bytes = tp_bytes * static_cast<uint64_t>(tp);
    c.collective_calls = tp_calls * static_cast<uint64_t>(tp);
    comms.push_back(c);
  }
  for (int32_t t = 0; t < tp; ++t) {
    CommunicatorTraffic c{.comm_id = id++, .members = {}};
    for (int32_t d = 0; d < dp; ++d) c.members.push_back(t + tp * d);
    c.all_reduce_bytes = dp_bytes * static_cast<uint64_t>(dp);
    c.collective_calls = dp_calls * static_cast<uint64_t>(dp);
    comms.push_back(c);
  }
  return comms;
}

TEST(LayoutInference, TensorParallelIsTheFamilyThatCallsMostOftenNotTheOneWithMostBytes) {
  // A small model with a large data-parallel gradient: per step, 8 tensor-parallel all-reduces of
  // 4 KiB (two layers, forward and backward) against one 1 GiB gradient all-reduce.
  for (const auto& [tp, dp] : {std::pair{2, 2}, std::pair{2, 4}, std::pair{4, 2}}) {
    const auto layout = infer_layout(tp * dp, tensor_and_data(tp, dp, 8, 8 * 4096, 1, 1ull << 30), {});
    ASSERT_TRUE(layout.ok()) << layout.error().message;
    EXPECT_EQ(layout->tp, tp);
    EXPECT_EQ(layout->dp, dp);
    for (int32_t r = 0; r < tp * dp; ++r) {
      EXPECT_EQ(layout->ranks[static_cast<size_t>(r)].tp_rank, r % tp) << "tp " << tp << " rank " << r;
      EXPECT_EQ(layout->ranks[static_cast<size_t>(r)].dp_rank, r / tp) << "tp " << tp << " rank " << r;
    }
    EXPECT_FALSE(has_note(*layout, "run about as often"));
  }
}

TEST(LayoutInference, FamiliesThatCallAboutAsOftenAreToldApartByBytesWithANote) {
  // 4 and 3 collectives per rank: within 2x, so bytes decide (4 KiB vs 64 KiB a call), noted.
  const auto layout = infer_layout(8, tensor_and_data(2, 4, 3, 3 * 65536, 4, 4 * 4096), {});
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ(layout->tp, 2);
  EXPECT_EQ(layout->dp, 4);
  EXPECT_TRUE(has_note(*layout, "run about as often (3.0 and 4.0 collectives per rank)"));
}

TEST(LayoutInference, TensorParallelBesideZero3DataParallelIsNotHierarchicalZero) {
  // tp 4 x dp 8, the data-parallel groups gather parameters (ZeRO-3) but carry fewer bytes than
  // tensor parallel: shard groups are the whole data-parallel groups.
  Spec spec{.tp = 4, .pp = 1, .dp = 8, .order = Order::kPipelineFastest};
  Generator gen(17);
  SyntheticRun run = gen.build(spec);
  for (auto& c : run.comms) {
    if (run.role_of.at(c.comm_id) != CommRole::kData) continue;
    c.all_gather_bytes = 2 * c.all_reduce_bytes;
    c.reduce_scatter_bytes = c.all_reduce_bytes;
    c.all_reduce_bytes = 0;
    run.role_of[c.comm_id] = CommRole::kShard;
  }
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->tp, 4);
  EXPECT_EQ(got->dp, 8);
  EXPECT_EQ(got->zero_shard, 8);
  for (int32_t r = 0; r < run.world; ++r) {
    EXPECT_EQ(got->ranks[static_cast<size_t>(r)].tp_rank, run.truth[static_cast<size_t>(r)].tp);
    EXPECT_EQ(got->ranks[static_cast<size_t>(r)].shard_rank, run.truth[static_cast<size_t>(r)].dp);
  }
  for (const auto& [id, role] : got->roles) EXPECT_EQ(role, run.role_of.at(id));
}

TEST(LayoutInference, ExpertParallelFromAllToAllGroupsInsideDataParallel) {
  // tp 2, pp 2, dp 8, Megatron order; expert parallel 4 inside each data-parallel group, the
  // expert data-parallel groups (2 ranks) across them. The all-to-all also shows as p2p flows.
  Spec spec{.tp = 2, .pp = 2, .dp = 8, .order = Order::kMegatron};
  Generator gen(21);
  SyntheticRun run = gen.build(spec);
  auto at = [&](int32_t s, int32_t t, int32_t d) {
    return run.rank_of[static_cast<size_t>(t + 2 * (d + 8 * s))];
  };
  for (int32_t s = 0; s < 2; ++s) {
    for (int32_t t = 0; t < 2; ++t) {
      for (int32_t e = 0; e < 2; ++e) {
        auto c =
            gen.comm(run, {at(s, t, 4 * e), at(s, t, 4 * e + 1), at(s, t, 4 * e + 2), at(s, t, 4 * e + 3)},
                     CommRole::kExpert);
        c.all_to_all_bytes = 8'000'000'000ULL;
        c.collective_calls = 400;
        for (int32_t a : c.members)
          for (int32_t b : c.members)
            if (a != b) run.flows.push_back({a, b, 1000, 10, 1, 1});
        run.comms.push_back(c);
      }
      for (int32_t i = 0; i < 4; ++i) {
        auto c = gen.comm(run, {at(s, t, i), at(s, t, 4 + i)}, CommRole::kData);
        c.all_reduce_bytes = 50'000'000;
        c.collective_calls = 20;
        run.comms.push_back(c);
      }
    }
  }
  const auto got = infer_layout(run.world, run.comms, run.flows);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->ep, 4);
  spec.timing = true;
  expect_recovered(spec, run, *got, "expert");
  EXPECT_TRUE(has_note(*got, "count as expert traffic"));
}

TEST(LayoutInference, DataParallelOnlyFromOneWorldAllReduce) {
  std::mt19937_64 rng(4);
  CommunicatorTraffic world{.comm_id = 42, .members = std::vector<int32_t>(64)};
  std::iota(world.members.begin(), world.members.end(), 0);
  std::shuffle(world.members.begin(), world.members.end(), rng);
  world.all_reduce_bytes = 64ULL * 1'000'000'000;
  world.collective_calls = 1000;
  const auto got = infer_layout(64, {world}, {});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->tp, 1);
  EXPECT_EQ(got->pp, 1);
  EXPECT_EQ(got->dp, 64);
  EXPECT_EQ(got->zero_shard, 1);
  for (int32_t i = 0; i < 64; ++i)
    EXPECT_EQ(got->ranks[static_cast<size_t>(world.members[static_cast<size_t>(i)])].dp_rank, i);
  ASSERT_EQ(got->roles.size(), 1u);
  EXPECT_EQ(got->roles[0].first, 42u);
  EXPECT_EQ(got->roles[0].second, CommRole::kWorld);
}

TEST(LayoutInference, StageWideGroupIsAmbiguousUntilStated) {
  CommunicatorTraffic node{.comm_id = 5, .members = {0, 1, 2, 3, 4, 5, 6, 7}};
  node.all_reduce_bytes = 8'000'000'000;
  const auto guessed = infer_layout(8, {node}, {});
  ASSERT_TRUE(guessed.ok());
  EXPECT_EQ(guessed->dp, 8);
  EXPECT_TRUE(has_note(*guessed, "one communicator family spans each stage"));
  const auto stated = infer_layout(8, {node}, {}, StatedLayout{.tp = 8, .pp = 1, .dp = 1});
  ASSERT_TRUE(stated.ok()) << stated.error().message;
  EXPECT_EQ(stated->tp, 8);
  EXPECT_EQ(stated->dp, 1);
  EXPECT_EQ(stated->ranks[5].tp_rank, 5);
  EXPECT_EQ(stated->roles[0].second, CommRole::kWorld);
}

TEST(LayoutInference, DeclaredStagesMakeThePipelineWhenNoP2pShowsIt) {
  // tp 2 x pp 2 x dp 2, Megatron's order; the stages talk through something other than NCCL and
  // declare themselves with NVTX stage=<k>, except rank 6, which takes its groups' stage.
  auto comms = tensor_and_data(2, 2, 8, 4096, 1, 4096);
  for (auto& c : tensor_and_data(2, 2, 8, 4096, 1, 4096)) {
    for (int32_t& m : c.members) m += 4;
    c.comm_id += 1000;
    comms.push_back(c);
  }
  LayoutEvidence evidence;
  evidence.declared_stage = {0, 0, 0, 0, 1, 1, -1, 1};
  const auto layout = infer_layout(8, comms, {}, evidence);
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ(layout->tp, 2);
  EXPECT_EQ(layout->pp, 2);
  EXPECT_EQ(layout->dp, 2);
  for (int32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(layout->ranks[static_cast<size_t>(r)].stage, r / 4) << r;
    EXPECT_EQ(layout->ranks[static_cast<size_t>(r)].tp_rank, r % 2) << r;
    EXPECT_EQ(layout->ranks[static_cast<size_t>(r)].dp_rank, r / 2 % 2) << r;
  }
  EXPECT_TRUE(has_note(*layout, "1 rank(s) without a declaration took their communicator's stage"));
  evidence.stated = StatedLayout{2, 4, 1};
  const auto contradicted = infer_layout(8, comms, {}, evidence);
  ASSERT_FALSE(contradicted.ok());
  EXPECT_NE(contradicted.error().message.find("make 2 stages"), std::string::npos);
  evidence.stated.reset();
  evidence.declared_stage = {0, 0, 0, 0, 1, 1, 1, 2};
  EXPECT_FALSE(infer_layout(8, comms, {}, evidence).ok());  // stages of 4, 3 and 1 ranks
}

TEST(LayoutInference, StatedPipelineWithoutNcclP2pTakesStagesFromTheGroups) {
  for (const Order order : {Order::kMegatron, Order::kRandom}) {
    Spec spec{.tp = 2, .pp = 4, .dp = 4, .order = order, .world_comm = false};
    Generator gen(31);
    SyntheticRun run = gen.build(spec);
    run.flows.clear();  // the stages talk through something other than NCCL
    std::erase_if(run.comms, [&](const CommunicatorTraffic& c) {
      return run.role_of.at(c.comm_id) == CommRole::kPipeline;
    });
    const auto inferred = infer_layout(run.world, run.comms, run.flows);
    ASSERT_TRUE(inferred.ok());
    EXPECT_EQ(inferred->pp, 1);  // traffic alone cannot show it
    const auto got = infer_layout(run.world, run.comms, run.flows, StatedLayout{.tp = 2, .pp = 4, .dp = 4});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->tp, 2);
    EXPECT_EQ(got->pp, 4);
    EXPECT_EQ(got->dp, 4);
    EXPECT_TRUE(has_note(*got, "ordered by their lowest global rank"));
    // Stages are the true ones, ordered by their lowest rank (the true order in Megatron's).
    std::map<int32_t, int32_t> stage_map;
    for (int32_t r = 0; r < run.world; ++r) {
      const auto& want = run.truth[static_cast<size_t>(r)];
      const auto& have = got->ranks[static_cast<size_t>(r)];
      EXPECT_EQ(have.tp_rank, want.tp);
      EXPECT_EQ(have.dp_rank, want.dp);
      EXPECT_EQ(stage_map.try_emplace(want.stage, have.stage).first->second, have.stage);
      if (order == Order::kMegatron) {
        EXPECT_EQ(have.stage, want.stage);
      }
    }
    EXPECT_EQ(stage_map.size(), 4u);
  }
}

TEST(LayoutInference, StatedSizesOrderStagesFromTraffic) {
  Spec spec{.tp = 4, .pp = 2, .dp = 2, .order = Order::kPipelineFastest};
  Generator gen(8);
  const SyntheticRun run = gen.build(spec);
  const auto got = infer_layout(run.world, run.comms, run.flows, StatedLayout{.tp = 4, .pp = 2, .dp = 2});
  ASSERT_TRUE(got.ok()) << got.error().message;
  expect_recovered(spec, run, *got, "stated");
  EXPECT_TRUE(has_note(*got, "(sizes stated)"));
}

// --- contradictions are errors that name what contradicts ---

TEST(LayoutInference, RejectsStatedSizesThatDoNotMakeTheWorld) {
  const auto got = infer_layout(16, {}, {}, StatedLayout{.tp = 2, .pp = 2, .dp = 2});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("makes 8 ranks, but the run has 16"), std::string::npos)
      << got.error().message;
}

TEST(LayoutInference, RejectsStatedPipelineThatTheFlowsContradict) {
  Spec spec{.tp = 2, .pp = 4, .dp = 2};
  Generator gen(12);
  const SyntheticRun run = gen.build(spec);
  const auto got = infer_layout(run.world, run.comms, run.flows, StatedLayout{.tp = 2, .pp = 2, .dp = 4});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("pipeline chains of 4 stages"), std::string::npos)
      << got.error().message;
}

TEST(LayoutInference, RejectsP2pThatIsNoChain) {
  const std::vector<P2pFlow> flows{{0, 1, 10, 1}, {0, 2, 10, 1}, {0, 3, 10, 1}};
  const auto got = infer_layout(4, {}, flows);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("rank 0 exchanges with 3 peers (1,2,3)"), std::string::npos)
      << got.error().message;
}

TEST(LayoutInference, RejectsChainsOfDifferentLengthsAndRanksWithoutP2p) {
  const auto uneven = infer_layout(5, {}, {{0, 1, 10, 1}, {2, 3, 10, 1}, {3, 4, 10, 1}});
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.error().message.find("chains differ in length"), std::string::npos)
      << uneven.error().message;
  const auto idle = infer_layout(4, {}, {{0, 1, 10, 1}});
  ASSERT_FALSE(idle.ok());
  EXPECT_NE(idle.error().message.find("ranks 2,3 have no p2p traffic"), std::string::npos)
      << idle.error().message;
}

TEST(LayoutInference, RejectsGroupsThatSpanStagesTheFlowsOrderDifferently) {
  // Two chains 0 -> 1 and 2 -> 3 (first sends at 0 and 2), but a collective communicator ties
  // rank 0 (stage 0) to rank 3 (stage 1).
  const std::vector<P2pFlow> flows{
      {0, 1, 10, 1, 100, 150}, {1, 0, 10, 1, 300, 400}, {2, 3, 10, 1, 100, 150}, {3, 2, 10, 1, 300, 400}};
  const auto got = infer_layout(4, {all_reducing(0xbad, {0, 3}, 100)}, flows);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find(
                "communicator 0xbad (ranks 0,3) joins rank 0 (pipeline stage 0) and rank 3 (stage 1)"),
            std::string::npos)
      << got.error().message;
}

TEST(LayoutInference, RejectsCommunicatorsThatDoNotPartitionConsistently) {
  // Eight ranks: tensor groups {0,1} {2,3} {4,5} {6,7}, and groups of four that swallow two
  // tensor groups whole instead of meeting each once.
  std::vector<CommunicatorTraffic> comms;
  for (int32_t g = 0; g < 4; ++g) comms.push_back(all_reducing(g + 1, {2 * g, 2 * g + 1}, 1'000'000));
  for (int32_t g = 0; g < 2; ++g) {
    comms.push_back(all_reducing(0x90 + g, {4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3}, 1000));
  }
  const auto got = infer_layout(8, comms, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find(
                "do not partition the ranks consistently: communicator 0x1 (ranks 0,1) (tensor "
                "parallel) and communicator 0x90 (ranks 0,1,2,3) share ranks 0 and 1"),
            std::string::npos)
      << got.error().message;
}

TEST(LayoutInference, StrayCommunicatorIsNamedOtherWithANote) {
  std::vector<CommunicatorTraffic> comms;
  for (int32_t g = 0; g < 4; ++g) comms.push_back(all_reducing(g + 1, {2 * g, 2 * g + 1}, 1'000'000));
  for (int32_t g = 0; g < 2; ++g) comms.push_back(all_reducing(0x90 + g, {g, g + 2, g + 4, g + 6}, 1000));
  comms.push_back(all_reducing(0x99, {1, 2}, 10));  // meets two tensor groups
  const auto got = infer_layout(8, comms, {});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->tp, 2);
  EXPECT_EQ(got->dp, 4);
  EXPECT_EQ(got->roles.back().second, CommRole::kOther);
  EXPECT_TRUE(has_note(*got, "cover only part of a stage"));
}

TEST(LayoutInference, RejectsStagesThatDisagreeOnTheirGroups) {
  // pp 2 over 16 ranks: stage 0 (ranks 0-7) in tensor groups of 2, stage 1 (8-15) of 4.
  std::vector<P2pFlow> flows;
  for (int32_t r = 0; r < 8; ++r) {
    flows.push_back({r, r + 8, 10, 1, 100, 150});
    flows.push_back({r + 8, r, 10, 1, 300, 400});
  }
  std::vector<CommunicatorTraffic> comms;
  uint64_t id = 1;
  auto add = [&](std::vector<int32_t> members, uint64_t bytes) {
    comms.push_back(all_reducing(id++, std::move(members), bytes));
  };
  for (int32_t g = 0; g < 4; ++g) add({2 * g, 2 * g + 1}, 1000);
  add({0, 2, 4, 6}, 10);
  add({1, 3, 5, 7}, 10);
  for (int32_t g = 0; g < 2; ++g) add({8 + 4 * g, 9 + 4 * g, 10 + 4 * g, 11 + 4 * g}, 1000);
  for (int32_t i = 0; i < 4; ++i) add({8 + i, 12 + i}, 10);
  const auto got = infer_layout(16, comms, flows);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("stage 0 has tp 2 x dp 4"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("stage 1 has tp 4 x dp 2"), std::string::npos) << got.error().message;
}

TEST(LayoutInference, RejectsMembersOutsideTheWorldAndEmptyTraces) {
  const auto outside = infer_layout(4, {{.comm_id = 0x10, .members = {0, 4}}}, {});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("0x10"), std::string::npos);
  const auto twice = infer_layout(4, {{.comm_id = 0x11, .members = {1, 1}}}, {});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("lists a rank twice"), std::string::npos);
  const auto nothing = infer_layout(4, {}, {});
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.error().message.find("--layout"), std::string::npos);
  const auto single = infer_layout(1, {}, {});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->dp, 1);
}

TEST(LayoutInference, RoleNames) {
  EXPECT_STREQ(comm_role_name(CommRole::kWorld), "world");
  EXPECT_STREQ(comm_role_name(CommRole::kTensor), "tensor");
  EXPECT_STREQ(comm_role_name(CommRole::kPipeline), "pipeline");
  EXPECT_STREQ(comm_role_name(CommRole::kData), "data");
  EXPECT_STREQ(comm_role_name(CommRole::kShard), "shard");
  EXPECT_STREQ(comm_role_name(CommRole::kExpert), "expert");
  EXPECT_STREQ(comm_role_name(CommRole::kContext), "context");
  EXPECT_STREQ(comm_role_name(CommRole::kOther), "other");
}

}  // namespace
}  // namespace pipescope::analysis
