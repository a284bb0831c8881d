// The fake libnccl.so.2 the NCCL rig runs on: it has to behave like a communicator library
// (true ranks and sizes, splits, argument checks) for the interposer tests to mean anything.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "call_text.h"
#include "loaded_trace.h"
#include "nccl_rig.h"
#include "split_rendezvous.h"

namespace pipescope::fake_nccl {
namespace {

using inject::testing::make_temp_dir;
using inject::testing::read_lines;

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

struct Place {
  int rank = -1;
  int size = -1;
  bool operator==(const Place&) const = default;
};
Place place_of(ncclComm_t comm) {
  Place place;
  EXPECT_EQ(ncclCommUserRank(comm, &place.rank), ncclSuccess);
  EXPECT_EQ(ncclCommCount(comm, &place.size), ncclSuccess);
  return place;
}

ncclUniqueId new_id() {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  return id;
}

const auto kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5000});

TEST(FakeNccl, ReportsTheVersionOfTheHeaderItWasBuiltWith) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
}

TEST(FakeNccl, UniqueIdsAreRandomBytes) {
  const ncclUniqueId a = new_id();
  const ncclUniqueId b = new_id();
  EXPECT_NE(std::memcmp(&a, &b, sizeof(a)), 0);
}

TEST(FakeNccl, InitRankGivesTheRankTheSizeAndTheLocalRanksDevice) {
  ScopedEnv local_rank("LOCAL_RANK", "3");
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 8, new_id(), 5), ncclSuccess);
  EXPECT_EQ(place_of(comm), (Place{5, 8}));
  int device = -1;
  EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
  EXPECT_EQ(device, 3);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, RejectsARankOutsideTheCommunicatorAndAnUninitializedConfig) {
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 4, new_id(), 4), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 4, new_id(), -1), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("rank -1 of 4"), std::string::npos);
  ncclConfig_t config{};  // not from NCCL_CONFIG_INITIALIZER
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, new_id(), 0, &config), ncclInvalidArgument);
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, new_id(), 0, &good), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, InitAllMakesOneCommunicatorPerListedDevice) {
  std::array<ncclComm_t, 3> comms{};
  const int devices[] = {4, 6, 7};
  ASSERT_EQ(ncclCommInitAll(comms.data(), 3, devices), ncclSuccess);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(place_of(comms[i]), (Place{i, 3}));
    int device = -1;
    EXPECT_EQ(ncclCommCuDevice(comms[i], &device), ncclSuccess);
    EXPECT_EQ(device, devices[i]);
    EXPECT_EQ(ncclCommDestroy(comms[i]), ncclSuccess);
  }
}

// Four members in one process: the splits are grouped, so each is published before any waits.
TEST(FakeNccl, SplitRanksEachColorByKeyThenOldRank) {
  ScopedEnv rendezvous("FAKE_NCCL_RENDEZVOUS", make_temp_dir("fake-split"));
  std::array<ncclComm_t, 4> world{};
  ASSERT_EQ(ncclCommInitAll(world.data(), 4, nullptr), ncclSuccess);
  const int colors[] = {7, 3, 7, 7};
  const int keys[] = {5, 0, 1, 5};  // color 7: rank 2 (key 1), then ranks 0 and 3 (key 5, old rank order)
  std::array<ncclComm_t, 4> split{};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(ncclCommSplit(world[i], colors[i], keys[i], &split[i], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(place_of(split[0]), (Place{1, 3}));
  EXPECT_EQ(place_of(split[1]), (Place{0, 1}));
  EXPECT_EQ(place_of(split[2]), (Place{0, 3}));
  EXPECT_EQ(place_of(split[3]), (Place{2, 3}));
  for (ncclComm_t comm : split) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  for (ncclComm_t comm : world) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, NoColorGivesANullCommunicator) {
  ScopedEnv rendezvous("FAKE_NCCL_RENDEZVOUS", make_temp_dir("fake-nocolor"));
  std::array<ncclComm_t, 2> world{};
  ASSERT_EQ(ncclCommInitAll(world.data(), 2, nullptr), ncclSuccess);
  std::array<ncclComm_t, 2> split{};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommSplit(world[0], NCCL_SPLIT_NOCOLOR, 0, &split[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommSplit(world[1], 0, 0, &split[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(split[0], nullptr);
  EXPECT_EQ(place_of(split[1]), (Place{0, 1}));
  EXPECT_EQ(ncclCommDestroy(split[1]), ncclSuccess);
  for (ncclComm_t comm : world) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, SplitFailsCleanlyWhenAMemberNeverArrives) {
  ScopedEnv rendezvous("FAKE_NCCL_RENDEZVOUS", make_temp_dir("fake-timeout"));
  ScopedEnv timeout("FAKE_NCCL_TIMEOUT_MS", "50");
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 2, new_id(), 0), ncclSuccess);
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comm, 0, 0, &child, nullptr), ncclSystemError);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("rank(s) 1"), std::string::npos)
      << ncclGetLastError(comm);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, SplitOfSeveralRanksNeedsTheRendezvousDirectory) {
  ScopedEnv rendezvous("FAKE_NCCL_RENDEZVOUS", "");
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 2, new_id(), 1), ncclSuccess);
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comm, 0, 0, &child, nullptr), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, ShrinkClosesTheGapsOfTheExcludedRanks) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 8, new_id(), 5), ncclSuccess);
  int exclude[] = {6, 1, 3, 1};  // ranks 1 and 3 sit below 5: rank 5 becomes 3 of 5
  ncclComm_t shrunk = nullptr;
  ASSERT_EQ(ncclCommShrink(comm, exclude, 4, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  EXPECT_EQ(place_of(shrunk), (Place{3, 5}));
  int me[] = {5};
  ncclComm_t excluded = nullptr;
  EXPECT_EQ(ncclCommShrink(comm, me, 1, &excluded, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(shrunk), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(FakeNccl, CollectivesCheckTheirCommunicatorTypeOperationRootAndPeer) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 4, new_id(), 1), ncclSuccess);
  char buffer[64];
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, kStream), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclNumTypes, ncclSum, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclNumOps, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(buffer, buffer, 4, ncclInt8, 3, comm, kStream), ncclSuccess);
  EXPECT_EQ(ncclBroadcast(buffer, buffer, 4, ncclInt8, 4, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclSend(buffer, 4, ncclInt8, -1, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(buffer, 4, ncclInt8, 0, comm, kStream), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, nullptr, kStream), ncclInvalidArgument);
  ncclRedOp_t premul;
  float scalar = 0.5f;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat32, ncclScalarHostImmediate, comm),
            ncclSuccess);
  EXPECT_EQ(ncclReduce(buffer, buffer, 4, ncclFloat32, premul, 0, comm, kStream), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(premul, comm), ncclSuccess);
  EXPECT_EQ(ncclReduce(buffer, buffer, 4, ncclFloat32, premul, 0, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, kStream), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  // A destroyed handle is refused, not dereferenced.
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, kStream), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
}

TEST(FakeNccl, GroupEndWithoutGroupStartIsInvalidUsage) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

TEST(FakeNccl, ExportsEachEntryPointAsPncclWithANcclAlias) {
  const char* const kNames[] = {
      "GetVersion",     "GetUniqueId",  "CommInitRank", "CommInitRankConfig", "CommInitRankScalable",
      "CommInitAll",    "CommSplit",    "CommShrink",   "CommFinalize",       "CommDestroy",
      "CommAbort",      "CommRevoke",   "CommCount",    "CommUserRank",       "CommCuDevice",
      "GetErrorString", "GetLastError", "AllReduce",    "AllGather",          "ReduceScatter",
      "Broadcast",      "Bcast",        "Reduce",       "AlltoAll",           "Gather",
      "Scatter",        "Send",         "Recv",         "GroupStart",         "GroupEnd"};
  for (const char* name : kNames) {
    void* strong = dlsym(RTLD_DEFAULT, (std::string("pnccl") + name).c_str());
    void* alias = dlsym(RTLD_DEFAULT, (std::string("nccl") + name).c_str());
    EXPECT_NE(strong, nullptr) << "pnccl" << name;
    EXPECT_EQ(alias, strong) << "nccl" << name << " is not an alias of pnccl" << name;
  }
}

TEST(FakeNcclSplitRendezvous, RanksWithinAColorByKeyThenByOldRank) {
  const std::vector<SplitEntry> entries = {{1, 9}, {0, 4}, {1, 2}, {1, 9}, {0, 4}};
  EXPECT_EQ(place_in_split(entries, 0).rank, 1);
  EXPECT_EQ(place_in_split(entries, 3).rank, 2);
  EXPECT_EQ(place_in_split(entries, 2).rank, 0);
  EXPECT_EQ(place_in_split(entries, 0).size, 3);
  EXPECT_EQ(place_in_split(entries, 1).rank, 0);
  EXPECT_EQ(place_in_split(entries, 4).rank, 1);
  EXPECT_EQ(place_in_split(entries, 4).size, 2);
}

TEST(FakeNcclSplitRendezvous, MembersInOtherThreadsMeet) {
  const std::string dir = make_temp_dir("fake-meet");
  std::vector<std::vector<SplitEntry>> seen(3);
  std::vector<std::thread> members;
  for (int rank = 0; rank < 3; ++rank) {
    members.emplace_back([&, rank] {
      std::string error;
      // Rank 2 comes late: the others wait for it.
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      EXPECT_TRUE(publish_split({dir, "wabc", 4}, rank, {rank % 2, 10 - rank}, error)) << error;
      EXPECT_TRUE(gather_split({dir, "wabc", 4}, 3, 5000, seen[static_cast<size_t>(rank)], error)) << error;
    });
  }
  for (auto& member : members) member.join();
  for (const auto& entries : seen) {
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[2].color, 0);
    EXPECT_EQ(entries[2].key, 8);
  }
}

// The call log is the evidence of the forwarding tests: one line per call, in call_text.h's
// words. Runs in a child process, whose log file is its own.
TEST(FakeNcclCallLog, WritesOneLinePerCallWithItsArgumentsAndResult) {
  const std::string dir = make_temp_dir("fake-log");
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("FAKE_NCCL_LOG", dir.c_str(), 1);
    setenv("RANK", "6", 1);
    ncclComm_t comm = nullptr;
    ncclUniqueId id{};
    ncclCommInitRank(&comm, 1, id, 0);
    ncclAllReduce(reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000), 1024, ncclFloat32,
                  ncclSum, comm, kStream);
    ncclGroupStart();
    ncclSend(reinterpret_cast<void*>(0x3000), 7, ncclBfloat16, 2, comm, kStream);  // peer 2 of 1: refused
    ncclGroupEnd();
    _exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::vector<std::string> lines = read_lines(dir + "/calls.6." + std::to_string(pid) + ".log");
  ASSERT_EQ(lines.size(), 5u);
  ncclUniqueId zero{};
  const std::string zero_id = hex64(hash_bytes(&zero, sizeof(zero)));
  EXPECT_EQ(lines[0].substr(0, lines[0].find(" comm=")), "ncclCommInitRank");
  EXPECT_NE(lines[0].find(" nranks=1 commId=" + zero_id + " rank=0 -> 0 out=0x"), std::string::npos)
      << lines[0];
  const std::string comm = lines[0].substr(lines[0].find(" out=") + 5);
  EXPECT_EQ(lines[1], "ncclAllReduce sendbuff=0x1000 recvbuff=0x2000 count=1024 datatype=7 op=0 comm=" +
                          comm + " stream=0x5000 -> 0");
  EXPECT_EQ(lines[2], "ncclGroupStart -> 0");
  EXPECT_EQ(lines[3], "ncclSend buff=0x3000 count=7 datatype=9 peer=2 comm=" + comm + " stream=0x5000 -> 4");
  EXPECT_EQ(lines[4], "ncclGroupEnd -> 0");
}

}  // namespace
}  // namespace pipescope::fake_nccl
