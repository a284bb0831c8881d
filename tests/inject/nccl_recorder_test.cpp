// The interposer's behaviour around each NCCL call — forwarding, results, errno, and the records
// it writes — against a fake NCCL made of plain functions in this file and a Session writing to
// a temporary directory. The preloaded library is tested on real programs elsewhere.
#include "nccl_recorder.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "external_correlation.h"
#include "loaded_trace.h"

namespace pipescope::inject::nccl {
namespace {

using testing::load_trace;
using testing::make_temp_dir;
using testing::trace_files_in;
using trace::NcclCallRecord;
using trace::NcclCallState;
using trace::NcclCommEvent;
using trace::NcclCommRecord;
using trace::NcclOpRecord;
using trace::NcclOpType;

// ---------------------------------------------------------------------------------------------
// A fake NCCL: communicators are small structs; every call says what it was given.

struct FakeComm {
  int rank = 0;
  int size = 1;
  int device = 0;
  ncclResult_t async_state = ncclSuccess;  // what ncclCommGetAsyncError reports
};

struct FakeNccl {
  ncclResult_t result = ncclSuccess;  // what the next calls return
  int errno_to_set = 0;               // errno the calls leave, 0: untouched
  ncclResult_t creation_async_state = ncclSuccess;
  std::vector<FakeComm> comms = std::vector<FakeComm>(64);
  int next_comm = 0;
  int queries = 0;  // rank/size/device questions asked
  // The last call's arguments.
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  int datatype = -1;
  int op = -1;
  int peer = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int calls = 0;
  NcclRecorder* recorder = nullptr;  // where the fake's own API calls go (as through NCCL's PLT)
  std::function<void()> during;      // runs inside every call, as a flush would while it blocks
};
FakeNccl g_fake;

ncclResult_t finish_call() {
  if (g_fake.during) g_fake.during();
  ++g_fake.calls;
  if (g_fake.errno_to_set != 0) errno = g_fake.errno_to_set;
  return g_fake.result;
}

ncclComm_t new_fake_comm(int rank, int size) {
  FakeComm& comm = g_fake.comms.at(static_cast<size_t>(g_fake.next_comm++));
  comm.rank = rank;
  comm.size = size;
  comm.async_state = g_fake.creation_async_state;
  return reinterpret_cast<ncclComm_t>(&comm);
}

FakeComm& fake(ncclComm_t comm) { return *reinterpret_cast<FakeComm*>(comm); }

ncclResult_t fake_init_rank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  if (g_fake.result == ncclSuccess || g_fake.result == ncclInProgress) *comm = new_fake_comm(rank, nranks);
  return finish_call();
}
ncclResult_t fake_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t*) {
  return fake_init_rank(comm, nranks, id, rank);
}
ncclResult_t fake_init_all(ncclComm_t* comms, int ndev, const int*) {
  for (int i = 0; i < ndev; ++i) comms[i] = new_fake_comm(i, ndev);
  return finish_call();
}
ncclResult_t fake_split(ncclComm_t parent, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  // Members with the parent's rank parity land together: half the parent's size.
  *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : new_fake_comm(key, fake(parent).size / 2);
  return finish_call();
}
ncclResult_t fake_shrink(ncclComm_t parent, int*, int excluded, ncclComm_t* newcomm, ncclConfig_t*, int) {
  *newcomm = new_fake_comm(0, fake(parent).size - excluded);
  return finish_call();
}
ncclResult_t fake_teardown(ncclComm_t comm) {
  g_fake.comm = comm;
  return finish_call();
}
ncclResult_t fake_revoke(ncclComm_t comm, int) { return fake_teardown(comm); }
ncclResult_t fake_all_reduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  g_fake.sendbuff = sendbuff;
  g_fake.recvbuff = recvbuff;
  g_fake.count = count;
  g_fake.datatype = datatype;
  g_fake.op = op;
  g_fake.comm = comm;
  g_fake.stream = stream;
  return finish_call();
}
ncclResult_t fake_all_gather(const void*, void*, size_t count, ncclDataType_t, ncclComm_t, cudaStream_t) {
  g_fake.count = count;
  return finish_call();
}
ncclResult_t fake_broadcast(const void*, void*, size_t count, ncclDataType_t, int root, ncclComm_t,
                            cudaStream_t) {
  g_fake.count = count;
  g_fake.peer = root;
  return finish_call();
}
// Like the real ncclBcast: it calls ncclBroadcast, which a preloaded library intercepts.
ncclResult_t fake_bcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return g_fake.recorder->broadcast(buff, buff, count, datatype, root, comm, stream);
}
ncclResult_t fake_send(const void*, size_t count, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  g_fake.count = count;
  g_fake.peer = peer;
  return finish_call();
}
ncclResult_t fake_recv(void*, size_t count, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  g_fake.count = count;
  g_fake.peer = peer;
  return finish_call();
}
ncclResult_t fake_group() { return finish_call(); }
ncclResult_t fake_get_async_error(ncclComm_t comm, ncclResult_t* state) {
  *state = fake(comm).async_state;
  return ncclSuccess;
}
ncclResult_t fake_user_rank(ncclComm_t comm, int* rank) {
  ++g_fake.queries;
  *rank = fake(comm).rank;
  return ncclSuccess;
}
ncclResult_t fake_count(ncclComm_t comm, int* size) {
  *size = fake(comm).size;
  return ncclSuccess;
}
ncclResult_t fake_cu_device(ncclComm_t comm, int* device) {
  *device = fake(comm).device;
  return ncclSuccess;
}

NcclFunctions fake_functions() {
  NcclFunctions f;
  f.comm_init_rank = fake_init_rank;
  f.comm_init_rank_config = fake_init_rank_config;
  f.comm_init_all = fake_init_all;
  f.comm_split = fake_split;
  f.comm_shrink = fake_shrink;
  f.comm_finalize = fake_teardown;
  f.comm_destroy = fake_teardown;
  f.comm_abort = fake_teardown;
  f.comm_revoke = fake_revoke;
  f.all_reduce = fake_all_reduce;
  f.all_gather = fake_all_gather;
  f.broadcast = fake_broadcast;
  f.bcast = fake_bcast;
  f.send = fake_send;
  f.recv = fake_recv;
  f.group_start = fake_group;
  f.group_end = fake_group;
  f.comm_get_async_error = fake_get_async_error;
  f.comm_user_rank = fake_user_rank;
  f.comm_count = fake_count;
  f.comm_cu_device = fake_cu_device;
  return f;
}

const auto kCapturedStream = reinterpret_cast<cudaStream_t>(0x5151);
CUresult fake_stream_is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  *status = stream == reinterpret_cast<CUstream>(kCapturedStream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                                  : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

ncclUniqueId unique_id(char seed) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof(id.internal); ++i) id.internal[i] = static_cast<char>(seed + i);
  return id;
}

uint64_t identity_of(const ncclUniqueId& id) {
  return identity_of_unique_ids(std::as_bytes(std::span(id.internal)));
}

// A recorder over the fake NCCL and a session of the test's own.
class NcclRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override { start(InjectConfig{}); }

  void start(InjectConfig config) {
    g_fake = FakeNccl{};
    dir_ = make_temp_dir("nccl");
    config.output_dir = dir_;
    config.flush_ms = 50;
    config.buffer_bytes = size_t{1} << 20;
    session_ = std::make_unique<Session>(config, LauncherInfo{});
    library_ = NcclLibrary::with_functions(fake_functions(), fake_stream_is_capturing);
    registry_ = std::make_unique<CommRegistry>();
    recorder_ = std::make_unique<NcclRecorder>(*session_, *library_, *registry_, std::nullopt);
    g_fake.recorder = recorder_.get();
  }

  testing::LoadedTrace finish() {
    session_->finish();
    const auto files = trace_files_in(dir_);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? testing::LoadedTrace{} : load_trace(files[0]);
  }

  ncclComm_t init(int rank, int size, char seed = 1) {
    ncclComm_t comm = nullptr;
    EXPECT_EQ(recorder_->comm_init_rank(&comm, size, unique_id(seed), rank), ncclSuccess);
    return comm;
  }

  std::string dir_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<NcclLibrary> library_;
  std::unique_ptr<CommRegistry> registry_;
  std::unique_ptr<NcclRecorder> recorder_;
};

TEST_F(NcclRecorderTest, ForwardsExactlyAndReturnsTheRealResultAndErrno) {
  ncclComm_t comm = init(0, 2);
  int send_data = 0;
  int recv_data = 0;
  const auto stream = reinterpret_cast<cudaStream_t>(0x77);
  g_fake.result = ncclRemoteError;
  g_fake.errno_to_set = ECONNRESET;
  errno = 0;
  EXPECT_EQ(recorder_->all_reduce(&send_data, &recv_data, 12, ncclBfloat16, ncclMax, comm, stream),
            ncclRemoteError);
  EXPECT_EQ(errno, ECONNRESET);
  EXPECT_EQ(g_fake.sendbuff, &send_data);
  EXPECT_EQ(g_fake.recvbuff, &recv_data);
  EXPECT_EQ(g_fake.count, 12u);
  EXPECT_EQ(g_fake.datatype, ncclBfloat16);
  EXPECT_EQ(g_fake.op, ncclMax);
  EXPECT_EQ(g_fake.comm, comm);
  EXPECT_EQ(g_fake.stream, stream);
  // A call that leaves errno alone finds the caller's errno untouched by the recording.
  g_fake = FakeNccl{};
  g_fake.recorder = recorder_.get();
  errno = EDOM;
  EXPECT_EQ(recorder_->all_reduce(&send_data, &recv_data, 1, ncclFloat32, ncclSum, comm, stream),
            ncclSuccess);
  EXPECT_EQ(errno, EDOM);
}

TEST_F(NcclRecorderTest, InitRankRecordsIdentityRankSizeAndDeviceAndNamesTheProcessRank) {
  g_fake.comms[0].device = 3;
  const ncclUniqueId id = unique_id(5);
  ncclComm_t comm = nullptr;
  const uint64_t before_ns = Session::now_ns();
  ASSERT_EQ(recorder_->comm_init_rank(&comm, 4, id, 1), ncclSuccess);
  const auto loaded = finish();
  const auto comms = loaded.all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].event, static_cast<uint8_t>(NcclCommEvent::kInit));
  EXPECT_EQ(comms[0].comm_id, identity_of(id));
  EXPECT_EQ(comms[0].parent_comm_id, 0u);
  EXPECT_EQ(comms[0].comm_handle, reinterpret_cast<uintptr_t>(comm));
  EXPECT_EQ(comms[0].rank, 1);
  EXPECT_EQ(comms[0].size, 4);
  EXPECT_EQ(comms[0].device, 3u);
  EXPECT_EQ(comms[0].color, -1);
  EXPECT_EQ(comms[0].global_rank, 1);  // no launcher rank: the first communicator's stands in
  EXPECT_GE(comms[0].start_ns, before_ns);
  EXPECT_LE(comms[0].start_ns, comms[0].end_ns);
  EXPECT_EQ(loaded.process.rank, 1);
  EXPECT_EQ(loaded.process.world_size, 4);
}

TEST_F(NcclRecorderTest, CollectivesCarryTheirSequenceBytesAndArguments) {
  ncclComm_t comm = init(0, 2);
  g_fake.comms[0].device = 1;
  const auto stream = reinterpret_cast<cudaStream_t>(0x1234);
  for (int i = 0; i < 3; ++i)
    recorder_->all_reduce(nullptr, nullptr, 1000, ncclFloat32, ncclAvg, comm, stream);
  recorder_->all_gather(nullptr, nullptr, 10, ncclBfloat16, comm, stream);
  recorder_->broadcast(nullptr, nullptr, 8, ncclInt64, 1, comm, stream);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 5u);
  for (uint64_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].sequence, i);
    EXPECT_EQ(ops[i].comm_id, identity_of(unique_id(1)));
    EXPECT_EQ(ops[i].stream, 0x1234u);
    EXPECT_EQ(ops[i].flags, 0u);
    EXPECT_EQ(ops[i].group_id, 0u);
    EXPECT_EQ(ops[i].device, 0u);  // asked at creation, before the fake's device changed
    EXPECT_EQ(ops[i].thread_id, Session::thread_id());
    EXPECT_LE(ops[i].host_enter_ns, ops[i].host_exit_ns);
  }
  EXPECT_EQ(ops[0].op, static_cast<uint8_t>(NcclOpType::kAllReduce));
  EXPECT_EQ(ops[0].count, 1000u);
  EXPECT_EQ(ops[0].bytes, 4000u);
  EXPECT_EQ(ops[0].datatype, ncclFloat32);
  EXPECT_EQ(ops[0].reduce_op, ncclAvg);
  EXPECT_EQ(ops[0].peer, trace::kNoPeer);
  EXPECT_EQ(ops[3].op, static_cast<uint8_t>(NcclOpType::kAllGather));
  EXPECT_EQ(ops[3].bytes, 20u);  // sendcount x 2 bytes
  EXPECT_EQ(ops[3].reduce_op, 0xFF);
  EXPECT_EQ(ops[4].op, static_cast<uint8_t>(NcclOpType::kBroadcast));
  EXPECT_EQ(ops[4].peer, 1);  // the root
  EXPECT_EQ(ops[4].bytes, 64u);
}

TEST_F(NcclRecorderTest, SendAndRecvAreNumberedPerPeerAndDirection) {
  ncclComm_t comm = init(0, 3);
  recorder_->send(nullptr, 4, ncclInt8, 1, comm, nullptr);
  recorder_->send(nullptr, 4, ncclInt8, 2, comm, nullptr);
  recorder_->send(nullptr, 4, ncclInt8, 1, comm, nullptr);
  recorder_->recv(nullptr, 4, ncclInt8, 1, comm, nullptr);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 5u);
  const std::vector<std::pair<int32_t, uint64_t>> peer_and_sequence = {
      {1, 0}, {2, 0}, {1, 1}, {1, 0}, {-1, 0}};
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].peer, peer_and_sequence[i].first) << i;
    EXPECT_EQ(ops[i].sequence, peer_and_sequence[i].second) << i;
  }
  EXPECT_EQ(ops[3].op, static_cast<uint8_t>(NcclOpType::kRecv));
}

TEST_F(NcclRecorderTest, BcastIsRecordedOnceThoughNcclImplementsItWithBroadcast) {
  ncclComm_t comm = init(0, 2);
  g_fake.calls = 0;
  EXPECT_EQ(recorder_->bcast(nullptr, 16, ncclUint8, 0, comm, nullptr), ncclSuccess);
  EXPECT_EQ(g_fake.calls, 1);  // the fake's broadcast did run, via the recorder
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].op, static_cast<uint8_t>(NcclOpType::kBroadcast));
  EXPECT_EQ(ops[0].sequence, 0u);
  EXPECT_EQ(ops[0].peer, 0);
}

TEST_F(NcclRecorderTest, AFailedCallIsFlaggedAndDoesNotConsumeASequenceNumber) {
  ncclComm_t comm = init(0, 2);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  g_fake.result = ncclInvalidArgument;
  EXPECT_EQ(recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr),
            ncclInvalidArgument);
  g_fake.result = ncclInProgress;  // a nonblocking communicator's normal answer, not a failure
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].sequence, 0u);
  EXPECT_EQ(ops[1].sequence, 1u);
  EXPECT_EQ(ops[1].flags, trace::kNcclFlagFailed);
  EXPECT_EQ(ops[2].sequence, 1u);
  EXPECT_EQ(ops[2].flags, 0u);
}

TEST_F(NcclRecorderTest, GroupedCallsShareAGroupIdAndSayTheyWereGrouped) {
  ncclComm_t comm = init(0, 2);
  ASSERT_EQ(recorder_->group_start(), ncclSuccess);
  recorder_->send(nullptr, 1, ncclInt8, 1, comm, nullptr);
  ASSERT_EQ(recorder_->group_start(), ncclSuccess);  // nested: the same group
  recorder_->recv(nullptr, 1, ncclInt8, 1, comm, nullptr);
  ASSERT_EQ(recorder_->group_end(), ncclSuccess);
  ASSERT_EQ(recorder_->group_end(), ncclSuccess);
  recorder_->group_start();
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  recorder_->group_end();
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  EXPECT_FALSE(this_thread_group().in_group());
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_NE(ops[0].group_id, 0u);
  EXPECT_EQ(ops[1].group_id, ops[0].group_id);
  EXPECT_EQ(ops[0].flags, trace::kNcclFlagInGroup);
  EXPECT_EQ(ops[1].flags, trace::kNcclFlagInGroup);
  EXPECT_NE(ops[2].group_id, ops[0].group_id);
  EXPECT_EQ(ops[2].flags, trace::kNcclFlagInGroup);
  EXPECT_EQ(ops[3].group_id, 0u);
  EXPECT_EQ(ops[3].flags, 0u);
}

// CUPTI's side of the external-correlation seam, as a list of what was pushed and popped.
std::vector<int64_t> g_pushes;  // the id for a push, -1 for a pop
void record_push(uint64_t id) { g_pushes.push_back(static_cast<int64_t>(id)); }
void record_pop() { g_pushes.push_back(-1); }

TEST_F(NcclRecorderTest, ExternalIdsBracketSingleCallsAndEachGroupedCallAndTheGroupEnd) {
  ncclComm_t comm = init(0, 2);
  ExternalCorrelationHooks& hooks = external_correlation_hooks();
  g_pushes.clear();
  hooks.push = record_push;
  hooks.pop = record_pop;
  hooks.active.store(true);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  recorder_->group_start();
  recorder_->send(nullptr, 1, ncclInt8, 1, comm, nullptr);
  recorder_->recv(nullptr, 1, ncclInt8, 1, comm, nullptr);
  const size_t pushes_before_group_end = g_pushes.size();
  recorder_->group_end();
  hooks.active.store(false);
  hooks.push = nullptr;
  hooks.pop = nullptr;
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 3u);
  const auto single = static_cast<int64_t>(ops[0].external_correlation_id);
  const auto grouped = static_cast<int64_t>(ops[1].external_correlation_id);
  EXPECT_NE(single, grouped);
  EXPECT_EQ(ops[2].external_correlation_id, ops[1].external_correlation_id);
  // The single call; each grouped call (NCCL runs a one-rank communicator's work at once); then
  // ncclGroupEnd, where a group of several ranks launches its kernels.
  const std::vector<int64_t> expected_before_end = {single, -1, grouped, -1, grouped, -1};
  EXPECT_EQ(pushes_before_group_end, expected_before_end.size());
  const std::vector<int64_t> expected = {single, -1, grouped, -1, grouped, -1, grouped, -1};
  EXPECT_EQ(g_pushes, expected);
}

TEST_F(NcclRecorderTest, WithoutCuptiNoExternalIdIsPushedOrRecorded) {
  ncclComm_t comm = init(0, 2);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].external_correlation_id, 0u);
}

TEST_F(NcclRecorderTest, CallsOnACapturingStreamAreFlaggedAsGraphCapture) {
  ncclComm_t comm = init(0, 2);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, kCapturedStream);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, reinterpret_cast<cudaStream_t>(0x99));
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].flags, trace::kNcclFlagGraphCapture);
  EXPECT_EQ(ops[1].flags, 0u);
  EXPECT_EQ(ops[2].flags, 0u);
}

TEST_F(NcclRecorderTest, OutsideTheCaptureWindowOpsAreCountedButNotRecorded) {
  InjectConfig config;
  config.steps = StepWindow{0, 0};  // capture opens at the first step
  start(config);
  ncclComm_t comm = init(0, 2);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  recorder_->send(nullptr, 1, ncclInt8, 1, comm, nullptr);
  session_->step_began();
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  recorder_->send(nullptr, 1, ncclInt8, 1, comm, nullptr);
  const auto loaded = finish();
  const auto ops = loaded.all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].sequence, 1u);  // the window's first collective is the communicator's second
  EXPECT_EQ(ops[1].sequence, 1u);
  // The communicator, created before the window, is in the trace: the window's ops need it.
  EXPECT_EQ(loaded.all<NcclCommRecord>().size(), 1u);
}

TEST_F(NcclRecorderTest, WithoutTheNcclKindCallsAreForwardedAndNothingIsWritten) {
  InjectConfig config;
  config.kinds = trace::parse_capture_kinds("kernel").value();
  start(config);
  ncclComm_t comm = init(0, 2);
  EXPECT_EQ(recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(g_fake.calls, 2);
  session_->finish();
  EXPECT_TRUE(trace_files_in(dir_).empty());  // NCCL alone did not open a trace
}

TEST_F(NcclRecorderTest, SplitsRecordTheirParentColorAndIndexAndNoColorStillCounts) {
  ncclComm_t world = init(0, 8);
  ncclComm_t first = nullptr;
  ncclComm_t none = nullptr;
  ncclComm_t third = nullptr;
  ASSERT_EQ(recorder_->comm_split(world, 2, 0, &first, nullptr), ncclSuccess);
  ASSERT_EQ(recorder_->comm_split(world, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr), ncclSuccess);
  ASSERT_EQ(recorder_->comm_split(world, 2, 0, &third, nullptr), ncclSuccess);
  EXPECT_EQ(none, nullptr);
  const auto comms = finish().all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 3u);
  const uint64_t world_id = identity_of(unique_id(1));
  EXPECT_EQ(comms[1].event, static_cast<uint8_t>(NcclCommEvent::kSplit));
  EXPECT_EQ(comms[1].parent_comm_id, world_id);
  EXPECT_EQ(comms[1].comm_id, identity_of_split(world_id, 2, 0));
  EXPECT_EQ(comms[1].color, 2);
  EXPECT_EQ(comms[1].split_index, 0u);
  EXPECT_EQ(comms[1].size, 4);  // asked of NCCL
  EXPECT_EQ(comms[2].comm_id, identity_of_split(world_id, 2, 2));
  EXPECT_EQ(comms[2].split_index, 2u);
  EXPECT_EQ(comms[2].comm_handle, reinterpret_cast<uintptr_t>(third));
}

TEST_F(NcclRecorderTest, ShrinkRecordsItsParentAndExcludedRanks) {
  ncclComm_t world = init(0, 8);
  ncclComm_t shrunk = nullptr;
  int excluded[] = {6, 3};
  ASSERT_EQ(recorder_->comm_shrink(world, excluded, 2, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  const auto comms = finish().all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 2u);
  const int32_t sorted[] = {3, 6};
  EXPECT_EQ(comms[1].event, static_cast<uint8_t>(NcclCommEvent::kShrink));
  EXPECT_EQ(comms[1].comm_id, identity_of_shrink(identity_of(unique_id(1)), sorted, 0));
  EXPECT_EQ(comms[1].size, 6);
}

TEST_F(NcclRecorderTest, ANonblockingCommunicatorIsRecordedOnceNcclSaysItIsReady) {
  g_fake.result = ncclInProgress;
  g_fake.creation_async_state = ncclInProgress;
  g_fake.comms[0].device = 2;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(recorder_->comm_init_rank_config(&comm, 2, unique_id(1), 1, &config), ncclInProgress);
  EXPECT_EQ(g_fake.queries, 0);  // not asked while NCCL is still creating it
  g_fake.result = ncclSuccess;
  fake(comm).async_state = ncclSuccess;  // the application polled until ready
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto loaded = finish();
  const auto comms = loaded.all<NcclCommRecord>();
  const auto ops = loaded.all<NcclOpRecord>();
  ASSERT_EQ(comms.size(), 1u);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(comms[0].rank, 1);
  EXPECT_EQ(comms[0].device, 2u);
  EXPECT_LT(comms[0].end_ns, ops[0].host_enter_ns);  // the creation call's own times
  EXPECT_EQ(ops[0].device, 2u);
}

TEST_F(NcclRecorderTest, CommunicatorsCreatedInAGroupAreRecordedAtItsEnd) {
  ASSERT_EQ(recorder_->group_start(), ncclSuccess);
  ncclComm_t a = nullptr;
  ncclComm_t b = nullptr;
  ASSERT_EQ(recorder_->comm_init_rank(&a, 2, unique_id(1), 0), ncclSuccess);
  ASSERT_EQ(recorder_->comm_init_rank(&b, 2, unique_id(1), 1), ncclSuccess);
  EXPECT_EQ(g_fake.queries, 0);
  ASSERT_EQ(recorder_->group_end(), ncclSuccess);
  EXPECT_EQ(g_fake.queries, 2);
  const auto comms = finish().all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].comm_id, comms[1].comm_id);
  EXPECT_EQ(comms[0].rank, 0);
  EXPECT_EQ(comms[1].rank, 1);
}

TEST_F(NcclRecorderTest, InitAllMakesOneCommunicatorWithARankPerDevice) {
  ncclComm_t comms[3] = {};
  const int devices[3] = {4, 5, 7};
  g_fake.comms[2].device = 7;
  ASSERT_EQ(recorder_->comm_init_all(comms, 3, devices), ncclSuccess);
  const auto records = finish().all<NcclCommRecord>();
  ASSERT_EQ(records.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(records[i].comm_id, records[0].comm_id);
    EXPECT_EQ(records[i].rank, i);
    EXPECT_EQ(records[i].size, 3);
    EXPECT_EQ(records[i].comm_handle, reinterpret_cast<uintptr_t>(comms[i]));
  }
  EXPECT_EQ(records[2].device, 7u);
  EXPECT_EQ(records[0].global_rank, -1);  // one process, several ranks: none stands for it
}

TEST_F(NcclRecorderTest, TeardownIsRecordedAndAReusedHandleIsANewCommunicator) {
  ncclComm_t comm = init(0, 2, 1);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  ASSERT_EQ(recorder_->comm_finalize(comm), ncclSuccess);
  ASSERT_EQ(recorder_->comm_destroy(comm), ncclSuccess);
  // NCCL hands the same pointer to the next communicator.
  g_fake.next_comm = 0;
  ncclComm_t again = init(0, 2, 9);
  ASSERT_EQ(again, comm);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, again, nullptr);
  ASSERT_EQ(recorder_->comm_abort(again), ncclSuccess);
  const auto loaded = finish();
  const auto comms = loaded.all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 5u);
  EXPECT_EQ(comms[1].event, static_cast<uint8_t>(NcclCommEvent::kFinalize));
  EXPECT_EQ(comms[2].event, static_cast<uint8_t>(NcclCommEvent::kDestroy));
  EXPECT_EQ(comms[2].comm_id, identity_of(unique_id(1)));
  EXPECT_EQ(comms[4].event, static_cast<uint8_t>(NcclCommEvent::kAbort));
  EXPECT_EQ(comms[4].comm_id, identity_of(unique_id(9)));
  const auto ops = loaded.all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].comm_id, identity_of(unique_id(9)));
  EXPECT_EQ(ops[1].sequence, 0u);
}

TEST_F(NcclRecorderTest, AFailedCreationIsRecordedWithoutAHandle) {
  g_fake.result = ncclUnhandledCudaError;
  ncclComm_t comm = nullptr;
  EXPECT_EQ(recorder_->comm_init_rank(&comm, 4, unique_id(3), 2), ncclUnhandledCudaError);
  const auto comms = finish().all<NcclCommRecord>();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].comm_handle, 0u);
  EXPECT_EQ(comms[0].comm_id, identity_of(unique_id(3)));
  EXPECT_EQ(comms[0].rank, 2);
  EXPECT_EQ(comms[0].size, 4);
}

TEST_F(NcclRecorderTest, CallsOnAnUnknownCommunicatorAreRecordedUnpaired) {
  FakeComm stranger;
  auto comm = reinterpret_cast<ncclComm_t>(&stranger);
  recorder_->all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, comm, nullptr);
  const auto ops = finish().all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].comm_id, 0u);
  EXPECT_EQ(ops[0].sequence, kNcclUnknownSequence);
  EXPECT_EQ(ops[0].device, trace::kUnknownDevice);
}

// ---------------------------------------------------------------------------------------------
// The flight recorder: a flush while a call is inside NCCL writes it in flight; its return
// completes it.

std::vector<NcclCallRecord> in_state(const std::vector<NcclCallRecord>& calls, NcclCallState state) {
  std::vector<NcclCallRecord> out;
  for (const NcclCallRecord& c : calls)
    if (c.state == static_cast<uint8_t>(state)) out.push_back(c);
  return out;
}

TEST_F(NcclRecorderTest, ACallAFlushSeesRunningIsWrittenInFlightThenReturned) {
  ncclComm_t comm = init(1, 4);
  EXPECT_EQ(recorder_->all_reduce(nullptr, nullptr, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  g_fake.during = [&] { session_->flush_now(); };
  g_fake.result = ncclRemoteError;
  EXPECT_EQ(recorder_->all_reduce(nullptr, nullptr, 16, ncclBfloat16, ncclMax, comm, nullptr),
            ncclRemoteError);
  g_fake.during = nullptr;
  g_fake.result = ncclSuccess;
  EXPECT_EQ(recorder_->all_reduce(nullptr, nullptr, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  const testing::LoadedTrace trace = finish();
  const auto calls = trace.all<NcclCallRecord>();
  const auto in_flight = in_state(calls, NcclCallState::kInFlight);
  const auto returned = in_state(calls, NcclCallState::kReturned);
  ASSERT_EQ(in_flight.size(), 1u);  // the calls no flush saw running leave none
  ASSERT_EQ(returned.size(), 1u);
  const NcclCallRecord& c = in_flight[0];
  EXPECT_EQ(c.call_kind, static_cast<uint8_t>(trace::NcclCallKind::kOperation));
  EXPECT_EQ(c.what, static_cast<uint8_t>(NcclOpType::kAllReduce));
  EXPECT_EQ(c.comm_id, identity_of(unique_id(1)));
  EXPECT_EQ(c.sequence, 1u);  // the second all-reduce
  EXPECT_EQ(c.bytes, 32u);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.datatype, ncclBfloat16);
  EXPECT_EQ(c.reduce_op, ncclMax);
  EXPECT_GT(c.enter_ns, 0u);
  EXPECT_GE(c.at_ns, c.enter_ns);
  EXPECT_EQ(returned[0].call_serial, c.call_serial);
  EXPECT_EQ(returned[0].thread_id, c.thread_id);
  EXPECT_EQ(returned[0].result, ncclRemoteError);
  EXPECT_GE(returned[0].at_ns, c.at_ns);
  // The operation's own record is there as before, and says it failed.
  const auto ops = trace.all<NcclOpRecord>();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_NE(ops[1].flags & trace::kNcclFlagFailed, 0);
}

TEST_F(NcclRecorderTest, GroupedCallsStayInFlightUntilTheGroupEnds) {
  ncclComm_t comm = init(0, 2);
  ASSERT_EQ(recorder_->group_start(), ncclSuccess);
  ASSERT_EQ(recorder_->send(nullptr, 4, ncclInt32, 1, comm, nullptr), ncclSuccess);
  ASSERT_EQ(recorder_->recv(nullptr, 4, ncclInt32, 1, comm, nullptr), ncclSuccess);
  g_fake.during = [&] { session_->flush_now(); };  // inside ncclGroupEnd, where grouped p2p waits
  ASSERT_EQ(recorder_->group_end(), ncclSuccess);
  g_fake.during = nullptr;
  const auto calls = finish().all<NcclCallRecord>();
  const auto in_flight = in_state(calls, NcclCallState::kInFlight);
  ASSERT_EQ(in_flight.size(), 2u);
  for (const NcclCallRecord& c : in_flight) EXPECT_NE(c.flags & trace::kNcclFlagInGroup, 0);
  EXPECT_EQ(in_state(calls, NcclCallState::kReturned).size(), 2u);
}

TEST_F(NcclRecorderTest, CreationInFlightNamesTheCommunicatorItMakes) {
  g_fake.during = [&] { session_->flush_now(); };
  ncclComm_t comm = init(3, 8, 5);
  g_fake.during = nullptr;
  ASSERT_NE(comm, nullptr);
  const auto in_flight = in_state(finish().all<NcclCallRecord>(), NcclCallState::kInFlight);
  ASSERT_EQ(in_flight.size(), 1u);
  EXPECT_EQ(in_flight[0].call_kind, static_cast<uint8_t>(trace::NcclCallKind::kCommunicator));
  EXPECT_EQ(in_flight[0].what, static_cast<uint8_t>(NcclCommEvent::kInit));
  EXPECT_EQ(in_flight[0].comm_id, identity_of(unique_id(5)));
  EXPECT_EQ(in_flight[0].rank, 3);
  EXPECT_EQ(in_flight[0].size, 8);
}

TEST_F(NcclRecorderTest, OutsideTheCaptureWindowCallsAreStillTrackedWithoutTheClock) {
  InjectConfig config;
  config.steps = StepWindow{1000, 1000};  // never reached
  start(config);
  ncclComm_t comm = init(0, 2);
  g_fake.during = [&] { session_->flush_now(); };
  ASSERT_EQ(recorder_->all_reduce(nullptr, nullptr, 8, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  g_fake.during = nullptr;
  const testing::LoadedTrace trace = finish();
  EXPECT_TRUE(trace.all<NcclOpRecord>().empty());
  const auto calls = trace.all<NcclCallRecord>();
  const auto in_flight = in_state(calls, NcclCallState::kInFlight);
  ASSERT_EQ(in_flight.size(), 1u);
  EXPECT_EQ(in_flight[0].enter_ns, 0u);  // not read outside a window: the sighting bounds it
  EXPECT_GT(in_flight[0].at_ns, 0u);
  EXPECT_EQ(in_state(calls, NcclCallState::kReturned).size(), 1u);
}

// A nonblocking communicator's operation returns ncclInProgress and runs on: it stays in flight
// until ncclCommGetAsyncError, asked on any thread, says it is done.
TEST_F(NcclRecorderTest, NonblockingOperationsStayInFlightUntilTheAsyncStateSettles) {
  ncclComm_t comm = init(0, 2);
  g_fake.result = ncclInProgress;
  ASSERT_EQ(recorder_->all_reduce(nullptr, nullptr, 8, ncclFloat32, ncclSum, comm, nullptr), ncclInProgress);
  g_fake.result = ncclSuccess;
  session_->flush_now();  // returned, but running: written in flight
  fake(comm).async_state = ncclInProgress;
  ncclResult_t state = ncclSuccess;
  ASSERT_EQ(recorder_->comm_get_async_error(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  session_->flush_now();  // still running
  fake(comm).async_state = ncclSuccess;
  std::thread([&] { ASSERT_EQ(recorder_->comm_get_async_error(comm, &state), ncclSuccess); }).join();
  session_->flush_now();  // done: nothing more in flight
  const auto calls = finish().all<NcclCallRecord>();
  const auto in_flight = in_state(calls, NcclCallState::kInFlight);
  const auto returned = in_state(calls, NcclCallState::kReturned);
  ASSERT_EQ(in_flight.size(), 2u);
  ASSERT_EQ(returned.size(), 1u);
  EXPECT_EQ(returned[0].call_serial, in_flight[0].call_serial);
  EXPECT_EQ(returned[0].result, ncclSuccess);
  EXPECT_GE(returned[0].at_ns, in_flight[1].at_ns);
}

TEST(NcclRecorderWithoutNccl, AFunctionTheLoadedNcclLacksReturnsSystemError) {
  const std::string dir = make_temp_dir("nccl-missing");
  InjectConfig config;
  config.output_dir = dir;
  Session session(config, LauncherInfo{});
  NcclFunctions functions = fake_functions();
  functions.comm_revoke = nullptr;  // an NCCL older than 2.28
  auto library = NcclLibrary::with_functions(functions);
  CommRegistry registry;
  NcclRecorder recorder(session, *library, registry, 5);
  errno = EPERM;
  EXPECT_EQ(recorder.comm_revoke(nullptr, 0), ncclSystemError);
  EXPECT_EQ(errno, EPERM);
  session.finish();
}

TEST(NcclRecorderWithoutNccl, WithNoNcclLoadedEveryCallReturnsSystemError) {
  // This test binary loads no libnccl, so the process's own lookup finds nothing.
  NcclLibrary library;
  EXPECT_EQ(library.functions(), nullptr);
  const std::string dir = make_temp_dir("nccl-none");
  InjectConfig config;
  config.output_dir = dir;
  Session session(config, LauncherInfo{});
  CommRegistry registry;
  NcclRecorder recorder(session, library, registry, std::nullopt);
  errno = ENOTSUP;
  EXPECT_EQ(recorder.group_start(), ncclSystemError);
  EXPECT_EQ(recorder.all_reduce(nullptr, nullptr, 1, ncclInt8, ncclSum, nullptr, nullptr), ncclSystemError);
  EXPECT_EQ(errno, ENOTSUP);
  EXPECT_FALSE(this_thread_group().in_group());
  session.finish();
  EXPECT_TRUE(trace_files_in(dir).empty());
}

}  // namespace
}  // namespace pipescope::inject::nccl
