// Chrome trace-event JSON (the format Perfetto UI and chrome://tracing open): one process per
// rank; a track per CUDA stream, an NCCL and an NVTX track per host thread, a memory counter per
// device; flow arrows from each send to its recv. Written as it is read, rank after rank, into a
// temporary file that replaces the output only when complete.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <unordered_map>

#include "pipescope/export/export.h"
#include "pipescope/export/output_file.h"
#include "trace_walk.h"

namespace pipescope::exporter {
namespace {

using trace::RecordKind;

void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof(code), "\\u%04x", c);
          out += code;
        } else {
          out += c;
        }
    }
  }
}

// Microseconds with three decimals, exactly from integer ns.
void append_us(std::string& out, int64_t ns) {
  char text[32];
  const int64_t whole = ns / 1000, rest = ns % 1000;
  if (ns < 0 && rest != 0) {
    std::snprintf(text, sizeof(text), "-%" PRId64 ".%03" PRId64, -(ns / 1000), -rest);
  } else {
    std::snprintf(text, sizeof(text), "%" PRId64 ".%03" PRId64, whole, rest < 0 ? -rest : rest);
  }
  out += text;
}

// The same number on the send and the recv side, from what each side knows alone.
uint64_t flow_id(uint64_t comm_id, int32_t src, int32_t dst, uint64_t sequence) {
  uint64_t h = comm_id ^ 0x9e3779b97f4a7c15ULL;
  for (uint64_t v : {static_cast<uint64_t>(static_cast<uint32_t>(src)),
                     static_cast<uint64_t>(static_cast<uint32_t>(dst)), sequence}) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  }
  return h & ((uint64_t{1} << 53) - 1);  // exact in a JSON double
}

class JsonEventWriter {
 public:
  explicit JsonEventWriter(std::FILE* file) : file_(file) {}
  // Starts an event object: `{"ph":"X","pid":R,"tid":T,"ts":...`; the caller appends the rest.
  std::string& begin(char phase, int32_t pid, int64_t tid, int64_t ts_ns) {
    line_.clear();
    line_ += first_ ? "\n" : ",\n";
    first_ = false;
    line_ += "{\"ph\":\"";
    line_ += phase;
    line_ += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
    append_us(line_, ts_ns);
    return line_;
  }
  void end() {
    line_ += "}";
    bytes_ += std::fwrite(line_.data(), 1, line_.size(), file_);
    ++events_;
  }
  void raw(const std::string& text) { bytes_ += std::fwrite(text.data(), 1, text.size(), file_); }
  uint64_t bytes() const { return bytes_; }
  uint64_t events() const { return events_; }

 private:
  std::FILE* file_;
  std::string line_;
  bool first_ = true;
  uint64_t bytes_ = 0;
  uint64_t events_ = 0;
};

// Dense track numbers per rank: streams from 1000, NCCL threads from 2000, NVTX threads from 3000.
class Tracks {
 public:
  Tracks(JsonEventWriter& out, int32_t pid) : out_(out), pid_(pid) {}
  int64_t stream(uint32_t id) { return track(streams_, 1000, id, "stream " + std::to_string(id)); }
  int64_t nccl(uint32_t thread) {
    return track(nccl_, 2000, thread, "NCCL (thread " + std::to_string(thread) + ")");
  }
  int64_t nvtx(uint32_t thread) {
    return track(nvtx_, 3000, thread, "NVTX (thread " + std::to_string(thread) + ")");
  }

 private:
  int64_t track(std::unordered_map<uint32_t, int64_t>& tracks, int64_t base, uint32_t id,
                const std::string& name) {
    auto [it, fresh] = tracks.try_emplace(id, base + static_cast<int64_t>(tracks.size()));
    if (fresh) {
      std::string& e = out_.begin('M', pid_, it->second, 0);
      e += ",\"name\":\"thread_name\",\"args\":{\"name\":\"";
      append_escaped(e, name);
      e += "\"}";
      out_.end();
      std::string& s = out_.begin('M', pid_, it->second, 0);
      s += ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(it->second) + "}";
      out_.end();
    }
    return it->second;
  }
  JsonEventWriter& out_;
  int32_t pid_;
  std::unordered_map<uint32_t, int64_t> streams_, nccl_, nvtx_;
};

// Where a p2p arrow ends. An arrow runs from the send's host call entry (no byte can leave
// before it) to the end of the recv's NCCL kernel (none arrives after it), so on aligned clocks
// it always points forward. NCCL calls are asynchronous: the recv's host call may return before
// the send is even entered, so the host call's exit is only the fallback for a recv whose kernel
// never shows (host-only traces). The kernel comes through CUPTI's correlation records, in
// either order with the call; the tables hold only what is in flight between the two.
class FlowEnds {
 public:
  struct Place {
    int64_t tid;
    int64_t at_ns;
  };
  // A recv call: its arrow ends at its kernel when known (now or later), else at `fallback`.
  template <class Emit>
  void on_recv(uint64_t external_id, uint64_t flow, Place fallback, Emit&& emit) {
    if (auto it = early_kernels_.find(external_id); it != early_kernels_.end()) {
      emit(flow, it->second);
      early_kernels_.erase(it);
      return;
    }
    if (external_id == 0) return emit(flow, fallback);
    if (pending_.size() >= kMaxInFlight) flush(emit);
    pending_[external_id] = Pending{flow, fallback};
  }
  void on_other_call(uint64_t external_id) { early_kernels_.erase(external_id); }
  bool linked(uint32_t correlation_id) const { return links_.count(correlation_id) != 0; }
  void on_link(uint32_t correlation_id, uint64_t external_id) {
    if (links_.size() >= kMaxInFlight) links_.clear();  // kernels never delivered: forget them
    links_[correlation_id] = external_id;
  }
  template <class Emit>
  void on_kernel(uint32_t correlation_id, Place end, Emit&& emit) {
    const auto link = links_.find(correlation_id);
    if (link == links_.end()) return;
    const uint64_t external_id = link->second;
    links_.erase(link);
    if (auto it = pending_.find(external_id); it != pending_.end()) {
      emit(it->second.flow, end);
      pending_.erase(it);
      return;
    }
    if (early_kernels_.size() >= kMaxInFlight) early_kernels_.clear();
    early_kernels_[external_id] = end;
  }
  // Recvs whose kernel never came end at their host call's exit.
  template <class Emit>
  void flush(Emit&& emit) {
    for (const auto& [id, p] : pending_) emit(p.flow, p.fallback);
    pending_.clear();
  }

 private:
  // Records between a call and its kernel: a flush interval's worth, far below this.
  static constexpr size_t kMaxInFlight = 1 << 16;
  struct Pending {
    uint64_t flow;
    Place fallback;
  };
  std::unordered_map<uint64_t, Pending> pending_;      // by external id
  std::unordered_map<uint32_t, uint64_t> links_;       // correlation id -> external id
  std::unordered_map<uint64_t, Place> early_kernels_;  // by external id
};

struct RankState {
  int32_t rank;
  int64_t offset_ns;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::unordered_map<uint64_t, int32_t> nccl_rank_of_comm;
  std::unordered_map<uint32_t, int64_t> memory_level;  // per device
  FlowEnds flow_ends;
  bool kept(int64_t start, int64_t end) const {
    return !window || (end >= window->first && start < window->second);
  }
};

std::string size_text(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof(text), "%.0f KiB", static_cast<double>(bytes) / (1 << 10));
  }
  return text;
}

// The last nanosecond of a slice, so that a flow event binds to it rather than to a neighbour.
int64_t inside_end(int64_t start_ns, int64_t end_ns) { return std::max(start_ns, end_ns - 1); }

void write_flow_end(JsonEventWriter& out, int32_t pid, uint64_t flow, const FlowEnds::Place& at) {
  std::string& f = out.begin('f', pid, at.tid, at.at_ns);
  f += ",\"cat\":\"p2p\",\"name\":\"p2p\",\"id\":" + std::to_string(flow) + ",\"bp\":\"e\"";
  out.end();
}

void write_record(JsonEventWriter& out, Tracks& tracks, RankState& st, const trace::RecordView& view,
                  const trace::StringTable& strings) {
  const int32_t pid = st.rank;
  auto t = [&](uint64_t raw) { return static_cast<int64_t>(raw) + st.offset_ns; };
  auto span = [&](int64_t tid, int64_t start, int64_t end) -> std::string& {
    std::string& e = out.begin('X', pid, tid, start);
    e += ",\"dur\":";
    append_us(e, std::max<int64_t>(end - start, 0));
    return e;
  };
  switch (view.kind) {
    case RecordKind::kKernel: {
      trace::KernelRecord r;
      view.decode(r);
      if (!st.kept(t(r.start_ns), t(r.end_ns))) {
        if (!st.flow_ends.linked(r.correlation_id)) return;
        st.flow_ends.on_kernel(
            r.correlation_id, {tracks.stream(r.stream), inside_end(t(r.start_ns), t(r.end_ns))},
            [&](uint64_t flow, const FlowEnds::Place& at) { write_flow_end(out, pid, flow, at); });
        return;
      }
      const int64_t stream_tid = tracks.stream(r.stream);
      st.flow_ends.on_kernel(
          r.correlation_id, {stream_tid, inside_end(t(r.start_ns), t(r.end_ns))},
          [&](uint64_t flow, const FlowEnds::Place& at) { write_flow_end(out, pid, flow, at); });
      std::string& e = span(stream_tid, t(r.start_ns), t(r.end_ns));
      e += ",\"cat\":\"kernel\",\"name\":\"";
      append_escaped(e, strings.get(r.name_id));
      e += "\",\"args\":{\"correlation\":" + std::to_string(r.correlation_id) + ",\"grid\":[" +
           std::to_string(r.grid_x) + "," + std::to_string(r.grid_y) + "," + std::to_string(r.grid_z) +
           "],\"block\":[" + std::to_string(r.block_x) + "," + std::to_string(r.block_y) + "," +
           std::to_string(r.block_z) +
           "],\"registers_per_thread\":" + std::to_string(r.registers_per_thread) +
           ",\"graph_id\":" + std::to_string(r.graph_id) + "}";
      out.end();
      return;
    }
    case RecordKind::kMemcpy: {
      trace::MemcpyRecord r;
      view.decode(r);
      if (!st.kept(t(r.start_ns), t(r.end_ns))) return;
      std::string& e = span(tracks.stream(r.stream), t(r.start_ns), t(r.end_ns));
      e += ",\"cat\":\"memcpy\",\"name\":\"memcpy " + std::string(trace::copy_kind_name(r.copy_kind)) +
           "\",\"args\":{\"bytes\":" + std::to_string(r.bytes) + "}";
      out.end();
      return;
    }
    case RecordKind::kMemset: {
      trace::MemsetRecord r;
      view.decode(r);
      if (!st.kept(t(r.start_ns), t(r.end_ns))) return;
      std::string& e = span(tracks.stream(r.stream), t(r.start_ns), t(r.end_ns));
      e += ",\"cat\":\"memset\",\"name\":\"memset\",\"args\":{\"bytes\":" + std::to_string(r.bytes) + "}";
      out.end();
      return;
    }
    case RecordKind::kMemory: {
      trace::MemoryRecord r;
      view.decode(r);
      const auto op = static_cast<trace::MemoryOperation>(r.operation);
      if (op != trace::MemoryOperation::kAllocate && op != trace::MemoryOperation::kRelease) return;
      int64_t& level = st.memory_level[r.device];
      const auto bytes = static_cast<int64_t>(r.bytes);
      level = std::max<int64_t>(0, level + (op == trace::MemoryOperation::kAllocate ? bytes : -bytes));
      if (!st.kept(t(r.timestamp_ns), t(r.timestamp_ns))) return;
      std::string& e = out.begin('C', pid, 0, t(r.timestamp_ns));
      e += ",\"name\":\"device " + std::to_string(r.device) +
           " memory\",\"args\":{\"bytes\":" + std::to_string(level) + "}";
      out.end();
      return;
    }
    case RecordKind::kNcclComm: {
      trace::NcclCommRecord r;
      view.decode(r);
      if (r.comm_handle != 0) st.nccl_rank_of_comm[r.comm_id] = r.rank;
      return;
    }
    case RecordKind::kNcclOp: {
      trace::NcclOpRecord r;
      view.decode(r);
      const int64_t enter = t(r.host_enter_ns), exit = t(std::max(r.host_exit_ns, r.host_enter_ns));
      const bool send = r.op == static_cast<uint8_t>(trace::NcclOpType::kSend);
      const bool recv = r.op == static_cast<uint8_t>(trace::NcclOpType::kRecv);
      if (!recv) st.flow_ends.on_other_call(r.external_correlation_id);
      if (!st.kept(enter, exit)) return;
      const int64_t tid = tracks.nccl(r.thread_id);
      std::string& e = span(tid, enter, exit);
      e += ",\"cat\":\"nccl\",\"name\":\"" + std::string(trace::nccl_op_name(r.op)) +
           "\",\"args\":{\"comm_id\":\"";
      char id[24];
      std::snprintf(id, sizeof(id), "0x%016" PRIx64, r.comm_id);
      e += id;
      e += "\",\"sequence\":" + std::to_string(r.sequence) + ",\"bytes\":" + std::to_string(r.bytes) +
           ",\"count\":" + std::to_string(r.count) + ",\"peer\":" + std::to_string(r.peer) +
           ",\"failed\":" + ((r.flags & trace::kNcclFlagFailed) ? "true" : "false") + "}";
      out.end();
      const auto self = st.nccl_rank_of_comm.find(r.comm_id);
      if (self == st.nccl_rank_of_comm.end() || r.peer < 0) return;
      if (send) {
        std::string& f = out.begin('s', pid, tid, enter);
        f += ",\"cat\":\"p2p\",\"name\":\"p2p\",\"id\":" +
             std::to_string(flow_id(r.comm_id, self->second, r.peer, r.sequence));
        out.end();
      } else if (recv) {
        st.flow_ends.on_recv(r.external_correlation_id, flow_id(r.comm_id, r.peer, self->second, r.sequence),
                             {tid, inside_end(enter, exit)}, [&](uint64_t flow, const FlowEnds::Place& at) {
                               write_flow_end(out, pid, flow, at);
                             });
      }
      return;
    }
    case RecordKind::kExternalCorrelation: {
      trace::ExternalCorrelationRecord r;
      view.decode(r);
      if (r.external_kind == static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl))
        st.flow_ends.on_link(r.correlation_id, r.external_id);
      return;
    }
    case RecordKind::kNvtx: {
      trace::NvtxRecord r;
      view.decode(r);
      const int64_t at = t(r.timestamp_ns);
      if (!st.kept(at, at)) return;
      const auto event = static_cast<trace::NvtxEvent>(r.event);
      const int64_t tid = tracks.nvtx(r.thread_id);
      char phase = 'i';
      if (event == trace::NvtxEvent::kPush) phase = 'B';
      if (event == trace::NvtxEvent::kPop) phase = 'E';
      if (event == trace::NvtxEvent::kStart) phase = 'b';
      if (event == trace::NvtxEvent::kEnd) phase = 'e';
      std::string& e = out.begin(phase, pid, tid, at);
      e += ",\"cat\":\"nvtx\"";
      if (event != trace::NvtxEvent::kPop) {
        e += ",\"name\":\"";
        append_escaped(e,
                       event == trace::NvtxEvent::kEnd ? std::string_view("range") : strings.get(r.name_id));
        e += "\"";
      }
      if (event == trace::NvtxEvent::kStart || event == trace::NvtxEvent::kEnd)
        e += ",\"id\":" + std::to_string(r.range_id);
      if (event == trace::NvtxEvent::kMark) e += ",\"s\":\"t\"";
      out.end();
      return;
    }
    case RecordKind::kNotice: {
      trace::NoticeRecord r;
      view.decode(r);
      const int64_t at = t(r.timestamp_ns);
      if (!st.kept(at, at)) return;
      std::string& e = out.begin('i', pid, 0, at);
      e += ",\"s\":\"p\",\"cat\":\"notice\",\"name\":\"notice " + std::to_string(r.code) +
           "\",\"args\":{\"count\":" + std::to_string(r.count) + ",\"message\":\"";
      append_escaped(e, strings.get(r.message_id));
      e += "\"}";
      out.end();
      return;
    }
    default: return;
  }
}

}  // namespace

Expected<ExportSummary> export_perfetto(const ExportOptions& options) {
  auto output = OutputFile::create(options.output_path);
  if (!output) return Error("cannot write " + output.error().message);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(output->temp_path().c_str(), "wb"),
                                                       &std::fclose);
  if (!file) return Error("cannot write " + options.output_path);
  std::setvbuf(file.get(), nullptr, _IOFBF, size_t{1} << 20);
  JsonEventWriter out(file.get());
  ExportSummary summary;
  // The tool's name first: it tells this file from a PyTorch profiler trace (kineto_import.h).
  out.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"pipescope\"},\"traceEvents\":[");
  for (const ExportRank& rank : options.ranks) {
    RankState st{rank.rank, rank.clock_offset_ns, options.window_ns, {}, {}, {}};
    Tracks tracks(out, rank.rank);
    WalkVisitor visitor;
    visitor.on_header = [&](const trace::FileHeader& header) {
      std::string& e = out.begin('M', rank.rank, 0, 0);
      e += ",\"name\":\"process_name\",\"args\":{\"name\":\"rank " + std::to_string(rank.rank) + " (";
      append_escaped(e, header.host);
      e += ", pid " + std::to_string(header.pid) + ")\"}";
      out.end();
      std::string& s = out.begin('M', rank.rank, 0, 0);
      s += ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" + std::to_string(rank.rank) + "}";
      out.end();
    };
    visitor.on_record = [&](const trace::RecordView& view, const trace::StringTable& strings) {
      write_record(out, tracks, st, view, strings);
    };
    auto walked = walk_trace(rank.path, visitor);
    if (!walked) return walked.error();
    st.flow_ends.flush(
        [&](uint64_t flow, const FlowEnds::Place& at) { write_flow_end(out, rank.rank, flow, at); });
    if (std::string w = recovery_warning(rank.rank, *walked); !w.empty()) summary.warnings.push_back(w);
  }
  out.raw("\n]}\n");
  if (std::fflush(file.get()) != 0 || std::ferror(file.get()) || std::fclose(file.release()) != 0)
    return Error("cannot write " + options.output_path + " (is the disk full?)");
  if (Status committed = output->commit(); !committed) return committed.error();
  summary.records_written = out.events();
  summary.bytes_written = out.bytes();
  if (summary.bytes_written > options.large_output_bytes) {
    summary.warnings.push_back(
        options.output_path + " holds " + size_text(summary.bytes_written) +
        "; viewers slow down on files this large: keep fewer ranks (--ranks) or a shorter "
        "window (--window)");
  }
  return summary;
}

}  // namespace pipescope::exporter
