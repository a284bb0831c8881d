// Per-stage op orders of the three schedules, transcribed from Megatron-LM
// (megatron/core/pipeline_parallel/schedules.py, d98e8a64) so that the simulator runs what the
// framework runs; GPipe after Huang et al. 2019 with the backward in autograd's order. Megatron-LM
// before its tunable schedule (4295be1a, November 2024) ran every forward first when m == p; it
// no longer does, and neither does this.
#include <algorithm>
#include <numeric>
#include <string>

#include "pipescope/planner/pipeline_schedule.h"

namespace pipescope::planner {
namespace {

Status validate(const ScheduleSpec& spec) {
  const std::string name(to_string(spec.kind));
  if (spec.stages < 1) return Error{"pipeline stages must be at least 1, got " + std::to_string(spec.stages)};
  if (spec.micro_batches < 1) {
    return Error{"micro-batches must be at least 1, got " + std::to_string(spec.micro_batches)};
  }
  if (spec.kind != ScheduleKind::kInterleaved) {
    if (spec.virtual_chunks != 1) {
      return Error{"the " + name + " schedule has one model chunk per stage; virtual chunks (--vpp) " +
                   std::to_string(spec.virtual_chunks) + " needs --schedule interleaved"};
    }
    if (spec.microbatch_group != 0) {
      return Error{"the " + name +
                   " schedule has one model chunk per stage; --vpp-group needs --schedule interleaved"};
    }
    return Status::Ok();
  }
  if (spec.virtual_chunks < 2) {
    return Error{"the interleaved schedule needs at least 2 virtual chunks per stage (--vpp), got " +
                 std::to_string(spec.virtual_chunks)};
  }
  if (spec.stages < 2) return Error{"the interleaved schedule needs at least 2 pipeline stages"};
  const int p = spec.stages, m = spec.micro_batches, n = microbatch_group(spec);
  if (spec.microbatch_group == 0) {
    // N = p: Megatron's checks below come to m being a multiple of p.
    if (m % p != 0) {
      return Error{"the interleaved schedule needs micro-batches (" + std::to_string(m) +
                   ") to be a multiple of pipeline stages (" + std::to_string(p) +
                   "); change --gbs/--mbs or --pp"};
    }
    return Status::Ok();
  }
  return check_microbatch_group(p, m, n);
}

std::vector<ScheduledOp> one_f_one_b(int p, int m, int s) {
  // Stage s runs p - s - 1 warm-up forwards, then alternates forward and backward, then drains.
  const int warmup = std::min(p - s - 1, m);
  const int steady = m - warmup;
  std::vector<ScheduledOp> ops;
  ops.reserve(2 * static_cast<size_t>(m));
  for (int i = 0; i < warmup; ++i) ops.push_back({OpKind::kForward, 0, i});
  for (int i = 0; i < steady; ++i) {
    ops.push_back({OpKind::kForward, 0, warmup + i});
    ops.push_back({OpKind::kBackward, 0, i});
  }
  for (int i = steady; i < m; ++i) ops.push_back({OpKind::kBackward, 0, i});
  return ops;
}

std::vector<ScheduledOp> gpipe(int m) {
  std::vector<ScheduledOp> ops;
  ops.reserve(2 * static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) ops.push_back({OpKind::kForward, 0, i});
  for (int i = m - 1; i >= 0; --i) ops.push_back({OpKind::kBackward, 0, i});
  return ops;
}

// Megatron-LM's schedule table (get_schedule_table): micro-batches in groups of n, each group
// through chunk 0, then chunk 1, ..., the last group taking the m mod n left over. Virtual
// micro-batch k of the table as (local chunk, micro-batch).
struct TableEntry {
  int chunk = 0;
  int micro_batch = 0;
};

TableEntry table_entry(int k, int m, int v, int n) {
  const int full_groups = m / n;
  const int in_full_groups = full_groups * n * v;
  if (k < in_full_groups) {
    const int offset = k % (n * v);
    return {offset / n, (k / (n * v)) * n + offset % n};
  }
  const int rest = m % n, offset = k - in_full_groups;
  return {offset / rest, full_groups * n + offset % rest};
}

std::vector<ScheduledOp> interleaved(int p, int m, int v, int n, int s) {
  // Forward k runs table entry k; backward k the same micro-batch through the chunks in reverse.
  // Every stage warms up with 2 (p - s - 1) + (v - 1) n forwards (all of them where that is more),
  // then alternates forward warm-up + k and backward k, then drains.
  const int total = m * v;
  const auto forward = [&](int k) {
    const TableEntry e = table_entry(k, m, v, n);
    return ScheduledOp{OpKind::kForward, e.chunk, e.micro_batch};
  };
  const auto backward = [&](int k) {
    const TableEntry e = table_entry(k, m, v, n);
    return ScheduledOp{OpKind::kBackward, v - 1 - e.chunk, e.micro_batch};
  };
  const int warmup = std::min(2 * (p - s - 1) + (v - 1) * n, total);
  const int steady = total - warmup;
  std::vector<ScheduledOp> ops;
  ops.reserve(2 * static_cast<size_t>(total));
  for (int k = 0; k < warmup; ++k) ops.push_back(forward(k));
  for (int k = 0; k < steady; ++k) {
    ops.push_back(forward(warmup + k));
    ops.push_back(backward(k));
  }
  for (int k = steady; k < total; ++k) ops.push_back(backward(k));
  return ops;
}

}  // namespace

Status check_microbatch_group(int64_t stages, int64_t micro_batches, int64_t group) {
  const std::string n = std::to_string(group), m = std::to_string(micro_batches), p = std::to_string(stages);
  if (group < stages || group > micro_batches) {
    return Error{"--vpp-group " + n + " must lie between --pp " + p + " and the " + m +
                 " micro-batches per step, as Megatron-LM requires"};
  }
  if (micro_batches % group != 0 && micro_batches % group < stages) {
    return Error{"--vpp-group " + n + " leaves a last group of " + std::to_string(micro_batches % group) +
                 " of the " + m + " micro-batches, fewer than --pp " + p +
                 "; Megatron-LM refuses that (it would stall the pipeline)"};
  }
  return Status::Ok();
}

int microbatch_group(const ScheduleSpec& spec) {
  return spec.microbatch_group > 0 ? spec.microbatch_group : spec.stages;
}

std::string_view to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe: return "gpipe";
    case ScheduleKind::kOneFOneB: return "1f1b";
    case ScheduleKind::kInterleaved: return "interleaved";
  }
  return "unknown";
}

Expected<std::vector<std::vector<ScheduledOp>>> schedule_op_order(const ScheduleSpec& spec) {
  if (Status s = validate(spec); !s.ok()) return s.error();
  std::vector<std::vector<ScheduledOp>> order(static_cast<size_t>(spec.stages));
  for (int s = 0; s < spec.stages; ++s) {
    switch (spec.kind) {
      case ScheduleKind::kGPipe: order[s] = gpipe(spec.micro_batches); break;
      case ScheduleKind::kOneFOneB: order[s] = one_f_one_b(spec.stages, spec.micro_batches, s); break;
      case ScheduleKind::kInterleaved:
        order[s] =
            interleaved(spec.stages, spec.micro_batches, spec.virtual_chunks, microbatch_group(spec), s);
        break;
    }
  }
  return order;
}

Expected<std::vector<std::vector<ChunkMix>>> in_flight_mixes(const ScheduleSpec& spec) {
  auto order = schedule_op_order(spec);
  if (!order.ok()) return order.error();
  const auto covers = [](const ChunkMix& a, const ChunkMix& b) {
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k] < b[k]) return false;
    return true;
  };
  std::vector<std::vector<ChunkMix>> mixes;
  mixes.reserve(order->size());
  ChunkMix alive(static_cast<size_t>(spec.virtual_chunks));
  for (const auto& ops : *order) {
    // One op at a time per stage: counting up at each forward and down after each backward, in
    // order, is the exact mix alive at every instant; it is fullest right after a forward. The
    // kept mixes stay few (each covers what it replaced), so this is linear in the ops.
    std::fill(alive.begin(), alive.end(), 0);
    std::vector<ChunkMix> kept;
    for (const ScheduledOp& op : ops) {
      alive[static_cast<size_t>(op.chunk)] += op.kind == OpKind::kForward ? 1 : -1;
      if (op.kind != OpKind::kForward) continue;
      if (std::any_of(kept.begin(), kept.end(), [&](const ChunkMix& mix) { return covers(mix, alive); }))
        continue;
      std::erase_if(kept, [&](const ChunkMix& mix) { return covers(alive, mix); });
      kept.push_back(alive);
    }
    std::sort(kept.begin(), kept.end());
    mixes.push_back(std::move(kept));
  }
  return mixes;
}

int64_t peak_activation_bytes(const std::vector<ChunkMix>& mixes, const std::vector<int64_t>& chunk_bytes) {
  int64_t peak = 0;
  for (const ChunkMix& mix : mixes) {
    int64_t bytes = 0;
    for (size_t k = 0; k < mix.size(); ++k) bytes += mix[k] * chunk_bytes[k];
    peak = std::max(peak, bytes);
  }
  return peak;
}

std::vector<int> in_flight_counts(const std::vector<std::vector<ChunkMix>>& mixes) {
  std::vector<int> peak;
  peak.reserve(mixes.size());
  for (const auto& stage : mixes) {
    int most = 0;
    for (const ChunkMix& mix : stage) most = std::max(most, std::accumulate(mix.begin(), mix.end(), 0));
    peak.push_back(most);
  }
  return peak;
}

Expected<std::vector<int>> activations_in_flight(const ScheduleSpec& spec) {
  auto mixes = in_flight_mixes(spec);
  if (!mixes.ok()) return mixes.error();
  return in_flight_counts(*mixes);
}

}  // namespace pipescope::planner
