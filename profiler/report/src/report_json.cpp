// The stable JSON document of `pipescope report --json` (docs/report-json.md). Keys are
// snake_case with units in their names; new keys may be added, none renamed without a
// schema_version bump.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pipescope/report/report_output.h"

namespace pipescope::report {
namespace {

using nlohmann::ordered_json;
using namespace analysis;  // NOLINT(google-build-using-namespace): the report's types

// Communicator ids are 64-bit hashes: as JSON numbers above 2^53 they lose bits in JavaScript and
// jq, so they are strings, "0x" and 16 hex digits, as the terminal report and export show them.
std::string comm_id_text(uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(id));
  return text;
}

// A figure the traces may not show: null when not measured.
template <class T>
ordered_json optional_json(const std::optional<T>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json series_json(const Series& s) {
  return ordered_json{{"start_ns", s.start_ns}, {"bucket_ns", s.bucket_ns}, {"values", s.values}};
}

ordered_json layout_json(const LayoutReport& l) {
  ordered_json comms = ordered_json::array();
  for (const CommunicatorReport& c : l.communicators)
    comms.push_back(ordered_json{{"comm_id", comm_id_text(c.comm_id)},
                                 {"role", c.role},
                                 {"size", c.members.size()},
                                 {"members", c.members},
                                 {"untraced", c.untraced}});
  return ordered_json{
      {"source", l.source}, {"world_size", l.world_size}, {"tp", l.tp}, {"pp", l.pp},
      {"dp", l.dp},         {"zero_shard", l.zero_shard}, {"ep", l.ep}, {"communicators", comms},
      {"notes", l.notes}};
}

ordered_json gpu_json(const GpuBreakdown& g) {
  // Shares of a span that covers no whole step are not measured: null, as every figure that was not.
  auto share = [&](auto value) { return g.shares_measured ? ordered_json(value) : ordered_json(nullptr); };
  return ordered_json{{"captured", g.captured},
                      {"from_first_step", g.from_first_step},
                      {"span_ns", g.span_ns},
                      {"compute_ns", share(g.compute_ns)},
                      {"comm_exposed_ns", share(g.comm_exposed_ns)},
                      {"comm_hidden_ns", share(g.comm_hidden_ns)},
                      {"copy_only_ns", share(g.copy_only_ns)},
                      {"idle_ns", share(g.idle_ns)},
                      {"comm_wait_ns", optional_json(g.comm_wait_ns)},
                      {"gpu_busy_fraction", share(g.gpu_busy_fraction)},
                      {"out_of_order_intervals", g.out_of_order_intervals},
                      {"kernel_sample_steps", g.kernel_sample_steps},
                      {"recorded_fraction", g.recorded_fraction},
                      {"unflushed_tail_ns", g.unflushed_tail_ns},
                      {"shares_measured", g.shares_measured}};
}

// Under HTA's own column names, times in microseconds and shares in percent as HTA gives them
// (rounded to two decimals, as HTA rounds its "_pctg" columns).
ordered_json kernel_types_json(const std::vector<HtaKernelTypeShare>& rows) {
  ordered_json out = ordered_json::array();
  for (const HtaKernelTypeShare& t : rows)
    out.push_back(ordered_json{{"kernel_type", t.kernel_type},
                               {"sum_us", static_cast<double>(t.sum_ns) / 1e3},
                               {"percentage", std::round(10.0 * t.percentage) / 10.0}});
  return out;
}

ordered_json hta_json(const std::optional<HtaFigures>& h) {
  if (!h) return nullptr;
  const auto us = [](int64_t ns) { return static_cast<double>(ns) / 1e3; };
  const auto pctg = [&](int64_t ns) {
    return h->kernel_time_ns > 0
               ? std::round(10000.0 * static_cast<double>(ns) / static_cast<double>(h->kernel_time_ns)) /
                     100.0
               : 0.0;
  };
  return ordered_json{
      {"idle_time_us", us(h->idle_time_ns)},
      {"compute_time_us", us(h->compute_time_ns)},
      {"non_compute_time_us", us(h->non_compute_time_ns)},
      {"kernel_time_us", us(h->kernel_time_ns)},
      {"idle_time_pctg", pctg(h->idle_time_ns)},
      {"compute_time_pctg", pctg(h->compute_time_ns)},
      {"non_compute_time_pctg", pctg(h->non_compute_time_ns)},
      {"comp_comm_overlap_pctg", h->comp_comm_overlap
                                     ? ordered_json(std::round(10000.0 * *h->comp_comm_overlap) / 100.0)
                                     : ordered_json(nullptr)},
      {"kernel_types", kernel_types_json(hta_kernel_type_shares(h->kernel_types))},
      {"busy_at_last_step_start", h->busy_at_last_step_start}};
}

ordered_json rank_json(const RankReport& r) {
  return ordered_json{
      {"rank", r.rank},
      {"stage", r.stage},
      {"tp_rank", r.tp_rank},
      {"dp_rank", r.dp_rank},
      {"shard_rank", r.shard_rank},
      {"host", r.host},
      {"peak_memory_bytes", optional_json(r.peak_memory_bytes)},
      {"peak_memory_at_ns", r.peak_memory_bytes ? ordered_json(r.peak_memory_at_ns) : ordered_json()},
      {"static_memory_bytes", optional_json(r.static_memory_bytes)},
      {"peak_activation_bytes", optional_json(r.peak_activation_bytes)},
      {"memory_figure", r.memory_figure},
      {"gpu", gpu_json(r.gpu)},
      {"hta", hta_json(r.hta)},
      {"forward_ranges", r.forward_ranges},
      {"backward_ranges", r.backward_ranges},
      {"pipeline_source", r.pipeline_source},
      {"forward_mean_ns", optional_json(r.forward_mean_ns)},
      {"backward_mean_ns", optional_json(r.backward_mean_ns)},
      {"bubble_fraction", optional_json(r.bubble_fraction)},
      {"p2p_ns", optional_json(r.p2p_ns)},
      {"collective_wait_ns", optional_json(r.collective_wait_ns)},
      {"p2p_wait_ns", r.p2p_ns ? ordered_json(r.p2p_wait_ns) : ordered_json()},
      {"steps", r.steps},
      {"step_mean_ns", r.step_mean_ns},
      {"first_event_ns", r.first_event_ns},
      {"last_event_ns", r.last_event_ns}};
}

ordered_json stage_json(const StageReport& s) {
  return ordered_json{{"stage", s.stage},
                      {"ranks", s.ranks},
                      {"source", s.source},
                      {"forward_mean_ns", optional_json(s.forward_mean_ns)},
                      {"backward_mean_ns", optional_json(s.backward_mean_ns)},
                      {"microbatch_ns", optional_json(s.microbatch_ns)},
                      {"gpu_ns_per_microbatch", optional_json(s.gpu_ns_per_microbatch)},
                      {"warmup_ns", optional_json(s.warmup_ns)},
                      {"steady_ns", optional_json(s.steady_ns)},
                      {"cooldown_ns", optional_json(s.cooldown_ns)},
                      {"bubble_fraction", optional_json(s.bubble_fraction)},
                      {"shares_gpu", s.shares_gpu},
                      {"microbatches_per_step", optional_json(s.microbatches_per_step)},
                      {"p2p_ns", optional_json(s.p2p_ns)},
                      {"p2p_wait_ns", optional_json(s.p2p_wait_ns)},
                      {"peak_memory_bytes", optional_json(s.peak_memory_bytes)},
                      {"peak_activation_bytes", optional_json(s.peak_activation_bytes)},
                      {"activation_vs_last_stage", optional_json(s.activation_vs_last_stage)}};
}

ordered_json nccl_json(const NcclOpReport& n) {
  return ordered_json{{"comm_id", comm_id_text(n.comm_id)},
                      {"role", n.role},
                      {"op", n.op},
                      {"comm_size", n.comm_size},
                      {"calls", n.calls},
                      {"bytes", n.bytes},
                      {"time_ns", n.time_ns},
                      {"algbw_bytes_per_s", n.algbw_bytes_per_s},
                      {"busbw_bytes_per_s", n.busbw_bytes_per_s},
                      {"slowest_rank", n.slowest_rank},
                      {"slowest_rank_count", n.slowest_rank_count}};
}

ordered_json hang_json(const HangReport& h) {
  ordered_json comms = ordered_json::array();
  for (const CommHang& c : h.communicators)
    comms.push_back(ordered_json{{"comm_id", comm_id_text(c.comm_id)},
                                 {"role", c.role},
                                 {"completed_by_all", c.last_completed_by_all},
                                 {"next_op", c.next_op},
                                 {"entered", c.entered},
                                 {"missing", c.missing},
                                 {"waited_ns", c.waited_ns},
                                 {"untraced", c.untraced},
                                 {"creation", c.creation}});
  ordered_json p2p = ordered_json::array();
  for (const P2pHang& p : h.p2p)
    p2p.push_back(ordered_json{{"rank", p.rank}, {"peer", p.peer}, {"op", p.op}, {"waited_ns", p.waited_ns}});
  ordered_json roots = ordered_json::array();
  for (const HangRoot& r : h.roots)
    roots.push_back(ordered_json{
        {"rank", r.rank},
        {"where", r.where},
        {"call", r.call.empty() ? ordered_json(nullptr) : ordered_json(r.call)},
        {"since_ns", r.since_ns >= 0 ? ordered_json(r.since_ns) : ordered_json(nullptr)},
        {"code", r.where == "exited" || r.where == "signal" ? ordered_json(r.code) : ordered_json(nullptr)},
        {"waiting", r.waiting}});
  ordered_json desyncs = ordered_json::array();
  for (const Desync& d : h.desyncs)
    desyncs.push_back(ordered_json{{"comm_id", comm_id_text(d.comm_id)},
                                   {"role", d.role},
                                   {"sequence", d.sequence},
                                   {"ranks", d.ranks},
                                   {"what", d.what}});
  ordered_json mismatches = ordered_json::array();
  for (const P2pMismatch& m : h.p2p_mismatches)
    mismatches.push_back(ordered_json{
        {"sender", m.sender}, {"receiver", m.receiver}, {"role", m.role}, {"sequence", m.sequence}});
  return ordered_json{{"suspected", h.suspected},
                      {"root_ranks", h.root_ranks},
                      {"roots", roots},
                      {"blocked", h.blocked},
                      {"communicators", comms},
                      {"p2p", p2p},
                      {"desyncs", desyncs},
                      {"p2p_size_mismatches", mismatches},
                      {"ended_early", h.ended_early},
                      {"not_closed", h.not_closed},
                      {"no_trace", h.no_trace}};
}

ordered_json failure_json(const std::optional<FailureReport>& failure) {
  if (!failure) return nullptr;
  const FailureReport& f = *failure;
  const auto known = [](int64_t v) { return v >= 0 ? ordered_json(v) : ordered_json(nullptr); };
  return ordered_json{
      {"kind", f.kind},          {"rank", f.rank >= 0 ? ordered_json(f.rank) : ordered_json(nullptr)},
      {"at_ns", known(f.at_ns)}, {"step", known(f.step)},
      {"code", f.code},          {"detail", f.detail}};
}

// predicted_<name>, measured_<name>, <error_name>_error_percent; bytes as integers.
void add_figure(ordered_json& into, const std::string& name, const std::string& error_name,
                const PlanFigure& f, bool bytes = false) {
  if (bytes) {
    into["predicted_" + name] = static_cast<uint64_t>(std::llround(std::max(0.0, f.predicted)));
    into["measured_" + name] =
        f.measured ? ordered_json(static_cast<uint64_t>(std::llround(*f.measured))) : ordered_json(nullptr);
  } else {
    into["predicted_" + name] = f.predicted;
    into["measured_" + name] = optional_json(f.measured);
  }
  into[error_name + "_error_percent"] = optional_json(f.error_percent);
}

ordered_json plan_json(const PlanComparison& p) {
  ordered_json stages = ordered_json::array();
  for (const PlanStageComparison& s : p.stages) {
    ordered_json stage{{"stage", s.stage}};
    add_figure(stage, "peak_memory_bytes", "peak_memory", s.peak_memory_bytes, true);
    add_figure(stage, "forward_s", "forward", s.forward_s);
    add_figure(stage, "backward_s", "backward", s.backward_s);
    const std::pair<const char*, const std::optional<PlanFigure>*> kinds[] = {
        {"gemm", &s.gemm_s}, {"attention", &s.attention_s}, {"memory_bound", &s.memory_bound_s}};
    for (const auto& [kind, f] : kinds)
      if (*f) add_figure(stage, std::string(kind) + "_s", kind, **f);
    stages.push_back(stage);
  }
  ordered_json doc{{"plan_path", p.plan_path},
                   {"plan_side", p.side},
                   {"memory_figure", p.memory_figure},
                   {"stages", stages}};
  add_figure(doc, "bubble_fraction", "bubble", p.bubble_fraction);
  add_figure(doc, "step_s", "step", p.step_s);
  doc["notes"] = p.notes;
  return doc;
}

}  // namespace

std::string report_json(const RunReport& report) {
  ordered_json doc;
  doc["schema_version"] = kRunReportSchemaVersion;
  doc["dir"] = report.dir;
  doc["run_id"] = report.run_id;
  doc["attempt"] = report.attempt;
  doc["source_format"] = report.source_format;
  doc["findings"] = report.findings;
  doc["warnings"] = report.warnings;
  doc["layout"] = layout_json(report.layout);
  const ClockReport& c = report.clock;
  doc["clock"] = ordered_json{{"source", c.source},
                              {"reference_rank", c.reference_rank},
                              {"instances_used", c.instances_used},
                              {"residual_median_ns", optional_json(c.residual_median_ns)},
                              {"residual_p99_ns", optional_json(c.residual_p99_ns)},
                              {"residual_max_ns", optional_json(c.residual_max_ns)},
                              {"unaligned_ranks", c.unaligned_ranks}};
  const StepReport& s = report.steps;
  doc["steps"] = ordered_json{{"source", s.source},
                              {"count", s.count},
                              {"mean_ns", s.mean_ns},
                              {"median_ns", s.median_ns},
                              {"min_ns", s.min_ns},
                              {"max_ns", s.max_ns},
                              {"stdev_ns", optional_json(s.stdev_ns)},
                              {"step_ns", s.step_ns},
                              {"unfinished", s.unfinished}};
  ordered_json ranks = ordered_json::array();
  for (const RankReport& r : report.ranks) ranks.push_back(rank_json(r));
  doc["ranks"] = ranks;
  doc["hta_kernel_types"] = kernel_types_json(report.hta_kernel_types);
  ordered_json stages = ordered_json::array();
  for (const StageReport& st : report.stages) stages.push_back(stage_json(st));
  doc["stages"] = stages;
  ordered_json nccl = ordered_json::array();
  for (const NcclOpReport& n : report.nccl) nccl.push_back(nccl_json(n));
  doc["nccl"] = nccl;
  ordered_json stragglers = ordered_json::array();
  for (const Straggler& st : report.stragglers)
    stragglers.push_back(ordered_json{{"rank", st.rank},
                                      {"instances_last", st.instances_last},
                                      {"cost_ns", st.cost_ns},
                                      {"roles", st.roles}});
  doc["stragglers"] = stragglers;
  ordered_json kernels = ordered_json::array();
  for (const KernelStat& k : report.kernels)
    kernels.push_back(ordered_json{{"name", k.name},
                                   {"symbol", k.symbol},
                                   {"category", k.category},
                                   {"count", k.count},
                                   {"total_ns", k.total_ns},
                                   {"mean_ns", k.mean_ns},
                                   {"p50_ns", k.p50_ns},
                                   {"p90_ns", k.p90_ns},
                                   {"p99_ns", k.p99_ns},
                                   {"max_ns", k.max_ns}});
  doc["kernels"] = kernels;
  ordered_json categories = ordered_json::array();
  for (const CategoryStat& k : report.categories)
    categories.push_back(ordered_json{
        {"category", k.category}, {"count", k.count}, {"total_ns", k.total_ns}, {"share", k.share}});
  doc["kernel_categories"] = categories;
  doc["hang"] = hang_json(report.hang);
  doc["failure"] = failure_json(report.failure);
  ordered_json earlier = ordered_json::array();
  for (const RunReport::EarlierAttempt& a : report.earlier_attempts)
    earlier.push_back(ordered_json{{"attempt", a.attempt}, {"failure", failure_json(a.failure)}});
  doc["earlier_attempts"] = earlier;
  doc["plan"] = report.plan ? plan_json(*report.plan) : ordered_json(nullptr);
  doc["gpu_busy"] = series_json(report.gpu_busy);
  ordered_json memory = ordered_json::array();
  for (const MemoryTimeline& m : report.memory_timelines)
    memory.push_back(
        ordered_json{{"rank", m.rank},
                     {"figure", m.figure},
                     {"reserved_bytes", m.reserved ? series_json(*m.reserved) : ordered_json(nullptr)},
                     {"allocated_bytes", m.allocated ? series_json(*m.allocated) : ordered_json(nullptr)}});
  doc["memory_timelines"] = memory;
  ordered_json files = ordered_json::array();
  for (const RankFile& f : report.files)
    files.push_back(ordered_json{{"rank", f.rank},
                                 {"path", f.path},
                                 {"host", f.host},
                                 {"pid", f.pid},
                                 {"valid_bytes", f.valid_bytes},
                                 {"total_bytes", f.total_bytes},
                                 {"records", f.records},
                                 {"records_dropped", f.records_dropped},
                                 {"closed_cleanly", f.closed_cleanly},
                                 {"stop", f.stop},
                                 {"stop_detail", f.stop_detail}});
  doc["files"] = files;
  doc["missing_ranks"] = report.missing_ranks;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace pipescope::report
