// libpipescope.so preloaded into an 8-rank job on the fake NCCL (tp=2, pp=2, dp=2, Megatron's
// order), twice: with libnccl.so.2 linked normally and with it loaded RTLD_LOCAL behind a
// module, as Python loads it. The job must run exactly as without the library, every call must
// reach NCCL once and unchanged, and the traces must let a reader pair every communicator and
// operation across ranks. Every expected group, rank, count and sequence relation below is
// worked out by hand from the program (tests/inject/programs/nccl_ranks.h).
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loaded_trace.h"
#include "nccl_rig.h"

#ifndef PIPESCOPE_INJECT_SO
#error "PIPESCOPE_INJECT_SO must name libpipescope.so"
#endif

namespace pipescope::inject::testing {
namespace {

using trace::NcclCommEvent;
using trace::NcclCommRecord;
using trace::NcclOpRecord;
using trace::NcclOpType;
using trace::NvtxEvent;
using trace::NvtxRecord;

constexpr int kWorld = 8;
constexpr uint8_t kNoReduceOp = 0xFF;

bool library_has(const char* symbol) {
  static std::map<std::string, bool> known;
  auto found = known.find(symbol);
  if (found == known.end()) found = known.emplace(symbol, library_exports(PIPESCOPE_INJECT_SO, symbol)).first;
  return found->second;
}

#define REQUIRE_NCCL_INTERPOSER()                                                         \
  if (!library_has("ncclAllReduce")) {                                                    \
    GTEST_SKIP() << "libpipescope.so does not export ncclAllReduce: the NCCL interposer " \
                    "(profiler/inject/src/nccl_interpose.cpp) is not built into it yet";  \
  }
#define REQUIRE_NVTX_INJECTION()                                                                    \
  if (!library_has("InitializeInjectionNvtx2")) {                                                   \
    GTEST_SKIP() << "libpipescope.so does not export InitializeInjectionNvtx2: the NVTX injection " \
                    "is not built into it yet";                                                     \
  }

// ---- The job's layout, by hand. rank = tp + 2 * (dp + 2 * pp).
enum class Group { kTp, kPp, kStage, kDp };
struct GroupSpec {
  const char* name;
  uint32_t split_index;                  // the program splits the world in this order
  std::vector<std::vector<int>> groups;  // members, in their rank order within the group
};
const GroupSpec& spec(Group group) {
  static const GroupSpec kTp{"tp", 0, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}};
  static const GroupSpec kPp{"pp", 1, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}};
  static const GroupSpec kStage{"stage", 2, {{0, 1, 2, 3}}};  // ranks 4-7 pass NCCL_SPLIT_NOCOLOR
  static const GroupSpec kDp{"dp", 3, {{0, 2}, {1, 3}, {4, 6}, {5, 7}}};
  switch (group) {
    case Group::kTp: return kTp;
    case Group::kPp: return kPp;
    case Group::kStage: return kStage;
    case Group::kDp: return kDp;
  }
  return kTp;
}
constexpr Group kGroups[] = {Group::kTp, Group::kPp, Group::kStage, Group::kDp};

// The members of `rank`'s group of that kind and its place in it; none for ranks 4-7's stage.
std::optional<std::pair<std::vector<int>, int>> group_of(Group group, int rank) {
  for (const auto& members : spec(group).groups) {
    const auto it = std::find(members.begin(), members.end(), rank);
    if (it != members.end()) return std::make_pair(members, static_cast<int>(it - members.begin()));
  }
  return std::nullopt;
}

// ---- One traced run per (variant, nvtx), shared by the tests of this process.
struct TracedRun {
  RigRun run;
  std::vector<LoadedTrace> traces;  // by rank; empty when the files are not all there
};

const TracedRun& traced_run(RigVariant variant, bool nvtx = false) {
  static std::map<std::pair<RigVariant, bool>, TracedRun> runs;
  const auto key = std::make_pair(variant, nvtx);
  if (auto found = runs.find(key); found != runs.end()) return found->second;
  TracedRun traced;
  RigOptions options = rig_options(variant, 2, nvtx);
  options.preload = PIPESCOPE_INJECT_SO;
  traced.run = run_nccl_ranks(options);
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::string path = traced.run.trace_dir + "/rank-" + std::to_string(rank) + "." +
                             std::to_string(traced.run.result.ranks[static_cast<size_t>(rank)].pid) + ".pst";
    if (trace_files_in(traced.run.trace_dir).size() != static_cast<size_t>(kWorld) || !std::ifstream(path)) {
      traced.traces.clear();
      break;
    }
    traced.traces.push_back(load_trace(path));
  }
  return runs.emplace(key, std::move(traced)).first->second;
}

// The communicator records (init or split) that created communicators on one rank.
std::optional<NcclCommRecord> world_record(const LoadedTrace& trace) {
  for (const auto& record : trace.all<NcclCommRecord>()) {
    if (record.event == static_cast<uint8_t>(NcclCommEvent::kInit)) return record;
  }
  return std::nullopt;
}
std::optional<NcclCommRecord> split_record(const LoadedTrace& trace, uint32_t split_index) {
  for (const auto& record : trace.all<NcclCommRecord>()) {
    if (record.event == static_cast<uint8_t>(NcclCommEvent::kSplit) && record.split_index == split_index &&
        record.color != NCCL_SPLIT_NOCOLOR) {
      return record;
    }
  }
  return std::nullopt;
}

// The id of rank's communicator of that kind, from its own trace.
uint64_t comm_id(const LoadedTrace& trace, Group group) {
  const auto record = split_record(trace, spec(group).split_index);
  return record ? record->comm_id : 0;
}

std::vector<NcclOpRecord> ops_on(const LoadedTrace& trace, uint64_t id) {
  std::vector<NcclOpRecord> ops;
  for (const auto& op : trace.all<NcclOpRecord>()) {
    if (op.comm_id == id) ops.push_back(op);
  }
  std::stable_sort(ops.begin(), ops.end(), [](const NcclOpRecord& a, const NcclOpRecord& b) {
    return a.host_enter_ns < b.host_enter_ns;
  });
  return ops;
}

bool is_p2p(const NcclOpRecord& op) {
  return op.op == static_cast<uint8_t>(NcclOpType::kSend) || op.op == static_cast<uint8_t>(NcclOpType::kRecv);
}

struct ExpectedOp {
  NcclOpType op;
  uint64_t count;
  ncclDataType_t datatype;
  uint8_t reduce_op;
  int32_t peer;
};
bool matches(const NcclOpRecord& record, const ExpectedOp& expected) {
  return record.op == static_cast<uint8_t>(expected.op) && record.count == expected.count &&
         record.datatype == static_cast<uint8_t>(expected.datatype) &&
         record.reduce_op == expected.reduce_op && record.peer == expected.peer;
}

// One step's collectives per communicator, in program order (nccl_ranks.h).
std::vector<ExpectedOp> one_step_collectives(std::optional<Group> group) {
  if (!group) {  // the world
    return {{NcclOpType::kBroadcast, 64, ncclInt32, kNoReduceOp, 0},
            {NcclOpType::kAllToAll, 16, ncclInt32, kNoReduceOp, -1}};
  }
  switch (*group) {
    case Group::kTp:  // two layers, attention and MLP, forward and backward
      return std::vector<ExpectedOp>(8, {NcclOpType::kAllReduce, 1024, ncclFloat32, ncclSum, -1});
    case Group::kPp: return {};
    case Group::kStage: return {{NcclOpType::kAllReduce, 32, ncclFloat32, ncclMax, -1}};
    case Group::kDp:
      return {{NcclOpType::kAllReduce, 4096, ncclFloat32, ncclSum, -1},
              {NcclOpType::kAllGather, 512, ncclBfloat16, kNoReduceOp, -1},
              {NcclOpType::kReduceScatter, 256, ncclFloat32, ncclSum, -1}};
  }
  return {};
}

class NcclPreload : public ::testing::TestWithParam<RigVariant> {
 protected:
  const TracedRun& run() { return traced_run(GetParam()); }
  // The traces, or a failure naming what is missing.
  const std::vector<LoadedTrace>& traces() {
    const TracedRun& traced = run();
    EXPECT_EQ(traced.traces.size(), static_cast<size_t>(kWorld))
        << "expected rank-<rank>.<pid>.pst for each of 8 ranks in " << traced.run.trace_dir << "\n"
        << traced.run.result.describe();
    return traced.traces;
  }
};

TEST_P(NcclPreload, ProgramOutputAndExitCodesAreThoseOfTheUntracedRun) {
  const LaunchResult& result = run().run.result;
  ASSERT_TRUE(result.all_exited_with(0)) << result.describe();
  const std::vector<std::string> expected = expected_nccl_ranks_stdout();
  for (int rank = 0; rank < kWorld; ++rank) {
    const RankResult& process = result.ranks[static_cast<size_t>(rank)];
    EXPECT_EQ(process.out, expected[static_cast<size_t>(rank)]);
    // The library may say something on stderr, always as one "pipescope: " line; nothing else.
    for (const std::string& line : split_lines(process.err))
      EXPECT_EQ(line.rfind("pipescope: ", 0), 0u) << line;
  }
}

TEST_P(NcclPreload, FakeLibraryReceivesEveryCallOnceUnchanged) {
  const RigRun& rig = run().run;
  ASSERT_TRUE(rig.result.all_exited_with(0)) << rig.result.describe();
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::vector<std::string> made = program_calls(rig, rank);
    ASSERT_FALSE(made.empty()) << "rank " << rank;
    EXPECT_TRUE(forwarded_once_in_order(made, fake_calls(rig, rank))) << "rank " << rank;
  }
}

TEST_P(NcclPreload, WritesOneTracePerRankNamedByItsRankAndPid) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  for (int rank = 0; rank < kWorld; ++rank) {
    const LoadedTrace& trace = all[static_cast<size_t>(rank)];
    EXPECT_TRUE(trace.ended_cleanly) << trace.path;
    EXPECT_EQ(trace.process.rank, rank);
    EXPECT_EQ(trace.process.world_size, kWorld);
    EXPECT_EQ(trace.process.launcher, "torchrun");
  }
}

TEST_P(NcclPreload, EveryRankRecordsTheSameWorldCommunicator) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  const auto first = world_record(all[0]);
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->comm_id, 0u);
  for (int rank = 0; rank < kWorld; ++rank) {
    const auto world = world_record(all[static_cast<size_t>(rank)]);
    ASSERT_TRUE(world.has_value()) << "rank " << rank;
    EXPECT_EQ(world->comm_id, first->comm_id) << "rank " << rank;
    EXPECT_EQ(world->rank, rank);
    EXPECT_EQ(world->size, kWorld);
    EXPECT_EQ(world->global_rank, rank);
    EXPECT_EQ(world->parent_comm_id, 0u);
    EXPECT_LE(world->start_ns, world->end_ns);
  }
}

TEST_P(NcclPreload, MembersOfEachSplitGroupShareAnIdentityAndHoldRanksZeroToSize) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  std::set<uint64_t> distinct;  // one id per group of every kind
  for (Group group : kGroups) {
    for (const auto& members : spec(group).groups) {
      std::set<uint64_t> ids;
      for (size_t place = 0; place < members.size(); ++place) {
        const int rank = members[place];
        const auto record = split_record(all[static_cast<size_t>(rank)], spec(group).split_index);
        ASSERT_TRUE(record.has_value()) << spec(group).name << " communicator of rank " << rank;
        EXPECT_EQ(record->rank, static_cast<int32_t>(place)) << spec(group).name << ", rank " << rank;
        EXPECT_EQ(record->size, static_cast<int32_t>(members.size()))
            << spec(group).name << ", rank " << rank;
        EXPECT_EQ(record->global_rank, rank);
        ids.insert(record->comm_id);
      }
      EXPECT_EQ(ids.size(), 1u) << spec(group).name << " group of rank " << members[0]
                                << " disagrees on its id";
      distinct.insert(*ids.begin());
    }
  }
  EXPECT_EQ(distinct.size(), 4u + 4u + 1u + 4u) << "two different groups share an id";
  EXPECT_EQ(distinct.count(world_record(all[0])->comm_id), 0u);
}

TEST_P(NcclPreload, SplitsNameTheWorldAsTheirParentWithTheirColorAndIndex) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  for (int rank = 0; rank < kWorld; ++rank) {
    const LoadedTrace& trace = all[static_cast<size_t>(rank)];
    const uint64_t world = world_record(trace).value_or(NcclCommRecord{}).comm_id;
    // The program's colors: tp rank / 2, pp rank % 4, stage 0 (stage 0 only), dp 2 * pp + tp.
    const int colors[] = {rank / 2, rank % 4, 0, 2 * (rank / 4) + rank % 2};
    for (Group group : kGroups) {
      if (!group_of(group, rank)) continue;
      const auto record = split_record(trace, spec(group).split_index);
      ASSERT_TRUE(record.has_value()) << spec(group).name << ", rank " << rank;
      EXPECT_EQ(record->parent_comm_id, world) << spec(group).name << ", rank " << rank;
      EXPECT_EQ(record->color, colors[spec(group).split_index]) << spec(group).name << ", rank " << rank;
    }
  }
}

TEST_P(NcclPreload, EveryCommunicatorIsFinalizedOrDestroyedOnRecord) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  for (int rank = 0; rank < kWorld; ++rank) {
    const LoadedTrace& trace = all[static_cast<size_t>(rank)];
    std::multiset<std::pair<uint8_t, uint64_t>> teardown;  // (event, comm id)
    for (const auto& record : trace.all<NcclCommRecord>()) teardown.emplace(record.event, record.comm_id);
    const uint64_t world = world_record(trace).value_or(NcclCommRecord{}).comm_id;
    EXPECT_EQ(teardown.count({static_cast<uint8_t>(NcclCommEvent::kFinalize), world}), 1u) << "rank " << rank;
    EXPECT_EQ(teardown.count({static_cast<uint8_t>(NcclCommEvent::kDestroy), world}), 1u) << "rank " << rank;
    for (Group group : kGroups) {
      if (!group_of(group, rank)) continue;
      EXPECT_EQ(teardown.count({static_cast<uint8_t>(NcclCommEvent::kDestroy), comm_id(trace, group)}), 1u)
          << spec(group).name << ", rank " << rank;
    }
  }
}

// Two steps: each collective twice, in program order; its k-th appearance has the same
// sequence number on every member of the communicator.
TEST_P(NcclPreload, CollectivesPairAcrossMembersBySequence) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  struct Comm {
    std::optional<Group> group;  // none: the world
    std::vector<int> members;
  };
  std::vector<Comm> comms = {{std::nullopt, {0, 1, 2, 3, 4, 5, 6, 7}}};
  for (Group group : kGroups) {
    for (const auto& members : spec(group).groups) comms.push_back({group, members});
  }
  for (const Comm& comm : comms) {
    const std::optional<Group>& group = comm.group;
    const std::vector<int>& members = comm.members;
    const std::string name = group ? spec(*group).name : "world";
    std::vector<ExpectedOp> expected = one_step_collectives(group);
    expected.insert(expected.end(), expected.begin(), expected.end());  // two steps
    std::optional<std::vector<uint64_t>> sequences;
    for (int rank : members) {
      const LoadedTrace& trace = all[static_cast<size_t>(rank)];
      const uint64_t id =
          group ? comm_id(trace, *group) : world_record(trace).value_or(NcclCommRecord{}).comm_id;
      std::vector<NcclOpRecord> ops = ops_on(trace, id);
      std::erase_if(ops, is_p2p);
      ASSERT_EQ(ops.size(), expected.size()) << name << " collectives on rank " << rank;
      std::vector<uint64_t> mine;
      for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_TRUE(matches(ops[i], expected[i])) << name << " collective #" << i << " on rank " << rank;
        EXPECT_EQ(ops[i].group_id, 0u);
        EXPECT_EQ(ops[i].flags & trace::kNcclFlagInGroup, 0);
        if (i > 0) {
          EXPECT_GT(ops[i].sequence, ops[i - 1].sequence) << name << " on rank " << rank;
        }
        mine.push_back(ops[i].sequence);
      }
      if (!sequences) sequences = mine;
      EXPECT_EQ(mine, *sequences) << name << ": rank " << rank << " numbers its collectives differently";
    }
  }
}

// Stage 0 sends activations (2048 bf16, grouped) and one ungrouped 128-float message to stage
// 1 and receives gradients (1024 bf16, grouped) from it, every step. The k-th send of one side
// and the k-th receive of the other carry the same sequence number.
TEST_P(NcclPreload, SendsAndReceivesPairAcrossPipelineNeighbours) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  auto p2p = [&](int rank, NcclOpType type, int peer) {
    std::vector<NcclOpRecord> out;
    const LoadedTrace& trace = all[static_cast<size_t>(rank)];
    for (const auto& op : ops_on(trace, comm_id(trace, Group::kPp))) {
      if (op.op == static_cast<uint8_t>(type) && op.peer == peer) out.push_back(op);
    }
    return out;
  };
  for (const auto& pair : spec(Group::kPp).groups) {
    const int first = pair[0];   // pp rank 0
    const int second = pair[1];  // pp rank 1
    struct Direction {
      int from, to;
      int32_t to_peer, from_peer;                                 // ranks in the PP communicator
      std::vector<std::pair<uint64_t, ncclDataType_t>> messages;  // per step
    };
    const Direction directions[] = {
        {first, second, 1, 0, {{2048, ncclBfloat16}, {128, ncclFloat32}}},
        {second, first, 0, 1, {{1024, ncclBfloat16}}},
    };
    for (const Direction& d : directions) {
      const auto sends = p2p(d.from, NcclOpType::kSend, d.to_peer);
      const auto recvs = p2p(d.to, NcclOpType::kRecv, d.from_peer);
      ASSERT_EQ(sends.size(), 2 * d.messages.size()) << "sends of rank " << d.from << " to rank " << d.to;
      ASSERT_EQ(recvs.size(), sends.size()) << "receives of rank " << d.to << " from rank " << d.from;
      for (size_t k = 0; k < sends.size(); ++k) {
        const auto& [count, type] = d.messages[k % d.messages.size()];
        EXPECT_EQ(sends[k].count, count);
        EXPECT_EQ(sends[k].datatype, static_cast<uint8_t>(type));
        EXPECT_EQ(recvs[k].count, count);
        EXPECT_EQ(sends[k].sequence, recvs[k].sequence)
            << "message #" << k << " from rank " << d.from << " to " << d.to;
        if (k > 0) {
          EXPECT_GT(sends[k].sequence, sends[k - 1].sequence);
        }
      }
    }
  }
}

// The exchange of each pipeline neighbour pair is one group: its send and receive share a
// group id and carry the in-group flag; the ungrouped message and the collectives do not.
TEST_P(NcclPreload, GroupedCallsShareAGroupIdAndCarryTheInGroupFlag) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  for (int rank = 0; rank < kWorld; ++rank) {
    const LoadedTrace& trace = all[static_cast<size_t>(rank)];
    std::map<uint32_t, std::vector<NcclOpRecord>> groups;
    int ungrouped_p2p = 0;
    for (const auto& op : ops_on(trace, comm_id(trace, Group::kPp))) {
      ASSERT_TRUE(is_p2p(op));
      const bool flagged = (op.flags & trace::kNcclFlagInGroup) != 0;
      if (op.count == 128) {
        EXPECT_EQ(op.group_id, 0u) << "rank " << rank;
        EXPECT_FALSE(flagged) << "rank " << rank;
        ++ungrouped_p2p;
      } else {
        EXPECT_NE(op.group_id, 0u) << "rank " << rank;
        EXPECT_TRUE(flagged) << "rank " << rank;
        groups[op.group_id].push_back(op);
      }
    }
    EXPECT_EQ(ungrouped_p2p, 2) << "rank " << rank;
    ASSERT_EQ(groups.size(), 2u) << "rank " << rank << ": one group per step";
    for (const auto& [id, ops] : groups) {
      ASSERT_EQ(ops.size(), 2u) << "rank " << rank << ", group " << id;
      EXPECT_NE(ops[0].op, ops[1].op) << "a send and a receive";
    }
  }
}

// Each call once, with what the program passed: nothing doubled (an nccl* and a pnccl* entry
// both recording), the stream, and the payload of this rank's buffer.
TEST_P(NcclPreload, EachCallIsRecordedOnceWithItsArguments) {
  REQUIRE_NCCL_INTERPOSER();
  const auto& all = traces();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
  for (int rank = 0; rank < kWorld; ++rank) {
    const auto ops = all[static_cast<size_t>(rank)].all<NcclOpRecord>();
    // Per step: TP 8, DP 3, world 2, p2p 3 (send, receive, the ungrouped one), stage 1 on stage 0.
    const size_t per_step = 8 + 3 + 2 + 3 + (rank < 4 ? 1 : 0);
    EXPECT_EQ(ops.size(), 2 * per_step) << "rank " << rank;
    for (const auto& op : ops) {
      EXPECT_EQ(op.stream, 0x5000u + static_cast<uint64_t>(rank)) << "rank " << rank;
      EXPECT_LE(op.host_enter_ns, op.host_exit_ns);
      EXPECT_NE(op.thread_id, 0u);
      EXPECT_EQ(op.flags & trace::kNcclFlagFailed, 0);
      if (op.op == static_cast<uint8_t>(NcclOpType::kAllReduce) && op.count == 1024) {
        EXPECT_EQ(op.bytes, 4096u);
      }
      if (op.op == static_cast<uint8_t>(NcclOpType::kSend) && op.count == 128) {
        EXPECT_EQ(op.bytes, 512u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, NcclPreload, ::testing::Values(RigVariant::kLinked, RigVariant::kDlopen),
                         [](const auto& test) { return std::string(variant_name(test.param)); });

// With --nvtx each step is train_step { forward { 4 TP all-reduces, PP group } backward { 4 TP
// all-reduces, ... } }.
TEST(NcclPreloadNvtx, RangesOfEachStepFrameTheCallsMadeInThem) {
  REQUIRE_NCCL_INTERPOSER();
  REQUIRE_NVTX_INJECTION();
  const TracedRun& traced = traced_run(RigVariant::kLinked, true);
  ASSERT_TRUE(traced.run.result.all_exited_with(0)) << traced.run.result.describe();
  ASSERT_EQ(traced.traces.size(), static_cast<size_t>(kWorld)) << traced.run.result.describe();
  for (int rank = 0; rank < kWorld; ++rank) {
    const LoadedTrace& trace = traced.traces[static_cast<size_t>(rank)];
    std::vector<std::string> pushed;
    std::vector<uint64_t> forward_push, forward_pop;
    std::vector<std::string> open;
    for (const auto& record : trace.all<NvtxRecord>()) {
      if (record.event == static_cast<uint8_t>(NvtxEvent::kPush)) {
        pushed.emplace_back(trace.text(record.name_id));
        open.push_back(pushed.back());
        if (pushed.back() == "forward") forward_push.push_back(record.timestamp_ns);
      } else if (record.event == static_cast<uint8_t>(NvtxEvent::kPop)) {
        ASSERT_FALSE(open.empty()) << "rank " << rank << ": a pop without a push";
        if (open.back() == "forward") forward_pop.push_back(record.timestamp_ns);
        open.pop_back();
      }
    }
    EXPECT_EQ(pushed, (std::vector<std::string>{"train_step", "forward", "backward", "train_step", "forward",
                                                "backward"}))
        << "rank " << rank;
    EXPECT_TRUE(open.empty()) << "rank " << rank;
    const auto tp_ops = ops_on(trace, comm_id(trace, Group::kTp));
    ASSERT_EQ(tp_ops.size(), 16u);  // 8 a step: 4 in forward, 4 in backward
    ASSERT_EQ(forward_push.size(), 2u);
    ASSERT_EQ(forward_pop.size(), 2u);
    for (size_t step = 0; step < 2; ++step) {
      for (size_t k = 8 * step; k < 8 * step + 8; ++k) {
        const bool in_forward = k < 8 * step + 4;
        EXPECT_EQ(
            forward_push[step] <= tp_ops[k].host_enter_ns && tp_ops[k].host_exit_ns <= forward_pop[step],
            in_forward)
            << "rank " << rank << ", step " << step << ", tensor-parallel call " << k;
      }
    }
  }
}

}  // namespace
}  // namespace pipescope::inject::testing
