#include "pipescope/planner/schedule_dag.h"

#include <algorithm>
#include <limits>
#include <string>

namespace pipescope::planner::detail {

Expected<ScheduleDag> ScheduleDag::build(const ScheduleSpec& spec) {
  auto order = schedule_op_order(spec);
  if (!order.ok()) return order.error();

  ScheduleDag dag;
  dag.spec_ = spec;
  dag.order_ = std::move(*order);
  const int p = spec.stages;
  const int m = spec.micro_batches;
  const int chunks = dag.model_chunks();
  const size_t total = 2 * static_cast<size_t>(chunks) * static_cast<size_t>(m);

  // Where each (model chunk, micro-batch) forward and backward landed in the topological order.
  std::vector<int> forward_at(static_cast<size_t>(chunks) * m, -1);
  std::vector<int> backward_at(static_cast<size_t>(chunks) * m, -1);
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<int> last(static_cast<size_t>(p), -1);
  dag.ops_.reserve(total);

  // Kahn's algorithm with one cursor per stage: a stage's ops must keep their order, so only
  // the op under its cursor can be placed, once its input op has been placed.
  while (dag.ops_.size() < total) {
    bool progressed = false;
    for (int s = 0; s < p; ++s) {
      const auto& ops = dag.order_[s];
      while (next[s] < ops.size()) {
        const ScheduledOp& op = ops[next[s]];
        const int g = op.chunk * p + s;
        const size_t key = static_cast<size_t>(g) * m + op.micro_batch;
        int input = -1;
        int boundary = -1;
        if (op.kind == OpKind::kForward) {
          if (g > 0) {
            input = forward_at[key - m];
            boundary = g - 1;
            if (input < 0) break;
          }
        } else {
          // The backward needs its own forward on this stage, earlier in the same order.
          if (forward_at[key] < 0) {
            return Error{"internal: schedule runs a backward before its forward on stage " +
                         std::to_string(s)};
          }
          input = forward_at[key];
          if (g + 1 < chunks) {
            input = backward_at[key + m];
            boundary = g;
            if (input < 0) break;
          }
        }
        DagOp node;
        node.stage = s;
        node.position = static_cast<int>(next[s]);
        node.model_chunk = g;
        node.op = op;
        node.prev_on_stage = last[s];
        node.input = input;
        node.p2p_boundary = boundary;
        const int index = static_cast<int>(dag.ops_.size());
        (op.kind == OpKind::kForward ? forward_at : backward_at)[key] = index;
        last[s] = index;
        dag.ops_.push_back(node);
        ++next[s];
        progressed = true;
      }
    }
    if (!progressed) return Error{"internal: the " + std::string(to_string(spec.kind)) + " order deadlocks"};
  }
  const size_t n = dag.ops_.size();
  dag.prev_.assign(n, 0);
  dag.input_.assign(n, 0);
  dag.cost_.assign(n, 0);
  dag.delay_.assign(n, 0);
  dag.stage_ops_.assign(static_cast<size_t>(p), {});
  for (size_t i = 0; i < n; ++i) {
    const DagOp& node = dag.ops_[i];
    const bool forward = node.op.kind == OpKind::kForward;
    dag.prev_[i] = node.prev_on_stage + 1;
    dag.input_[i] = node.input + 1;
    dag.cost_[i] = forward ? node.model_chunk : chunks + node.model_chunk;
    if (node.p2p_boundary >= 0) dag.delay_[i] = 1 + (forward ? 0 : chunks - 1) + node.p2p_boundary;
    dag.stage_ops_[node.stage].push_back(static_cast<int>(i) + 1);
    dag.on_stage_.push_back(node.stage);
  }
  dag.costs_.assign(2 * static_cast<size_t>(chunks), 0.0);
  dag.delays_.assign(1 + 2 * static_cast<size_t>(chunks - 1), 0.0);
  return dag;
}

void ScheduleDag::load(std::span<const double> forward_s, std::span<const double> backward_s,
                       std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s) const {
  const size_t chunks = static_cast<size_t>(model_chunks());
  std::copy(forward_s.begin(), forward_s.end(), costs_.begin());
  std::copy(backward_s.begin(), backward_s.end(), costs_.begin() + static_cast<std::ptrdiff_t>(chunks));
  if (spec_.p2p_blocks) {
    // The sender's op holds its stage through the transfer; the receiver waits for that op's
    // end. A path's hops each follow a sending op on it, so the bounds that add a p2p per hop
    // to its ops' times stay below the path's length.
    for (size_t g = 0; g < p2p_forward_s.size(); ++g) costs_[g] += p2p_forward_s[g];
    for (size_t g = 0; g < p2p_backward_s.size(); ++g) costs_[chunks + g + 1] += p2p_backward_s[g];
    return;
  }
  if (!p2p_forward_s.empty()) std::copy(p2p_forward_s.begin(), p2p_forward_s.end(), delays_.begin() + 1);
  if (!p2p_backward_s.empty()) {
    std::copy(p2p_backward_s.begin(), p2p_backward_s.end(),
              delays_.begin() + static_cast<std::ptrdiff_t>(chunks));
  }
}

double ScheduleDag::forward_pass(double* end) const {
  // end[0] is the "nothing" op; op i of the topological order is end[i + 1].
  end[0] = 0;
  const size_t n = ops_.size();
  for (size_t i = 0; i < n; ++i) {
    end[i + 1] = std::max(end[prev_[i]], end[input_[i]] + delays_[delay_[i]]) + costs_[cost_[i]];
  }
  // Every backward is followed by the one on the stage above, so stage 0's last op ends last.
  return end[stage_ops_[0].back()];
}

double ScheduleDag::run(std::span<const double> forward_s, std::span<const double> backward_s,
                        std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
                        std::vector<double>& end_s, std::vector<double>* start_s) const {
  load(forward_s, backward_s, p2p_forward_s, p2p_backward_s);
  end_s.resize(ops_.size() + 1);
  const double total = forward_pass(end_s.data());
  if (start_s != nullptr) {
    start_s->resize(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) {
      (*start_s)[i] = std::max(end_s[prev_[i]], end_s[input_[i]] + delays_[delay_[i]]);
    }
  }
  end_s.erase(end_s.begin());  // back to one entry per op
  return total;
}

double ScheduleDag::iteration_time(std::span<const double> forward_s, std::span<const double> backward_s,
                                   std::span<const double> p2p_forward_s,
                                   std::span<const double> p2p_backward_s,
                                   std::vector<double>& scratch) const {
  load(forward_s, backward_s, p2p_forward_s, p2p_backward_s);
  scratch.resize(ops_.size() + 1);
  return forward_pass(scratch.data());
}

ScheduleDag::PathLengths ScheduleDag::longest_paths(int stage, std::span<const double> forward_s,
                                                    std::span<const double> backward_s,
                                                    std::span<const double> p2p_forward_s,
                                                    std::span<const double> p2p_backward_s,
                                                    std::vector<double>& scratch) const {
  load(forward_s, backward_s, p2p_forward_s, p2p_backward_s);
  const size_t n = ops_.size();
  // Per op, interleaved: [2i] the longest path to its end, [2i + 1] the longest among paths that
  // ran an op of `stage` (-inf while none can have). Op 0 is the "nothing" op, as in
  // forward_pass(); its second value stays -inf so that only real visits count.
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  scratch.resize(2 * (n + 1));
  double* v = scratch.data();
  v[0] = 0;
  v[1] = kNone;
  for (size_t i = 0; i < n; ++i) {
    const double* prev = v + 2 * static_cast<size_t>(prev_[i]);
    const double* input = v + 2 * static_cast<size_t>(input_[i]);
    const double delay = delays_[delay_[i]];
    const double cost = costs_[cost_[i]];
    const double any = std::max(prev[0], input[0] + delay) + cost;
    v[2 * i + 2] = any;
    v[2 * i + 3] = on_stage_[i] == stage ? any : std::max(prev[1], input[1] + delay) + cost;
  }
  const size_t sink = static_cast<size_t>(stage_ops_[0].back());
  return PathLengths{v[2 * sink], v[2 * sink + 1]};
}

void ScheduleDag::critical_path(std::span<const double> forward_s, std::span<const double> backward_s,
                                std::span<const double> p2p_forward_s, std::span<const double> p2p_backward_s,
                                std::vector<double>& scratch, PathCounts& out) const {
  load(forward_s, backward_s, p2p_forward_s, p2p_backward_s);
  scratch.resize(ops_.size() + 1);
  double* end = scratch.data();
  forward_pass(end);
  const int chunks = model_chunks();
  out.forward_ops.assign(static_cast<size_t>(chunks), 0);
  out.backward_ops.assign(static_cast<size_t>(chunks), 0);
  out.forward_hops = out.backward_hops = 0;
  // Back from the last op: each op started when its stage's previous op or its input (plus the
  // p2p) ended, whichever was later; that one is on the path.
  for (int at = stage_ops_[0].back(); at != 0;) {
    const size_t i = static_cast<size_t>(at - 1);
    const bool forward = cost_[i] < chunks;
    const int chunk = forward ? cost_[i] : cost_[i] - chunks;
    ++(forward ? out.forward_ops : out.backward_ops)[static_cast<size_t>(chunk)];
    const double via_input = end[input_[i]] + delays_[delay_[i]];
    if (input_[i] != 0 && via_input >= end[prev_[i]]) {
      if (delay_[i] != 0) ++(forward ? out.forward_hops : out.backward_hops);
      at = input_[i];
    } else {
      at = prev_[i];
    }
  }
}

}  // namespace pipescope::planner::detail
