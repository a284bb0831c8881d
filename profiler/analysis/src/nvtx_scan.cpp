#include "nvtx_scan.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace pipescope::analysis::detail {
namespace {

// Start/end ranges left open at once; more (ranges never ended) are not followed.
constexpr size_t kMaxOpenRanges = 100'000;

}  // namespace

NvtxScan::NvtxScan(ScanClock& clock, const ScanOptions& options, const trace::StringTable& strings,
                   GpuTimeline& gpu, const int64_t& latest_failure_ns)
    : clock_(clock),
      d_(clock.d),
      strings_(strings),
      gpu_(gpu),
      latest_failure_ns_(latest_failure_ns),
      step_re_(options.nvtx.step, std::regex::icase | std::regex::optimize),
      forward_re_(options.nvtx.forward, std::regex::icase | std::regex::optimize),
      backward_re_(options.nvtx.backward, std::regex::icase | std::regex::optimize),
      steps_(clock.d, options.max_steps) {}

NvtxScan::NameClass NvtxScan::classify(uint32_t name_id) {
  name_id = known_name(strings_, name_id);
  if (name_id >= name_classes_.size()) name_classes_.resize(name_id + 1, NameClass::kUnknown);
  NameClass& cls = name_classes_[name_id];
  if (cls != NameClass::kUnknown) return cls;
  const std::string name(strings_.get(name_id));
  if (name.starts_with("stage=")) {
    cls = NameClass::kStage;
  } else if (std::regex_search(name, step_re_)) {
    cls = NameClass::kStep;
  } else if (std::regex_search(name, backward_re_)) {
    cls = NameClass::kBackward;  // before forward: "backward" must not count as "forward"
  } else if (std::regex_search(name, forward_re_)) {
    cls = NameClass::kForward;
  } else {
    cls = NameClass::kOther;
  }
  return cls;
}

void NvtxScan::on_record(const trace::NvtxRecord& r) {
  const int64_t t = as_ns(r.timestamp_ns);
  clock_.see(t);
  const auto event = static_cast<trace::NvtxEvent>(r.event);
  switch (event) {
    case trace::NvtxEvent::kPush: {
      std::vector<OpenRange>& open = open_by_thread_[r.thread_id];
      // A step range inside another (Optimizer.step inside ProfilerStep#N) starts no step.
      const bool outermost_step = classify(r.name_id) == NameClass::kStep &&
                                  std::none_of(open.begin(), open.end(), [&](const OpenRange& o) {
                                    return classify(o.name_id) == NameClass::kStep;
                                  });
      open.push_back(OpenRange{r.name_id, t});
      if (outermost_step) gpu_.on_step_start(t);
      break;
    }
    case trace::NvtxEvent::kPop: {
      auto it = open_by_thread_.find(r.thread_id);
      if (it == open_by_thread_.end() || it->second.empty()) break;
      const OpenRange open = it->second.back();
      it->second.pop_back();
      on_range(open.name_id, open.start_ns, t);
      break;
    }
    case trace::NvtxEvent::kStart:
      if (open_by_id_.size() < kMaxOpenRanges) open_by_id_[r.range_id] = OpenRange{r.name_id, t};
      if (classify(r.name_id) == NameClass::kStep) gpu_.on_step_start(t);
      break;
    case trace::NvtxEvent::kMark:  // PIPESCOPE_STAGE's declaration is a mark "stage=<k>"
      if (classify(r.name_id) == NameClass::kStage) declare_stage(r.name_id);
      break;
    case trace::NvtxEvent::kEnd: {
      auto it = open_by_id_.find(r.range_id);
      if (it == open_by_id_.end()) break;
      on_range(it->second.name_id, it->second.start_ns, t);
      open_by_id_.erase(it);
      break;
    }
    default: break;
  }
}

void NvtxScan::on_range(uint32_t name_id, int64_t start, int64_t end) {
  ++d_.nvtx_ranges;
  const NameClass cls = classify(name_id);
  if (d_.steps.size() < 2 && d_.excerpt.size() < 256 &&
      (cls == NameClass::kStep || cls == NameClass::kForward || cls == NameClass::kBackward)) {
    d_.excerpt.push_back({start, end,
                          static_cast<uint8_t>(cls == NameClass::kStep      ? 0
                                               : cls == NameClass::kForward ? 1
                                                                            : 2)});
  }
  switch (cls) {
    case NameClass::kStep: steps_.on_step(start, end, latest_failure_ns_); break;
    case NameClass::kForward:
    case NameClass::kBackward: steps_.on_pipeline_range(start, end, cls == NameClass::kForward); break;
    case NameClass::kStage: declare_stage(name_id); break;
    default: break;
  }
}

void NvtxScan::declare_stage(uint32_t name_id) {
  const std::string_view name = strings_.get(known_name(strings_, name_id));
  int stage = -1;
  if (name.size() > 6 && std::sscanf(std::string(name.substr(6)).c_str(), "%d", &stage) == 1 && stage >= 0)
    d_.declared_stage = stage;
}

}  // namespace pipescope::analysis::detail
