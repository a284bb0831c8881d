// What every layout of an interleaved pipeline that the planner could suggest costs at least: the
// search keeps an interleaved configuration whose uniform chunks run out of memory when some
// layout might fit, and ranks it by this bound until it plans it exactly (interleaved_layout.h
// then finds the layout, as `pipescope plan` does).
//
// A layout is any number of decoder layers per model chunk, the embedding in the first chunk and
// the output layer in the last. The planner suggests one whose pipeline time is within its time
// limit: (1 + time slack) times that of Megatron-LM's uniform chunks (the layers spread as evenly
// as they go where they do not divide), which this simulates on the screening costs. The bounds treat every
// layer as light, as lean and as fast as the lightest of the model's layer kinds in each respect, so they
// hold for every layout.
//
// Room: a stage with x layers holds at least extra + static + beta_s x (the activations) at its
// fullest instant, where beta_s is the least, over every way of spreading activations over the
// stage's chunks, of its fullest mix of chunks in flight (an LP per stage over the schedule's
// mixes); and its m micro-batches take m times its work, which the time limit caps. Both cap the
// whole layers a stage can take; when the caps cannot hold the model, no layout fits.
//
// Time: the pipeline takes at least m times the busiest stage's work, least when the layers are
// water-filled into the stages within their caps; at least one micro-batch's walk through every
// chunk and back; at least m times the slowest unit. The slowest stage's exposed sync and
// optimizer step are at least the average stage's (the exposed part is convex in the stage's
// sync and backward). Refined once a configuration nears the ranking: the schedule's graph is the
// same for every layout, so a path through it crosses the same ops in every layout; with wf_g, wb_g
// the forwards and backwards of chunk g that a mixture of paths crosses, every layout takes at
// least sum_g (wf_g F_g + wb_g B_g) plus the hops' p2p, least when each stage's layers sit in its
// lightest chunk and the lightest stages fill first within their caps. The mixture is the one
// whose least over layouts is largest, found once per shape by cutting planes (as
// partition_bound.h does for contiguous splits) on layers of one cost.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/schedule_dag.h"
#include "screening_costs.h"
#include "stage_screen.h"

namespace pipescope::planner::search_detail {

// Per stage, beta_s (the header): the least fullest multiple of the stage's activations.
std::vector<double> least_activation_multiples(const PipelineShape& shape);

// Per model chunk, the forward and backward ops a mixture of the schedule's paths crosses, and
// the p2p hops it makes (both ways together).
struct ChunkPathWeights {
  std::vector<double> forward, backward;
  double hops = 0;
};

// The mixture for one interleaved schedule after up to `rounds` rounds of cutting planes.
ChunkPathWeights layout_path_weights(const detail::ScheduleDag& dag, int rounds);

struct LayoutScreen {
  bool may_fit = false;  // false: no layout within the time limit fits
  double bound_s = 0;    // lower bound on every such layout's iteration time (when may_fit)
};

// The bounds of one interleaved pipeline shape, for any screening costs.
class LayoutBounds {
 public:
  static Expected<LayoutBounds> make(const PipelineShape& shape);

  // Under the allowed options (the schedule runs one on every stage): the best of them.
  LayoutScreen screen(const ScreeningCosts& costs, int allowed) const;
  // screen()'s bound raised by the schedule's paths (found on first use, then kept): what it
  // misses most is the pipeline's fill and drain, which matter where micro-batches are few.
  double path_bound_s(const ScreeningCosts& costs, int allowed);

 private:
  LayoutBounds(const PipelineShape& shape, detail::ScheduleDag dag)
      : stages_(shape.stages),
        chunks_(shape.stages * shape.virtual_chunks),
        micro_batches_(shape.micro_batches),
        layers_(shape.layers),
        uniform_layout_(shape.uniform_chunks),
        dag_(std::move(dag)),
        beta_(least_activation_multiples(shape)) {}
  // The water-filled bound on the pipeline; infinity when the stages cannot hold the model
  // within memory and the time limit.
  double pipeline_bound_s(const ScreeningCosts& costs, int option) const;
  double uniform_pipeline_s(const ScreeningCosts& costs, int option) const;
  double tail_s(const ScreeningCosts& costs, const StageSums& total, int option) const;

  int stages_ = 0, chunks_ = 0, micro_batches_ = 0;
  int64_t layers_ = 0;
  std::vector<int64_t> uniform_layout_;  // the planner's baseline (PipelineShape::uniform_chunks)
  detail::ScheduleDag dag_;
  std::vector<double> beta_;
  std::optional<ChunkPathWeights> paths_;  // found when path_bound_s() first needs them
  // Scratch, sized once: the screen allocates nothing per configuration.
  mutable std::vector<double> forward_s_, backward_s_, p2p_s_, scratch_, room_layers_, fixed_s_;
  std::vector<std::pair<double, int>> stage_order_;
};

}  // namespace pipescope::planner::search_detail
