// The terminal report: findings and warnings first, then one compact table per analysis.
#include <algorithm>
#include <cstdio>
#include <map>

#include "hta_table.h"
#include "pipescope/report/report_output.h"
#include "text_cells.h"

namespace pipescope::report {
namespace {

using namespace analysis;  // NOLINT(google-build-using-namespace): the report's types

void heading(std::ostream& out, const std::string& title) { out << '\n' << title << '\n'; }

// `prefix` then `text`, broken at spaces so that no line passes 100 columns; continuation lines
// are indented under the text.
void wrapped(std::ostream& out, const std::string& prefix, const std::string& text) {
  constexpr size_t kWidth = 100;
  const std::string indent(prefix.size(), ' ');
  std::string rest = text;
  std::string lead = prefix;
  while (lead.size() + rest.size() > kWidth) {
    size_t cut = rest.rfind(' ', kWidth - lead.size());
    if (cut == std::string::npos || cut == 0) cut = kWidth - lead.size();
    out << lead << rest.substr(0, cut) << '\n';
    rest = rest.substr(cut + (rest[cut] == ' ' ? 1 : 0));
    lead = indent;
  }
  out << lead << rest << '\n';
}

void write_layout(std::ostream& out, const RunReport& r) {
  const LayoutReport& l = r.layout;
  heading(out, "layout (" + l.source + ")");
  out << "  world " << l.world_size << ": tp " << l.tp << " x pp " << l.pp << " x dp " << l.dp;
  if (l.zero_shard > 1) out << ", ZeRO shard groups of " << l.zero_shard;
  if (l.ep > 1) out << ", ep " << l.ep;
  out << '\n';
  std::map<std::string, std::map<size_t, size_t>> by_role;  // role -> size -> count
  for (const CommunicatorReport& c : l.communicators) ++by_role[c.role][c.members.size()];
  for (const auto& [role, sizes] : by_role) {
    std::string line;
    for (const auto& [size, count] : sizes)
      line += (line.empty() ? "" : ", ") + std::to_string(count) + " communicator(s) of " +
              std::to_string(size) + " ranks";
    wrapped(out, "  " + left(role, 10), line);
  }
  for (const std::string& note : l.notes) wrapped(out, "  note: ", note);
}

void write_stages(std::ostream& out, const RunReport& r) {
  if (r.stages.empty()) return;
  heading(out, "pipeline stages (per micro-batch; p2p and its wait for the sender per step)");
  out << "  " << right("stage", 5) << right("ranks", 6) << right("fwd ms", 9) << right("bwd ms", 9)
      << right("GPU ms", 9) << right("bubble", 8) << right("p2p ms", 9) << right("wait ms", 9)
      << right("peak GiB", 10) << right("act GiB", 9) << right("x last", 8) << '\n';
  for (const StageReport& s : r.stages)
    out << "  " << right(std::to_string(s.stage), 5) << right(std::to_string(s.ranks), 6)
        << right(ms_cell(s.forward_mean_ns, 2), 9) << right(ms_cell(s.backward_mean_ns, 2), 9)
        << right(ms_cell(s.gpu_ns_per_microbatch, 2), 9) << right(pct(s.bubble_fraction), 8)
        << right(ms_cell(s.p2p_ns, 2), 9) << right(ms_cell(s.p2p_wait_ns, 2), 9)
        << right(gib_cell(s.peak_memory_bytes, 2), 10)
        << right(s.peak_activation_bytes ? fixed(gib(*s.peak_activation_bytes), 2) : "-", 9)
        << right(s.activation_vs_last_stage ? fixed(*s.activation_vs_last_stage, 2) + "x" : "-", 8) << '\n';
}

void write_rank_row(std::ostream& out, const RankReport& k) {
  const GpuBreakdown& g = k.gpu;
  const double span = g.span_ns > 0 ? static_cast<double>(g.span_ns) : 1.0;
  auto share = [&](int64_t v) { return g.shares_measured ? pct(static_cast<double>(v) / span) : "-"; };
  out << "  " << right(std::to_string(k.rank), 5) << right(std::to_string(k.stage), 6)
      << right(std::to_string(k.tp_rank), 4) << right(std::to_string(k.dp_rank), 5)
      << right(fixed(ms(g.span_ns), 1), 10) << right(share(g.compute_ns), 8)
      << right(share(g.comm_exposed_ns), 8) << right(share(g.comm_hidden_ns), 8)
      << right(share(g.copy_only_ns), 6) << right(share(g.idle_ns), 6)
      << right(k.collective_wait_ns || k.p2p_ns
                   ? fixed(ms(k.collective_wait_ns.value_or(0) + (k.p2p_ns ? k.p2p_wait_ns : 0)), 1)
                   : "-",
               10)
      << right(gib_cell(k.peak_memory_bytes, 2), 9) << '\n';
}

void write_ranks(std::ostream& out, const RunReport& r) {
  if (r.ranks.empty()) return;
  if (std::none_of(r.ranks.begin(), r.ranks.end(), [](const RankReport& k) { return k.gpu.captured; })) {
    heading(out, "GPU time per rank");
    out << "  no GPU activity in the traces (no CUPTI kernel or copy records)\n";
    return;
  }
  const bool from_first_step = std::all_of(r.ranks.begin(), r.ranks.end(), [](const RankReport& k) {
    return k.gpu.from_first_step || !k.gpu.captured;
  });
  heading(out, std::string("GPU time per rank (shares of the rank's GPU span") +
                   (from_first_step ? " from its first step on" : "") + "; wait: for other ranks, in NCCL)");
  out << "  " << right("rank", 5) << right("stage", 6) << right("tp", 4) << right("dp", 5)
      << right("span ms", 10) << right("compute", 8) << right("exp.com", 8) << right("hid.com", 8)
      << right("copy", 6) << right("idle", 6) << right("wait ms", 10) << right("peak GiB", 9) << '\n';
  if (r.ranks.size() <= 32) {
    for (const RankReport& k : r.ranks) write_rank_row(out, k);
    return;
  }
  // Many ranks: the first rank of each stage, then the ranks that waited or idled most.
  std::vector<const RankReport*> shown;
  std::map<int32_t, bool> stage_seen;
  for (const RankReport& k : r.ranks)
    if (!stage_seen[k.stage]) {
      stage_seen[k.stage] = true;
      shown.push_back(&k);
    }
  std::vector<const RankReport*> worst;
  for (const RankReport& k : r.ranks) worst.push_back(&k);
  std::sort(worst.begin(), worst.end(), [](const RankReport* a, const RankReport* b) {
    return a->gpu.idle_ns + a->collective_wait_ns.value_or(0) + a->p2p_wait_ns >
           b->gpu.idle_ns + b->collective_wait_ns.value_or(0) + b->p2p_wait_ns;
  });
  for (const RankReport* k : worst) {
    if (shown.size() >= 24) break;
    if (std::find(shown.begin(), shown.end(), k) == shown.end()) shown.push_back(k);
  }
  for (const RankReport* k : shown) write_rank_row(out, *k);
  out << "  (" << shown.size() << " of " << r.ranks.size()
      << " ranks: the first of each stage and those that idled or waited most; --json has all)\n";
}

void write_hta(std::ostream& out, const RunReport& r) {
  const HtaTable t = hta_table(r, 32);
  if (t.rows.empty()) return;
  heading(out, "HTA's figures per rank (Holistic Trace Analysis' definitions, docs/report.md)");
  const int widths[] = {6, 11, 9, 9, 13, 19};
  out << " ";
  for (size_t c = 0; c < t.header.size(); ++c) out << right(t.header[c], widths[c]);
  out << '\n';
  for (const auto& row : t.rows) {
    out << " ";
    for (size_t c = 0; c < row.size(); ++c) out << right(row[c], widths[c]);
    out << '\n';
  }
  if (t.rows.size() < t.ranks_with_figures)
    out << "  (" << t.rows.size() << " of " << t.ranks_with_figures
        << " ranks: those that idled most; --json has all)\n";
  if (!t.kernel_types.empty()) wrapped(out, "  kernel types (all ranks): ", t.kernel_types);
}

void write_steps(std::ostream& out, const RunReport& r) {
  const StepReport& s = r.steps;
  if (s.count == 0) return;
  heading(out, "steps (" + s.source + ")");
  out << "  " << s.count << " steps";
  if (s.step_ns.size() < s.count) out << " (" << s.step_ns.size() << " timed)";
  if (s.step_ns.empty()) {
    out << '\n';
    return;
  }
  out << ": median " << fixed(ms(s.median_ns), 2) << " ms, mean " << fixed(ms(s.mean_ns), 2) << " ms, min "
      << fixed(ms(s.min_ns), 2) << " ms, max " << fixed(ms(s.max_ns), 2) << " ms, stdev "
      << (s.stdev_ns ? fixed(*s.stdev_ns / 1e6, 2) + " ms" : std::string("- (one step)")) << '\n';
  if (s.unfinished > 0)
    out << "  " << s.unfinished
        << " step(s) left out: a failed NCCL call cut them short (they never ended)\n";
}

void write_nccl(std::ostream& out, const RunReport& r) {
  if (r.nccl.empty()) return;
  // Communicators of one role and size are a family (the 64 data-parallel groups of a run):
  // one row per family and operation, per member; --json has every communicator.
  struct Family {
    std::string role, op;
    int32_t size = 0;
    size_t comms = 0;
    uint64_t calls = 0, bytes = 0;
    int64_t time_ns = 0;
    double algbw_weighted = 0, busbw_weighted = 0;
    std::map<int32_t, uint64_t> slowest;
  };
  std::vector<Family> families;
  for (const NcclOpReport& n : r.nccl) {
    auto it = std::find_if(families.begin(), families.end(), [&](const Family& f) {
      return f.role == n.role && f.op == n.op && f.size == n.comm_size;
    });
    if (it == families.end()) {
      Family fresh;
      fresh.role = n.role;
      fresh.op = n.op;
      fresh.size = n.comm_size;
      families.push_back(std::move(fresh));
      it = std::prev(families.end());
    }
    ++it->comms;
    it->calls += n.calls;
    it->bytes += n.bytes;
    it->time_ns += n.time_ns;
    it->algbw_weighted += n.algbw_bytes_per_s * static_cast<double>(n.time_ns);
    it->busbw_weighted += n.busbw_bytes_per_s * static_cast<double>(n.time_ns);
    if (n.slowest_rank >= 0) it->slowest[n.slowest_rank] += n.slowest_rank_count;
  }
  std::sort(families.begin(), families.end(),
            [](const Family& a, const Family& b) { return a.time_ns > b.time_ns; });
  heading(out, "NCCL by communicator family and operation (per member; nccl-tests bandwidths)");
  out << "  " << left("role", 9) << left("op", 15) << right("n", 5) << right("comms", 6) << right("calls", 8)
      << right("MiB", 10) << right("time ms", 10) << right("algbw GB/s", 11) << right("busbw GB/s", 11)
      << right("slowest", 9) << '\n';
  for (const Family& f : families) {
    const auto comms = static_cast<double>(f.comms);
    const double weight = f.time_ns > 0 ? static_cast<double>(f.time_ns) : 1.0;
    int32_t slowest = -1;
    uint64_t most = 0;
    for (const auto& [rank, count] : f.slowest)
      if (count > most) {
        most = count;
        slowest = rank;
      }
    out << "  " << left(f.role, 9) << left(f.op, 15) << right(std::to_string(f.size), 5)
        << right(std::to_string(f.comms), 6) << right(fixed(static_cast<double>(f.calls) / comms, 0), 8)
        << right(fixed(static_cast<double>(f.bytes) / comms / (1 << 20), 1), 10)
        << right(fixed(ms(f.time_ns) / comms, 2), 10) << right(fixed(f.algbw_weighted / weight / 1e9, 1), 11)
        << right(fixed(f.busbw_weighted / weight / 1e9, 1), 11)
        << right(slowest >= 0 ? std::to_string(slowest) : "-", 9) << '\n';
  }
}

void write_stragglers(std::ostream& out, const RunReport& r) {
  if (r.stragglers.empty()) return;
  heading(out, "stragglers (ranks the others waited on)");
  for (const Straggler& s : r.stragglers) {
    std::string roles;
    for (const std::string& role : s.roles) roles += (roles.empty() ? "" : ",") + role;
    out << "  rank " << s.rank << ": last at " << s.instances_last << " sampled collectives (" << roles
        << "), others waited " << fixed(ms(s.cost_ns), 1) << " ms\n";
  }
}

void write_kernels(std::ostream& out, const RunReport& r) {
  if (r.categories.empty()) return;
  heading(out, "GPU work by category");
  for (const CategoryStat& c : r.categories)
    out << "  " << left(c.category, 12) << right(pct(c.share), 6)
        << right(fixed(ms(c.total_ns), 1) + " ms", 14) << right(std::to_string(c.count), 10) << " launches\n";
  heading(out, "top kernels (all ranks)");
  out << "  " << right("total ms", 10) << right("count", 9) << right("mean us", 9) << right("p50 us", 8)
      << right("p99 us", 8) << "  " << left("category", 12) << "name\n";
  for (const KernelStat& k : r.kernels)
    out << "  " << right(fixed(ms(k.total_ns), 1), 10) << right(std::to_string(k.count), 9)
        << right(fixed(k.mean_ns / 1e3, 1), 9) << right(fixed(k.p50_ns / 1e3, 1), 8)
        << right(fixed(k.p99_ns / 1e3, 1), 8) << "  " << left(k.category, 12) << shorten(k.name, 40) << '\n';
}

void write_hang(std::ostream& out, const RunReport& r) {
  const HangReport& h = r.hang;
  if (!h.suspected && !r.failure && h.desyncs.empty() && h.p2p_mismatches.empty()) return;
  heading(out, "hang / failure view");
  if (r.failure) wrapped(out, "  ", "failure (" + r.failure->kind + "): " + r.failure->detail);
  if (!h.root_ranks.empty())
    out << "  root: rank(s) " << rank_list(h.root_ranks, h.no_trace) << " (" << h.blocked
        << " rank(s) waited on them, directly or through others)\n";
  for (const HangRoot& root : h.roots) {
    std::string where =
        root.where == "in call" ? "inside " + root.call
        : root.where == "host code"
            ? "in its own code" + (root.call.empty() ? "" : " after its last NCCL call (" + root.call + ")")
        : root.where == "exited" ? "exited with status " + std::to_string(root.code)
        : root.where == "signal" ? "ended by signal " + std::to_string(root.code)
                                 : root.where;
    if (root.since_ns >= 0) where += " since " + fixed(ms(root.since_ns), 1) + " ms";
    out << "  rank " << root.rank << ": " << where << "; " << root.waiting << " rank(s) wait on it\n";
  }
  for (const CommHang& c : h.communicators)
    wrapped(out, "  ",
            c.creation ? c.role + " communicator " + hex(c.comm_id) + ": " + c.next_op + " entered by " +
                             rank_list(c.entered) + "; never entered: " + rank_list(c.missing, c.untraced) +
                             "; waited " + fixed(ms(c.waited_ns), 1) + " ms"
                       : c.role + " communicator " + hex(c.comm_id) + ": all completed " +
                             std::to_string(c.last_completed_by_all) + "; entered " +
                             (c.next_op.empty() ? std::string("the next") : c.next_op) + " #" +
                             std::to_string(c.last_completed_by_all) + ": " + rank_list(c.entered) +
                             "; never entered: " + rank_list(c.missing, c.untraced) + "; waited " +
                             fixed(ms(c.waited_ns), 1) + " ms");
  for (const Desync& d : h.desyncs)
    wrapped(out, "  ",
            "desync: " + d.role + " communicator " + hex(d.comm_id) + " collective #" +
                std::to_string(d.sequence) + ": " + d.what);
  for (const P2pMismatch& m : h.p2p_mismatches)
    out << "  p2p size mismatch: rank " << m.sender << " send #" << m.sequence << " to rank " << m.receiver
        << " (" << m.role << ")\n";
  for (const P2pHang& p : h.p2p)
    out << "  rank " << p.rank << ": " << p.op << (p.op == "send" ? " to rank " : " from rank ")
        << rank_list({p.peer}, h.no_trace) << " never completed; waited " << fixed(ms(p.waited_ns), 1)
        << " ms\n";
  if (!h.ended_early.empty()) out << "  traces ending early: " << rank_list(h.ended_early) << '\n';
  if (!h.not_closed.empty())
    out << "  traces not closed (killed or crashed): " << rank_list(h.not_closed) << '\n';
  if (!h.no_trace.empty())
    out << "  no trace (file missing, empty or header only): " << rank_list(h.no_trace) << '\n';
}

void write_plan(std::ostream& out, const RunReport& r) {
  if (!r.plan) return;
  const PlanComparison& p = *r.plan;
  heading(out, "planned vs measured (" + p.plan_path + "; memory figure: " + p.memory_figure + ")");
  out << "  " << right("stage", 5) << right("peak GiB plan", 14) << right("meas", 7) << right("err", 7)
      << right("fwd ms plan", 12) << right("meas", 7) << right("err", 7) << right("bwd ms plan", 12)
      << right("meas", 7) << right("err", 7) << '\n';
  constexpr double kGiB = 1.0 / (1024.0 * 1024 * 1024);
  auto cells = [&](const PlanFigure& f, double factor, size_t width) {
    return right(fixed(f.predicted * factor, 2), width) + right(scaled(f.measured, factor, 2), 7) +
           right(error_pct(f.error_percent), 7);
  };
  for (const PlanStageComparison& s : p.stages)
    out << "  " << right(std::to_string(s.stage), 5) << cells(s.peak_memory_bytes, kGiB, 14)
        << cells(s.forward_s, 1e3, 12) << cells(s.backward_s, 1e3, 12) << '\n';
  if (std::any_of(p.stages.begin(), p.stages.end(),
                  [](const PlanStageComparison& s) { return s.gemm_s.has_value(); })) {
    out << "  GPU time a step by kind of work (ms; the plan's split against the stage's kernels):\n";
    out << "  " << right("stage", 5) << right("GEMM plan", 12) << right("meas", 7) << right("err", 7)
        << right("attn plan", 12) << right("meas", 7) << right("err", 7) << right("mem-bound plan", 15)
        << right("meas", 7) << right("err", 7) << '\n';
    auto kind = [&](const std::optional<PlanFigure>& f, size_t width) {
      return f ? cells(*f, 1e3, width) : right("-", width) + right("-", 7) + right("-", 7);
    };
    for (const PlanStageComparison& s : p.stages)
      out << "  " << right(std::to_string(s.stage), 5) << kind(s.gemm_s, 12) << kind(s.attention_s, 12)
          << kind(s.memory_bound_s, 15) << '\n';
  }
  out << "  bubble: plan " << pct(p.bubble_fraction.predicted) << ", measured "
      << pct(p.bubble_fraction.measured) << " (" << error_pct(p.bubble_fraction.error_percent)
      << "); step: plan " << fixed(p.step_s.predicted * 1e3, 1) << " ms, measured "
      << scaled(p.step_s.measured, 1e3, 1) << " ms (" << error_pct(p.step_s.error_percent) << ")\n";
  for (const std::string& note : p.notes) wrapped(out, "  note: ", note);
}

void write_clock(std::ostream& out, const RunReport& r) {
  const ClockReport& c = r.clock;
  heading(out, "clock alignment (" + c.source + ")");
  out << "  reference rank " << c.reference_rank << ", " << c.instances_used << " instances; ";
  if (!c.residual_median_ns) {
    out << "residual skew not measured (no collective joins two traced ranks)\n";
    return;
  }
  out << "residual skew median " << fixed(*c.residual_median_ns / 1e3, 1) << " us, p99 "
      << fixed(c.residual_p99_ns.value_or(0) / 1e3, 1) << " us, max "
      << fixed(c.residual_max_ns.value_or(0) / 1e3, 1) << " us\n";
}

}  // namespace

void write_report_text(std::ostream& out, const RunReport& r) {
  out << "pipescope report: " << r.dir << " ("
      << (r.run_id.empty() ? std::string("no run id") : "run '" + r.run_id + "'") << " attempt " << r.attempt
      << ", " << r.files.size() << " rank traces"
      << (r.source_format == "pipescope" ? "" : ", from " + r.source_format + " traces") << ")\n";
  heading(out, "findings");
  if (r.findings.empty()) out << "  nothing stands out\n";
  for (const std::string& f : r.findings) wrapped(out, "  - ", f);
  if (!r.warnings.empty()) {
    heading(out, "warnings");
    size_t shown = 0;
    for (const std::string& w : r.warnings) {
      if (++shown > 12) {
        out << "  (" << r.warnings.size() - 12 << " more in --json)\n";
        break;
      }
      wrapped(out, "  ! ", w);
    }
  }
  write_hang(out, r);
  write_layout(out, r);
  write_steps(out, r);
  write_stages(out, r);
  write_ranks(out, r);
  write_hta(out, r);
  write_stragglers(out, r);
  write_nccl(out, r);
  write_kernels(out, r);
  write_plan(out, r);
  write_clock(out, r);
}

}  // namespace pipescope::report
