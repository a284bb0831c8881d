// One streaming pass over a rank's trace (rank_digest.h). Records are handled as they are
// decoded, each kind by its part of the scan: GPU work (gpu_timeline.h), device memory
// (memory_timeline.h), NCCL (nccl_scan.h), NVTX (nvtx_scan.h); kernel statistics and the
// profiler's notices are kept here.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <regex>

#include "gpu_timeline.h"
#include "memory_timeline.h"
#include "nccl_scan.h"
#include "nvtx_scan.h"
#include "pipescope/analysis/kernel_category.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/trace_file.h"
#include "pipescope/trace/trace_summary.h"
#include "rank_scan_detail.h"

namespace pipescope::analysis {
namespace {

using detail::as_ns;
using detail::IntervalClass;
using trace::RecordKind;

class RankScanner {
 public:
  explicit RankScanner(const ScanOptions& options)
      : clock_(d_),
        gpu_(d_, options),
        memory_(clock_, options),
        nccl_(clock_, options),
        nvtx_(clock_, options, strings_, gpu_, nccl_.latest_failure_ns()) {}

  // `file`, when the data is a mapped file, is told after each chunk how far the scan got.
  Expected<RankDigest> scan(std::span<const std::byte> data, trace::MappedFile* file) {
    auto decoder = trace::TraceDecoder::open(data);
    if (!decoder) return decoder.error();
    d_.header = decoder->header();
    d_.total_bytes = data.size();
    trace::ChunkView chunk;
    while (decoder->next_chunk(chunk)) {
      on_chunk(chunk);
      if (file != nullptr) file->release_before(decoder->valid_bytes());
    }
    d_.stop_reason = decoder->stop_reason();
    d_.stop_detail = decoder->stop_detail();
    d_.valid_bytes = decoder->valid_bytes();
    finish();
    return std::move(d_);
  }

 private:
  void on_chunk(const trace::ChunkView& chunk) {
    switch (chunk.type) {
      case trace::ChunkType::kRecords: {
        trace::RecordCursor cursor(chunk.payload);
        trace::RecordView record;
        while (cursor.next(record)) on_record(record);
        break;
      }
      case trace::ChunkType::kStrings: trace::read_strings_chunk(chunk.payload, strings_); break;
      case trace::ChunkType::kProcessInfo:
        if (auto info = trace::decode_process_info(chunk.payload)) d_.process = std::move(*info);
        break;
      case trace::ChunkType::kClockAnchor:
        if (chunk.payload.size() >= sizeof(trace::ClockAnchorPayload)) {
          trace::ClockAnchorPayload anchor;
          std::memcpy(&anchor, chunk.payload.data(), sizeof(anchor));
          if (!d_.anchor || anchor.uncertainty_ns < d_.anchor->uncertainty_ns) d_.anchor = anchor;
        }
        break;
      case trace::ChunkType::kEnd:
        if (chunk.payload.size() >= sizeof(trace::EndPayload)) {
          trace::EndPayload end;
          std::memcpy(&end, chunk.payload.data(), sizeof(end));
          d_.end = end;
        }
        break;
      default: break;  // a newer minor version's chunk
    }
  }

  // Decodes a record of type R and hands it to `handle`.
  template <class R, class Handle>
  static void with(const trace::RecordView& record, Handle&& handle) {
    R r;
    record.decode(r);
    handle(r);
  }

  void on_record(const trace::RecordView& record) {
    ++d_.records;
    d_.record_bytes += record.bytes.size();
    switch (record.kind) {
      case RecordKind::kKernel:
        with<trace::KernelRecord>(record, [&](const auto& r) { on_kernel(r); });
        break;
      case RecordKind::kMemcpy:
        with<trace::MemcpyRecord>(record, [&](const auto& r) {
          on_copy(as_ns(r.start_ns), as_ns(r.end_ns), r.bytes, r.correlation_id, d_.memcpy_totals);
        });
        break;
      case RecordKind::kMemset:
        with<trace::MemsetRecord>(record, [&](const auto& r) {
          on_copy(as_ns(r.start_ns), as_ns(r.end_ns), r.bytes, r.correlation_id, d_.memset_totals);
        });
        break;
      case RecordKind::kApi:
        with<trace::ApiRecord>(record,
                               [&](const auto& r) { gpu_.on_launch(r.correlation_id, as_ns(r.start_ns)); });
        break;
      case RecordKind::kMemory:
        with<trace::MemoryRecord>(record, [&](const auto& r) { memory_.on_record(r); });
        break;
      case RecordKind::kNcclOp:
        with<trace::NcclOpRecord>(record, [&](const auto& r) { nccl_.on_op(r); });
        break;
      case RecordKind::kNcclComm:
        with<trace::NcclCommRecord>(record, [&](const auto& r) { nccl_.on_comm(r); });
        break;
      case RecordKind::kNcclCall:
        with<trace::NcclCallRecord>(record, [&](const auto& r) { nccl_.on_call(r); });
        break;
      case RecordKind::kNvtx:
        with<trace::NvtxRecord>(record, [&](const auto& r) { nvtx_.on_record(r); });
        break;
      case RecordKind::kExternalCorrelation:
        with<trace::ExternalCorrelationRecord>(record, [&](const auto& r) {
          if (r.external_kind == static_cast<uint8_t>(trace::ExternalCorrelationKind::kNccl))
            nccl_.on_link(r.correlation_id, r.external_id);
        });
        break;
      case RecordKind::kNotice:
        with<trace::NoticeRecord>(record, [&](const auto& r) { on_notice(r); });
        break;
      default: break;
    }
  }

  void on_kernel(const trace::KernelRecord& r) {
    const int64_t start = as_ns(r.start_ns), end = std::max(as_ns(r.end_ns), as_ns(r.start_ns));
    clock_.see(start);
    clock_.see(end);
    if (r.device < 64) d_.kernel_devices |= uint64_t{1} << r.device;
    const uint32_t kernel = kernel_index(r.name_id);
    const bool nccl = kernel_nccl_[kernel] != 0;
    KernelNameStats& stats = d_.kernels[kernel];
    ++stats.count;
    stats.total_ns += end - start;
    stats.min_ns = std::min(stats.min_ns, end - start);
    stats.max_ns = std::max(stats.max_ns, end - start);
    kernel_durations_[kernel].add(end - start);
    gpu_.add(start, end, nccl ? IntervalClass::kComm : IntervalClass::kCompute, r.correlation_id);
    if (nccl) nccl_.on_kernel(r.correlation_id, KernelSpan{start, end});
  }

  void on_copy(int64_t start, int64_t end, uint64_t bytes, uint32_t correlation, OpTotals& totals) {
    end = std::max(end, start);
    clock_.see(start);
    clock_.see(end);
    ++totals.calls;
    totals.bytes += bytes;
    totals.time_ns += end - start;
    gpu_.add(start, end, IntervalClass::kCopy, correlation);
  }

  // One entry per distinct kernel name (statistics, name, whether it is NCCL's), found through
  // an index per string id: string ids grow with every name the trace defines (NVTX names with
  // step numbers, ...), kernel names do not.
  uint32_t kernel_index(uint32_t name_id) {
    name_id = detail::known_name(strings_, name_id);
    if (name_id >= kernel_slot_.size()) kernel_slot_.resize(name_id + 1, 0);
    uint32_t& slot = kernel_slot_[name_id];
    if (slot == 0) [[unlikely]]
      slot = add_kernel_name(name_id);
    return slot - 1;
  }

  // Out of line: once per name, and the per-record path above stays small enough to inline.
  [[gnu::noinline]] uint32_t add_kernel_name(uint32_t name_id) {
    const std::string_view name = strings_.get(name_id);
    d_.kernels.emplace_back();
    kernel_durations_.emplace_back();
    d_.kernel_names.emplace_back(name);
    kernel_nccl_.push_back(is_nccl_kernel(name) ? 1 : 0);
    return static_cast<uint32_t>(d_.kernels.size());
  }

  void on_notice(const trace::NoticeRecord& r) {
    const auto code = static_cast<trace::NoticeCode>(r.code);
    if (code == trace::NoticeCode::kProcessSignal) {
      if (d_.ending_signal == 0) {  // the first: a fatal signal's handler may raise it again
        d_.ending_signal = static_cast<int32_t>(r.count);
        d_.ending_signal_at_ns = as_ns(r.timestamp_ns);
      }
      return;
    }
    if (code == trace::NoticeCode::kProcessExit) {
      d_.exit_status = static_cast<int32_t>(static_cast<uint32_t>(r.count));
      d_.exit_at_ns = as_ns(r.timestamp_ns);
      return;
    }
    if (code == trace::NoticeCode::kKernelSamplingPaused ||
        code == trace::NoticeCode::kKernelSamplingResumed) {
      on_kernel_sampling(code == trace::NoticeCode::kKernelSamplingPaused,
                         static_cast<int64_t>(r.timestamp_ns), strings_.get(r.message_id));
      return;
    }
    if (code == trace::NoticeCode::kRecordsDropped || code == trace::NoticeCode::kCuptiBufferDropped)
      d_.records_dropped += r.count;
    if (code == trace::NoticeCode::kWindowOpened || code == trace::NoticeCode::kWindowClosed ||
        code == trace::NoticeCode::kClockOffsetApplied)
      return;
    std::string text = notice_text(code);
    if (const std::string_view message = strings_.get(r.message_id); !message.empty())
      text += ": " + std::string(message);
    if (std::find(d_.notices.begin(), d_.notices.end(), text) == d_.notices.end() && d_.notices.size() < 32)
      d_.notices.push_back(std::move(text));
  }

  // Notices are written in time order by one session: a pause opens an interval, the next resume
  // closes it.
  void on_kernel_sampling(bool paused, int64_t at_ns, std::string_view message) {
    if (d_.kernel_sample_steps == 0) {
      // "... for 1 step in N (PIPESCOPE_KERNEL_SAMPLE)": the N, for the report's line.
      const size_t in = message.find("step in ");
      unsigned n = 0;
      if (in != std::string_view::npos &&
          std::sscanf(std::string(message.substr(in + 8)).c_str(), "%u", &n) == 1)
        d_.kernel_sample_steps = n;
      if (d_.kernel_sample_steps == 0) d_.kernel_sample_steps = 1;  // sampled, N unknown
    }
    auto& pauses = d_.gpu_record_pauses;
    if (paused) {
      if (pauses.empty() || pauses.back().second != INT64_MAX) pauses.emplace_back(at_ns, INT64_MAX);
    } else if (!pauses.empty() && pauses.back().second == INT64_MAX) {
      pauses.back().second = at_ns;
    }
  }

  static std::string notice_text(trace::NoticeCode code) {
    switch (code) {
      case trace::NoticeCode::kRecordsDropped: return "records dropped";
      case trace::NoticeCode::kCuptiBufferDropped: return "CUPTI dropped records";
      case trace::NoticeCode::kCaptureLost: return "capture lost to another tool";
      case trace::NoticeCode::kCaptureResumed: return "capture resumed";
      case trace::NoticeCode::kInjectionConflict: return "another tool's injection kept";
      case trace::NoticeCode::kUnsupportedVersion: return "unsupported library version";
      case trace::NoticeCode::kKindUnavailable: return "kind unavailable";
      default: return "notice " + std::to_string(static_cast<int>(code));
    }
  }

  void finish() {
    nccl_.finish_open_calls();
    gpu_.finish();
    nccl_.finish();
    memory_.finish();
    nvtx_.finish();
    if (d_.end && d_.end->records_dropped > d_.records_dropped) d_.records_dropped = d_.end->records_dropped;
    for (size_t k = 0; k < d_.kernels.size(); ++k) d_.kernels[k].durations = kernel_durations_[k].buckets();
    std::vector<DurationRecorder>().swap(kernel_durations_);
  }

  RankDigest d_;
  detail::ScanClock clock_;
  trace::StringTable strings_;
  detail::GpuTimeline gpu_;
  detail::MemoryTimeline memory_;
  detail::NcclScan nccl_;
  detail::NvtxScan nvtx_;
  std::vector<uint32_t> kernel_slot_;               // per name id: 0 none, else index + 1 in d_.kernels
  std::vector<uint8_t> kernel_nccl_;                // per d_.kernels index: 1 when an NCCL kernel
  std::vector<DurationRecorder> kernel_durations_;  // per d_.kernels index, until finish()
};

Expected<RankDigest> scan(std::span<const std::byte> data, trace::MappedFile* file,
                          const ScanOptions& options) {
  try {
    RankScanner scanner(options);
    return scanner.scan(data, file);
  } catch (const std::regex_error& e) {
    return Error("invalid NVTX regular expression: " + std::string(e.what()));
  }
}

}  // namespace

Expected<RankDigest> scan_rank_bytes(std::span<const std::byte> data, const ScanOptions& options) {
  return scan(data, nullptr, options);
}

Expected<RankDigest> scan_rank_trace(const std::string& path, const ScanOptions& options) {
  auto file = trace::MappedFile::open(path);
  if (!file) return file.error();
  auto digest = scan(file->bytes(), &*file, options);
  if (!digest) return Error(path + ": " + digest.error().message);
  digest->path = path;
  return digest;
}

uint64_t memory_level_at(const RankDigest& digest, int64_t at_ns) {
  const auto& points = digest.memory_checkpoints;
  auto it = std::upper_bound(points.begin(), points.end(), at_ns,
                             [](int64_t t, const std::pair<int64_t, uint64_t>& p) { return t < p.first; });
  if (it == points.begin()) return 0;
  return std::prev(it)->second;
}

}  // namespace pipescope::analysis
