// How far `pipescope calibrate run` is through the suite, and how long it still needs: the
// programs run one after another (phases), each over the benchmarks it listed beforehand; every
// console line that starts with a listed name, the first time, finishes that benchmark. Pure
// logic: the caller reads the lines and the clock.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope::calibrate {

struct SuitePhase {
  std::string program;            // e.g. "gpu_benchmark"
  std::set<std::string> names;    // what it listed (--benchmark_list_tests)
  double prior_seconds_each = 1;  // a guess per benchmark until the phase has finished one
};

class SuiteProgress {
 public:
  explicit SuiteProgress(std::vector<SuitePhase> phases);

  // The phase starts now (seconds on any steady clock); phases start in order.
  void start(size_t phase, double now_s);
  // One console line of the running phase; the name it finished, or empty.
  std::string line(std::string_view text, double now_s);
  // The phase ended (its program exited): what it did not report counts as done.
  void finish(double now_s);

  size_t done() const;
  size_t total() const;
  double fraction() const;  // done / total; 1 when there is nothing to run
  // Remaining benchmarks at the running phase's own pace (seconds per finished benchmark since
  // it started) once it has finished one, at their priors before that and for phases to come.
  double seconds_left(double now_s) const;

 private:
  struct State {
    SuitePhase phase;
    std::set<std::string> finished;
    double started_s = -1;
    bool ended = false;
  };
  std::vector<State> phases_;
  size_t current_ = 0;
};

}  // namespace pipescope::calibrate
