#include "memory_timeline.h"

#include <algorithm>
#include <utility>

namespace pipescope::analysis::detail {

void MemoryTimeline::on_record(const trace::MemoryRecord& r) {
  const auto op = static_cast<trace::MemoryOperation>(r.operation);
  if (op != trace::MemoryOperation::kAllocate && op != trace::MemoryOperation::kRelease) return;
  const auto kind = static_cast<trace::MemoryKind>(r.memory_kind);
  if (kind != trace::MemoryKind::kDevice && kind != trace::MemoryKind::kUnknown) return;
  const int64_t t = as_ns(r.timestamp_ns);
  clock_.see(t);
  const int64_t bytes = static_cast<int64_t>(std::min<uint64_t>(r.bytes, INT64_MAX));
  const Event event{t, op == trace::MemoryOperation::kAllocate ? bytes : -bytes,
                    (r.flags & trace::kMemoryFlagFromPool) != 0};
  window_.push(event, [this](const Event& e) { apply(e); });
}

void MemoryTimeline::apply(const Event& e) {
  d_.memory_seen = true;
  MemoryLevel& m = e.from_pool ? allocated_ : reserved_;
  (e.from_pool ? d_.allocated_seen : d_.reserved_seen) = true;
  m.level = std::max<int64_t>(0, m.level + e.delta_bytes);
  const auto level = static_cast<uint64_t>(m.level);
  if (level > m.peak_bytes) {
    m.peak_bytes = level;
    m.peak_at_ns = e.start_ns;
  }
  (e.from_pool ? d_.memory_allocated : d_.memory_reserved).add_max(e.start_ns, static_cast<double>(level));
  m.add_checkpoint(e.start_ns, level);
}

void MemoryTimeline::finish() {
  window_.drain([this](const Event& e) { apply(e); });
  d_.memory_from_pool = d_.allocated_seen;
  MemoryLevel& figure = d_.memory_from_pool ? allocated_ : reserved_;
  d_.peak_memory_bytes = figure.peak_bytes;
  d_.peak_memory_at_ns = figure.peak_at_ns;
  d_.memory_checkpoints = std::move(figure.checkpoints);
}

}  // namespace pipescope::analysis::detail
