#include "pipescope/analysis/run_loader.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

namespace pipescope::analysis {
namespace {

namespace fs = std::filesystem;

Expected<std::vector<std::string>> list_traces(const std::string& dir, std::vector<std::string>& warnings) {
  std::vector<std::string> paths;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Error("cannot read " + dir + ": " + ec.message());
  for (const fs::directory_entry& entry : it) {
    if (entry.path().extension() != ".pst") continue;
    std::error_code size_ec;
    if (!entry.is_regular_file(size_ec)) continue;
    if (entry.file_size(size_ec) == 0 && !size_ec) {
      warnings.push_back(entry.path().filename().string() +
                         " is empty (its process ended before writing); skipped");
      continue;
    }
    paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    return Error("no *.pst traces in " + dir + " (record a run with 'pipescope record -o " + dir +
                 " -- ...')");
  return paths;
}

// Kernel statistics merged by name over the run's ranks.
using KernelTable = std::unordered_map<std::string, MergedKernel>;

void merge_kernels(RankDigest& digest, KernelTable& table) {
  for (size_t id = 0; id < digest.kernels.size(); ++id) {
    const KernelNameStats& s = digest.kernels[id];
    if (s.count == 0) continue;
    MergedKernel& m = table[digest.kernel_names[id]];
    m.count += s.count;
    m.total_ns += s.total_ns;
    m.max_ns = std::max(m.max_ns, s.max_ns);
    for (size_t b = 0; b < s.histogram.size(); ++b) m.histogram[b] += s.histogram[b];
  }
  digest.kernels = {};
  digest.kernel_names = {};
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

int32_t rank_of(const RankDigest& d) {
  if (d.process && d.process->rank) return *d.process->rank;
  return d.global_rank_from_nccl;
}

std::string run_of(const RankDigest& d) { return d.process ? d.process->run_id : std::string(); }
int32_t attempt_of(const RankDigest& d) {
  return d.process && d.process->restart_attempt ? *d.process->restart_attempt : 0;
}

std::string describe_group(const std::string& run, int32_t attempt, const std::vector<size_t>& members,
                           const std::vector<RankDigest>& digests) {
  return "run '" + run + "' attempt " + std::to_string(attempt) + " (" + std::to_string(members.size()) +
         " files, e.g. " + file_name(digests[members.front()].path) + ")";
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
  const unsigned threads = std::max(
      1u, std::min<unsigned>(options.threads != 0 ? options.threads : std::thread::hardware_concurrency(),
                             static_cast<unsigned>(paths->size())));
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < paths->size(); i = next++) {
        results[i] = scan_rank_trace((*paths)[i], scan);
      }
    });
  }
  for (std::thread& t : workers) t.join();

  std::vector<RankDigest> digests;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i]->ok())
      return Error(file_name((*paths)[i]) + " is not a readable pipescope trace (" +
                   results[i]->error().message + "); move it out of " + dir);
    digests.push_back(std::move(results[i]->value()));
  }

  // One run and attempt.
  std::map<std::pair<std::string, int32_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < digests.size(); ++i)
    groups[{run_of(digests[i]), attempt_of(digests[i])}].push_back(i);
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
    return text;
  };
  if (chosen.empty())
    return Error("no traces in " + dir + " match" + (options.run_id ? " --run " + *options.run_id : "") +
                 (options.attempt ? " --attempt " + std::to_string(*options.attempt) : "") + "; it holds " +
                 list_groups());
  if (chosen.size() > 1)
    return Error(dir + " holds traces of " + std::to_string(chosen.size()) +
                 " runs or attempts: " + list_groups() + "; choose one with --run ID and/or --attempt N");
  run.run_id = chosen.front().first;
  run.attempt = chosen.front().second;
  std::vector<size_t> members = groups[chosen.front()];

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
  for (const auto& [rank, i] : by_rank) {
    merge_kernels(digests[i], all);
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

  for (auto& [name, k] : all) {
    k.name = name;
    run.kernels.push_back(std::move(k));
  }
  return run;
}

}  // namespace pipescope::analysis
