// The failure class of a run, as the study's taxonomy has them, from what the traces show: the
// signal that ended a rank and the status it exited with (format 1.3 notices), the code of a
// failed NCCL call (nccl_call records), and the hang view. The earliest event wins: a rank's
// crash comes before the SIGTERM its launcher then sends the others, and a hang before the
// watchdog that ends it. What only the system's logs can tell (XIDs, ECC errors, links going
// down) leaves no sign here beyond its consequences.
#include <signal.h>

#include <algorithm>

#include "report_context.h"

namespace pipescope::analysis {

bool is_fatal_signal(int32_t signal) {
  return signal == SIGSEGV || signal == SIGBUS || signal == SIGABRT || signal == SIGFPE || signal == SIGILL;
}

namespace {

std::string signal_name(int32_t signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    default: return "signal " + std::to_string(signal);
  }
}

// ncclResult_t's names (nccl.h).
std::string nccl_result_name(int32_t result) {
  switch (result) {
    case 1: return "ncclUnhandledCudaError";
    case 2: return "ncclSystemError";
    case 3: return "ncclInternalError";
    case 4: return "ncclInvalidArgument";
    case 5: return "ncclInvalidUsage";
    case 6: return "ncclRemoteError";
    case 7: return "ncclInProgress";
    default: return "ncclResult " + std::to_string(result);
  }
}

// The step (from 0) a rank was in at `t` (its own clock): the step ranges closed before it.
int64_t step_at(const RankDigest& d, int64_t t) {
  if (d.steps.empty() && d.nvtx_ranges == 0) return -1;
  int64_t closed = 0;
  for (const StepDigest& s : d.steps)
    if (s.end_ns <= t) ++closed;
  return closed + static_cast<int64_t>(d.steps_beyond_cap);
}

std::string ms_text(int64_t ns) { return std::to_string((ns + 500'000) / 1'000'000) + " ms"; }

struct Candidate {
  FailureReport failure;
  int64_t order_ns;  // aligned time; the earliest wins
};

Candidate at_rank(const ReportContext& ctx, size_t i, int64_t t, std::string kind, int32_t code) {
  Candidate c;
  c.failure.kind = std::move(kind);
  c.failure.rank = ctx.run.global_rank[i];
  c.failure.at_ns = ctx.aligned(i, t);
  c.failure.step = step_at(ctx.run.ranks[i], t);
  c.failure.code = code;
  c.order_ns = c.failure.at_ns;
  return c;
}

std::string step_text(const FailureReport& f) {
  return f.step >= 0 ? " in step " + std::to_string(f.step) : "";
}

// A hang's root, where it is, and since when.
std::string root_text(const HangRoot& root) {
  std::string text = "rank " + std::to_string(root.rank);
  if (root.where == "no trace") return text + " (no trace)";
  if (root.where == "in call") return text + " (inside " + root.call + ")";
  if (root.where == "exited") return text + " (exited with status " + std::to_string(root.code) + ")";
  if (root.where == "signal") return text + " (ended by signal " + std::to_string(root.code) + ")";
  return text + " (in its own code" + (root.call.empty() ? "" : ", after its last NCCL call, " + root.call) +
         ")";
}

}  // namespace

void add_failure(const ReportContext& ctx, RunReport& report) {
  std::vector<Candidate> found;
  std::vector<Candidate> terminated;  // termination signals: a launcher's answer, unless nothing else
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    if (d.ending_signal != 0) {
      const bool fatal = is_fatal_signal(d.ending_signal);
      Candidate c =
          at_rank(ctx, i, d.ending_signal_at_ns, fatal ? "fatal signal" : "terminated", d.ending_signal);
      c.failure.detail = "rank " + std::to_string(c.failure.rank) + " ended by " +
                         signal_name(d.ending_signal) + step_text(c.failure);
      (fatal ? found : terminated).push_back(std::move(c));
    }
    if (d.exit_status && *d.exit_status != 0) {
      Candidate c = at_rank(ctx, i, d.exit_at_ns, "exit status", *d.exit_status);
      c.failure.detail = "rank " + std::to_string(c.failure.rank) + " exited with status " +
                         std::to_string(*d.exit_status) + step_text(c.failure) +
                         " (a Python exception exits with 1)";
      found.push_back(std::move(c));
    }
    if (d.first_nccl_error) {
      const NcclError& e = *d.first_nccl_error;
      Candidate c = at_rank(ctx, i, e.at_ns, "nccl error", e.result);
      c.failure.detail = "rank " + std::to_string(c.failure.rank) + ": an NCCL call returned " +
                         nccl_result_name(e.result) + step_text(c.failure);
      found.push_back(std::move(c));
    }
  }
  const HangReport& hang = report.hang;
  if (hang.suspected && !hang.roots.empty()) {
    // The others' errors, timeouts and watchdog aborts follow from the hang: what failed is the
    // root's own failure when its trace shows one, else the hang itself.
    std::string roots;
    for (const HangRoot& r : hang.roots) roots += (roots.empty() ? "" : ", ") + root_text(r);
    const std::string waited = "; " + std::to_string(hang.blocked) + " rank(s) then waited on " +
                               (hang.roots.size() == 1 ? "it" : "them") + " (hang: " + roots + ")";
    const Candidate* own = nullptr;
    for (const Candidate& f : found) {
      const bool is_root = std::any_of(hang.roots.begin(), hang.roots.end(),
                                       [&](const HangRoot& r) { return r.rank == f.failure.rank; });
      if (is_root && (own == nullptr || f.order_ns < own->order_ns)) own = &f;
    }
    if (own != nullptr) {
      report.failure = own->failure;
      report.failure->detail += waited;
      return;
    }
    Candidate c;
    c.failure.kind = "hang";
    const HangRoot& root = hang.roots.front();
    c.failure.rank = root.rank;
    // The hang began when the root stopped, else when the first rank started waiting on it.
    int64_t began = root.since_ns >= 0 ? root.since_ns : INT64_MAX;
    if (began == INT64_MAX)
      for (const CommHang& h : hang.communicators)
        for (int32_t e : h.entered)
          if (const auto it = ctx.index_of_rank.find(e); it != ctx.index_of_rank.end())
            began = std::min(began, report.ranks[it->second].last_event_ns - h.waited_ns);
    c.failure.at_ns = began == INT64_MAX ? -1 : began;
    if (const auto it = ctx.index_of_rank.find(root.rank);
        it != ctx.index_of_rank.end() && root.since_ns >= 0)
      c.failure.step = step_at(ctx.run.ranks[it->second], ctx.local(it->second, root.since_ns));
    c.failure.detail = "root " + roots + "; " + std::to_string(hang.blocked) + " rank(s) waited";
    // A watchdog ends a rank that waited past its timeout with SIGABRT: a consequence, said as such.
    for (const Candidate& f : found) {
      if (f.failure.kind != "fatal signal" || f.failure.code != SIGABRT) continue;
      const bool waiting =
          std::any_of(hang.communicators.begin(), hang.communicators.end(), [&](const CommHang& h) {
            return std::find(h.entered.begin(), h.entered.end(), f.failure.rank) != h.entered.end();
          });
      if (waiting && began != INT64_MAX)
        c.failure.detail += "; rank " + std::to_string(f.failure.rank) + " was then ended by SIGABRT " +
                            ms_text(f.failure.at_ns - began) + " later, while waiting (a watchdog's timeout)";
    }
    report.failure = std::move(c.failure);
    return;
  }
  if (found.empty()) found = std::move(terminated);
  if (found.empty()) {
    // Traces cut short with no signal and no exit recorded: SIGKILL, the OOM killer, the machine.
    if (!hang.not_closed.empty() && ctx.run.ranks.size() > 1 &&
        hang.not_closed.size() < ctx.run.ranks.size()) {
      FailureReport f;
      f.kind = "killed";
      f.rank = hang.not_closed.front();
      std::string ranks;
      for (int32_t r : hang.not_closed) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      f.detail =
          "the traces of rank(s) " + ranks +
          " were not closed and record no signal or exit: SIGKILL (the OOM killer, a scheduler) or the "
          "machine ended them";
      report.failure = std::move(f);
    }
    return;
  }
  const auto earliest =
      std::min_element(found.begin(), found.end(),
                       [](const Candidate& a, const Candidate& b) { return a.order_ns < b.order_ns; });
  report.failure = std::move(earliest->failure);
}

}  // namespace pipescope::analysis
