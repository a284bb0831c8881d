// The communicator registry and identity rules, without NCCL: each test plays the members of a
// communicator as separate registries (separate processes) and checks they agree.
#include "nccl_comms.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace pipescope::inject::nccl {
namespace {

using trace::NcclCommEvent;

std::array<std::byte, 128> unique_id_bytes(uint8_t seed) {
  std::array<std::byte, 128> id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::byte>(size_t{seed} * 31 + i);
  return id;
}

// A member's view of a communicator created from `id`, as InitRank would register it.
CommFacts init_rank_facts(uint64_t handle, const std::array<std::byte, 128>& id, int32_t rank, int32_t size) {
  CommFacts facts;
  facts.handle = handle;
  facts.identity = identity_of_unique_ids(id);
  facts.rank = rank;
  facts.size = size;
  facts.peer_capacity = static_cast<uint32_t>(size);
  return facts;
}

// What the interposer registers for ncclCommSplit(parent, color): the parent counts the call.
Comm* split(CommRegistry& registry, Comm& parent, uint64_t handle, int32_t color) {
  const uint32_t index = parent.next_split_index();
  if (color < 0) return nullptr;  // NCCL_SPLIT_NOCOLOR: no communicator, the call still counts
  CommFacts facts;
  facts.handle = handle;
  facts.event = NcclCommEvent::kSplit;
  facts.parent_identity = parent.identity();
  facts.identity = identity_of_split(parent.identity(), color, index);
  facts.color = color;
  facts.split_index = index;
  facts.peer_capacity = parent.peer_capacity();
  return registry.add(facts);
}

TEST(NcclIdentity, MembersOfOneUniqueIdDeriveTheSameNonzeroIdentity) {
  const auto id = unique_id_bytes(1);
  auto copy = id;  // another process received the same bytes
  EXPECT_EQ(identity_of_unique_ids(id), identity_of_unique_ids(copy));
  EXPECT_NE(identity_of_unique_ids(id), 0u);
  copy[127] ^= std::byte{1};  // one bit elsewhere in the id: another communicator
  EXPECT_NE(identity_of_unique_ids(id), identity_of_unique_ids(copy));
  // InitRankScalable hashes all of its ids: two ids are not the first one alone.
  std::array<std::byte, 256> two{};
  std::memcpy(two.data(), id.data(), 128);
  std::memcpy(two.data() + 128, unique_id_bytes(2).data(), 128);
  EXPECT_NE(identity_of_unique_ids(two), identity_of_unique_ids(id));
}

TEST(NcclIdentity, SplitsAgreeAcrossMembersThatSplitInTheSameOrder) {
  // Ranks 0 and 1 of a world communicator, each in its own process (registry).
  CommRegistry rank0;
  CommRegistry rank1;
  const auto id = unique_id_bytes(7);
  Comm* world0 = rank0.add(init_rank_facts(0x1000, id, 0, 2));
  Comm* world1 = rank1.add(init_rank_facts(0x9000, id, 1, 2));
  ASSERT_NE(world0, nullptr);
  ASSERT_NE(world1, nullptr);
  EXPECT_EQ(world0->identity(), world1->identity());

  // First split: both color 0 (one communicator). Second: different colors (two communicators).
  Comm* tp0 = split(rank0, *world0, 0x2000, 0);
  Comm* tp1 = split(rank1, *world1, 0xA000, 0);
  Comm* dp0 = split(rank0, *world0, 0x3000, 4);
  Comm* dp1 = split(rank1, *world1, 0xB000, 5);
  EXPECT_EQ(tp0->identity(), tp1->identity());
  EXPECT_EQ(tp0->split_index(), 0u);
  EXPECT_EQ(dp0->split_index(), 1u);
  EXPECT_NE(dp0->identity(), dp1->identity());  // color 4 and color 5
  EXPECT_NE(tp0->identity(), dp0->identity());
  EXPECT_EQ(tp0->parent_identity(), world0->identity());

  // The same color in a later split is a new communicator: the index tells them apart.
  Comm* again0 = split(rank0, *world0, 0x4000, 0);
  EXPECT_NE(again0->identity(), tp0->identity());
}

TEST(NcclIdentity, NoColorSplitsCountTowardTheSplitIndex) {
  CommRegistry rank0;
  CommRegistry rank1;
  const auto id = unique_id_bytes(9);
  Comm* world0 = rank0.add(init_rank_facts(0x1000, id, 0, 4));
  Comm* world1 = rank1.add(init_rank_facts(0x1000, id, 1, 4));
  // Rank 0 sits the first split out; rank 1 joins color 2. Both then split into color 3.
  EXPECT_EQ(split(rank0, *world0, 0, -1), nullptr);
  ASSERT_NE(split(rank1, *world1, 0x2000, 2), nullptr);
  Comm* second0 = split(rank0, *world0, 0x3000, 3);
  Comm* second1 = split(rank1, *world1, 0x3000, 3);
  EXPECT_EQ(second0->split_index(), 1u);
  EXPECT_EQ(second0->identity(), second1->identity());
}

TEST(NcclIdentity, ShrinkIgnoresTheOrderOfExcludedRanksButNotTheirSetOrIndex) {
  const uint64_t parent = identity_of_unique_ids(unique_id_bytes(3));
  const std::vector<int32_t> a = {5, 1, 3};
  const std::vector<int32_t> b = {3, 5, 1};
  const std::vector<int32_t> c = {1, 3};
  EXPECT_EQ(identity_of_shrink(parent, a, 0), identity_of_shrink(parent, b, 0));
  EXPECT_NE(identity_of_shrink(parent, a, 0), identity_of_shrink(parent, c, 0));
  EXPECT_NE(identity_of_shrink(parent, a, 0), identity_of_shrink(parent, a, 1));
  EXPECT_NE(identity_of_shrink(parent, {}, 0), identity_of_split(parent, 0, 0));
}

TEST(NcclIdentity, InitAllIsUniquePerHostProcessAndCall) {
  EXPECT_EQ(identity_of_init_all("node-1", 100, 0), identity_of_init_all("node-1", 100, 0));
  EXPECT_NE(identity_of_init_all("node-1", 100, 0), identity_of_init_all("node-1", 100, 1));
  EXPECT_NE(identity_of_init_all("node-1", 100, 0), identity_of_init_all("node-2", 100, 0));
  EXPECT_NE(identity_of_init_all("node-1", 100, 0), identity_of_init_all("node-1", 101, 0));
}

TEST(NcclSequence, CollectivesCountFromZeroAndPeekDoesNotConsume) {
  CommRegistry registry;
  Comm* comm = registry.add(init_rank_facts(0x1000, unique_id_bytes(1), 0, 4));
  EXPECT_EQ(comm->peek_collective(), 0u);
  EXPECT_EQ(comm->next_collective(), 0u);
  EXPECT_EQ(comm->next_collective(), 1u);
  EXPECT_EQ(comm->peek_collective(), 2u);
  EXPECT_EQ(comm->next_collective(), 2u);
}

TEST(NcclSequence, SendAndRecvCountPerPeerAndDirection) {
  CommRegistry rank0;
  CommRegistry rank1;
  const auto id = unique_id_bytes(4);
  Comm* a = rank0.add(init_rank_facts(0x1000, id, 0, 3));
  Comm* b = rank1.add(init_rank_facts(0x1000, id, 1, 3));
  // Rank 0 sends twice to 1 and once to 2, and receives once from 1.
  EXPECT_EQ(a->next_p2p(1, P2pDirection::kSend), 0u);
  EXPECT_EQ(a->next_p2p(2, P2pDirection::kSend), 0u);
  EXPECT_EQ(a->next_p2p(1, P2pDirection::kSend), 1u);
  EXPECT_EQ(a->next_p2p(1, P2pDirection::kRecv), 0u);
  // Rank 1's receives from 0 pair with rank 0's sends to 1, number for number.
  EXPECT_EQ(b->next_p2p(0, P2pDirection::kRecv), 0u);
  EXPECT_EQ(b->next_p2p(0, P2pDirection::kRecv), 1u);
  EXPECT_EQ(b->next_p2p(0, P2pDirection::kSend), 0u);
  // Collectives are counted apart from point-to-point.
  EXPECT_EQ(a->next_collective(), 0u);
  EXPECT_EQ(a->peek_p2p(1, P2pDirection::kSend), 2u);
}

TEST(NcclSequence, PeersOutsideTheCommunicatorHaveNoSequence) {
  CommRegistry registry;
  Comm* comm = registry.add(init_rank_facts(0x1000, unique_id_bytes(1), 0, 2));
  EXPECT_EQ(comm->next_p2p(2, P2pDirection::kSend), kNcclUnknownSequence);
  EXPECT_EQ(comm->next_p2p(-1, P2pDirection::kRecv), kNcclUnknownSequence);
  EXPECT_EQ(comm->next_p2p(1, P2pDirection::kSend), 0u);
}

TEST(NcclSequence, SplitChildrenCountPeersUpToTheParentSize) {
  CommRegistry registry;
  Comm* world = registry.add(init_rank_facts(0x1000, unique_id_bytes(1), 0, 8));
  Comm* child = split(registry, *world, 0x2000, 1);
  // The child's size is not known yet (asked of NCCL later); its counters exist already.
  EXPECT_EQ(child->size(), -1);
  EXPECT_EQ(child->peer_capacity(), 8u);
  EXPECT_EQ(child->next_p2p(7, P2pDirection::kSend), 0u);
}

TEST(NcclDetails, OneThreadAsksAndTheAnswerCompletesTheCommunicator) {
  CommFacts facts;
  facts.handle = 0x1000;
  facts.identity = 42;
  Comm comm(facts);  // a split of an unknown parent: no size, no counters
  EXPECT_TRUE(comm.details_pending());
  EXPECT_EQ(comm.next_p2p(0, P2pDirection::kSend), kNcclUnknownSequence);
  ASSERT_TRUE(comm.claim_details());
  EXPECT_FALSE(comm.claim_details());  // someone is asking
  comm.release_details_claim();        // NCCL said "in progress": try later
  ASSERT_TRUE(comm.claim_details());
  comm.complete_details(2, 4, 3);
  EXPECT_FALSE(comm.details_pending());
  EXPECT_FALSE(comm.claim_details());
  EXPECT_EQ(comm.rank(), 2);
  EXPECT_EQ(comm.size(), 4);
  EXPECT_EQ(comm.device(), 3u);
  EXPECT_EQ(comm.peer_capacity(), 4u);
  EXPECT_EQ(comm.next_p2p(3, P2pDirection::kSend), 0u);
}

TEST(NcclDetails, UnknownAnswersKeepWhatCreationKnew) {
  CommRegistry registry;
  Comm* comm = registry.add(init_rank_facts(0x1000, unique_id_bytes(1), 1, 2));
  ASSERT_TRUE(comm->claim_details());
  comm->complete_details(-1, -1, trace::kUnknownDevice);
  EXPECT_EQ(comm->rank(), 1);
  EXPECT_EQ(comm->size(), 2);
  EXPECT_EQ(comm->device(), trace::kUnknownDevice);
}

TEST(NcclDetails, TheCreationRecordIsTakenOnce) {
  Comm comm(CommFacts{});
  EXPECT_TRUE(comm.take_creation_report());
  EXPECT_FALSE(comm.take_creation_report());
}

TEST(CommRegistry, FindsEveryCommunicatorOfAManyCommunicatorProcess) {
  CommRegistry registry;
  std::vector<Comm*> added;
  for (uint64_t i = 0; i < 2000; ++i) {
    // Heap-like handles: 16-byte aligned, close together.
    added.push_back(registry.add(init_rank_facts(0x55550000 + i * 0x40, unique_id_bytes(1), 0, 2)));
    ASSERT_NE(added.back(), nullptr) << i;
  }
  for (uint64_t i = 0; i < 2000; ++i) EXPECT_EQ(registry.find(0x55550000 + i * 0x40), added[i]);
  EXPECT_EQ(registry.find(0x55550008), nullptr);
  EXPECT_EQ(registry.find(0), nullptr);
}

TEST(CommRegistry, LookupsRaceWithCreationWithoutLocks) {
  CommRegistry registry;
  constexpr uint64_t kComms = 1500;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> wrong{false};
  std::thread reader([&] {
    while (published.load(std::memory_order_acquire) < kComms) {
      const uint64_t known = published.load(std::memory_order_acquire);
      for (uint64_t i = 0; i < known; ++i) {
        Comm* comm = registry.find(0x1000 + i * 16);
        if (comm == nullptr || comm->handle() != 0x1000 + i * 16) wrong.store(true);
      }
    }
  });
  for (uint64_t i = 0; i < kComms; ++i) {
    registry.add(init_rank_facts(0x1000 + i * 16, unique_id_bytes(1), 0, 2));
    published.store(i + 1, std::memory_order_release);
  }
  reader.join();
  EXPECT_FALSE(wrong.load());
}

TEST(CommRegistry, AReusedHandleFindsTheNewCommunicatorAndLateCallsStillResolve) {
  CommRegistry registry;
  Comm* first = registry.add(init_rank_facts(0x1000, unique_id_bytes(1), 0, 2));
  first->mark(NcclCommEvent::kFinalize);
  EXPECT_EQ(registry.find(0x1000), first);  // finalized, not freed: ncclCommDestroy still comes
  first->mark(NcclCommEvent::kDestroy);
  EXPECT_EQ(registry.find(0x1000), first);  // kept: a late call on it still resolves
  // NCCL's allocator hands the same pointer to a new communicator.
  Comm* second = registry.add(init_rank_facts(0x1000, unique_id_bytes(2), 1, 4));
  EXPECT_EQ(registry.find(0x1000), second);
  EXPECT_NE(second->identity(), first->identity());
}

TEST(CommRegistry, ReusesSlotsOfDestroyedCommunicators) {
  CommRegistry registry(16);  // 12 slots may be occupied before the table is rebuilt
  std::vector<Comm*> comms;
  for (uint64_t i = 0; i < 12; ++i)
    comms.push_back(registry.add(init_rank_facts(0x1000 + i * 16, unique_id_bytes(1), 0, 2)));
  for (Comm* comm : comms) comm->mark(NcclCommEvent::kDestroy);
  // A process that creates and destroys communicators in a loop (restarts after failures).
  for (uint64_t i = 0; i < 1000; ++i) {
    Comm* comm = registry.add(init_rank_facts(0x20000 + i * 16, unique_id_bytes(1), 0, 2));
    ASSERT_NE(comm, nullptr) << i;
    EXPECT_EQ(registry.find(0x20000 + i * 16), comm);
    comm->mark(NcclCommEvent::kAbort);
  }
}

TEST(CommRegistry, GrowsPastItsFirstTableKeepingEveryLiveCommunicator) {
  CommRegistry registry(16);
  std::vector<Comm*> comms;
  for (uint64_t i = 0; i < 500; ++i) {
    comms.push_back(registry.add(init_rank_facts(0x1000 + i * 16, unique_id_bytes(1), 0, 2)));
    ASSERT_NE(comms.back(), nullptr);
    if (i % 3 == 0) comms.back()->mark(NcclCommEvent::kDestroy);
  }
  for (uint64_t i = 0; i < 500; ++i) {
    // Live ones are always found; destroyed ones until a rebuild drops them.
    if (i % 3 != 0) {
      EXPECT_EQ(registry.find(0x1000 + i * 16), comms[i]) << i;
    }
  }
}

TEST(NcclGroup, NestedGroupsShareTheOutermostGroupIdAndExternalId) {
  GroupState group;
  EXPECT_FALSE(group.in_group());
  EXPECT_EQ(group.group_id(), 0u);
  group.started(77);
  const uint32_t id = group.group_id();
  EXPECT_NE(id, 0u);
  group.started(99);  // nested: still the outer group
  EXPECT_EQ(group.group_id(), id);
  EXPECT_EQ(group.external_id(), 77u);
  EXPECT_FALSE(group.ending_outermost());
  group.ended();
  EXPECT_TRUE(group.ending_outermost());
  group.ended();
  EXPECT_FALSE(group.in_group());
  EXPECT_EQ(group.group_id(), 0u);
  EXPECT_EQ(group.external_id(), 0u);
  group.started(0);
  EXPECT_GT(group.group_id(), id);  // the next group has a new id
  group.ended();
}

TEST(NcclGroup, AnUnmatchedGroupEndChangesNothing) {
  GroupState group;
  group.ended();
  EXPECT_EQ(group.depth(), 0);
  group.started(0);
  EXPECT_EQ(group.depth(), 1);
  group.ended();
}

TEST(NcclGroup, CommunicatorsCreatedInAGroupWaitForItsEnd) {
  GroupState group;
  CommRegistry registry;
  group.started(0);
  std::vector<Comm*> added;
  for (uint64_t i = 0; i < GroupState::kMaxPendingComms + 3; ++i) {
    added.push_back(registry.add(init_rank_facts(0x1000 + i * 16, unique_id_bytes(1), 0, 2)));
    group.add_pending(added.back());
  }
  // Beyond the list's capacity communicators are asked about at first use instead.
  ASSERT_EQ(group.pending().size(), static_cast<size_t>(GroupState::kMaxPendingComms));
  EXPECT_EQ(group.pending()[0], added[0]);
  group.ended();
  group.clear_pending();
  EXPECT_TRUE(group.pending().empty());
}

TEST(NcclGroup, EachThreadHasItsOwnGroup) {
  GroupState& mine = this_thread_group();
  mine.started(0);
  int32_t other_depth = -1;
  std::thread([&] { other_depth = this_thread_group().depth(); }).join();
  EXPECT_EQ(other_depth, 0);
  EXPECT_EQ(mine.depth(), 1);
  mine.ended();
}

}  // namespace
}  // namespace pipescope::inject::nccl
