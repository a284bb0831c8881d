#include "pipescope/analysis/kineto_import.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kineto_collectives.h"
#include "kineto_json.h"
#include "kineto_text.h"
#include "pipescope/analysis/kernel_category.h"
#include "pipescope/trace/trace_writer.h"
#include "record_spool.h"

namespace pipescope::analysis {
namespace {

// The first `limit` bytes of the file, gunzipped when it is gzip (zlib reads plain files
// through too); nothing when it cannot be read.
std::optional<std::string> read_head(const std::string& path, size_t limit) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return std::nullopt;
  std::string text(limit, '\0');
  const int n = gzread(file, text.data(), static_cast<unsigned>(limit));
  gzclose(file);
  if (n < 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  return text;
}

// Kineto times are microseconds (possibly fractional) on the wall clock.
uint64_t ns_of(double us) { return us <= 0 ? 0 : static_cast<uint64_t>(std::llround(us * 1000.0)); }

// The latest time ns_of() takes: 2^63 ns after the epoch (in 2262). Kineto's are about 1.7e15 us.
constexpr double kLatestUs = 9.2e15;

// A collective (or send / receive) call, and the events that enclose one on its thread.
struct NcclCall {
  trace::NcclOpType op;
  double start_us, end_us;
  uint32_t thread;
  uint64_t external_id;
  kineto::CollectiveFacts facts;
};

struct CommEvent {
  double start_us, end_us;
  uint32_t thread;
  bool param_comms;  // record_param_comms (else a c10d:: operator)
  kineto::CollectiveFacts facts;
};

// What the events around a call add to its own facts: record_param_comms states counts, dtype
// and group; the c10d:: operator's dims give output and input; the call's own first input last.
kineto::CollectiveFacts enclosing_facts(const NcclCall& call, const std::vector<CommEvent>& sorted_events) {
  const auto after =
      std::upper_bound(sorted_events.begin(), sorted_events.end(), std::pair(call.thread, call.start_us),
                       [](const std::pair<uint32_t, double>& key, const CommEvent& e) {
                         return key.first != e.thread ? key.first < e.thread : key.second < e.start_us;
                       });
  const CommEvent* param = nullptr;
  const CommEvent* c10d = nullptr;
  // They nest a few deep at most: look back a handful of events on the same thread.
  int looked = 0;
  for (auto it = after; it != sorted_events.begin() && looked < 8; ++looked) {
    --it;
    if (it->thread != call.thread) break;
    if (it->end_us < call.end_us) continue;
    const CommEvent*& slot = it->param_comms ? param : c10d;
    if (slot == nullptr) slot = &*it;
  }
  kineto::CollectiveFacts facts = param != nullptr ? param->facts : kineto::CollectiveFacts{};
  if (c10d != nullptr) facts = kineto::merged(std::move(facts), c10d->facts);
  return kineto::merged(std::move(facts), call.facts);
}

std::optional<trace::NcclOpType> nccl_op_of(std::string_view text) {
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  using T = trace::NcclOpType;
  if (name.find("reduce_scatter") != std::string::npos || name.find("reducescatter") != std::string::npos)
    return T::kReduceScatter;
  if (name.find("all_gather") != std::string::npos || name.find("allgather") != std::string::npos)
    return T::kAllGather;
  if (name.find("all_reduce") != std::string::npos || name.find("allreduce") != std::string::npos)
    return T::kAllReduce;
  if (name.find("all_to_all") != std::string::npos || name.find("alltoall") != std::string::npos)
    return T::kAllToAll;
  if (name.find("broadcast") != std::string::npos) return T::kBroadcast;
  if (name.find("reduce") != std::string::npos) return T::kReduce;
  if (name.find("send") != std::string::npos) return T::kSend;
  if (name.find("recv") != std::string::npos) return T::kRecv;
  if (name.find("gather") != std::string::npos) return T::kGather;
  if (name.find("scatter") != std::string::npos) return T::kScatter;
  return std::nullopt;
}

uint32_t as_u32(const std::optional<double>& v) { return v ? static_cast<uint32_t>(*v) : 0; }

// The fields a memcpy and a memset event share.
template <class R>
R gpu_activity(const kineto::Event& e) {
  auto r = trace::make_record<R>();
  r.device = as_u32(e.args.device);
  r.start_ns = ns_of(*e.ts_us);
  r.end_ns = ns_of(*e.ts_us + e.dur_us);
  r.stream = as_u32(e.args.stream);
  r.correlation_id = e.args.correlation;
  r.bytes = e.args.bytes ? static_cast<uint64_t>(std::max(0.0, *e.args.bytes)) : 0;
  return r;
}

trace::CopyKind copy_kind_of(std::string_view name) {
  if (name.find("HtoD") != std::string::npos) return trace::CopyKind::kHostToDevice;
  if (name.find("DtoH") != std::string::npos) return trace::CopyKind::kDeviceToHost;
  if (name.find("DtoD") != std::string::npos) return trace::CopyKind::kDeviceToDevice;
  if (name.find("PtoP") != std::string::npos) return trace::CopyKind::kPeerToPeer;
  if (name.find("HtoH") != std::string::npos) return trace::CopyKind::kHostToHost;
  return trace::CopyKind::kUnknown;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// What a worker keeps from one document to its next: the pages its gzip'ed documents inflate
// into, and those of the records a conversion holds until the end.
struct ConvertMemory {
  kineto::InflateMemory inflate;
  RecordSpool api_calls, gpu_records;
};

// Turns the reader's events into a pipescope trace: GPU activity and memory as they come; NCCL
// calls, the events around them and annotations once all are read (they need sorting).
class Converter final : public kineto::DocumentHandler {
 public:
  Converter(const std::string& origin, const std::string& pst_path, ConvertMemory& memory)
      : origin_(origin), pst_path_(pst_path), api_calls_(memory.api_calls), gpu_records_(memory.gpu_records) {
    api_calls_.clear();
    gpu_records_.clear();
  }

  Status on_distributed_info(const kineto::DistributedInfo& dist) override {
    if (!dist.rank) {
      return Error(origin_ +
                   " has no distributedInfo.rank: record it with the PyTorch profiler in a distributed job");
    }
    rank_ = static_cast<int32_t>(*dist.rank);
    world_ = static_cast<int32_t>(dist.world_size.value_or(static_cast<double>(rank_) + 1));
    if (*dist.rank < 0 || *dist.rank > INT32_MAX || world_ <= rank_) {
      return Error(origin_ + ": distributedInfo rank " + std::to_string(*dist.rank) +
                   " does not fit world_size " + std::to_string(world_));
    }

    trace::WriterOptions options;
    options.clock = trace::TraceClock::kRealtime;
    options.host = "kineto";
    options.pid = static_cast<uint32_t>(rank_);
    auto writer = trace::TraceWriter::create(pst_path_, options);
    if (!writer) return writer.error();
    writer_ = std::move(*writer);
    out_ = writer_->register_thread(trace::FullBufferPolicy::kDrainInline);
    if (out_ == nullptr) return Error("cannot write " + pst_path_);
    info_.rank = rank_;
    info_.world_size = world_;
    info_.run_id = "kineto:" + dist.backend + ":" + std::to_string(world_);
    info_.launcher = "kineto";
    return writer_->write_process_info(info_);
  }

  void on_event(const kineto::Event& e) override {
    if (!e.ts_us || *e.ts_us < 0 || !failure_.ok()) return;
    ++timed_events_;
    const double ts = *e.ts_us;
    if (ts + e.dur_us >= kLatestUs) {
      char end[32];
      std::snprintf(end, sizeof(end), "%.6g", ts + e.dur_us);
      failure_ = Error(origin_ + ": event \"" + std::string(e.name.substr(0, 80)) + "\" ends at " + end +
                       " us, past what a trace's clock holds (the year 2262)");
      return;
    }
    const kineto::EventArgs& args = e.args;
    if (e.cat == "kernel") {
      auto k = trace::make_record<trace::KernelRecord>();
      k.device = as_u32(args.device);
      k.start_ns = ns_of(ts);
      k.end_ns = ns_of(ts + e.dur_us);
      k.stream = as_u32(args.stream);
      k.correlation_id = args.correlation;
      k.name_id = name_id(e.name);
      k.grid_x = args.grid[0];
      k.grid_y = static_cast<uint16_t>(args.grid[1]);
      k.grid_z = static_cast<uint16_t>(args.grid[2]);
      k.block_x = static_cast<uint16_t>(args.block[0]);
      k.block_y = static_cast<uint16_t>(args.block[1]);
      k.block_z = static_cast<uint16_t>(args.block[2]);
      k.registers_per_thread = static_cast<uint16_t>(as_u32(args.registers_per_thread));
      k.dynamic_shared_bytes = as_u32(args.shared_memory);
      gpu_records_.append(k);
      if (is_nccl_kernel(e.name)) nccl_kernel_correlations_.insert(k.correlation_id);
    } else if (e.cat == "gpu_memcpy") {
      auto m = gpu_activity<trace::MemcpyRecord>(e);
      m.copy_kind = static_cast<uint8_t>(copy_kind_of(e.name));
      m.peer_device = trace::kUnknownDevice;
      gpu_records_.append(m);
    } else if (e.cat == "gpu_memset") {
      auto m = gpu_activity<trace::MemsetRecord>(e);
      m.memory_kind = static_cast<uint8_t>(trace::MemoryKind::kDevice);
      gpu_records_.append(m);
    } else if (e.cat == "cuda_runtime" || e.cat == "cuda_driver") {
      if (e.name.find("Launch") != std::string_view::npos)
        launches_.push_back(Launch{ts, e.tid, args.correlation});
      // Every call that queues GPU work, as an API record: when each kernel, copy and memset was
      // launched (HTA's figures leave out what was launched in the last step).
      if (args.correlation != 0) {
        auto api = trace::make_record<trace::ApiRecord>();
        api.thread_id = e.tid;
        api.start_ns = ns_of(ts);
        api.end_ns = ns_of(ts + e.dur_us);
        api.correlation_id = args.correlation;
        api.name_id = name_id(e.name);
        api.domain = static_cast<uint8_t>(e.cat == "cuda_runtime" ? trace::ApiDomain::kRuntime
                                                                  : trace::ApiDomain::kDriver);
        api_calls_.append(api);
      }
    } else if (e.cat == "user_annotation") {
      if (e.name.starts_with("nccl:")) {
        if (auto op = nccl_op_of(e.name.substr(5))) {
          calls_.push_back(
              NcclCall{*op, ts, ts + e.dur_us, e.tid, args.external_id, kineto::facts_of_annotation(args)});
        }
      }
      ranges_.push_back(Range{ts, ts + e.dur_us, e.tid, std::string(e.name)});
    } else if (e.cat == "cpu_op" && e.name == "record_param_comms") {
      comm_events_.push_back(CommEvent{ts, ts + e.dur_us, e.tid, true, kineto::facts_of_param_comms(args)});
      if (auto op = nccl_op_of(args.collective_name)) {
        param_calls_.push_back(
            NcclCall{*op, ts, ts + e.dur_us, e.tid, args.external_id, comm_events_.back().facts});
      }
    } else if (e.cat == "cpu_op" && e.name.starts_with("c10d::")) {
      comm_events_.push_back(
          CommEvent{ts, ts + e.dur_us, e.tid, false, kineto::facts_of_c10d(e.name.substr(6), args)});
      if (auto op = nccl_op_of(e.name.substr(6))) {
        c10d_calls_.push_back(
            NcclCall{*op, ts, ts + e.dur_us, e.tid, args.external_id, comm_events_.back().facts});
      }
    } else if (e.ph == "i" && e.name == "[memory]") {
      const double bytes = args.memory_bytes.value_or(0);
      if (args.device_type.value_or(1) != 1 || bytes == 0) return;  // 1: CUDA
      auto m = trace::make_record<trace::MemoryRecord>();
      m.device = as_u32(args.device_id);
      m.timestamp_ns = ns_of(ts);
      m.address = args.address ? static_cast<uint64_t>(*args.address) : 0;
      m.bytes = static_cast<uint64_t>(std::fabs(bytes));
      m.operation = static_cast<uint8_t>(bytes > 0 ? trace::MemoryOperation::kAllocate
                                                   : trace::MemoryOperation::kRelease);
      m.memory_kind = static_cast<uint8_t>(trace::MemoryKind::kDevice);
      m.flags = trace::kMemoryFlagFromPool;
      gpu_records_.append(m);
    }
  }

  // The args of the events mapped below; an event whose category or name is not yet known when
  // its args come has them read.
  bool wants_args(const kineto::Event& e) const override {
    if (e.cat.empty() || e.name.empty()) return true;
    if (e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset") return true;
    if (e.cat == "cuda_runtime" || e.cat == "cuda_driver") return true;  // their correlation
    if (e.cat == "user_annotation") return e.name.starts_with("nccl:");
    if (e.cat == "cpu_op") return e.name == "record_param_comms" || e.name.starts_with("c10d::");
    return e.name == "[memory]";
  }

  // What needed all events: the NCCL calls with their communicators and kernels, the
  // annotations as nested ranges; then the trace is closed.
  Status finish() {
    if (!failure_.ok()) return failure_;
    if (timed_events_ == 0) return Error(origin_ + " holds no timed events");
    write_nccl_calls();
    write_ranges();
    // GPU activity and memory after the step ranges, as a profiler's trace has them: the report
    // learns where each step starts before it sweeps the GPU work past it.
    auto write = [this](const void* record, size_t size) { out_->append_bytes(record, size); };
    api_calls_.for_each(write);
    gpu_records_.for_each(write);
    return writer_->close();
  }

 private:
  struct Launch {
    double ts_us;
    uint32_t thread;
    uint32_t correlation;
  };
  struct Range {
    double start_us, end_us;
    uint32_t thread;
    std::string name;
  };

  uint32_t name_id(std::string_view text) {
    auto it = names_.find(text);
    if (it == names_.end()) it = names_.emplace(std::string(text), writer_->intern(std::string(text))).first;
    return it->second;
  }

  void write_nccl_calls() {
    std::vector<NcclCall>& calls = !calls_.empty()         ? calls_
                                   : !param_calls_.empty() ? param_calls_
                                                           : c10d_calls_;
    std::sort(comm_events_.begin(), comm_events_.end(), [](const CommEvent& a, const CommEvent& b) {
      return a.thread != b.thread ? a.thread < b.thread : a.start_us < b.start_us;
    });
    std::sort(calls.begin(), calls.end(),
              [](const NcclCall& a, const NcclCall& b) { return a.start_us < b.start_us; });
    std::sort(launches_.begin(), launches_.end(),
              [](const Launch& a, const Launch& b) { return a.ts_us < b.ts_us; });

    // Each communicator is announced once, before its first call; calls are numbered per
    // communicator, as the profiler numbers them.
    std::unordered_map<uint64_t, uint64_t> next_sequence;
    uint64_t unnumbered = 0;
    for (const NcclCall& call : calls) {
      const kineto::CollectiveFacts facts = enclosing_facts(call, comm_events_);
      const int32_t group = kineto::group_size_of(call.op, facts, world_);
      const kineto::CommSlot slot = kineto::comm_slot_of(facts, group, info_.run_id, rank_, world_);
      auto [sequence, fresh] = next_sequence.try_emplace(slot.comm_id, 0);
      if (fresh) {
        auto comm = trace::make_record<trace::NcclCommRecord>();
        comm.event = static_cast<uint8_t>(trace::NcclCommEvent::kInit);
        comm.start_ns = comm.end_ns = std::max<uint64_t>(ns_of(call.start_us), 1) - 1;
        comm.comm_id = slot.comm_id;
        comm.comm_handle = next_sequence.size();
        comm.rank = slot.rank;
        comm.size = slot.size;
        comm.global_rank = rank_;
        comm.color = -1;
        out_->append(comm);
      }
      const uint64_t external = call.external_id != 0 ? call.external_id : (uint64_t{1} << 40) + unnumbered++;
      auto op = trace::make_record<trace::NcclOpRecord>();
      op.device = 0;
      op.comm_id = slot.comm_id;
      op.sequence = sequence->second++;
      op.bytes = kineto::recorded_bytes(call.op, facts, slot.size);
      op.host_enter_ns = ns_of(call.start_us);
      op.host_exit_ns = ns_of(call.end_us);
      op.external_correlation_id = external;
      op.peer = trace::kNoPeer;
      op.thread_id = call.thread;
      op.op = static_cast<uint8_t>(call.op);
      op.reduce_op = 0xFF;
      out_->append(op);
      // The NCCL kernel launched inside the call, on the same thread.
      auto first = std::lower_bound(launches_.begin(), launches_.end(), call.start_us,
                                    [](const Launch& l, double t) { return l.ts_us < t; });
      for (auto l = first; l != launches_.end() && l->ts_us <= call.end_us; ++l) {
        if (l->thread != call.thread || !nccl_kernel_correlations_.count(l->correlation)) continue;
        auto link = trace::make_record<trace::ExternalCorrelationRecord>();
        link.external_kind = static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl);
        link.correlation_id = l->correlation;
        link.external_id = external;
        out_->append(link);
      }
    }
  }

  // Annotations as properly nested push/pop per thread.
  void write_ranges() {
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
      return a.thread != b.thread       ? a.thread < b.thread
             : a.start_us != b.start_us ? a.start_us < b.start_us
                                        : a.end_us > b.end_us;
    });
    std::vector<const Range*> open;
    auto pop = [&](const Range& r) {
      auto rec = trace::make_record<trace::NvtxRecord>();
      rec.event = static_cast<uint8_t>(trace::NvtxEvent::kPop);
      rec.timestamp_ns = ns_of(r.end_us);
      rec.thread_id = r.thread;
      out_->append(rec);
    };
    for (const Range& r : ranges_) {
      while (!open.empty() && (open.back()->thread != r.thread || open.back()->end_us <= r.start_us)) {
        pop(*open.back());
        open.pop_back();
      }
      if (!open.empty() && r.end_us > open.back()->end_us) continue;  // overlaps its parent: not nestable
      auto rec = trace::make_record<trace::NvtxRecord>();
      rec.event = static_cast<uint8_t>(trace::NvtxEvent::kPush);
      rec.timestamp_ns = ns_of(r.start_us);
      rec.name_id = name_id(r.name);
      rec.thread_id = r.thread;
      out_->append(rec);
      open.push_back(&r);
    }
    while (!open.empty()) {
      pop(*open.back());
      open.pop_back();
    }
  }

  const std::string& origin_;
  const std::string& pst_path_;
  int32_t rank_ = 0, world_ = 0;
  trace::ProcessInfo info_;
  std::unique_ptr<trace::TraceWriter> writer_;
  trace::ThreadBuffer* out_ = nullptr;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> names_;
  uint64_t timed_events_ = 0;
  Status failure_;  // the first event that cannot be converted: the document is refused

  RecordSpool& api_calls_;    // written before the GPU records
  RecordSpool& gpu_records_;  // and those last (finish)
  std::unordered_set<uint32_t> nccl_kernel_correlations_;
  std::vector<Launch> launches_;
  std::vector<NcclCall> calls_;         // nccl:<op> annotations
  std::vector<NcclCall> param_calls_;   // record_param_comms naming its collective
  std::vector<NcclCall> c10d_calls_;    // c10d:: operators: the last resort
  std::vector<CommEvent> comm_events_;  // record_param_comms and c10d:: operators
  std::vector<Range> ranges_;
};

Status convert(kineto::DocumentText& text, const std::string& origin, const std::string& pst_path,
               ConvertMemory& memory) {
  Converter converter(origin, pst_path, memory);
  if (Status s = kineto::read_document(text, origin, converter); !s) return s;
  return converter.finish();
}

Status convert_file(const std::string& json_path, const std::string& pst_path, ConvertMemory& memory) {
  {
    auto text = kineto::DocumentText::load(json_path, &memory.inflate);
    if (!text) return text.error();
    Status s = convert(*text, json_path, pst_path, memory);
    if (!text->stream_gave_up()) return s;
  }
  // Several gzip members, or a trailer that does not state the size (a file cut short, too):
  // inflated whole, converted again.
  std::error_code ignored;
  std::filesystem::remove(pst_path, ignored);
  auto whole = kineto::DocumentText::load_whole(json_path, &memory.inflate);
  if (!whole) return whole.error();
  return convert(*whole, json_path, pst_path, memory);
}

}  // namespace

bool looks_like_kineto_trace(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  if (!file.ends_with(".json") && !file.ends_with(".json.gz")) return false;
  auto head = read_head(path, 1 << 16);
  if (!head) return false;
  // `pipescope export --format perfetto` writes trace events too, and says so first (earlier
  // versions began with exactly the display unit and the events).
  if (head->starts_with("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"pipescope\"}") ||
      head->starts_with("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"ph\":\"M\""))
    return false;
  return head->find("\"traceEvents\"") != std::string::npos ||
         head->find("\"schemaVersion\"") != std::string::npos;
}

Status convert_kineto_trace(const std::string& json_path, const std::string& pst_path) {
  ConvertMemory memory;
  return convert_file(json_path, pst_path, memory);
}

Status convert_kineto_traces(const std::vector<std::string>& json_paths,
                             const std::vector<std::string>& pst_paths) {
  std::vector<Status> results(json_paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    ConvertMemory memory;  // a worker's documents, one after another
    for (size_t i = next++; i < json_paths.size(); i = next++)
      results[i] = convert_file(json_paths[i], pst_paths[i], memory);
  };
  const size_t workers =
      std::min<size_t>(json_paths.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (Status& s : results)
    if (!s) return s;
  return {};
}

Status convert_kineto_text(std::string_view text, const std::string& json_path, const std::string& pst_path) {
  kineto::DocumentText document = kineto::DocumentText::copy_of(text);
  ConvertMemory memory;
  return convert(document, json_path, pst_path, memory);
}

}  // namespace pipescope::analysis
