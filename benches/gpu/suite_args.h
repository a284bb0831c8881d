// The suite's own flags, taken out of argv before Google Benchmark sees the rest: --quick
// (fewer shapes and sizes, as `pipescope calibrate run --quick`) and, for nccl_benchmark,
// --rendezvous FILE. Pure logic.
#pragma once

#include <string>

namespace pipescope::benches {

struct SuiteArgs {
  bool quick = false;
  std::string rendezvous;  // empty: not given
  std::string command;     // the whole command line as given, for the `command` context key
  bool list_only = false;  // --benchmark_list_tests: name the benchmarks, measure nothing
  std::string error;       // a flag without its value
};

// Removes --quick, --rendezvous FILE and --rendezvous=FILE from argv (argc shrinks); leaves the
// rest, --benchmark_list_tests included, for benchmark::Initialize.
SuiteArgs take_suite_args(int& argc, char** argv);

}  // namespace pipescope::benches
