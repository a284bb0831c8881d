#include "nccl_ranks.h"

#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "call_text.h"

namespace pipescope::test_programs {
namespace {

namespace fake = pipescope::fake_nccl;

constexpr int kIdWaitMs = 30000;
constexpr int kLayers = 2;

struct Options {
  std::string id_dir;
  std::string call_log;
  bool nvtx = false;
  int steps = 1;
  int tp = 2;
  int pp = 2;
  int straggler_rank = -1;  // --straggler R:MS: R sleeps MS before every data-parallel all-reduce
  int straggler_ms = 0;
  int hang_rank = -1;  // --hang R:STEP: R stops before step STEP's data-parallel all-reduce
  int hang_step = -1;
  bool hang_in_pipeline = false;  // --hang-p2p R:STEP: before step STEP's pipeline exchange instead
  int zero_shard = 0;             // --zero K: hierarchical ZeRO over shard groups of K ranks instead of 3D
  int no_comms_rank = -1;         // --no-comms R: R never creates its communicators
  int desync_rank = -1;           // --desync R:STEP: R's data-parallel all-reduce count differs at STEP
  int desync_step = -1;
  int p2p_size_rank = -1;  // --p2p-size R:STEP: R's ungrouped send to the next stage is short at STEP
  int p2p_size_step = -1;
  int fail_rank = -1;  // --exit R:STEP / --abort R:STEP: R exits with status 3, or aborts, at STEP
  int fail_step = -1;
  bool fail_abort = false;
};

struct Layout {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  int tp = 1, pp = 1, dp = 1;
  int tp_rank() const { return rank % tp; }
  int dp_rank() const { return (rank / tp) % dp; }
  int pp_rank() const { return rank / (tp * dp); }
};

// Bad arguments or environment: exit 2.
struct UsageError {
  std::string message;
};

int parse_int(const char* text, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text == nullptr ? "" : text, &end, 10);
  if (text == nullptr || text[0] == '\0' || *end != '\0' || value < 0 || value > 1 << 20) {
    throw UsageError{std::string(what) + " must be a non-negative integer, got '" + (text ? text : "") + "'"};
  }
  return static_cast<int>(value);
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
      return argv[++i];
    };
    if (arg == "--id-dir") {
      options.id_dir = value();
    } else if (arg == "--call-log") {
      options.call_log = value();
    } else if (arg == "--nvtx") {
      options.nvtx = true;
    } else if (arg == "--steps") {
      options.steps = parse_int(value(), "--steps");
    } else if (arg == "--tp") {
      options.tp = parse_int(value(), "--tp");
    } else if (arg == "--pp") {
      options.pp = parse_int(value(), "--pp");
    } else if (arg == "--zero") {
      options.zero_shard = parse_int(value(), "--zero");
    } else if (arg == "--no-comms") {
      options.no_comms_rank = parse_int(value(), "--no-comms");
    } else if (arg == "--straggler" || arg == "--hang" || arg == "--hang-p2p" || arg == "--desync" ||
               arg == "--p2p-size" || arg == "--exit" || arg == "--abort") {
      const std::string pair = value();
      const size_t colon = pair.find(':');
      if (colon == std::string::npos) throw UsageError{arg + " needs R:N, got '" + pair + "'"};
      const int first = parse_int(pair.substr(0, colon).c_str(), arg.c_str());
      const int second = parse_int(pair.substr(colon + 1).c_str(), arg.c_str());
      if (arg == "--desync") {
        options.desync_rank = first;
        options.desync_step = second;
      } else if (arg == "--p2p-size") {
        options.p2p_size_rank = first;
        options.p2p_size_step = second;
      } else if (arg == "--exit" || arg == "--abort") {
        options.fail_rank = first;
        options.fail_step = second;
        options.fail_abort = arg == "--abort";
      } else {
        const bool hang = arg != "--straggler";
        (hang ? options.hang_rank : options.straggler_rank) = first;
        (hang ? options.hang_step : options.straggler_ms) = second;
        options.hang_in_pipeline = arg == "--hang-p2p";
      }
    } else {
      throw UsageError{"unknown argument " + arg};
    }
  }
  if (options.id_dir.empty()) throw UsageError{"--id-dir DIR is required"};
  return options;
}

Layout layout_from_env(const Options& options) {
  Layout layout;
  layout.rank = parse_int(std::getenv("RANK"), "RANK");
  layout.world = parse_int(std::getenv("WORLD_SIZE"), "WORLD_SIZE");
  layout.local_rank = parse_int(std::getenv("LOCAL_RANK"), "LOCAL_RANK");
  layout.tp = options.tp;
  layout.pp = options.pp;
  if (layout.tp < 1 || layout.pp < 1 || layout.world % (layout.tp * layout.pp) != 0 ||
      layout.rank >= layout.world) {
    throw UsageError{"WORLD_SIZE " + std::to_string(layout.world) + " is not a multiple of tp*pp = " +
                     std::to_string(layout.tp * layout.pp) + " or RANK is outside it"};
  }
  layout.dp = layout.world / (layout.tp * layout.pp);
  return layout;
}

// An NCCL call returned an error: exit 1.
struct NcclFailed {
  std::string message;
};

// Makes each NCCL call, writes it to the call log in the fake library's words, and turns a
// failure into an exception that ends the program with status 1.
class Nccl {
 public:
  explicit Nccl(const std::string& log_path) {
    if (log_path.empty()) return;
    log_ = std::fopen(log_path.c_str(), "w");
    if (log_ == nullptr) throw UsageError{"cannot create " + log_path};
  }
  ~Nccl() {
    if (log_ != nullptr) std::fclose(log_);
  }
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  int version() {
    int version = 0;
    check("ncclGetVersion", ncclGetVersion(&version),
          [&](ncclResult_t rc) { return fake::describe_get_version(&version, rc); });
    return version;
  }
  ncclUniqueId unique_id() {
    ncclUniqueId id;
    check("ncclGetUniqueId", ncclGetUniqueId(&id),
          [&](ncclResult_t rc) { return fake::describe_get_unique_id(&id, rc); });
    return id;
  }
  ncclComm_t init_rank(int nranks, const ncclUniqueId& id, int rank) {
    ncclComm_t comm = nullptr;
    check("ncclCommInitRank", ncclCommInitRank(&comm, nranks, id, rank),
          [&](ncclResult_t rc) { return fake::describe_comm_init_rank(&comm, nranks, id, rank, rc); });
    return comm;
  }
  ncclComm_t split(ncclComm_t comm, int color, int key) {
    ncclComm_t child = nullptr;
    check("ncclCommSplit", ncclCommSplit(comm, color, key, &child, nullptr),
          [&](ncclResult_t rc) { return fake::describe_comm_split(comm, color, key, &child, nullptr, rc); });
    return child;
  }
  // "r/s" of this process in `comm`.
  std::string place(ncclComm_t comm) {
    if (comm == nullptr) return "none";
    int rank = -1;
    int size = -1;
    check("ncclCommUserRank", ncclCommUserRank(comm, &rank),
          [&](ncclResult_t rc) { return fake::describe_comm_query("ncclCommUserRank", comm, &rank, rc); });
    check("ncclCommCount", ncclCommCount(comm, &size),
          [&](ncclResult_t rc) { return fake::describe_comm_query("ncclCommCount", comm, &size, rc); });
    return std::to_string(rank) + "/" + std::to_string(size);
  }
  int device(ncclComm_t comm) {
    int device = -1;
    check("ncclCommCuDevice", ncclCommCuDevice(comm, &device),
          [&](ncclResult_t rc) { return fake::describe_comm_query("ncclCommCuDevice", comm, &device, rc); });
    return device;
  }
  void finalize(ncclComm_t comm) {
    check("ncclCommFinalize", ncclCommFinalize(comm),
          [&](ncclResult_t rc) { return fake::describe_comm_call("ncclCommFinalize", comm, rc); });
  }
  void destroy(ncclComm_t comm) {
    check("ncclCommDestroy", ncclCommDestroy(comm),
          [&](ncclResult_t rc) { return fake::describe_comm_call("ncclCommDestroy", comm, rc); });
  }
  void group_start() {
    check("ncclGroupStart", ncclGroupStart(),
          [](ncclResult_t rc) { return fake::describe_group("ncclGroupStart", rc); });
  }
  void group_end() {
    check("ncclGroupEnd", ncclGroupEnd(),
          [](ncclResult_t rc) { return fake::describe_group("ncclGroupEnd", rc); });
  }
  void all_reduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                  ncclComm_t comm, cudaStream_t stream) {
    check("ncclAllReduce", ncclAllReduce(send, recv, count, type, op, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_all_reduce(send, recv, count, type, op, comm, stream, rc);
    });
  }
  void all_gather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                  cudaStream_t stream) {
    check("ncclAllGather", ncclAllGather(send, recv, count, type, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_unrooted("ncclAllGather", send, recv, count, type, comm, stream, rc);
    });
  }
  void all_to_all(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                  cudaStream_t stream) {
    check("ncclAlltoAll", ncclAlltoAll(send, recv, count, type, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_unrooted("ncclAlltoAll", send, recv, count, type, comm, stream, rc);
    });
  }
  void reduce_scatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      ncclComm_t comm, cudaStream_t stream) {
    check("ncclReduceScatter", ncclReduceScatter(send, recv, count, type, op, comm, stream),
          [&](ncclResult_t rc) {
            return fake::describe_reduce_scatter(send, recv, count, type, op, comm, stream, rc);
          });
  }
  void broadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                 cudaStream_t stream) {
    check("ncclBroadcast", ncclBroadcast(send, recv, count, type, root, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_rooted("ncclBroadcast", send, recv, count, type, root, comm, stream, rc);
    });
  }
  void send(const void* buff, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
            cudaStream_t stream) {
    check("ncclSend", ncclSend(buff, count, type, peer, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_p2p("ncclSend", buff, count, type, peer, comm, stream, rc);
    });
  }
  void recv(void* buff, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream) {
    check("ncclRecv", ncclRecv(buff, count, type, peer, comm, stream), [&](ncclResult_t rc) {
      return fake::describe_p2p("ncclRecv", buff, count, type, peer, comm, stream, rc);
    });
  }

 private:
  template <class Describe>
  void check(const char* function, ncclResult_t rc, Describe describe) {
    if (log_ != nullptr) {
      const std::string line = describe(rc) + "\n";
      std::fputs(line.c_str(), log_);
    }
    if (rc != ncclSuccess) {
      throw NcclFailed{std::string(function) + " failed: " + ncclGetErrorString(rc) + " (" +
                       ncclGetLastError(nullptr) + ")"};
    }
  }
  FILE* log_ = nullptr;
};

// Rank 0's unique id reaches the others through a file, as torchrun's store would carry it.
ncclUniqueId share_unique_id(Nccl& nccl, const Options& options, const Layout& layout) {
  const std::string path = options.id_dir + "/nccl-id";
  ncclUniqueId id;
  if (layout.rank == 0) {
    id = nccl.unique_id();
    const std::string temporary = path + ".tmp";
    FILE* file = std::fopen(temporary.c_str(), "wb");
    const bool written = file != nullptr && std::fwrite(&id, sizeof(id), 1, file) == 1;
    if (file == nullptr || std::fclose(file) != 0 || !written ||
        std::rename(temporary.c_str(), path.c_str()) != 0) {
      throw UsageError{"cannot write " + path};
    }
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kIdWaitMs);
  while (std::chrono::steady_clock::now() < deadline) {
    if (FILE* file = std::fopen(path.c_str(), "rb")) {
      const bool read = std::fread(&id, sizeof(id), 1, file) == 1;
      std::fclose(file);
      if (read) return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  throw UsageError{"no unique id from rank 0 in " + path};
}

class NvtxRange {
 public:
  NvtxRange(bool enabled, const char* name) : enabled_(enabled) {
    if (enabled_) nvtxRangePushA(name);
  }
  ~NvtxRange() {
    if (enabled_) nvtxRangePop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool enabled_;
};

struct Comms {
  ncclComm_t world = nullptr, tp = nullptr, pp = nullptr, stage = nullptr, dp = nullptr;
};

// Buffers stand in for device memory; the fake never touches them, a real NCCL would.
struct Buffers {
  std::vector<std::byte> send = std::vector<std::byte>(size_t{1} << 16);
  std::vector<std::byte> recv = std::vector<std::byte>(size_t{1} << 16);
};

void pipeline_exchange(Nccl& nccl, const Comms& comms, const Layout& layout, Buffers& buffers,
                       cudaStream_t stream) {
  const int stage = layout.pp_rank();
  if (stage > 0) {  // receive activations from the previous stage, send it gradients
    nccl.group_start();
    nccl.recv(buffers.recv.data(), 2048, ncclBfloat16, stage - 1, comms.pp, stream);
    nccl.send(buffers.send.data(), 1024, ncclBfloat16, stage - 1, comms.pp, stream);
    nccl.group_end();
  }
  if (stage + 1 < layout.pp) {  // send activations to the next stage, receive its gradients
    nccl.group_start();
    nccl.send(buffers.send.data(), 2048, ncclBfloat16, stage + 1, comms.pp, stream);
    nccl.recv(buffers.recv.data(), 1024, ncclBfloat16, stage + 1, comms.pp, stream);
    nccl.group_end();
  }
}

// A rank that stops answering: it sleeps, then ends the way a scheduler ends a hung job, by
// SIGTERM, once the others have given up on it (FAKE_NCCL_TIMEOUT_MS). When they never give up
// (FAKE_NCCL_TIMEOUT_MS=0) it sleeps until whoever runs the job ends it.
[[noreturn]] void hang_until_killed() {
  const char* timeout = std::getenv("FAKE_NCCL_TIMEOUT_MS");
  if (timeout != nullptr && std::string(timeout) == "0") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  const int wait_ms = 2 * std::max(1, std::atoi(timeout != nullptr ? timeout : "1000"));
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  std::raise(SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  std::_Exit(3);
}

// Megatron's tensor parallelism without sequence parallelism: each layer all-reduces after its
// attention and after its MLP, in forward and again in backward; two layers.
void tensor_parallel_layers(Nccl& nccl, const Comms& comms, std::byte* send, std::byte* recv,
                            cudaStream_t stream) {
  for (int layer = 0; layer < kLayers; ++layer) {
    nccl.all_reduce(send, recv, 1024, ncclFloat32, ncclSum, comms.tp, stream);  // attention
    nccl.all_reduce(send, recv, 1024, ncclFloat32, ncclSum, comms.tp, stream);  // MLP
  }
}

void one_step(Nccl& nccl, const Comms& comms, const Layout& layout, Buffers& buffers, bool nvtx, int step,
              const Options& options) {
  const auto stream =
      reinterpret_cast<cudaStream_t>(uintptr_t{0x5000} + static_cast<uintptr_t>(layout.local_rank));
  const int stage = layout.pp_rank();
  std::byte* send = buffers.send.data();
  std::byte* recv = buffers.recv.data();
  NvtxRange step_range(nvtx, "train_step");
  {
    NvtxRange forward(nvtx, "forward");
    tensor_parallel_layers(nccl, comms, send, recv, stream);
    if (options.hang_in_pipeline && layout.rank == options.hang_rank && step == options.hang_step)
      hang_until_killed();
    pipeline_exchange(nccl, comms, layout, buffers, stream);
  }
  {
    NvtxRange backward(nvtx, "backward");
    tensor_parallel_layers(nccl, comms, send, recv, stream);
    const bool short_send = layout.rank == options.p2p_size_rank && step == options.p2p_size_step;
    if (stage + 1 < layout.pp)
      nccl.send(send, short_send ? 64 : 128, ncclFloat32, stage + 1, comms.pp, stream);
    if (stage > 0) nccl.recv(recv, 128, ncclFloat32, stage - 1, comms.pp, stream);
    if (!options.hang_in_pipeline && layout.rank == options.hang_rank && step == options.hang_step)
      hang_until_killed();
    if (layout.rank == options.straggler_rank)
      std::this_thread::sleep_for(std::chrono::milliseconds(options.straggler_ms));
    if (layout.rank == options.fail_rank && step == options.fail_step) {
      if (options.fail_abort) std::abort();
      std::exit(3);  // as a Python exception ends the interpreter: through exit, with a status
    }
    const bool desync = layout.rank == options.desync_rank && step == options.desync_step;
    nccl.all_reduce(send, recv, desync ? 2048 : 4096, ncclFloat32, ncclSum, comms.dp, stream);
    nccl.all_gather(send, recv, 512, ncclBfloat16, comms.dp, stream);
    nccl.reduce_scatter(send, recv, 256, ncclFloat32, ncclSum, comms.dp, stream);
    if (comms.stage != nullptr) nccl.all_reduce(send, recv, 32, ncclFloat32, ncclMax, comms.stage, stream);
  }
  nccl.broadcast(send, recv, 64, ncclInt32, 0, comms.world, stream);
  nccl.all_to_all(send, recv, 16, ncclInt32, comms.world, stream);
}

// Hierarchical ZeRO, no pipeline: parameters all-gathered within shard groups of K consecutive
// ranks for forward and backward, gradients reduce-scattered there, then all-reduced across the
// groups (ranks with equal rank % K).
void zero_step(Nccl& nccl, ncclComm_t shard, ncclComm_t replica, const Layout& layout, Buffers& buffers,
               bool nvtx, int step, const Options& options) {
  const auto stream =
      reinterpret_cast<cudaStream_t>(uintptr_t{0x5000} + static_cast<uintptr_t>(layout.local_rank));
  std::byte* send = buffers.send.data();
  std::byte* recv = buffers.recv.data();
  NvtxRange step_range(nvtx, "train_step");
  {
    NvtxRange forward(nvtx, "forward");
    nccl.all_gather(send, recv, 8192, ncclBfloat16, shard, stream);
    nccl.all_gather(send, recv, 8192, ncclBfloat16, shard, stream);
  }
  {
    NvtxRange backward(nvtx, "backward");
    nccl.all_gather(send, recv, 8192, ncclBfloat16, shard, stream);
    nccl.all_gather(send, recv, 8192, ncclBfloat16, shard, stream);
    nccl.reduce_scatter(send, recv, 1024, ncclFloat32, ncclSum, shard, stream);
  }
  if (layout.rank == options.hang_rank && step == options.hang_step) hang_until_killed();
  if (layout.rank == options.straggler_rank)
    std::this_thread::sleep_for(std::chrono::milliseconds(options.straggler_ms));
  nccl.all_reduce(send, recv, 1024, ncclFloat32, ncclSum, replica, stream);
}

int run_zero(const Options& options, const Layout& layout, Nccl& nccl, const ncclUniqueId& id) {
  const int k = options.zero_shard;
  if (layout.world % k != 0) throw UsageError{"--zero " + std::to_string(k) + " does not divide WORLD_SIZE"};
  ncclComm_t world = nccl.init_rank(layout.world, id, layout.rank);
  ncclComm_t shard = nccl.split(world, layout.rank / k, layout.rank);
  ncclComm_t replica = nccl.split(world, layout.rank % k, layout.rank);
  const std::string shard_place = nccl.place(shard);
  const std::string replica_place = nccl.place(replica);
  Buffers buffers;
  for (int step = 0; step < options.steps; ++step)
    zero_step(nccl, shard, replica, layout, buffers, options.nvtx, step, options);
  nccl.finalize(world);
  nccl.destroy(replica);
  nccl.destroy(shard);
  nccl.destroy(world);
  std::printf("rank %d/%d: shard %s replica %s\n", layout.rank, layout.world, shard_place.c_str(),
              replica_place.c_str());
  return 0;
}

int run(const Options& options) {
  const Layout layout = layout_from_env(options);
  Nccl nccl(options.call_log);
  const int version = nccl.version();
  const ncclUniqueId id = share_unique_id(nccl, options, layout);
  if (options.zero_shard > 0) return run_zero(options, layout, nccl, id);

  if (layout.rank == options.no_comms_rank) hang_until_killed();
  Comms comms;
  comms.world = nccl.init_rank(layout.world, id, layout.rank);
  const int tp_group = layout.rank / layout.tp;
  const int pp_group = layout.rank % (layout.tp * layout.dp);
  const int dp_group = layout.pp_rank() * layout.tp + layout.tp_rank();
  comms.tp = nccl.split(comms.world, tp_group, layout.rank);
  comms.pp = nccl.split(comms.world, pp_group, layout.rank);
  comms.stage = nccl.split(comms.world, layout.pp_rank() == 0 ? 0 : NCCL_SPLIT_NOCOLOR, layout.rank);
  comms.dp = nccl.split(comms.world, dp_group, layout.rank);

  // One call at a time, in a fixed order: the call log must not depend on the compiler's
  // choice of evaluation order.
  const std::string world_place = nccl.place(comms.world);
  const std::string tp_place = nccl.place(comms.tp);
  const std::string pp_place = nccl.place(comms.pp);
  const std::string dp_place = nccl.place(comms.dp);
  const std::string stage_place = nccl.place(comms.stage);
  const int device = nccl.device(comms.world);
  const std::string line = "rank " + std::to_string(layout.rank) + "/" + std::to_string(layout.world) +
                           " local " + std::to_string(layout.local_rank) + ": world " + world_place + " tp " +
                           tp_place + " pp " + pp_place + " dp " + dp_place + " stage " + stage_place +
                           " device " + std::to_string(device) + " nccl " + std::to_string(version);

  Buffers buffers;
  for (int step = 0; step < options.steps; ++step)
    one_step(nccl, comms, layout, buffers, options.nvtx, step, options);

  nccl.finalize(comms.world);
  if (comms.stage != nullptr) nccl.destroy(comms.stage);
  nccl.destroy(comms.dp);
  nccl.destroy(comms.pp);
  nccl.destroy(comms.tp);
  nccl.destroy(comms.world);
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

int nccl_ranks_main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const UsageError& error) {
    std::fprintf(stderr, "nccl_ranks: %s\n", error.message.c_str());
    return 2;
  } catch (const NcclFailed& error) {
    std::fprintf(stderr, "nccl_ranks: rank %s: %s\n", std::getenv("RANK") ? std::getenv("RANK") : "?",
                 error.message.c_str());
    return 1;
  }
}

}  // namespace pipescope::test_programs
