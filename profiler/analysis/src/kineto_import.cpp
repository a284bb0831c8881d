#include "pipescope/analysis/kineto_import.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "kineto_collectives.h"
#include "pipescope/analysis/kernel_category.h"
#include "pipescope/trace/trace_writer.h"

namespace pipescope::analysis {
namespace {

using nlohmann::json;

// The whole file (or its first `limit` bytes), gunzipped when it is gzip (zlib reads plain files
// through too). A gzip stream that ends early is a copy cut short, not a JSON problem: say so.
Expected<std::string> read_maybe_gzip(const std::string& path, size_t limit = SIZE_MAX) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return Error("cannot read " + path);
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while (text.size() < limit && (n = gzread(file, buffer, sizeof(buffer))) > 0)
    text.append(buffer, static_cast<size_t>(n));
  int code = Z_OK;
  const std::string detail = gzerror(file, &code);
  const bool gzip = gzdirect(file) == 0;
  gzclose(file);
  if (text.size() >= limit) return text;
  if (gzip && code == Z_BUF_ERROR)
    return Error(path +
                 " is truncated: its gzip data ends early (an interrupted copy or write?); copy it again");
  if (n < 0 || (code != Z_OK && code != Z_BUF_ERROR))
    return Error(path + " is corrupt gzip data (" + detail + "); copy it again");
  return text;
}

using kineto::member;

double number_or(const json& object, const char* key, double fallback) {
  const json* v = member(object, key);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

std::string string_or(const json& object, const char* key) {
  const json* v = member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// Kineto times are microseconds (possibly fractional) on the wall clock.
uint64_t ns_of(double us) { return us <= 0 ? 0 : static_cast<uint64_t>(std::llround(us * 1000.0)); }

uint32_t id_of(const json& event, const char* key) {
  const json* v = member(event, key);
  if (v == nullptr) return 0;
  if (v->is_number_integer()) return static_cast<uint32_t>(v->get<int64_t>());
  if (v->is_number()) return static_cast<uint32_t>(v->get<double>());
  if (v->is_string()) return static_cast<uint32_t>(std::hash<std::string>{}(v->get<std::string>()));
  return 0;
}

uint32_t dim3_part(const json& args, const char* key, size_t index) {
  const json* v = member(args, key);
  if (v == nullptr || !v->is_array() || v->size() <= index || !(*v)[index].is_number()) return 0;
  return static_cast<uint32_t>((*v)[index].get<double>());
}

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

std::optional<trace::NcclOpType> nccl_op_of(std::string name) {
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

struct Converter {
  trace::TraceWriter& writer;
  trace::ThreadBuffer& out;
  std::unordered_map<std::string, uint32_t> names;

  uint32_t name(const std::string& text) {
    auto [it, fresh] = names.try_emplace(text, 0);
    if (fresh) it->second = writer.intern(text);
    return it->second;
  }
};

// The fields a memcpy and a memset event share.
template <class R>
R gpu_activity(const json& args, double ts_us, double dur_us) {
  auto r = trace::make_record<R>();
  r.device = static_cast<uint32_t>(number_or(args, "device", 0));
  r.start_ns = ns_of(ts_us);
  r.end_ns = ns_of(ts_us + dur_us);
  r.stream = static_cast<uint32_t>(number_or(args, "stream", 0));
  r.correlation_id = id_of(args, "correlation");
  r.bytes = static_cast<uint64_t>(std::max(0.0, number_or(args, "bytes", 0)));
  return r;
}

trace::CopyKind copy_kind_of(const std::string& name) {
  if (name.find("HtoD") != std::string::npos) return trace::CopyKind::kHostToDevice;
  if (name.find("DtoH") != std::string::npos) return trace::CopyKind::kDeviceToHost;
  if (name.find("DtoD") != std::string::npos) return trace::CopyKind::kDeviceToDevice;
  if (name.find("PtoP") != std::string::npos) return trace::CopyKind::kPeerToPeer;
  if (name.find("HtoH") != std::string::npos) return trace::CopyKind::kHostToHost;
  return trace::CopyKind::kUnknown;
}

}  // namespace

bool looks_like_kineto_trace(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  if (!file.ends_with(".json") && !file.ends_with(".json.gz")) return false;
  auto head = read_maybe_gzip(path, 1 << 16);
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
  auto text = read_maybe_gzip(json_path);
  if (!text) return text.error();
  return convert_kineto_text(*text, json_path, pst_path);
}

Status convert_kineto_text(std::string_view text, const std::string& json_path, const std::string& pst_path) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error(json_path + " is not JSON");
  const json* events = member(doc, "traceEvents");
  if (events == nullptr || !events->is_array())
    return Error(json_path + " has no traceEvents array: not a PyTorch profiler trace");
  const json* dist = member(doc, "distributedInfo");
  if (dist == nullptr || !member(*dist, "rank") || !(*member(*dist, "rank")).is_number_integer())
    return Error(json_path +
                 " has no distributedInfo.rank: record it with the PyTorch profiler in a distributed job");
  const auto rank = static_cast<int32_t>((*member(*dist, "rank")).get<int64_t>());
  const auto world = static_cast<int32_t>(number_or(*dist, "world_size", rank + 1));
  if (rank < 0 || world <= rank)
    return Error(json_path + ": distributedInfo rank " + std::to_string(rank) + " does not fit world_size " +
                 std::to_string(world));

  trace::WriterOptions options;
  options.clock = trace::TraceClock::kRealtime;
  options.host = "kineto";
  options.pid = static_cast<uint32_t>(rank);
  auto writer = trace::TraceWriter::create(pst_path, options);
  if (!writer) return writer.error();
  trace::ThreadBuffer* buffer = (*writer)->register_thread(trace::FullBufferPolicy::kDrainInline);
  if (buffer == nullptr) return Error("cannot write " + pst_path);
  Converter c{**writer, *buffer, {}};

  trace::ProcessInfo info;
  info.rank = rank;
  info.world_size = world;
  info.run_id = "kineto:" + string_or(*dist, "backend") + ":" + std::to_string(world);
  info.launcher = "kineto";
  if (Status s = (*writer)->write_process_info(info); !s) return s;

  // Kernels by correlation (to find NCCL kernels), runtime launches by thread, NCCL calls.
  std::unordered_map<uint32_t, bool> nccl_kernel_by_correlation;
  struct Launch {
    double ts_us;
    uint32_t thread;
    uint32_t correlation;
  };
  std::vector<Launch> launches;
  std::vector<NcclCall> calls;         // nccl:<op> annotations
  std::vector<NcclCall> param_calls;   // record_param_comms naming its collective
  std::vector<NcclCall> c10d_calls;    // c10d:: operators: the last resort
  std::vector<CommEvent> comm_events;  // record_param_comms and c10d:: operators
  struct Range {
    double start_us, end_us;
    uint32_t thread;
    std::string name;
  };
  std::vector<Range> ranges;
  uint64_t counts = 0;

  for (const json& e : *events) {
    if (!e.is_object()) continue;
    const std::string cat = string_or(e, "cat");
    const std::string name = string_or(e, "name");
    const std::string ph = string_or(e, "ph");
    const double ts = number_or(e, "ts", -1);
    const double dur = std::max(0.0, number_or(e, "dur", 0));
    const json empty = json::object();
    const json* args_ptr = member(e, "args");
    const json& args = args_ptr != nullptr && args_ptr->is_object() ? *args_ptr : empty;
    if (ts < 0) continue;
    ++counts;
    if (cat == "kernel") {
      auto k = trace::make_record<trace::KernelRecord>();
      k.device = static_cast<uint32_t>(number_or(args, "device", 0));
      k.start_ns = ns_of(ts);
      k.end_ns = ns_of(ts + dur);
      k.stream = static_cast<uint32_t>(number_or(args, "stream", 0));
      k.correlation_id = id_of(args, "correlation");
      k.name_id = c.name(name);
      k.grid_x = dim3_part(args, "grid", 0);
      k.grid_y = static_cast<uint16_t>(dim3_part(args, "grid", 1));
      k.grid_z = static_cast<uint16_t>(dim3_part(args, "grid", 2));
      k.block_x = static_cast<uint16_t>(dim3_part(args, "block", 0));
      k.block_y = static_cast<uint16_t>(dim3_part(args, "block", 1));
      k.block_z = static_cast<uint16_t>(dim3_part(args, "block", 2));
      k.registers_per_thread = static_cast<uint16_t>(number_or(args, "registers per thread", 0));
      k.dynamic_shared_bytes = static_cast<uint32_t>(number_or(args, "shared memory", 0));
      c.out.append(k);
      if (is_nccl_kernel(name)) nccl_kernel_by_correlation[k.correlation_id] = true;
    } else if (cat == "gpu_memcpy") {
      auto m = gpu_activity<trace::MemcpyRecord>(args, ts, dur);
      m.copy_kind = static_cast<uint8_t>(copy_kind_of(name));
      m.peer_device = trace::kUnknownDevice;
      c.out.append(m);
    } else if (cat == "gpu_memset") {
      auto m = gpu_activity<trace::MemsetRecord>(args, ts, dur);
      m.memory_kind = static_cast<uint8_t>(trace::MemoryKind::kDevice);
      c.out.append(m);
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (name.find("Launch") != std::string::npos)
        launches.push_back(Launch{ts, id_of(e, "tid"), id_of(args, "correlation")});
    } else if (cat == "user_annotation" || cat == "gpu_user_annotation") {
      if (cat == "gpu_user_annotation") continue;
      if (name.rfind("nccl:", 0) == 0) {
        if (auto op = nccl_op_of(name.substr(5)))
          calls.push_back(NcclCall{*op, ts, ts + dur, id_of(e, "tid"), id_of(args, "External id"),
                                   kineto::facts_of_annotation(args)});
      }
      ranges.push_back(Range{ts, ts + dur, id_of(e, "tid"), name});
    } else if (cat == "cpu_op" && name == "record_param_comms") {
      comm_events.push_back(
          CommEvent{ts, ts + dur, id_of(e, "tid"), true, kineto::facts_of_param_comms(args)});
      if (auto op = nccl_op_of(string_or(args, "Collective name")))
        param_calls.push_back(NcclCall{*op, ts, ts + dur, id_of(e, "tid"), id_of(args, "External id"),
                                       comm_events.back().facts});
    } else if (cat == "cpu_op" && name.rfind("c10d::", 0) == 0) {
      comm_events.push_back(
          CommEvent{ts, ts + dur, id_of(e, "tid"), false, kineto::facts_of_c10d(name.substr(6), args)});
      if (auto op = nccl_op_of(name.substr(6)))
        c10d_calls.push_back(NcclCall{*op, ts, ts + dur, id_of(e, "tid"), id_of(args, "External id"),
                                      comm_events.back().facts});
    } else if (ph == "i" && name == "[memory]") {
      const double bytes = number_or(args, "Bytes", 0);
      const double device_type = number_or(args, "Device Type", 1);
      if (device_type != 1 || bytes == 0) continue;  // 1: CUDA
      auto m = trace::make_record<trace::MemoryRecord>();
      m.device = static_cast<uint32_t>(number_or(args, "Device Id", 0));
      m.timestamp_ns = ns_of(ts);
      m.address = static_cast<uint64_t>(number_or(args, "Addr", 0));
      m.bytes = static_cast<uint64_t>(std::fabs(bytes));
      m.operation = static_cast<uint8_t>(bytes > 0 ? trace::MemoryOperation::kAllocate
                                                   : trace::MemoryOperation::kRelease);
      m.memory_kind = static_cast<uint8_t>(trace::MemoryKind::kDevice);
      m.flags = trace::kMemoryFlagFromPool;
      c.out.append(m);
    }
  }
  if (counts == 0) return Error(json_path + " holds no timed events");
  if (calls.empty()) calls = std::move(param_calls.empty() ? c10d_calls : param_calls);
  std::sort(comm_events.begin(), comm_events.end(), [](const CommEvent& a, const CommEvent& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start_us < b.start_us;
  });
  std::sort(calls.begin(), calls.end(),
            [](const NcclCall& a, const NcclCall& b) { return a.start_us < b.start_us; });
  std::sort(launches.begin(), launches.end(),
            [](const Launch& a, const Launch& b) { return a.ts_us < b.ts_us; });

  // Each communicator is announced once, before its first call; calls are numbered per
  // communicator, as the profiler numbers them.
  std::unordered_map<uint64_t, uint64_t> next_sequence;
  uint64_t unnumbered = 0;
  for (const NcclCall& call : calls) {
    const kineto::CollectiveFacts facts = enclosing_facts(call, comm_events);
    const int32_t group = kineto::group_size_of(call.op, facts, world);
    const kineto::CommSlot slot = kineto::comm_slot_of(facts, group, info.run_id, rank, world);
    auto [sequence, fresh] = next_sequence.try_emplace(slot.comm_id, 0);
    if (fresh) {
      auto comm = trace::make_record<trace::NcclCommRecord>();
      comm.event = static_cast<uint8_t>(trace::NcclCommEvent::kInit);
      comm.start_ns = comm.end_ns = ns_of(call.start_us) - 1;
      comm.comm_id = slot.comm_id;
      comm.comm_handle = next_sequence.size();
      comm.rank = slot.rank;
      comm.size = slot.size;
      comm.global_rank = rank;
      comm.color = -1;
      c.out.append(comm);
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
    c.out.append(op);
    // The NCCL kernel launched inside the call, on the same thread.
    auto first = std::lower_bound(launches.begin(), launches.end(), call.start_us,
                                  [](const Launch& l, double t) { return l.ts_us < t; });
    for (auto l = first; l != launches.end() && l->ts_us <= call.end_us; ++l) {
      if (l->thread != call.thread || !nccl_kernel_by_correlation.count(l->correlation)) continue;
      auto link = trace::make_record<trace::ExternalCorrelationRecord>();
      link.external_kind = static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl);
      link.correlation_id = l->correlation;
      link.external_id = external;
      c.out.append(link);
    }
  }

  // Annotations as properly nested push/pop per thread.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
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
    c.out.append(rec);
  };
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Range& r = ranges[i];
    while (!open.empty() && (open.back()->thread != r.thread || open.back()->end_us <= r.start_us)) {
      pop(*open.back());
      open.pop_back();
    }
    if (!open.empty() && r.end_us > open.back()->end_us) continue;  // overlaps its parent: not nestable
    auto rec = trace::make_record<trace::NvtxRecord>();
    rec.event = static_cast<uint8_t>(trace::NvtxEvent::kPush);
    rec.timestamp_ns = ns_of(r.start_us);
    rec.name_id = c.name(r.name);
    rec.thread_id = r.thread;
    c.out.append(rec);
    open.push_back(&r);
  }
  while (!open.empty()) {
    pop(*open.back());
    open.pop_back();
  }
  return (*writer)->close();
}

}  // namespace pipescope::analysis
