#include "synthetic_run.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "pipescope/trace/trace_writer.h"

namespace pipescope::synthetic {
namespace {

using namespace trace;  // NOLINT(google-build-using-namespace): the record types

constexpr int64_t kRunStartNs = 1'000'000'000;
constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kCommStream = 13;
constexpr uint32_t kHostThread = 4242;
constexpr int64_t kHangSeenNs = 10'000'000'000;  // how long a blocked rank's calls were seen running
// With memory_pool, what NCCL and cuBLAS take with cudaMalloc beside the pool's tensors.
constexpr uint64_t kWorkspaceBytes = 1ull << 30;

uint64_t comm_id_of(const char* what, int a, int b) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char* p = what; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ULL;
  h = (h ^ static_cast<uint64_t>(a + 1)) * 0x100000001b3ULL;
  h = (h ^ static_cast<uint64_t>(b + 1)) * 0x100000001b3ULL;
  return h;
}

// One pipeline operation of a stage in a step, relative to the step's start.
struct Op {
  bool forward;
  int microbatch;
  int64_t wait_from;  // when the stage started waiting for its input (== start: no wait)
  int64_t start, end;
};

// 1F1B on one pipeline chain: per stage, its operations in order with their times.
// `slow_stage` (if >= 0) computes `slow_factor` times longer than the others.
std::vector<std::vector<Op>> one_f_one_b(const SyntheticRunSpec& s, const std::vector<int64_t>& forward_ns,
                                         const std::vector<int64_t>& backward_ns, int slow_stage = -1,
                                         double slow_factor = 1.0) {
  const int p = s.pp, m = s.microbatches;
  std::vector<std::vector<Op>> order(static_cast<size_t>(p));
  for (int st = 0; st < p; ++st) {
    const int warm = std::min(p - st - 1, m);
    auto& ops = order[static_cast<size_t>(st)];
    for (int i = 0; i < warm; ++i) ops.push_back({true, i, 0, -1, -1});
    for (int i = 0; i < m - warm; ++i) {
      ops.push_back({true, warm + i, 0, -1, -1});
      ops.push_back({false, i, 0, -1, -1});
    }
    for (int i = m - warm; i < m; ++i) ops.push_back({false, i, 0, -1, -1});
  }
  std::vector<std::vector<int64_t>> f_end(static_cast<size_t>(p),
                                          std::vector<int64_t>(static_cast<size_t>(m), -1));
  auto b_end = f_end;
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(p), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < p; ++st) {
      auto& ops = order[static_cast<size_t>(st)];
      while (next[static_cast<size_t>(st)] < ops.size()) {
        Op& op = ops[next[static_cast<size_t>(st)]];
        int64_t ready = 0;
        if (op.forward && st > 0) {
          const int64_t dep = f_end[static_cast<size_t>(st - 1)][static_cast<size_t>(op.microbatch)];
          if (dep < 0) break;
          ready = dep;
        }
        if (!op.forward && st < p - 1) {
          const int64_t dep = b_end[static_cast<size_t>(st + 1)][static_cast<size_t>(op.microbatch)];
          if (dep < 0) break;
          ready = dep;
        }
        // A transfer completes once both sides are there: send and recv kernels end together.
        op.wait_from = free_at[static_cast<size_t>(st)];
        op.start = ready > 0 ? std::max(op.wait_from, ready) + s.p2p_transfer_ns : op.wait_from;
        const double factor = st == slow_stage ? slow_factor : 1.0;
        const int64_t compute_ns = (op.forward ? forward_ns : backward_ns)[static_cast<size_t>(st)];
        op.end = op.start + static_cast<int64_t>(factor * static_cast<double>(compute_ns));
        free_at[static_cast<size_t>(st)] = op.end;
        (op.forward ? f_end : b_end)[static_cast<size_t>(st)][static_cast<size_t>(op.microbatch)] = op.end;
        ++next[static_cast<size_t>(st)];
        progress = true;
      }
    }
  }
  return order;
}

struct CommView {
  uint64_t id;
  int32_t rank, size;
  bool split;
};

struct RankComms {
  CommView world, tp, pp, dp;  // pp.size == 1: none. ZeRO: tp = shard group, dp = replica group
};

// Records of one rank, produced step by step and handed to its writer: host records in time
// order first, then the step's GPU records, the way CUPTI buffers arrive after the calls.
class RankWriter {
 public:
  RankWriter(TraceWriter& writer, ThreadBuffer& out, int64_t offset_ns, const SyntheticRunSpec& spec)
      : out_(out), offset_(offset_ns) {
    names_.gemm =
        writer.intern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1");
    names_.attention = writer.intern("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>");
    names_.elementwise =
        writer.intern("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>");
    names_.norm = writer.intern("void layer_norm_kernel<float>");
    names_.allreduce = writer.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
    names_.allgather = writer.intern("ncclDevKernel_AllGather_RING_LL");
    names_.reducescatter = writer.intern("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL");
    names_.sendrecv = writer.intern("ncclDevKernel_SendRecv");
    names_.step = writer.intern(spec.step_range);
    names_.forward = writer.intern(spec.forward_range);
    names_.backward = writer.intern(spec.backward_range);
  }

  int64_t local(int64_t true_ns) const { return true_ns + offset_; }

  template <class R>
  void host(int64_t at_true_ns, const R& record) {
    host_.push_back({at_true_ns, serialize(record)});
  }
  template <class R>
  void gpu(const R& record) {
    gpu_.push_back(serialize(record));
  }

  void nvtx(NvtxEvent event, int64_t at, uint32_t name) {
    auto r = make_record<NvtxRecord>();
    r.event = static_cast<uint8_t>(event);
    r.timestamp_ns = static_cast<uint64_t>(local(at));
    r.name_id = event == NvtxEvent::kPush ? name : 0;
    r.thread_id = kHostThread;
    host(at, r);
  }
  void range(int64_t start, int64_t end, uint32_t name) {
    nvtx(NvtxEvent::kPush, start, name);
    nvtx(NvtxEvent::kPop, end, 0);
  }

  void kernel(int64_t start, int64_t end, uint32_t stream, uint32_t name, uint32_t correlation) {
    auto k = make_record<KernelRecord>();
    k.start_ns = static_cast<uint64_t>(local(start));
    k.end_ns = static_cast<uint64_t>(local(end));
    k.stream = stream;
    k.correlation_id = correlation;
    k.name_id = name;
    k.grid_x = 132;
    k.grid_y = k.grid_z = 1;
    k.block_x = 256;
    k.block_y = k.block_z = 1;
    k.registers_per_thread = 128;
    gpu(k);
  }

  // Compute kernels tiling [start, end).
  void compute(int64_t start, int64_t end, int pieces, double gemm_share, double attention_share) {
    const uint32_t cycle[] = {names_.gemm, names_.attention, names_.gemm, names_.elementwise, names_.norm};
    const int64_t each = std::max<int64_t>(1, (end - start) / pieces);
    for (int i = 0; i < pieces; ++i) {
      const int64_t a = start + i * each, b = i == pieces - 1 ? end : a + each;
      if (gemm_share <= 0 && attention_share <= 0) {
        kernel(a, b, kComputeStream, cycle[i % 5], ++correlation_);
        continue;
      }
      const int64_t g = a + std::llround(static_cast<double>(b - a) * gemm_share);
      const int64_t t = g + std::llround(static_cast<double>(b - a) * attention_share);
      if (g > a) kernel(a, g, kComputeStream, names_.gemm, ++correlation_);
      if (t > g) kernel(g, t, kComputeStream, names_.attention, ++correlation_);
      if (b > t) kernel(t, b, kComputeStream, names_.elementwise, ++correlation_);
    }
  }

  // An NCCL call at host time [enter, exit) and, unless `kernel_end` < 0, its kernel.
  void nccl(const CommView& comm, NcclOpType op, uint64_t sequence, int32_t peer, uint64_t bytes,
            int64_t enter, int64_t exit, int64_t kernel_start, int64_t kernel_end, uint32_t kernel_name,
            bool with_gpu) {
    auto r = make_record<NcclOpRecord>();
    r.comm_id = comm.id;
    r.sequence = sequence;
    r.count = bytes / 2;
    r.bytes = bytes;
    r.stream = 0x5000;
    r.host_enter_ns = static_cast<uint64_t>(local(enter));
    r.host_exit_ns = static_cast<uint64_t>(local(exit));
    r.external_correlation_id = ++external_;
    r.peer = peer;
    r.thread_id = kHostThread;
    r.op = static_cast<uint8_t>(op);
    r.datatype = 9;  // ncclBfloat16
    r.reduce_op = op == NcclOpType::kAllReduce || op == NcclOpType::kReduceScatter ? 0 : 0xFF;
    host(enter, r);
    if (!with_gpu) return;
    const uint32_t correlation = ++correlation_;
    auto link = make_record<ExternalCorrelationRecord>();
    link.external_kind = static_cast<uint8_t>(ExternalCorrelationKind::kNccl);
    link.correlation_id = correlation;
    link.external_id = r.external_correlation_id;
    gpu(link);
    if (kernel_end >= 0) kernel(kernel_start, kernel_end, kCommStream, kernel_name, correlation);
  }

  // A call that never returned, as the flight recorder writes it at each flush until `seen`.
  void nccl_in_flight(const CommView& comm, NcclOpType op, uint64_t sequence, uint64_t bytes, int64_t enter,
                      int64_t seen, int32_t global_rank) {
    auto r = make_record<NcclCallRecord>();
    r.call_kind = static_cast<uint8_t>(NcclCallKind::kOperation);
    r.what = static_cast<uint8_t>(op);
    r.state = static_cast<uint8_t>(NcclCallState::kInFlight);
    r.comm_id = comm.id;
    r.sequence = sequence;
    r.bytes = bytes;
    r.enter_ns = static_cast<uint64_t>(local(enter));
    r.call_serial = static_cast<uint32_t>(++calls_);
    r.thread_id = kHostThread;
    r.peer = kNoPeer;
    r.rank = comm.rank;
    r.size = comm.size;
    r.global_rank = global_rank;
    r.datatype = 9;
    r.reduce_op = 0;
    for (int64_t at = enter + 1'000'000'000; at <= seen; at += 1'000'000'000) {  // one flush a second
      r.at_ns = static_cast<uint64_t>(local(at));
      host(at, r);
    }
  }

  void ending(const SyntheticRunSpec::RankEnding& e, int64_t at) {
    if (e.nccl_error != 0) {
      auto r = make_record<NcclCallRecord>();
      r.call_kind = static_cast<uint8_t>(NcclCallKind::kOperation);
      r.what = static_cast<uint8_t>(NcclOpType::kAllReduce);
      r.state = static_cast<uint8_t>(NcclCallState::kReturned);
      r.call_serial = static_cast<uint32_t>(++calls_);
      r.thread_id = kHostThread;
      r.enter_ns = static_cast<uint64_t>(local(at - 2'000'000));
      r.at_ns = static_cast<uint64_t>(local(at - 1'000'000));
      r.result = e.nccl_error;
      host(at - 1'000'000, r);
    }
    auto notice = [&](NoticeCode code, uint64_t count) {
      auto n = make_record<NoticeRecord>();
      n.code = static_cast<uint16_t>(code);
      n.timestamp_ns = static_cast<uint64_t>(local(at));
      n.count = count;
      host(at, n);
    };
    if (e.signal != 0) notice(NoticeCode::kProcessSignal, static_cast<uint64_t>(e.signal));
    if (e.exit_status >= 0) notice(NoticeCode::kProcessExit, static_cast<uint64_t>(e.exit_status));
  }

  void memory(int64_t at, MemoryOperation op, uint64_t address, uint64_t bytes, bool from_pool = false) {
    auto m = make_record<MemoryRecord>();
    m.flags = from_pool ? kMemoryFlagFromPool : 0;
    m.timestamp_ns = static_cast<uint64_t>(local(at));
    m.address = address;
    m.bytes = bytes;
    m.operation = static_cast<uint8_t>(op);
    m.memory_kind = static_cast<uint8_t>(MemoryKind::kDevice);
    gpu(m);
  }

  void comm_record(const CommView& c, uint64_t parent, int32_t global_rank, int64_t at) {
    auto r = make_record<NcclCommRecord>();
    r.event = static_cast<uint8_t>(c.split ? NcclCommEvent::kSplit : NcclCommEvent::kInit);
    r.start_ns = static_cast<uint64_t>(local(at));
    r.end_ns = static_cast<uint64_t>(local(at + 1000));
    r.comm_id = c.id;
    r.parent_comm_id = c.split ? parent : 0;
    r.comm_handle = c.id | 1;
    r.rank = c.rank;
    r.size = c.size;
    r.global_rank = global_rank;
    r.color = c.split ? 0 : -1;
    host(at, r);
  }

  // Writes what was produced: host records sorted by time, then the GPU records.
  void flush_step(uint64_t& records, uint64_t& bytes) {
    std::stable_sort(host_.begin(), host_.end(), [](const Timed& a, const Timed& b) { return a.at < b.at; });
    for (const Timed& t : host_) append(t.bytes, records, bytes);
    for (const Bytes& g : gpu_) append(g, records, bytes);
    host_.clear();
    gpu_.clear();
  }

  struct Names {
    uint32_t gemm, attention, elementwise, norm, allreduce, allgather, reducescatter, sendrecv, step, forward,
        backward;
  };
  const Names& names() const { return names_; }

 private:
  struct Bytes {
    std::array<std::byte, 96> data;
    uint16_t size;
  };
  struct Timed {
    int64_t at;
    Bytes bytes;
  };
  template <class R>
  static Bytes serialize(const R& record) {
    static_assert(sizeof(R) <= 96);
    Bytes b{};
    std::memcpy(b.data.data(), &record, sizeof(R));
    b.size = sizeof(R);
    return b;
  }
  void append(const Bytes& b, uint64_t& records, uint64_t& bytes) {
    out_.append_bytes(b.data.data(), b.size);
    ++records;
    bytes += b.size;
  }

  ThreadBuffer& out_;
  int64_t offset_;
  Names names_{};
  uint32_t correlation_ = 0;
  uint64_t external_ = 0;
  uint64_t calls_ = 0;
  std::vector<Timed> host_;
  std::vector<Bytes> gpu_;
};

// A process killed leaves no end chunk (a file's last 56 bytes).
Status cut_end_chunk(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) std::filesystem::resize_file(path, size - sizeof(ChunkHeader) - sizeof(EndPayload), ec);
  if (ec) return Error("synthetic run: cannot cut the end chunk off " + path);
  return Status::Ok();
}

}  // namespace

Expected<SyntheticRunTruth> write_synthetic_run(const SyntheticRunSpec& spec, const std::string& dir) {
  const bool zero = spec.zero_shard > 1;
  if (zero && (spec.tp != 1 || spec.pp != 1))
    return Error("synthetic run: ZeRO shard groups need tp = pp = 1");
  if (spec.tp < 1 || spec.pp < 1 || spec.dp < 1 || spec.microbatches < 1 || spec.steps < 1)
    return Error("synthetic run: sizes must be >= 1");
  if (spec.setup_gpu_ns < 0 || spec.setup_gpu_ns >= 990'000'000)
    return Error("synthetic run: setup_gpu_ns must be in [0, 0.99 s)");
  const int world = spec.tp * spec.pp * spec.dp;
  if (zero && world % spec.zero_shard != 0) return Error("synthetic run: zero_shard must divide the world");

  SyntheticRunTruth truth;
  truth.world = world;
  truth.clock_offset_ns = spec.clock_offset_ns;
  if (truth.clock_offset_ns.empty()) {
    std::mt19937_64 rng(spec.seed);
    std::uniform_int_distribution<int64_t> offset(-5'000'000, 5'000'000);
    for (int r = 0; r < world; ++r) truth.clock_offset_ns.push_back(offset(rng));
  }
  if (static_cast<int>(truth.clock_offset_ns.size()) != world)
    return Error("synthetic run: one clock offset per rank");

  // ZeRO: a forward / backward range also holds its parameter all-gathers (and the backward its
  // reduce-scatter), so the pipeline arithmetic runs on the ranges' lengths.
  const int64_t gather_ns = spec.allreduce_ns / 4;
  const int stages = zero ? 1 : spec.pp;
  auto per_stage = [&](const auto& values, auto all,
                       const char* what) -> Expected<std::vector<decltype(all)>> {
    if (!values.empty() && static_cast<int>(values.size()) != stages)
      return Error(std::string("synthetic run: one ") + what + " per stage");
    std::vector<decltype(all)> out(static_cast<size_t>(stages), all);
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return out;
  };
  auto forward_compute = per_stage(spec.stage_forward_ns, spec.forward_ns, "forward time");
  auto backward_compute = per_stage(spec.stage_backward_ns, spec.backward_ns, "backward time");
  auto static_bytes = per_stage(spec.stage_static_bytes, spec.static_bytes, "static size");
  if (!forward_compute.ok()) return forward_compute.error();
  if (!backward_compute.ok()) return backward_compute.error();
  if (!static_bytes.ok()) return static_bytes.error();
  std::vector<int64_t> forward_range = *forward_compute, backward_range = *backward_compute;
  for (int st = 0; st < stages; ++st) {
    forward_range[static_cast<size_t>(st)] += zero ? 2 * gather_ns : 0;
    backward_range[static_cast<size_t>(st)] += zero ? 3 * gather_ns : 0;
  }
  SyntheticRunSpec chain = spec;
  if (zero) chain.pp = 1;
  const auto schedule = one_f_one_b(chain, forward_range, backward_range);
  auto coords = [&](int r) {
    const int tp_rank = zero ? 0 : r % spec.tp;
    const int dp_rank = zero ? r : (r / spec.tp) % spec.dp;
    const int stage = zero ? 0 : r / (spec.tp * spec.dp);
    return std::array<int, 3>{stage, tp_rank, dp_rank};
  };
  // The slow rank's pipeline runs its own schedule: the slow stage holds up its neighbours.
  const bool slow = spec.slow_rank >= 0 && spec.slow_rank < world && !zero;
  const auto slowed =
      slow ? one_f_one_b(chain, forward_range, backward_range, coords(spec.slow_rank)[0], spec.slow_factor)
           : schedule;
  auto schedule_of = [&](int r) -> const std::vector<std::vector<Op>>& {
    const bool same_chain =
        slow && coords(r)[1] == coords(spec.slow_rank)[1] && coords(r)[2] == coords(spec.slow_rank)[2];
    return same_chain ? slowed : schedule;
  };
  // When each stage's forward / backward of a micro-batch starts: a send's transfer ends there.
  auto start_of = [&](int r, int stage, bool forward, int microbatch) {
    for (const Op& op : schedule_of(r)[static_cast<size_t>(stage)])
      if (op.forward == forward && op.microbatch == microbatch) return op.start;
    return int64_t{0};
  };
  for (int r = 0; r < world; ++r) {
    const auto c = coords(r);
    truth.stage.push_back(c[0]);
    truth.tp_rank.push_back(c[1]);
    truth.dp_rank.push_back(c[2]);
  }

  // Step timing on the true clock: the reduction ends when its last member arrived.
  const int completed_steps = spec.hang_step >= 0 ? std::min(spec.hang_step, spec.steps) : spec.steps;
  std::vector<int64_t> step_start{kRunStartNs};
  std::vector<std::vector<int64_t>> arrival(static_cast<size_t>(spec.steps),
                                            std::vector<int64_t>(static_cast<size_t>(world)));
  std::vector<std::map<uint64_t, int64_t>> reduction_end(static_cast<size_t>(spec.steps));
  auto replica_of = [&](int r) -> uint64_t {
    const auto c = coords(r);
    return zero ? comm_id_of("replica", r % spec.zero_shard, 0) : comm_id_of("dp", c[0], c[1]);
  };
  for (int s = 0; s < spec.steps; ++s) {
    int64_t step_end = 0;
    for (int r = 0; r < world; ++r) {
      const auto& ops = schedule_of(r)[static_cast<size_t>(coords(r)[0])];
      int64_t a = step_start.back() + ops.back().end;
      if (r == spec.straggler_rank) {
        const auto& by_step = spec.straggler_delay_by_step;
        a += by_step.empty()
                 ? spec.straggler_delay_ns
                 : (static_cast<size_t>(s) < by_step.size() ? by_step[static_cast<size_t>(s)] : 0);
      }
      arrival[static_cast<size_t>(s)][static_cast<size_t>(r)] = a;
      int64_t& end = reduction_end[static_cast<size_t>(s)][replica_of(r)];
      end = std::max(end, a + spec.allreduce_ns);
    }
    for (const auto& [id, end] : reduction_end[static_cast<size_t>(s)]) step_end = std::max(step_end, end);
    step_end += spec.optimizer_ns;
    if (s < completed_steps) truth.step_ns.push_back(step_end - step_start.back());
    step_start.push_back(step_end);
  }

  // Truth: bubble per stage from the schedule; memory per rank by replaying its allocations.
  for (int st = 0; st < stages; ++st) {
    const auto& ops = schedule[static_cast<size_t>(st)];
    const int64_t span = ops.back().end - ops.front().start;
    truth.bubble_fraction.push_back(
        1.0 - static_cast<double>(spec.microbatches * (forward_range[static_cast<size_t>(st)] +
                                                       backward_range[static_cast<size_t>(st)])) /
                  static_cast<double>(span));
    int64_t first_backward = span, last_forward_end = 0;
    for (const Op& op : ops) {
      if (!op.forward) first_backward = std::min(first_backward, op.start);
      if (op.forward) last_forward_end = std::max(last_forward_end, op.end);
    }
    int64_t waited = 0;  // a receive starts at wait_from; its data is sent transfer time before start
    for (const Op& op : ops)
      if ((op.forward && st > 0) || (!op.forward && st < stages - 1))
        waited += op.start - spec.p2p_transfer_ns - op.wait_from;
    truth.p2p_wait_ns.push_back(spec.pipeline_p2p && !zero ? waited : 0);
    truth.warmup_ns.push_back(first_backward - ops.front().start);
    truth.cooldown_ns.push_back(ops.back().end - last_forward_end);
    int live = 0, most = 0;
    for (const Op& op : ops) {
      live += op.forward ? 1 : -1;
      most = std::max(most, live);
    }
    truth.peak_activation_bytes.push_back(spec.memory ? static_cast<uint64_t>(most) * spec.activation_bytes
                                                      : 0);
  }
  for (int r = 0; r < world; ++r)
    truth.peak_memory_bytes.push_back(spec.memory
                                          ? (*static_bytes)[static_cast<size_t>(coords(r)[0])] +
                                                truth.peak_activation_bytes[static_cast<size_t>(coords(r)[0])]
                                          : 0);

  for (int r = 0; r < world; ++r) {
    const auto [stage, tp_rank, dp_rank] = coords(r);
    RankComms comms{};
    comms.world = {comm_id_of("world", 0, 0), r, world, false};
    if (zero) {
      comms.tp = {comm_id_of("shard", r / spec.zero_shard, 0), r % spec.zero_shard, spec.zero_shard, true};
      comms.dp = {replica_of(r), r / spec.zero_shard, world / spec.zero_shard, true};
      comms.pp = {0, 0, 1, true};
    } else {
      comms.tp = {comm_id_of("tp", stage, dp_rank), tp_rank, spec.tp, true};
      comms.dp = {replica_of(r), dp_rank, spec.dp, true};
      comms.pp = {comm_id_of("pp", tp_rank, dp_rank), stage, spec.pp, true};
    }
    const uint32_t pid = 10000 + static_cast<uint32_t>(r);
    WriterOptions options;
    options.host = "node" + std::to_string(r / 8);
    options.pid = pid;
    options.compress = spec.compress;
    options.max_chunk_bytes = size_t{64} << 10;  // a chunk per flush of a busy rank, as the profiler writes
    const std::string path = dir + "/rank-" + std::to_string(r) + "." + std::to_string(pid) + ".pst";
    auto writer = TraceWriter::create(path, options);
    if (!writer) return writer.error();
    ThreadBuffer* buffer = (*writer)->register_thread(FullBufferPolicy::kDrainInline);
    if (buffer == nullptr) return Error("synthetic run: no writer buffer");
    ProcessInfo info;
    info.rank = r;
    info.world_size = world;
    info.local_rank = r % 8;
    info.run_id = spec.run_id;
    info.restart_attempt = spec.attempt;
    info.launcher = "torchrun";
    if (Status st = (*writer)->write_process_info(info); !st) return st.error();

    const bool silent =
        std::find(spec.silent_ranks.begin(), spec.silent_ranks.end(), r) != spec.silent_ranks.end();
    if (silent) {
      if (Status st = (*writer)->close(); !st) return st.error();
      if (Status st = cut_end_chunk(path); !st) return st.error();
      continue;
    }
    RankWriter w(**writer, *buffer, truth.clock_offset_ns[static_cast<size_t>(r)], spec);
    const auto& n = w.names();
    const int64_t t0 = kRunStartNs - 5'000'000;
    w.comm_record(comms.world, 0, r, t0);
    if (comms.tp.size > 1) w.comm_record(comms.tp, comms.world.id, r, t0 + 10'000);
    if (comms.pp.size > 1 && spec.pipeline_p2p) w.comm_record(comms.pp, comms.world.id, r, t0 + 20'000);
    if (spec.stage_ranges) {
      auto stage_name = (*writer)->intern("stage=" + std::to_string(stage));
      w.range(t0 + 40'000, t0 + 50'000, stage_name);
    }
    if (comms.dp.size > 1) w.comm_record(comms.dp, comms.world.id, r, t0 + 30'000);
    if (spec.gpu && spec.setup_gpu_ns > 0) w.compute(t0 - spec.setup_gpu_ns, t0, 64, 0, 0);
    if (spec.memory) {
      w.memory(t0 + 100'000, MemoryOperation::kAllocate, 0x10000000,
               (*static_bytes)[static_cast<size_t>(stage)], spec.memory_pool);
      if (spec.memory_pool) w.memory(t0 + 90'000, MemoryOperation::kAllocate, 0x8000000, kWorkspaceBytes);
    }
    uint64_t seq_tp = 0, seq_dp = 0, seq_send_next = 0, seq_recv_prev = 0, seq_send_prev = 0,
             seq_recv_next = 0;
    const bool last_stage = stage == stages - 1;
    const auto& ops = schedule_of(r)[static_cast<size_t>(stage)];
    bool stopped = false;

    for (int s = 0; s < spec.steps && !stopped; ++s) {
      const int64_t base = step_start[static_cast<size_t>(s)];
      const bool hang_here = s == spec.hang_step;
      if (spec.nvtx) w.nvtx(NvtxEvent::kPush, base, n.step);
      for (const Op& op : ops) {
        const int64_t start = base + op.start, end = base + op.end;
        const uint64_t act = 0x20000000 + static_cast<uint64_t>(op.microbatch) * spec.activation_bytes;
        const bool p2p = !zero && spec.pipeline_p2p;
        if (p2p && op.forward && stage > 0)  // receive the activation from the previous stage
          w.nccl(comms.pp, NcclOpType::kRecv, seq_recv_prev++, stage - 1, 1 << 20, base + op.wait_from, start,
                 base + op.wait_from, start, n.sendrecv, spec.gpu);
        if (p2p && !op.forward && !last_stage)  // the gradient from the next stage
          w.nccl(comms.pp, NcclOpType::kRecv, seq_recv_next++, stage + 1, 1 << 20, base + op.wait_from, start,
                 base + op.wait_from, start, n.sendrecv, spec.gpu);
        if (spec.nvtx) w.range(start, end, op.forward ? n.forward : n.backward);
        int64_t compute_from = start;
        if (zero) {  // parameters gathered for this micro-batch
          for (int g = 0; g < 2; ++g) {
            const int64_t a = start + g * gather_ns;
            w.nccl(comms.tp, NcclOpType::kAllGather, seq_tp++, kNoPeer, 64 << 20, a, a + gather_ns, a,
                   a + gather_ns, n.allgather, spec.gpu);
          }
          compute_from = start + 2 * gather_ns;
        }
        const int64_t compute_to = zero && !op.forward ? end - gather_ns : end;
        if (spec.gpu)
          w.compute(compute_from, compute_to,
                    op.forward ? spec.kernels_per_microbatch : 2 * spec.kernels_per_microbatch,
                    spec.gemm_share, spec.attention_share);
        if (zero && !op.forward)
          w.nccl(comms.tp, NcclOpType::kReduceScatter, seq_tp++, kNoPeer, 16 << 20, compute_to, end,
                 compute_to, end, n.reducescatter, spec.gpu);
        if (!zero && comms.tp.size > 1)  // the tensor-parallel all-reduce, hidden under the compute
          w.nccl(comms.tp, NcclOpType::kAllReduce, seq_tp++, kNoPeer, 32 << 20, end - 110'000, end - 100'000,
                 end - 100'000, end, n.allreduce, spec.gpu);
        if (spec.memory) {
          if (op.forward)
            w.memory(start, MemoryOperation::kAllocate, act, spec.activation_bytes, spec.memory_pool);
          else
            w.memory(end, MemoryOperation::kRelease, act, spec.activation_bytes, spec.memory_pool);
        }
        if (p2p && op.forward && !last_stage)
          w.nccl(comms.pp, NcclOpType::kSend, seq_send_next++, stage + 1, 1 << 20, end, end + 10'000, end,
                 base + start_of(r, stage + 1, true, op.microbatch), n.sendrecv, spec.gpu);
        if (p2p && !op.forward && stage > 0)
          w.nccl(comms.pp, NcclOpType::kSend, seq_send_prev++, stage - 1, 1 << 20, end, end + 10'000, end,
                 base + start_of(r, stage - 1, false, op.microbatch), n.sendrecv, spec.gpu);
      }
      if (hang_here && r == spec.hang_rank) {
        if (spec.hang_inside_call)
          w.nccl_in_flight(CommView{0, 0, 1, false}, NcclOpType::kAllReduce, kNcclUnknownSequence, 4096,
                           arrival[static_cast<size_t>(s)][static_cast<size_t>(r)] - 20'000,
                           arrival[static_cast<size_t>(s)][static_cast<size_t>(r)] + kHangSeenNs, r);
        stopped = true;  // blocks before the reduction: nothing more from this rank
        break;
      }
      const int64_t a = arrival[static_cast<size_t>(s)][static_cast<size_t>(r)];
      const int64_t red_end = reduction_end[static_cast<size_t>(s)][comms.dp.id];
      if (comms.dp.size > 1 && hang_here && spec.hang_blocking)
        w.nccl_in_flight(comms.dp, NcclOpType::kAllReduce, seq_dp++, 256 << 20, a - 10'000, a + kHangSeenNs,
                         r);
      else if (comms.dp.size > 1)
        w.nccl(comms.dp, NcclOpType::kAllReduce, seq_dp++, kNoPeer, 256 << 20, a - 10'000, a, a,
               hang_here ? -1 : red_end, n.allreduce, spec.gpu);
      if (hang_here) {
        stopped = true;  // its reduction never ends
        break;
      }
      if (spec.nvtx) w.nvtx(NvtxEvent::kPop, step_start[static_cast<size_t>(s) + 1], 0);
      w.flush_step(truth.records, truth.record_bytes);
    }
    for (const SyntheticRunSpec::RankEnding& e : spec.endings)
      if (e.rank == r) w.ending(e, step_start[static_cast<size_t>(completed_steps)] + e.delay_ns);
    w.flush_step(truth.records, truth.record_bytes);
    if (Status st = (*writer)->close(); !st) return st.error();
    if (spec.hang_step >= 0)
      if (Status st = cut_end_chunk(path); !st) return st.error();  // killed at its NCCL timeout
  }
  return truth;
}

}  // namespace pipescope::synthetic
