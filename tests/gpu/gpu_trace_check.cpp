// Checks the traces of a GPU smoke run (scripts/gpu-smoke.sh): every expected kind is present,
// and, for `nccl-linked`, every NCCL call reaches at least one kernel through CUPTI's external
// correlation. Prints what it found; exits 1 when an expectation fails, 2 on bad usage.
// Usage: gpu_trace_check TRACE_DIR --expect kernel,memcpy,memset,memory,nccl,nccl-linked,nvtx
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpu_trace_expectations.h"
#include "loaded_trace.h"

int main(int argc, char** argv) {
  using namespace pipescope::inject::testing;
  if (argc != 4 || std::string(argv[2]) != "--expect") {
    std::fprintf(stderr, "usage: gpu_trace_check TRACE_DIR --expect KIND[,KIND...]\n");
    return 2;
  }
  std::vector<LoadedTrace> traces;
  for (const std::string& path : trace_files_in(argv[1])) {
    auto loaded = read_trace(path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "gpu_trace_check: %s\n", loaded.error().message.c_str());
      return 1;
    }
    traces.push_back(std::move(*loaded));
  }
  std::vector<std::string> expected;
  std::stringstream list(argv[3]);
  for (std::string item; std::getline(list, item, ',');) expected.push_back(item);
  auto verdict = check_gpu_traces(traces, expected);
  if (!verdict.ok()) {
    std::fprintf(stderr, "gpu_trace_check: %s\n", verdict.error().message.c_str());
    return 2;
  }
  std::fputs(verdict->report.c_str(), stdout);
  return verdict->failures.empty() ? 0 : 1;
}
