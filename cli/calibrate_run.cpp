// `pipescope calibrate run [-o FILE] [--quick]`: runs the GPU suite (benches/gpu/) with a progress
// bar and an estimate of the time left, fits the results and writes a profile. Without a GPU it
// says so and exits 0.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/calibrate/profile_base.h"
#include "pipescope/calibrate/suite_progress.h"
#include "pipescope/calibrate/visible_gpus.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::cli {
namespace {

namespace fs = std::filesystem;
const char* const kRun = "pipescope calibrate run";

std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Where the suite's programs live: PIPESCOPE_SUITE_DIR, beside this binary (a bundle's bin/), or
// the build tree's benches/gpu/.
std::string find_program(const std::string& name) {
  std::vector<fs::path> dirs;
  if (const char* dir = std::getenv("PIPESCOPE_SUITE_DIR")) dirs.emplace_back(dir);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(self.parent_path());
    dirs.push_back(self.parent_path() / PIPESCOPE_LIBEXECDIR_FROM_BINDIR);  // an install
    dirs.push_back(self.parent_path() / ".." / "benches" / "gpu");
    dirs.push_back(self.parent_path() / ".." / "share");
  }
  dirs.emplace_back(fs::path(PIPESCOPE_SOURCE_DIR) / "benches" / "gpu");
  for (const fs::path& dir : dirs) {
    const fs::path candidate = dir / name;
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return "";
}

struct Captured {
  int status = 0;
  std::string out;
};

Captured capture(const std::string& shell_command) {
  Captured c;
  FILE* pipe = popen(shell_command.c_str(), "r");
  if (pipe == nullptr) return {127, ""};
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) c.out.append(buffer, n);
  c.status = pclose(pipe);
  return c;
}

int visible_gpus() {
  return calibrate::visible_gpu_count(std::getenv("CUDA_VISIBLE_DEVICES"),
                                      capture("nvidia-smi -L 2>/dev/null").out);
}

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof(text), "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else {
    std::snprintf(text, sizeof(text), "%ldm%02lds", s / 60, s % 60);
  }
  return text;
}

// The bar on stderr, redrawn in place.
class ProgressBar {
 public:
  explicit ProgressBar(calibrate::SuiteProgress& progress)
      : progress_(progress), start_(std::chrono::steady_clock::now()) {}
  double now_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void draw(const std::string& what) const {
    const size_t width = 30;
    const auto filled = static_cast<size_t>(progress_.fraction() * static_cast<double>(width));
    const double now = now_s();
    std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] "
              << progress_.done() << "/" << progress_.total() << "  " << duration(now) << " elapsed, ~"
              << duration(progress_.seconds_left(now)) << " left  " << what.substr(0, 48) << "\033[K"
              << std::flush;
  }
  void finish() const { std::cerr << '\n'; }

 private:
  calibrate::SuiteProgress& progress_;
  std::chrono::steady_clock::time_point start_;
};

// The launcher environment of one rank of a `ranks`-process job on this node (torchrun's names,
// which nccl_benchmark reads first), as a shell prefix.
std::string rank_environment(int rank, int ranks, const fs::path& rendezvous) {
  const std::string n = std::to_string(ranks), r = std::to_string(rank);
  return "RANK=" + r + " LOCAL_RANK=" + r + " WORLD_SIZE=" + n + " LOCAL_WORLD_SIZE=" + n +
         " PIPESCOPE_RENDEZVOUS=" + quote(rendezvous.string()) + " ";
}

struct Listing {
  std::set<std::string> names;
  std::string no_gpu;  // the program's "no GPU: ..." line
  std::string device;  // its "device: NAME" line: what CUDA calls the GPU
};

// `command` lists names one per line (--benchmark_list_tests=true, or the attention script's
// --list); run in the environment the real run will have, so the names are the ones it prints.
Listing list_benchmarks(const std::string& command) {
  const Captured c = capture(command + " 2>&1");
  Listing out;
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("no GPU", 0) == 0) {
      out.no_gpu = line;
    } else if (line.rfind("device: ", 0) == 0) {
      out.device = line.substr(8);
    } else if (!line.empty()) {
      out.names.insert(line);
    }
  }
  return out;
}

bool torch_with_cuda() {
  return capture(
             "python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null "
             "2>&1")
             .status == 0;
}

// Runs `command` (its stdout: console lines), feeding every line to the progress of `phase`.
bool run_phase(const std::string& command, size_t phase, calibrate::SuiteProgress& progress,
               ProgressBar& bar) {
  progress.start(phase, bar.now_s());
  bar.draw("starting");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[4096];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    const std::string finished = progress.line(line, bar.now_s());
    if (!finished.empty()) bar.draw(finished);
  }
  progress.finish(bar.now_s());
  bar.draw("");
  return pclose(pipe) == 0;
}

// A suite program as `ranks` processes (one per GPU, rank 0 reporting), console to stdout.
std::string program_command(const std::string& program, bool quick, int ranks, const std::string& out_file,
                            const fs::path& work) {
  const std::string args = (quick ? std::string(" --quick") : "") + " --benchmark_format=console" +
                           " --benchmark_counters_tabular=false --benchmark_color=false";
  const fs::path rendezvous = work / "nccl-rendezvous";
  std::string command;
  for (int r = ranks - 1; r >= 1; --r) {
    command += rank_environment(r, ranks, rendezvous) + quote(program) + args + " >/dev/null 2>" +
               quote((work / ("rank" + std::to_string(r) + ".err")).string()) + " & ";
  }
  if (ranks > 1) command += rank_environment(0, ranks, rendezvous);
  command += quote(program) + args + " --benchmark_out=" + quote(out_file) +
             " --benchmark_out_format=json 2>" + quote((work / "rank0.err").string());
  return ranks > 1 ? "{ " + command + "; status=$?; wait; exit $status; }" : command;
}

// What the run will measure decides, before an hour of measuring, whether it can end in a
// profile: the device must be a GPU the planner knows, and without a profile of that GPU to
// start from (--base, or a bundled one), the run must measure every GPU-specific part.
int check_before_measuring(const CalibrateArgs& a, const std::string& device, const std::string& nccl_program,
                           bool nccl, int ranks, bool attention) {
  if (device.empty()) return usage_error(kRun, "gpu_benchmark did not name the device it measures");
  auto gpu = a.gpu.empty() ? planner::identify_gpu(device) : planner::find_gpu(a.gpu);
  if (!gpu.ok()) return usage_error(kRun, gpu.error().message);
  auto base = calibrate::resolve_base(*gpu, a.base);
  if (!base.ok()) return usage_error(kRun, base.error().message);
  std::string cannot;
  auto add = [&](const std::string& what) { cannot += (cannot.empty() ? "" : "; ") + what; };
  if (nccl_program.empty()) add("intra-node collectives: no nccl_benchmark in this build");
  if (!nccl_program.empty() && !nccl) add("intra-node collectives: nccl_benchmark lists no benchmark");
  if (nccl && ranks < 2) add("intra-node collectives: " + std::to_string(ranks) + " GPU visible");
  if (!attention) add("attention: PyTorch with CUDA is not importable (or attention_sdpa.py is missing)");
  if (base->kind == calibrate::BaseKind::kDefaults && !cannot.empty()) {
    return usage_error(kRun, "no calibration profile of " + gpu->name +
                                 " to keep what this run cannot measure (" + cannot +
                                 "): pass --base NAME|FILE for those parts (e.g. --base " +
                                 std::string(calibrate::kDefaultsProfile) +
                                 "; the profile's sources then say which numbers came from it)");
  }
  std::cout << kRun << ": " << device << " is " << gpu->name << "; what it does not measure"
            << (cannot.empty() ? "" : " (" + cannot + ")") << " comes from " << base->origin << '\n';
  return kExitOk;
}

// Without a GPU: a dry run has checked all it can (exit 0); a run asked for a profile it cannot
// write, so that `calibrate run && plan --calibration FILE` stops here, not at the plan.
int without_a_gpu(const CalibrateArgs& a, const std::string& why) {
  if (a.dry_run) {
    std::cout << kRun << ": " << why << "; nothing measured\n";
    return kExitOk;
  }
  std::cerr << kRun << ": " << why << "; nothing measured, " << a.output << " not written\n";
  return kExitFailure;
}

}  // namespace

int run_calibrate_run(const CalibrateArgs& a) {
  const std::string gpu_program = find_program("gpu_benchmark");
  if (gpu_program.empty() && !kProfilerBuilt) {
    return needs_profiler_build(kRun, "the GPU calibration suite", "PIPESCOPE_SUITE_DIR");
  }
  if (gpu_program.empty()) {
    if (visible_gpus() == 0) return without_a_gpu(a, "no GPU on this machine");
    std::cerr << kRun
              << ": the GPU suite (gpu_benchmark) is not in this build: build pipescope with the CUDA "
                 "compiler (nvcc) present, or set PIPESCOPE_SUITE_DIR\n";
    return kExitFailure;
  }
  const std::string quick = a.quick ? " --quick" : "";
  const Listing gpu_listing = list_benchmarks(quote(gpu_program) + quick + " --benchmark_list_tests=true");
  if (!gpu_listing.no_gpu.empty() || gpu_listing.names.empty()) {
    return without_a_gpu(
        a, gpu_listing.no_gpu.empty() ? "no GPU: the suite lists no benchmark" : gpu_listing.no_gpu);
  }
  std::error_code ec;
  const fs::path work = fs::temp_directory_path(ec) / ("pipescope-calibrate." + std::to_string(getpid()));
  const int ranks = std::max(1, visible_gpus());
  const std::string nccl_program = find_program("nccl_benchmark");
  std::set<std::string> nccl_names;
  if (!nccl_program.empty()) {
    nccl_names = list_benchmarks((ranks > 1 ? rank_environment(0, ranks, work / "nccl-rendezvous") : "") +
                                 quote(nccl_program) + quick + " --benchmark_list_tests=true")
                     .names;
  }
  const std::string attention_script = find_program("attention_sdpa.py");
  const bool attention = !attention_script.empty() && torch_with_cuda();
  // PyTorch's own memory-bound kernels, priced under --framework pytorch-eager; a suite without the
  // script leaves those losses to the base profile.
  const std::string eager_script = attention ? find_program("eager_elementwise.py") : std::string();
  // Unfused attention (batched GEMMs, softmax, dropout), priced under --no-flash-attention.
  const std::string unfused_script = attention ? find_program("attention_unfused.py") : std::string();
  if (int rc =
          check_before_measuring(a, gpu_listing.device, nccl_program, !nccl_names.empty(), ranks, attention);
      rc != kExitOk)
    return rc;
  if (a.dry_run) return kExitOk;
  fs::create_directories(work, ec);
  if (ec) {
    std::cerr << kRun << ": cannot create a work directory " << work << ": " << ec.message() << '\n';
    return kExitFailure;
  }

  // Rough seconds per benchmark until a phase has timed its own: a GEMM runs 0.1 s of GPU time,
  // a collective 20 iterations, an attention shape a forward and a backward of 0.2 s each.
  std::vector<calibrate::SuitePhase> phases = {{"gpu_benchmark", gpu_listing.names, 0.3}};
  if (!nccl_names.empty()) phases.push_back({"nccl_benchmark", nccl_names, 0.2});
  if (attention) {
    phases.push_back({"attention_sdpa.py",
                      list_benchmarks("python3 " + quote(attention_script) + quick + " --list").names, 1.0});
  }
  if (!eager_script.empty()) {
    phases.push_back({"eager_elementwise.py",
                      list_benchmarks("python3 " + quote(eager_script) + quick + " --list").names, 0.2});
  }
  if (!unfused_script.empty()) {
    phases.push_back({"attention_unfused.py",
                      list_benchmarks("python3 " + quote(unfused_script) + quick + " --list").names, 0.5});
  }
  calibrate::SuiteProgress progress(phases);
  ProgressBar bar(progress);
  CalibrateArgs fit = a;
  fit.bench_files.clear();
  const std::string gpu_json = (work / "gpu.json").string();
  if (!run_phase(program_command(gpu_program, a.quick, 1, gpu_json, work), 0, progress, bar)) {
    bar.finish();
    std::cerr << kRun << ": gpu_benchmark failed; its messages are in " << (work / "rank0.err").string()
              << '\n';
    return kExitFailure;
  }
  fit.bench_files.push_back(gpu_json);
  size_t phase = 1;
  if (!nccl_names.empty()) {
    const std::string nccl_json = (work / "nccl.json").string();
    if (run_phase(program_command(nccl_program, a.quick, ranks, nccl_json, work), phase++, progress, bar)) {
      fit.bench_files.push_back(nccl_json);
    } else {
      std::cerr << '\n'
                << kRun << ": nccl_benchmark failed (see " << work.string()
                << "); collectives keep the base profile\n";
    }
  }
  // A PyTorch script of the suite: its results join the fit, or the base keeps what it measures.
  auto run_script = [&](const std::string& script, const std::string& name, const std::string& what) {
    const std::string json_file = (work / (name + ".json")).string();
    const std::string log = (work / (name + ".err")).string();
    const bool ran =
        run_phase("python3 " + quote(script) + quick + " -o " + quote(json_file) + " 2>" + quote(log),
                  phase++, progress, bar);
    if (ran && fs::exists(json_file, ec)) {
      fit.bench_files.push_back(json_file);
    } else {
      std::cerr << '\n' << kRun << ": the " << what << " benchmark measured nothing (see " << log << ")\n";
    }
  };
  if (attention) run_script(attention_script, "attention", "attention");
  if (!eager_script.empty()) run_script(eager_script, "eager", "PyTorch kernels");
  if (!unfused_script.empty()) run_script(unfused_script, "attention_unfused", "unfused attention");
  bar.finish();
  if (fit.output.empty()) fit.output = "calibration.json";
  fit.command_line = std::string(kRun) + quick + (a.gpu.empty() ? "" : " --gpu " + a.gpu) +
                     (a.base.empty() ? "" : " --base " + a.base) + " -o " + fit.output;
  const int rc = run_calibrate_fit(fit);
  if (rc == kExitOk) std::cout << "raw results kept in " << work.string() << '\n';
  return rc;
}

}  // namespace pipescope::cli
