#include "pipescope/analysis/run_loader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "parallel_for.h"
#include "pipescope/analysis/kernel_category.h"
#include "pipescope/trace/format.h"

namespace pipescope::analysis {
namespace {

namespace fs = std::filesystem;

Expected<std::vector<std::string>> list_traces(const std::string& dir, std::vector<std::string>& warnings) {
  std::vector<std::string> paths, empty;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Error("cannot read " + dir + ": " + ec.message());
  for (const fs::directory_entry& entry : it) {
    if (entry.path().extension() != ".pst") continue;
    std::error_code size_ec;
    if (!entry.is_regular_file(size_ec)) continue;  // follows a link to a file
    if (entry.file_size(size_ec) == 0 && !size_ec) {
      empty.push_back(entry.path().filename().string());
      continue;
    }
    paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::sort(empty.begin(), empty.end());
  if (paths.empty() && !empty.empty())
    return Error(dir + " holds only empty *.pst traces (" + std::to_string(empty.size()) + ", e.g. " +
                 empty.front() +
                 "): their processes created the file and ended before writing it (killed "
                 "before the first flush?)");
  for (const std::string& name : empty)
    warnings.push_back(name + " is empty (its process ended before writing); skipped");
  if (paths.empty())
    return Error("no *.pst traces in " + dir + " (record a run with 'pipescope record -o " + dir +
                 " -- ...')");
  return paths;
}

// Kernel statistics merged by name over the run's ranks.
using KernelTable = std::unordered_map<std::string, MergedKernel>;

// A rank's kernel time per merged name, until the names are put in categories (once each).
using RankKernelTimes = std::vector<std::pair<const MergedKernel*, int64_t>>;

void merge_kernels(RankDigest& digest, KernelTable& table, RankKernelTimes& times) {
  for (size_t k = 0; k < digest.kernels.size(); ++k) {
    const KernelNameStats& s = digest.kernels[k];
    MergedKernel& m = table[digest.kernel_names[k]];
    times.emplace_back(&m, s.total_ns);
    m.count += s.count;
    m.total_ns += s.total_ns;
    m.min_ns = std::min(m.min_ns, s.min_ns);
    m.max_ns = std::max(m.max_ns, s.max_ns);
    merge_durations(m.durations, s.durations);
  }
  // Released, not just cleared (`= {}` would keep the capacity).
  std::vector<KernelNameStats>().swap(digest.kernels);
  std::vector<std::string>().swap(digest.kernel_names);
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

// Whether a file that failed to open as a trace is a damaged one rather than a foreign file:
// it starts with the magic bytes (or the part of them it holds), or with zeros, which is what a
// machine crash leaves where data had not been written back.
bool starts_like_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof(head));
  const auto n = static_cast<size_t>(in.gcount());
  if (n == 0) return true;
  if (std::memcmp(head, trace::kFileMagic, std::min(n, sizeof(trace::kFileMagic))) == 0) return true;
  return std::all_of(head, head + n, [](char c) { return c == 0; });
}

// The rank in a file name `rank-<rank>.<pid>.pst`; -1 for `rank-x` and other names.
int32_t rank_in_name(const std::string& path) {
  const std::string name = file_name(path);
  int32_t rank = -1;
  unsigned pid = 0;
  char tail[8] = {};
  if (std::sscanf(name.c_str(), "rank-%d.%u.%7s", &rank, &pid, tail) != 3 || std::string(tail) != "pst")
    return -1;
  return rank;
}

// Rank stated in the process info, else learned from NCCL, else (a file cut before either)
// the one in its name.
int32_t rank_of(const RankDigest& d) {
  if (d.process && d.process->rank) return *d.process->rank;
  if (d.global_rank_from_nccl >= 0) return d.global_rank_from_nccl;
  return rank_in_name(d.path);
}

// Whether the file's process recorded nothing the report reads: no GPU work, memory, NCCL or
// NVTX. Before the run's kernels are merged (they empty `kernels`).
bool recorded_nothing(const RankDigest& d) {
  return d.kernels.empty() && !d.gpu_captured && d.memcpy_totals.calls == 0 && d.memset_totals.calls == 0 &&
         !d.memory_seen && d.comms.empty() && d.p2p.empty() && d.global_rank_from_nccl < 0 &&
         d.nvtx_ranges == 0 && d.steps.empty() && d.first_forward_ns < 0 && !d.declared_stage;
}

// A file whose process info was lost (cut or damaged before it) names no run.
bool names_run(const RankDigest& d) { return d.process.has_value(); }
std::string run_of(const RankDigest& d) { return d.process ? d.process->run_id : std::string(); }
int32_t attempt_of(const RankDigest& d) {
  return d.process && d.process->restart_attempt ? *d.process->restart_attempt : 0;
}

std::string describe_group(const std::string& run, int32_t attempt, const std::vector<size_t>& members,
                           const std::vector<RankDigest>& digests) {
  return (run.empty() ? std::string("a run without id") : "run '" + run + "'") + " attempt " +
         std::to_string(attempt) + " (" + std::to_string(members.size()) + " files, e.g. " +
         file_name(digests[members.front()].path) + ")";
}

// "a.pst, b.pst and 3 more"
std::string some_names(const std::vector<size_t>& files, const std::vector<RankDigest>& digests) {
  std::string text;
  for (size_t k = 0; k < files.size() && k < 3; ++k)
    text += (k == 0 ? "" : ", ") + file_name(digests[files[k]].path);
  if (files.size() > 3) text += " and " + std::to_string(files.size() - 3) + " more";
  return text;
}

// "(it ends at byte 180 of 4096: chunk at byte 152: payload cut short)"
std::string how_far(const RankDigest& d) {
  if (d.stop_reason == trace::StopReason::kEndOfData)
    return "(it ends at byte " + std::to_string(d.valid_bytes) + ", before its process info)";
  return "(" + std::string(trace::stop_reason_name(d.stop_reason)) + " at byte " +
         std::to_string(d.valid_bytes) + " of " + std::to_string(d.total_bytes) + ": " + d.stop_detail + ")";
}

}  // namespace

Expected<LoadedRun> load_run(const std::string& dir, const LoadOptions& options) {
  LoadedRun run;
  run.dir = dir;
  auto paths = list_traces(dir, run.warnings);
  if (!paths) return paths.error();

  // Bounded memory: about 128 Ki sampled instances per communicator over all ranks (64 to 1,024
  // per rank), so the digests of 1,024 ranks stay within tens of MB however long the run was.
  ScanOptions scan = options.scan;
  scan.instances_per_comm = static_cast<uint32_t>(std::clamp<size_t>(
      (size_t{1} << 17) / paths->size(), 64, std::min<size_t>(1024, scan.instances_per_comm)));

  std::vector<std::optional<Expected<RankDigest>>> results(paths->size());
  parallel_for(paths->size(), options.threads,
               [&](size_t i) { results[i] = scan_rank_trace((*paths)[i], scan); });

  // A damaged trace (a rank killed while writing its header, a header the disk mangled) is left
  // out with a warning: the other ranks still tell what happened, often more so because one
  // of them crashed. A file that is no trace at all is the user's to move.
  std::vector<RankDigest> digests;
  std::string first_failure;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i]->ok()) {
      digests.push_back(std::move(results[i]->value()));
      continue;
    }
    const std::string& path = (*paths)[i];
    std::string reason = results[i]->error().message;
    if (reason.starts_with(path + ": ")) reason.erase(0, path.size() + 2);
    if (!starts_like_trace(path))
      return Error(file_name(path) + " is not a readable pipescope trace (" + reason + "); move it out of " +
                   dir);
    run.warnings.push_back(file_name(path) + " skipped: " + reason);
    if (first_failure.empty()) first_failure = file_name(path) + ": " + reason;
  }
  if (digests.empty()) return Error("no readable trace in " + dir + " (" + first_failure + ")");
  // Files that hold a header and nothing after it: processes killed before their first flush. A
  // run of nothing else has nothing to report, and a report of nothing would read as all clear.
  if (std::all_of(digests.begin(), digests.end(), [](const RankDigest& d) { return d.records == 0; })) {
    return Error(dir + ": " + std::to_string(digests.size()) + " trace(s), none holding a record (e.g. " +
                 file_name(digests.front().path) + ": its header and nothing more, " +
                 std::to_string(digests.front().valid_bytes) +
                 " bytes): the processes ended before their first flush (killed? PIPESCOPE_FLUSH_MS is " +
                 "how often they write)");
  }

  // A process that never learned its rank and recorded nothing is a launcher's (torchrun's
  // agent, mp.spawn's parent: the library is preloaded into it too), not a rank: numbered, it
  // would take a rank and a stage from the ranks that trained, and with a run id of its own it
  // would split the directory in two runs. A stated rank that did nothing still shows, and so
  // does a file cut before its process info (a crash, said below as such).
  const auto idle_launcher = [](const RankDigest& d) {
    return d.process && rank_of(d) < 0 && recorded_nothing(d);
  };
  if (!std::all_of(digests.begin(), digests.end(), idle_launcher)) {
    for (const RankDigest& d : digests)
      if (idle_launcher(d))
        run.warnings.push_back(file_name(d.path) +
                               " recorded no GPU work, NCCL or NVTX (a launcher process?); left out");
    std::erase_if(digests, idle_launcher);
  }

  // One run and attempt. Files that name no run join the only run there is.
  std::map<std::pair<std::string, int32_t>, std::vector<size_t>> groups;
  std::vector<size_t> runless;
  for (size_t i = 0; i < digests.size(); ++i) {
    if (names_run(digests[i])) {
      groups[{run_of(digests[i]), attempt_of(digests[i])}].push_back(i);
    } else {
      runless.push_back(i);
    }
  }
  if (groups.empty()) groups[{std::string(), 0}] = std::exchange(runless, {});
  std::vector<std::pair<std::string, int32_t>> chosen;
  for (const auto& [key, members] : groups) {
    if (options.run_id && key.first != *options.run_id) continue;
    if (options.attempt && key.second != *options.attempt) continue;
    chosen.push_back(key);
  }
  auto list_groups = [&] {
    std::string text;
    for (const auto& [key, members] : groups)
      text += (text.empty() ? "" : ", ") + describe_group(key.first, key.second, members, digests);
    if (!runless.empty())
      text += ", and " + std::to_string(runless.size()) + " that name no run (" +
              some_names(runless, digests) + ")";
    return text;
  };
  if (chosen.empty())
    return Error("no traces in " + dir + " match" +
                 (options.run_id ? " --run '" + *options.run_id + "'" : "") +
                 (options.attempt ? " --attempt " + std::to_string(*options.attempt) : "") + "; it holds " +
                 list_groups());
  const bool one_run = std::all_of(chosen.begin(), chosen.end(),
                                   [&](const auto& key) { return key.first == chosen.front().first; });
  if (chosen.size() > 1 && options.latest_attempt && !options.attempt && one_run) {
    // `chosen` is in (run, attempt) order: the last is the latest attempt.
    for (size_t k = 0; k + 1 < chosen.size(); ++k) run.other_attempts.push_back(chosen[k].second);
    chosen.erase(chosen.begin(), chosen.end() - 1);
  }
  if (chosen.size() > 1)
    return Error(dir + " holds traces of " + std::to_string(chosen.size()) +
                 " runs or attempts: " + list_groups() + "; choose one with --run ID and/or --attempt N");
  run.run_id = chosen.front().first;
  run.attempt = chosen.front().second;
  std::vector<size_t> members = groups[chosen.front()];
  if (!runless.empty()) {
    // Attached only when the run is beyond doubt, and never over a rank the run already has
    // (a crashed earlier attempt's leftover beside the restart's trace).
    std::set<int32_t> ranks;
    for (size_t i : members) ranks.insert(rank_of(digests[i]));
    std::vector<size_t> attached, left_out;
    for (size_t i : runless)
      (groups.size() == 1 && (rank_of(digests[i]) < 0 || ranks.count(rank_of(digests[i])) == 0) ? attached
                                                                                                : left_out)
          .push_back(i);
    const auto name_no_run = [&](const std::vector<size_t>& files) {
      return some_names(files, digests) + (files.size() == 1 ? " names" : " name") + " no run " +
             how_far(digests[files.front()]);
    };
    if (!attached.empty())
      run.warnings.push_back(name_no_run(attached) + "; taken as part of " +
                             describe_group(run.run_id, run.attempt, members, digests) +
                             ", the only run here");
    if (!left_out.empty())
      run.warnings.push_back(
          name_no_run(left_out) + "; left out: " +
          (groups.size() == 1 ? "its rank has a trace that names the run" : dir + " holds several runs"));
    members.insert(members.end(), attached.begin(), attached.end());
  }

  // Ranks: stated, else learned from NCCL, else numbered after the known ones.
  std::map<int32_t, size_t> by_rank;
  std::vector<size_t> unknown;
  for (size_t i : members) {
    const int32_t rank = rank_of(digests[i]);
    if (rank < 0) {
      unknown.push_back(i);
      continue;
    }
    auto [it, fresh] = by_rank.try_emplace(rank, i);
    if (!fresh)
      return Error("rank " + std::to_string(rank) + " has two traces in " + dir + ": " +
                   file_name(digests[it->second].path) + " and " + file_name(digests[i].path) +
                   " (same run and attempt); remove the stray one");
  }
  int32_t next_free = 0;
  for (size_t i : unknown) {
    while (by_rank.count(next_free) != 0) ++next_free;
    if (members.size() > 1)
      run.warnings.push_back(file_name(digests[i].path) + " never learned its rank; numbered rank " +
                             std::to_string(next_free));
    by_rank[next_free] = i;
  }
  KernelTable all;
  std::vector<RankKernelTimes> kernel_times;
  for (const auto& [rank, i] : by_rank) {
    merge_kernels(digests[i], all, kernel_times.emplace_back());
    run.global_rank.push_back(rank);
    run.record_bytes += digests[i].record_bytes;
    run.records += digests[i].records;
    run.world_size =
        std::max(run.world_size,
                 digests[i].process && digests[i].process->world_size ? *digests[i].process->world_size : 0);
    run.ranks.push_back(std::move(digests[i]));
  }
  run.world_size = std::max(run.world_size, run.global_rank.back() + 1);
  std::set<int32_t> present(run.global_rank.begin(), run.global_rank.end());
  for (int32_t r = 0; r < run.world_size; ++r)
    if (present.count(r) == 0) run.missing_ranks.push_back(r);

  std::unordered_map<const MergedKernel*, const char*> category;
  for (const auto& [name, k] : all) category.emplace(&k, kernel_category(name));
  for (size_t r = 0; r < run.ranks.size(); ++r)
    for (const auto& [kernel, ns] : kernel_times[r])
      run.ranks[r].kernel_ns_by_category[category[kernel]] += ns;
  for (auto& [name, k] : all) {
    k.name = name;
    run.kernels.push_back(std::move(k));
  }
  return run;
}

}  // namespace pipescope::analysis
