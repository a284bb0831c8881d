#include "p2p_pipeline.h"

#include <algorithm>
#include <map>

#include "parallel_for.h"

namespace pipescope::analysis {
namespace {

enum class Kind : uint8_t { kActivationOut, kGradientOut, kActivationIn, kGradientIn };

bool outgoing(Kind k) { return k == Kind::kActivationOut || k == Kind::kGradientOut; }

struct Event {
  int64_t start_ns, end_ns;  // aligned clock
  Kind kind;
  // Compute after an incoming transfer starts when the data is there (its end); compute before
  // any transfer ended when the transfer was launched (its start). Sends run beside compute.
  int64_t after() const { return outgoing(kind) ? start_ns : end_ns; }
};

struct Span {
  int64_t start_ns, end_ns;
};

// One rank's pipeline evidence on the aligned clock.
struct Timeline {
  std::vector<Event> events;  // in start order; outgoing first at equal starts
  std::vector<Span> islands;
  int64_t known_until_ns = INT64_MAX;  // the caps cut the evidence short after this
  bool usable = false;

  // Islands are in start order and apart (each starts after the one before ended), so their
  // ends are in order too: the first island that can matter is found by bisection.
  std::vector<Span>::const_iterator first_ending_at_or_after(int64_t t) const {
    return std::lower_bound(islands.begin(), islands.end(), t,
                            [](const Span& s, int64_t at) { return s.end_ns < at; });
  }
  // Compute inside [a, b).
  int64_t work(int64_t a, int64_t b) const {
    int64_t total = 0;
    for (auto s = first_ending_at_or_after(a); s != islands.end() && s->start_ns < b; ++s)
      total += std::max<int64_t>(0, std::min(b, s->end_ns) - std::max(a, s->start_ns));
    return total;
  }
  // The island holding t (or ending within `gap_ns` before it, or starting within it after).
  const Span* island_near(int64_t t, int64_t gap_ns) const {
    const auto s = first_ending_at_or_after(t - gap_ns);
    return s != islands.end() && s->start_ns <= t + gap_ns ? &*s : nullptr;
  }
};

Timeline timeline_of(const ReportContext& ctx, size_t i, int32_t stage) {
  Timeline t;
  const RankDigest& d = ctx.run.ranks[i];
  if (d.p2p_kernels.empty() || d.islands.empty()) return t;
  // What each p2p direction is, worked out once for all its kernels.
  constexpr uint8_t kUnknown = 4, kNotAChain = 5;  // beside the four Kinds
  std::vector<uint8_t> direction(d.p2p.size(), kUnknown);
  for (size_t k = 0; k < d.p2p.size(); ++k) {
    const P2pDigest& p = d.p2p[k];
    const auto it = ctx.comm_by_id.find(p.comm_id);
    if (it == ctx.comm_by_id.end()) continue;
    const CommInfo& comm = ctx.comms[it->second];
    if (p.peer < 0 || p.peer >= comm.size || comm.ranks[p.peer] < 0) continue;
    const auto peer = static_cast<size_t>(comm.ranks[p.peer]);
    if (peer >= ctx.coordinates.size()) continue;
    const int32_t peer_stage = ctx.coordinates[peer].stage;
    if (peer_stage == stage + 1) {
      direction[k] = static_cast<uint8_t>(p.send ? Kind::kActivationOut : Kind::kGradientIn);
    } else if (peer_stage == stage - 1) {
      direction[k] = static_cast<uint8_t>(p.send ? Kind::kGradientOut : Kind::kActivationIn);
    } else {
      direction[k] = kNotAChain;
    }
  }
  for (const P2pKernel& k : d.p2p_kernels) {
    const uint8_t kind = direction[k.p2p];
    if (kind == kUnknown) continue;
    if (kind == kNotAChain)
      return t;  // not a 1F1B chain (an interleaved ring, context parallel): not read here
    t.events.push_back(Event{ctx.aligned(i, k.start_ns), ctx.aligned(i, k.end_ns), static_cast<Kind>(kind)});
  }
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && outgoing(a.kind) && !outgoing(b.kind));
  });
  for (const ComputeIsland& s : d.islands)
    t.islands.push_back(Span{ctx.aligned(i, s.start_ns), ctx.aligned(i, s.end_ns)});
  if (!d.p2p_kernels_complete && !t.events.empty()) t.known_until_ns = t.events.back().start_ns;
  if (!d.islands_complete) t.known_until_ns = std::min(t.known_until_ns, t.islands.back().start_ns);
  t.usable = !t.events.empty();
  return t;
}

// The first stage's steps: from the first activation sent while none is in flight to the
// gradient that brings the count back to zero, widened to the compute islands of its first
// forward and last backward.
std::vector<Span> first_stage_steps(const Timeline& t, int64_t gap_ns) {
  std::vector<Span> steps;
  int64_t in_flight = 0, first_send = -1;
  for (const Event& e : t.events) {
    if (e.kind == Kind::kActivationOut) {
      if (in_flight == 0) first_send = e.start_ns;
      ++in_flight;
    } else if (e.kind == Kind::kGradientIn && in_flight > 0 && --in_flight == 0) {
      if (e.end_ns > t.known_until_ns) break;
      const Span* before = t.island_near(first_send - 1, 0);
      const Span* after = t.island_near(e.end_ns, gap_ns);
      steps.push_back(Span{before != nullptr ? std::min(before->start_ns, first_send) : first_send,
                           after != nullptr ? std::max(after->end_ns, e.end_ns) : e.end_ns});
    }
  }
  return steps;
}

// A transfer belongs to the step in which its data moved: a receive by when it completed (a
// stage may post the next step's receive early), a send by when it was launched.
std::vector<Event> events_in(const Timeline& t, const Span& window) {
  std::vector<Event> out;
  const int64_t margin = window.end_ns - window.start_ns;
  auto it = std::lower_bound(t.events.begin(), t.events.end(), window.start_ns - margin,
                             [](const Event& e, int64_t at) { return e.start_ns < at; });
  for (; it != t.events.end() && it->start_ns <= window.end_ns; ++it)
    if (it->after() >= window.start_ns && it->after() <= window.end_ns) out.push_back(*it);
  return out;
}

void add_step(const Timeline& t, const Span& window, bool first_stage, bool last_stage,
              P2pPipelineFigures& f) {
  const std::vector<Event> events = events_in(t, window);
  if (events.empty()) return;
  const auto begin = events.begin(), end = events.end();
  auto first_of = [&](Kind k) {
    const auto it = std::find_if(begin, end, [&](const Event& e) { return e.kind == k; });
    return it == end ? nullptr : &*it;
  };
  auto last_of = [&](Kind k) {
    const Event* found = nullptr;
    for (auto it = begin; it != end; ++it)
      if (it->kind == k) found = &*it;
    return found;
  };
  Span span = window;
  if (!first_stage) {
    const Event* in = first_of(Kind::kActivationIn);
    const Event* out = last_of(Kind::kGradientOut);
    if (in == nullptr || out == nullptr || out->start_ns <= in->end_ns) return;
    span = Span{in->end_ns, out->start_ns};
  }
  const int64_t length = span.end_ns - span.start_ns;
  if (length <= 0) return;
  ++f.steps;
  const Kind activation = first_stage ? Kind::kActivationOut : Kind::kActivationIn;
  f.microbatches +=
      static_cast<uint64_t>(std::count_if(begin, end, [&](const Event& e) { return e.kind == activation; }));
  f.bubble_sum += std::clamp(
      1.0 - static_cast<double>(t.work(span.start_ns, span.end_ns)) / static_cast<double>(length), 0.0, 1.0);
  if (!last_stage) {
    const Event* backward = first_of(Kind::kGradientIn);
    const Event* forward = last_of(Kind::kActivationOut);
    if (backward != nullptr && forward != nullptr) {
      const int64_t warmup = std::max<int64_t>(0, backward->end_ns - span.start_ns);
      const int64_t cooldown = std::max<int64_t>(0, span.end_ns - forward->start_ns);
      ++f.phase_steps;
      f.warmup_ns += warmup;
      f.cooldown_ns += cooldown;
      f.steady_ns += std::max<int64_t>(0, length - warmup - cooldown);
    }
  }
  // Per micro-batch: the compute between two transfers, named by what bounds it.
  auto add = [&](int64_t a, int64_t b, Kind from, Kind to, bool from_start, bool to_end) {
    if (b <= a) return;
    const int64_t w = t.work(a, b);
    const bool fwd_from = from_start || from == Kind::kActivationIn || from == Kind::kActivationOut;
    const bool bwd_from = from == Kind::kGradientIn;
    if (fwd_from && !to_end && to == Kind::kActivationOut) {
      ++f.forwards;
      f.forward_ns += w;
    } else if (bwd_from && (to_end || to == Kind::kGradientOut || to == Kind::kGradientIn)) {
      ++f.backwards;
      f.backward_ns += w;
    } else if ((from == Kind::kActivationIn && !to_end && to == Kind::kGradientOut) ||
               (bwd_from && !to_end && to == Kind::kActivationOut)) {
      ++f.pairs;
      f.pair_ns += w;
    }
  };
  if (first_stage) add(span.start_ns, begin->start_ns, Kind::kActivationIn, begin->kind, true, false);
  for (auto it = begin; it + 1 != end; ++it)
    add(it->after(), (it + 1)->start_ns, it->kind, (it + 1)->kind, false, false);
  const Event& last = *(end - 1);
  if (first_stage) add(last.after(), span.end_ns, last.kind, last.kind, false, true);
}

}  // namespace

std::vector<P2pPipelineFigures> p2p_pipeline_figures(const ReportContext& ctx) {
  const size_t n = ctx.run.ranks.size();
  std::vector<P2pPipelineFigures> out(n);
  if (ctx.pp < 2 || ctx.coordinates.empty()) return out;
  const int64_t gap_ns = ScanOptions{}.island_gap_ns;
  auto coordinates = [&](size_t i) -> const RankCoordinates* {
    const auto rank = static_cast<size_t>(ctx.run.global_rank[i]);
    return rank < ctx.coordinates.size() ? &ctx.coordinates[rank] : nullptr;
  };
  std::vector<Timeline> timelines(n);
  std::vector<std::vector<Span>> first_stage(n);  // the steps a first stage's ranks show
  parallel_for(n, ctx.options.threads, [&](size_t i) {
    const RankCoordinates* c = coordinates(i);
    if (c == nullptr) return;
    timelines[i] = timeline_of(ctx, i, c->stage);
    if (c->stage == 0 && timelines[i].usable) first_stage[i] = first_stage_steps(timelines[i], gap_ns);
  });
  std::map<std::pair<int32_t, int32_t>, std::vector<Span>> windows;  // (tp_rank, dp_rank) -> steps
  std::vector<Span> any_windows;
  for (size_t i = 0; i < n; ++i) {
    const RankCoordinates* c = coordinates(i);
    if (c == nullptr || c->stage != 0 || !timelines[i].usable) continue;
    if (any_windows.empty()) any_windows = first_stage[i];
    windows[{c->tp_rank, c->dp_rank}] = std::move(first_stage[i]);
  }
  parallel_for(n, ctx.options.threads, [&](size_t i) {
    const Timeline& t = timelines[i];
    if (!t.usable) return;
    const RankCoordinates& c = *coordinates(i);
    const auto it = windows.find({c.tp_rank, c.dp_rank});  // its own pipeline's first stage
    const std::vector<Span>& steps = it != windows.end() ? it->second : any_windows;
    for (const Span& w : steps) {
      if (w.end_ns > t.known_until_ns) break;
      add_step(t, w, c.stage == 0, c.stage == ctx.pp - 1, out[i]);
    }
    if (c.stage == 0 && !steps.empty()) {
      out[i].first_forward_ns = steps.front().start_ns;
    } else if (c.stage > 0) {
      const auto in = std::find_if(t.events.begin(), t.events.end(),
                                   [](const Event& e) { return e.kind == Kind::kActivationIn; });
      if (in != t.events.end()) out[i].first_forward_ns = in->end_ns;
    }
  });
  return out;
}

}  // namespace pipescope::analysis
