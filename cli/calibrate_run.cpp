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

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/calibrate/profile_base.h"
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
  const Captured c = capture("nvidia-smi -L 2>/dev/null");
  int count = 0;
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) count += line.rfind("GPU ", 0) == 0;
  return count;
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

class Progress {
 public:
  explicit Progress(size_t total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  void step(const std::string& what) {
    ++done_;
    draw(what);
  }
  void draw(const std::string& what) const {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const size_t width = 30;
    const size_t filled = total_ > 0 ? std::min(width, done_ * width / total_) : 0;
    std::string left = "?";
    if (done_ > 0 && total_ >= done_)
      left = duration(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
    std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done_ << "/"
              << total_ << "  " << duration(elapsed) << " elapsed, ~" << left << " left  "
              << what.substr(0, 48) << "\033[K" << std::flush;
  }
  void finish() const { std::cerr << '\n'; }

 private:
  size_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

struct Listing {
  std::set<std::string> names;
  std::string no_gpu;  // the program's "no GPU: ..." line
  std::string device;  // its "device: NAME" line: what CUDA calls the GPU
};

Listing list_benchmarks(const std::string& program, bool quick) {
  const Captured c =
      capture(quote(program) + (quick ? " --quick" : "") + " --benchmark_list_tests=true 2>&1");
  Listing out;
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("no GPU", 0) == 0)
      out.no_gpu = line;
    else if (line.rfind("device: ", 0) == 0)
      out.device = line.substr(8);
    else if (!line.empty())
      out.names.insert(line);
  }
  return out;
}

bool torch_with_cuda() {
  return capture(
             "python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null "
             "2>&1")
             .status == 0;
}

// Runs one suite program (as `ranks` processes when > 1), stepping the bar per finished benchmark.
bool run_program(const std::string& program, const std::set<std::string>& names, bool quick, int ranks,
                 const std::string& out_file, const fs::path& work, Progress& progress) {
  const std::string args = (quick ? std::string(" --quick") : "") + " --benchmark_format=console" +
                           " --benchmark_counters_tabular=false --benchmark_color=false";
  std::string command;
  if (ranks > 1) {
    const std::string rendezvous = (work / "nccl-rendezvous").string();
    for (int r = ranks - 1; r >= 1; --r) {
      command += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
                 " WORLD_SIZE=" + std::to_string(ranks) + " PIPESCOPE_RENDEZVOUS=" + quote(rendezvous) + " " +
                 quote(program) + args + " --benchmark_out=/dev/null >/dev/null 2>" +
                 quote((work / ("rank" + std::to_string(r) + ".err")).string()) + " & ";
    }
    command += "RANK=0 LOCAL_RANK=0 WORLD_SIZE=" + std::to_string(ranks) +
               " PIPESCOPE_RENDEZVOUS=" + quote(rendezvous) + " ";
  }
  command += quote(program) + args + " --benchmark_out=" + quote(out_file) +
             " --benchmark_out_format=json 2>" + quote((work / "rank0.err").string());
  if (ranks > 1) command = "{ " + command + "; status=$?; wait; exit $status; }";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[4096];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::string text(line);
    const std::string first = text.substr(0, text.find(' '));
    if (names.count(first) != 0) progress.step(first);
  }
  return pclose(pipe) == 0;
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

}  // namespace

int run_calibrate_run(const CalibrateArgs& a) {
  const std::string gpu_program = find_program("gpu_benchmark");
  if (gpu_program.empty()) {
    if (visible_gpus() == 0) {
      std::cout << kRun << ": no GPU on this machine; nothing measured\n";
      return kExitOk;
    }
    std::cerr << kRun
              << ": the GPU suite (gpu_benchmark) is not in this build: build pipescope with the CUDA "
                 "compiler (nvcc) present, or set PIPESCOPE_SUITE_DIR\n";
    return kExitFailure;
  }
  const Listing gpu_listing = list_benchmarks(gpu_program, a.quick);
  const std::set<std::string>& gpu_names = gpu_listing.names;
  if (!gpu_listing.no_gpu.empty() || gpu_names.empty()) {
    std::cout << kRun << ": "
              << (gpu_listing.no_gpu.empty() ? "no GPU: the suite lists no benchmark" : gpu_listing.no_gpu)
              << "; nothing measured\n";
    return kExitOk;
  }
  const std::string nccl_program = find_program("nccl_benchmark");
  std::set<std::string> nccl_names;
  if (!nccl_program.empty()) nccl_names = list_benchmarks(nccl_program, a.quick).names;
  const std::string attention_script = find_program("attention_sdpa.py");
  const int ranks = std::max(1, visible_gpus());
  const bool attention = !attention_script.empty() && torch_with_cuda();
  if (int rc =
          check_before_measuring(a, gpu_listing.device, nccl_program, !nccl_names.empty(), ranks, attention);
      rc != kExitOk)
    return rc;
  if (a.dry_run) return kExitOk;
  std::error_code ec;
  const fs::path work = fs::temp_directory_path(ec) / ("pipescope-calibrate." + std::to_string(getpid()));
  fs::create_directories(work, ec);
  if (ec) {
    std::cerr << kRun << ": cannot create a work directory " << work << ": " << ec.message() << '\n';
    return kExitFailure;
  }

  Progress progress(gpu_names.size() + nccl_names.size() + (attention ? 1 : 0));
  progress.draw("starting");
  CalibrateArgs fit = a;
  fit.bench_files.clear();
  const std::string gpu_json = (work / "gpu.json").string();
  if (!run_program(gpu_program, gpu_names, a.quick, 1, gpu_json, work, progress)) {
    progress.finish();
    std::cerr << kRun << ": gpu_benchmark failed; its messages are in " << (work / "rank0.err").string()
              << '\n';
    return kExitFailure;
  }
  fit.bench_files.push_back(gpu_json);
  if (!nccl_names.empty()) {
    const std::string nccl_json = (work / "nccl.json").string();
    if (run_program(nccl_program, nccl_names, a.quick, ranks, nccl_json, work, progress)) {
      fit.bench_files.push_back(nccl_json);
    } else {
      std::cerr << '\n'
                << kRun << ": nccl_benchmark failed (see " << work.string()
                << "); collectives keep the base profile\n";
    }
  }
  if (attention) {
    const std::string attention_json = (work / "attention.json").string();
    const Captured c = capture("python3 " + quote(attention_script) + (a.quick ? " --quick" : "") + " -o " +
                               quote(attention_json) + " 2>&1");
    progress.step("attention");
    if (c.status == 0 && fs::exists(attention_json, ec))
      fit.bench_files.push_back(attention_json);
    else
      std::cerr << '\n'
                << kRun << ": the attention benchmark measured nothing (" << c.out.substr(0, 200) << ")\n";
  }
  progress.finish();
  if (fit.output.empty()) fit.output = "calibration.json";
  fit.command_line = std::string(kRun) + (a.quick ? " --quick" : "") +
                     (a.gpu.empty() ? "" : " --gpu " + a.gpu) + (a.base.empty() ? "" : " --base " + a.base) +
                     " -o " + fit.output;
  const int rc = run_calibrate_fit(fit);
  if (rc == kExitOk) std::cout << "raw results kept in " << work.string() << '\n';
  return rc;
}

}  // namespace pipescope::cli
