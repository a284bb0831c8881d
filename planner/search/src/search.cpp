// The search in three passes, so that a 2,048-GPU search of a 70B model takes well under a second
// on one core (docs/benchmarks.md, "Planner"):
//
// 1. Enumerate (search_space.h). Whole families are refused on the first check they fail: TP
//    over a node or not dividing the heads, then resolve_config()'s own checks per layout.
// 2. Screen every configuration (stage_screen.h) with costs built once per (layout, ZeRO) key on
//    a model cut to one period of layer kinds (screening_costs.h): the memory of its default
//    split, exact, and a lower bound on its iteration time. What does not fit on the default
//    split is tested for any split that fits (a greedy that is exact for feasibility); what fits
//    nowhere is refused as out of memory. An interleaved configuration whose uniform chunks do
//    not fit is kept when no bound rules out every layout (layout_bound.h).
// 3. Rank lazily: a heap ordered by the best known lower bound. Popping a configuration refines
//    it one step: a loose any-split bound becomes the bound of its balanced split (an interleaved
//    configuration's, the bound of the schedule's paths over every layout), a bound becomes the
//    exact plan (exact_plan.h), and an exact plan is final. Bounds never exceed the
//    exact time, so exact plans leave the heap fastest first and the search stops once `top` of
//    them are out and nothing left can tie. Only those few configurations pay for the full cost
//    model and the schedule simulator.
#include "pipescope/planner/search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <queue>
#include <tuple>

#include "exact_plan.h"
#include "layout_bound.h"
#include "pipescope/planner/interleaved_layout.h"
#include "screening_costs.h"
#include "search_space.h"
#include "stage_screen.h"

namespace pipescope::planner {
namespace {

using search_detail::ExactPlanner;
using search_detail::PipelineShape;
using search_detail::RejectionTally;
using search_detail::Screened;
using search_detail::ScreeningCosts;
using search_detail::SearchSpace;
using search_detail::UniformScreen;

// Bounds are sums in another order than the simulator's; keep them a hair below.
constexpr double kBoundSlack = 1 - 1e-9;

Status check_request(const SearchRequest& r) {
  if (r.gpus < 1) return Error{"--gpus must be at least 1"};
  if (r.global_batch < 1)
    return Error{"the search needs --gbs: configurations are compared at one global batch size"};
  if (r.seq_length < 0) return Error{"--seq must be at least 1"};
  const SearchConstraints& c = r.constraints;
  if (c.cp < 1 || c.ep < 1) return Error{"--cp and --ep must be at least 1"};
  if (r.gpus % c.cp != 0) {
    return Error{"--gpus " + std::to_string(r.gpus) + " is not a multiple of --cp " + std::to_string(c.cp)};
  }
  if (c.max_tp < 0) return Error{"the TP limit must not be negative"};
  const int64_t replica_gpus = r.gpus / c.cp;
  if (c.tp && (*c.tp < 1 || replica_gpus % *c.tp != 0)) {
    return Error{"--tp " + std::to_string(*c.tp) + " does not divide the " + std::to_string(replica_gpus) +
                 " GPUs of a model replica (--gpus / --cp)"};
  }
  if (c.pp && (*c.pp < 1 || replica_gpus % (*c.pp * c.tp.value_or(1)) != 0)) {
    return Error{"--pp " + std::to_string(*c.pp) + " does not divide the " +
                 std::to_string(replica_gpus / c.tp.value_or(1)) + " GPUs left for it (--gpus / --cp" +
                 (c.tp ? " / --tp" : "") + ")"};
  }
  if (c.vpp && *c.vpp < 1) return Error{"--vpp must be at least 1"};
  if (c.micro_batches.empty() || c.schedules.empty() || c.recompute.empty() || c.zero_stages.empty()) {
    return Error{"the search constraints leave nothing to search: every list needs at least one value"};
  }
  for (int64_t b : c.micro_batches) {
    if (b < 1) return Error{"micro-batch sizes must be at least 1"};
  }
  for (int z : c.zero_stages) {
    if (z < 0 || z > 3) return Error{"ZeRO stages are 0, 1, 2 or 3"};
  }
  if (r.top < 0) return Error{"--top must not be negative"};
  if (Status s = models::validate(r.model); !s.ok()) return s;
  return check_profile_matches(r.profile, r.cluster.gpu);
}

struct Layout {
  ParallelConfig config;  // resolved, ZeRO and recompute left at their defaults
  int shape = 0;
};

struct Candidate {
  int32_t layout = 0;
  int32_t costs = 0;
  RecomputeChoice recompute = RecomputeChoice::kNone;
  bool uniform_fits = true;
  bool any_layout = false;  // interleaved, kept for layouts other than the uniform chunks
  bool planned = false;
  int32_t split = -1;  // balanced split, once computed
  int64_t uniform_peak_bytes = 0;
};

struct CostsEntry {
  ScreeningCosts costs;
  int zero = 0;
  int64_t shard = 0;
};

struct HeapEntry {
  double key_s = 0;  // lower bound, or the exact iteration time at level 2
  int level = 0;     // 0: any-split bound, 1: bound of its split, 2: exact
  int32_t candidate = 0;
  int32_t result = -1;
  bool operator>(const HeapEntry& o) const {
    return std::tie(key_s, candidate, level) > std::tie(o.key_s, o.candidate, o.level);
  }
};

class Searcher {
 public:
  Searcher(const SearchRequest& request, int64_t seq_length)
      : request_(request),
        space_(request.model, request.constraints),
        reduced_{search_detail::reduced_model(request.model), request.cluster, request.profile, {}},
        exact_(request, seq_length),
        seq_length_(seq_length) {}

  Status enumerate();
  // Nothing enumerated: not even a refusal to report.
  bool empty() const { return candidates_.empty() && rejected_.total() == 0 && stats_.duplicates == 0; }
  Status rank(SearchResult& result);
  void finish(SearchResult& result);

 private:
  Status enumerate_layout(int64_t tp, int64_t pp, int64_t mbs);
  Status screen(const Layout& layout, int32_t layout_index, int32_t costs_index);
  Expected<int> shape_for(const ParallelConfig& config);
  Expected<search_detail::LayoutBounds*> layout_bounds(int shape);
  ParallelConfig config_of(const Candidate& c) const;

  const SearchRequest& request_;
  SearchSpace space_;
  PlanInputs reduced_;
  ExactPlanner exact_;
  int64_t seq_length_ = 0;

  RejectionTally rejected_;
  std::vector<PipelineShape> shapes_;
  std::map<std::tuple<int, int, int, int>, int> shape_index_;
  std::vector<Layout> layouts_;
  std::vector<CostsEntry> costs_;
  std::vector<Candidate> candidates_;
  std::vector<HeapEntry> initial_;
  std::vector<std::vector<int>> split_boundaries_, split_options_;
  std::map<int, search_detail::LayoutBounds> layout_bounds_;  // per interleaved shape, once needed
  UniformScreen screen_;
  std::vector<int> options_;
  std::vector<RankedPlan> parked_;  // exact plans waiting in the heap
  SearchStats stats_;
  int64_t balanced_ = 0;
};

Expected<search_detail::LayoutBounds*> Searcher::layout_bounds(int shape) {
  auto it = layout_bounds_.find(shape);
  if (it == layout_bounds_.end()) {
    auto bounds = search_detail::LayoutBounds::make(shapes_[static_cast<size_t>(shape)]);
    if (!bounds.ok()) return bounds.error();
    it = layout_bounds_.emplace(shape, std::move(*bounds)).first;
  }
  return &it->second;
}

Expected<int> Searcher::shape_for(const ParallelConfig& c) {
  const auto key = std::tuple{static_cast<int>(c.schedule), static_cast<int>(c.pp),
                              static_cast<int>(c.micro_batches()), static_cast<int>(c.vpp)};
  if (auto it = shape_index_.find(key); it != shape_index_.end()) return it->second;
  auto shape =
      search_detail::pipeline_shape(c.schedule, static_cast<int>(c.pp), static_cast<int>(c.micro_batches()),
                                    static_cast<int>(c.vpp), request_.model.num_layers);
  if (!shape.ok()) return shape.error();
  shape->p2p_blocks = pipeline_p2p_blocks(c);  // the framework is the search's, the schedule the key's
  shapes_.push_back(std::move(*shape));
  shape_index_.emplace(key, static_cast<int>(shapes_.size()) - 1);
  return static_cast<int>(shapes_.size()) - 1;
}

Status Searcher::enumerate() {
  const SearchConstraints& k = request_.constraints;
  const int64_t replica_gpus = request_.gpus / k.cp;
  const int64_t max_tp = k.max_tp > 0 ? k.max_tp : request_.cluster.gpus_per_node;
  for (int64_t tp : search_detail::divisors(replica_gpus)) {
    if (k.tp && tp != *k.tp) continue;  // not in the space asked for
    if (tp > max_tp) {
      rejected_.add(k.max_tp > 0
                        ? "tp " + std::to_string(tp) + " exceeds the limit of " + std::to_string(max_tp)
                        : "tp " + std::to_string(tp) + " exceeds the " + std::to_string(max_tp) +
                              " GPUs of a node (tensor parallelism stays on NVLink)",
                    space_.configs_below_tp(tp, replica_gpus));
      continue;
    }
    // What resolve_config() would say last, said first: the whole TP family shares it.
    models::CostOptions o;
    o.seq_length = seq_length_ / k.cp;
    o.tensor_parallel = tp;
    o.sequence_parallel = tp > 1;
    o.expert_parallel = k.ep;
    if (Status s = models::check_cost_options(request_.model, o); !s.ok()) {
      rejected_.add(s.error().message, space_.configs_below_tp(tp, replica_gpus));
      continue;
    }
    for (int64_t pp : search_detail::divisors(replica_gpus / tp)) {
      if (k.pp && pp != *k.pp) continue;
      for (int64_t mbs : k.micro_batches) {
        if (Status s = enumerate_layout(tp, pp, mbs); !s.ok()) return s;
      }
    }
  }
  return Status::Ok();
}

Status Searcher::enumerate_layout(int64_t tp, int64_t pp, int64_t mbs) {
  const SearchConstraints& k = request_.constraints;
  const int64_t dp = request_.gpus / (k.cp * tp * pp);
  const size_t first_layout = layouts_.size();
  for (const search_detail::ScheduleVariant& variant : space_.schedules(pp)) {
    ParallelConfig c;
    c.gpus = request_.gpus;
    c.tp = tp;
    c.pp = pp;
    c.vpp = variant.vpp;
    c.cp = k.cp;
    c.ep = k.ep;
    c.micro_batch = mbs;
    c.global_batch = request_.global_batch;
    c.seq_length = seq_length_;
    c.sequence_parallel = tp > 1;
    c.flash_attention = request_.flash_attention;
    c.optimizer = request_.optimizer;
    c.framework = request_.framework;
    c.grad_sync = request_.grad_sync;
    c.schedule = variant.kind;
    if (variant.kind == ScheduleKind::kInterleaved && request_.model.num_layers % (pp * variant.vpp) != 0) {
      // Megatron-LM takes such chunks from a layout string; the baseline spreads the layers evenly.
      c.chunk_layers = balanced_layout(request_.model.num_layers, static_cast<int>(pp * variant.vpp));
    }
    auto resolved = resolve_config(request_.model, c);
    if (!resolved.ok()) {
      rejected_.add(resolved.error().message, space_.configs_below_schedule(variant.kind, dp));
      continue;
    }
    auto shape = shape_for(*resolved);
    if (!shape.ok()) return shape.error();
    layouts_.push_back({std::move(*resolved), *shape});
  }
  if (layouts_.size() == first_layout) return Status::Ok();

  // One screening cost model per ZeRO variant, shared by the schedules and recompute choices.
  for (const search_detail::ZeroVariant& z : space_.zero_variants(dp)) {
    reduced_.config = layouts_[first_layout].config;
    reduced_.config.zero_stage = z.zero;
    reduced_.config.zero_shard = z.shard;
    if (Status s = check_optimizer_sharding(request_.model, reduced_.config); !s.ok()) {
      int64_t configs = 0;
      for (size_t l = first_layout; l < layouts_.size(); ++l)
        configs += static_cast<int64_t>(space_.recompute(layouts_[l].config.schedule).size());
      rejected_.add(s.error().message, configs);
      continue;
    }
    auto costs = search_detail::screening_costs(reduced_);
    if (!costs.ok()) return costs.error();
    ++stats_.cost_models;
    costs_.push_back({std::move(*costs), z.zero, z.shard});
    const auto costs_index = static_cast<int32_t>(costs_.size() - 1);
    for (size_t l = first_layout; l < layouts_.size(); ++l) {
      if (Status s = screen(layouts_[l], static_cast<int32_t>(l), costs_index); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

Status Searcher::screen(const Layout& layout, int32_t layout_index, int32_t costs_index) {
  const ScreeningCosts& costs = costs_[static_cast<size_t>(costs_index)].costs;
  const PipelineShape& shape = shapes_[static_cast<size_t>(layout.shape)];
  const ParallelConfig& c = layout.config;
  const bool interleaved = c.schedule == ScheduleKind::kInterleaved;
  const std::vector<RecomputeChoice>& searched = request_.constraints.recompute;
  screen_.prepare(costs, shape);
  for (RecomputeChoice choice : space_.recompute(c.schedule)) {
    const int allowed = search_detail::allowed_options(choice, c.schedule);
    const Screened s = screen_.screen(allowed, options_);
    // An interleaved configuration is ranked on the layout plan suggests, which can be faster than
    // the uniform chunks (a lighter last stage): its key bounds every layout, not the uniform one.
    search_detail::LayoutScreen any_layout;
    if (interleaved) {
      auto bounds = layout_bounds(layout.shape);
      if (!bounds.ok()) return bounds.error();
      any_layout = (*bounds)->screen(costs, allowed);
    }
    if (choice == RecomputeChoice::kAuto && s.fits && s.single_option) {
      // The same plan as the fixed mode it chose everywhere, when that mode is searched too.
      const auto same = static_cast<RecomputeChoice>(s.option);
      if (std::find(searched.begin(), searched.end(), same) != searched.end()) {
        ++stats_.duplicates;
        continue;
      }
    }
    Candidate cand{layout_index,           costs_index, choice, s.fits,
                   interleaved && !s.fits, false,       -1,     s.peak_bytes};
    const auto index = static_cast<int32_t>(candidates_.size());
    if (s.fits) {
      candidates_.push_back(cand);
      // The uniform chunks fit, so some layout does: the bound is only numerically out of reach.
      if (interleaved) {
        initial_.push_back({(any_layout.may_fit ? any_layout.bound_s : 0) * kBoundSlack, 0, index, -1});
      } else {
        initial_.push_back({s.bound_s * kBoundSlack, 1, index, -1});
      }
    } else if (!interleaved && search_detail::any_split_fits(costs, shape, allowed)) {
      candidates_.push_back(cand);
      initial_.push_back(
          {search_detail::any_split_bound_s(costs, shape, allowed) * kBoundSlack, 0, index, -1});
    } else if (any_layout.may_fit) {
      candidates_.push_back(cand);
      initial_.push_back({any_layout.bound_s * kBoundSlack, 0, index, -1});
    } else {
      const CostsEntry& e = costs_[static_cast<size_t>(costs_index)];
      rejected_.add_out_of_memory(c.tp, c.pp, interleaved, s.peak_bytes, costs.capacity_bytes,
                                  {c.micro_batch, e.zero, choice});
    }
  }
  return Status::Ok();
}

ParallelConfig Searcher::config_of(const Candidate& cand) const {
  ParallelConfig c = layouts_[static_cast<size_t>(cand.layout)].config;
  const CostsEntry& e = costs_[static_cast<size_t>(cand.costs)];
  c.zero_stage = e.zero;
  c.zero_shard = e.shard;
  c.recompute = cand.recompute;
  return c;
}

Status Searcher::rank(SearchResult& result) {
  stats_.feasible = static_cast<int64_t>(candidates_.size());
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, std::greater<>> heap(std::greater<>{},
                                                                              std::move(initial_));
  const auto top = static_cast<size_t>(request_.top);
  while (!heap.empty()) {
    HeapEntry e = heap.top();
    if (top > 0 && result.ranked.size() >= top && e.key_s > result.ranked[top - 1].iteration_s) break;
    heap.pop();
    Candidate& cand = candidates_[static_cast<size_t>(e.candidate)];
    const ScreeningCosts& costs = costs_[static_cast<size_t>(cand.costs)].costs;
    const Layout& layout = layouts_[static_cast<size_t>(cand.layout)];
    const PipelineShape& shape = shapes_[static_cast<size_t>(layout.shape)];
    const int allowed = search_detail::allowed_options(cand.recompute, layout.config.schedule);
    if (e.level == 0 && layout.config.schedule == ScheduleKind::kInterleaved) {
      auto bounds = layout_bounds(layout.shape);
      if (!bounds.ok()) return bounds.error();
      e.key_s = std::max(e.key_s, (*bounds)->path_bound_s(costs, allowed) * kBoundSlack);
      e.level = 1;
      heap.push(e);
    } else if (e.level == 0) {
      std::vector<int> boundaries, options;
      if (!search_detail::balanced_split(costs, shape, allowed, boundaries, options)) {
        return Error{"internal: a split that fits was found and then lost for " + describe(config_of(cand))};
      }
      ++balanced_;
      cand.split = static_cast<int32_t>(split_boundaries_.size());
      e.key_s =
          std::max(e.key_s, search_detail::split_bound_s(costs, shape, boundaries, options) * kBoundSlack);
      split_boundaries_.push_back(std::move(boundaries));
      split_options_.push_back(std::move(options));
      e.level = 1;
      heap.push(e);
    } else if (e.level == 1) {
      const std::vector<int>* boundaries = &shape.uniform_boundaries;
      const std::vector<int>* options = &options_;
      if (layout.config.schedule == ScheduleKind::kInterleaved) {
        options_.clear();  // the plan's layout search places its layers
      } else if (cand.uniform_fits) {
        screen_.prepare(costs, shape);
        (void)screen_.screen(allowed, options_);
      } else {
        boundaries = &split_boundaries_[static_cast<size_t>(cand.split)];
        options = &split_options_[static_cast<size_t>(cand.split)];
      }
      auto plan = exact_.plan(config_of(cand), *boundaries, *options, cand.uniform_fits);
      if (!plan.ok()) return plan.error();
      ++stats_.exact_plans;
      cand.planned = true;
      if (!plan->fits) {
        // Screening and the report round bytes differently; at the very edge the report wins. An
        // interleaved one kept for other layouts is refused when the planner finds none that fits;
        // the refusal quotes its uniform chunks, as for those refused before.
        const ParallelConfig refused = config_of(cand);
        const bool interleaved = refused.schedule == ScheduleKind::kInterleaved;
        rejected_.add_out_of_memory(refused.tp, refused.pp, interleaved,
                                    interleaved ? plan->uniform_peak_memory_bytes : plan->peak_memory_bytes,
                                    costs.capacity_bytes,
                                    {refused.micro_batch, refused.zero_stage, refused.recompute});
        --stats_.feasible;
        continue;
      }
      if (!cand.uniform_fits) plan->uniform_peak_memory_bytes = cand.uniform_peak_bytes;
      e.key_s = plan->iteration_s;
      e.level = 2;
      // Exact plans leave the heap in order of time; park this one until it is the least.
      parked_.push_back(std::move(*plan));
      e.result = static_cast<int32_t>(parked_.size() - 1);
      heap.push(e);
    } else {
      result.ranked.push_back(std::move(parked_[static_cast<size_t>(e.result)]));
    }
  }
  // Equal times: the smaller peak first, then enumeration order (stable).
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.iteration_s != b.iteration_s ? a.iteration_s < b.iteration_s
                                          : a.peak_memory_bytes < b.peak_memory_bytes;
  });
  if (top > 0 && result.ranked.size() > top) result.ranked.resize(top);
  return Status::Ok();
}

void Searcher::finish(SearchResult& result) {
  result.rejected = rejected_.sorted();
  stats_.rejected = rejected_.total();
  for (const Candidate& c : candidates_) stats_.might_fit += c.any_layout && !c.planned;
  stats_.feasible -= stats_.might_fit;
  // Every configuration enumerated ends up in exactly one of these.
  stats_.candidates = stats_.feasible + stats_.might_fit + stats_.duplicates + stats_.rejected;
  stats_.cost_models += exact_.cost_models_built();
  result.stats = stats_;
  result.seq_length = seq_length_;
  result.capacity_bytes = costs_.empty() ? 0 : costs_.front().costs.capacity_bytes;
  result.notes.emplace_back(
      "sequence parallelism is on whenever tp > 1, as Megatron-LM recommends (Korthikanti et al. 2022): it "
      "only removes activation memory");
  result.notes.emplace_back(
      "plans use the split frameworks run by default (uniform), interleaved ones the layout `pipescope plan` "
      "suggests; a configuration whose uniform split runs out of memory is ranked on the time-balanced split "
      "that fits, which `pipescope plan --balance time` refines, an interleaved one on a layout that fits "
      "where one does");
  if (balanced_ > 0) {
    result.notes.push_back(std::to_string(balanced_) +
                           " configurations needed a balanced split to be planned");
  }
  if (stats_.might_fit > 0) {
    result.notes.push_back(
        std::to_string(stats_.might_fit) +
        " interleaved configurations whose uniform chunks do not fit might fit on other layouts; "
        "their bounds were beyond the last ranked time, so they were not planned");
  }
  if (request_.top > 0 && stats_.feasible > static_cast<int64_t>(result.ranked.size())) {
    result.notes.push_back("the " + std::to_string(result.ranked.size()) + " fastest of " +
                           std::to_string(stats_.feasible) +
                           " feasible configurations are ranked; the others were bounded, not planned");
  }
}

}  // namespace

Expected<SearchResult> search(const SearchRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  if (Status s = check_request(request); !s.ok()) return s.error();
  // The sequence length every configuration shares: resolve_config()'s default when not given.
  ParallelConfig probe;
  probe.global_batch = 1;
  probe.seq_length = request.seq_length;
  auto resolved = resolve_config(request.model, probe);
  if (!resolved.ok()) return resolved.error();

  SearchRequest effective = request;
  if (request.optimizer == OptimizerRecipe::kDeepSpeedBf16) {
    // BF16_Optimizer shards over all of DP at stage 0 and 1 alike: one variant.
    effective.constraints.zero_stages = {0};
    effective.constraints.shard_groups = false;
  } else if (request.optimizer == OptimizerRecipe::kInternEvo) {
    // InternEvo has no ZeRO stage 2 (check_optimizer_sharding); its stage 3 is checked per layout.
    std::erase_if(effective.constraints.zero_stages, [](int stage) { return stage == 2; });
    if (effective.constraints.zero_stages.empty()) {
      return Error{
          "--optimizer internevo shards the optimizer state (ZeRO stage 1) or everything (stage 3, "
          "zero1.fsdp); the search allows neither"};
    }
  }
  Searcher searcher(effective, resolved->seq_length);
  SearchResult result;
  if (Status s = searcher.enumerate(); !s.ok()) return s.error();
  if (searcher.empty()) {
    return Error{
        "the pinned dimensions leave no configuration to search (--vpp needs --pp of at least 2 "
        "and at most one chunk per layer, plus one each for the embedding and the output layer)"};
  }
  if (Status s = searcher.rank(result); !s.ok()) return s.error();
  searcher.finish(result);
  result.stats.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pipescope::planner
