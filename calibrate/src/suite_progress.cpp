#include "pipescope/calibrate/suite_progress.h"

#include <algorithm>

namespace pipescope::calibrate {

SuiteProgress::SuiteProgress(std::vector<SuitePhase> phases) {
  for (SuitePhase& p : phases) phases_.push_back({std::move(p), {}, -1, false});
}

void SuiteProgress::start(size_t phase, double now_s) {
  if (phase >= phases_.size()) return;
  current_ = phase;
  phases_[phase].started_s = now_s;
}

std::string SuiteProgress::line(std::string_view text, double /*now_s*/) {
  if (current_ >= phases_.size()) return "";
  State& s = phases_[current_];
  // Google Benchmark's console line: the name, then spaces and the figures. Repetitions print
  // the name again and aggregates add a suffix (_mean): neither finishes anything new.
  const std::string name(text.substr(0, text.find_first_of(" \t\r\n")));
  if (name.empty() || s.phase.names.count(name) == 0 || !s.finished.insert(name).second) return "";
  return name;
}

void SuiteProgress::finish(double /*now_s*/) {
  if (current_ < phases_.size()) phases_[current_].ended = true;
}

size_t SuiteProgress::done() const {
  size_t n = 0;
  for (const State& s : phases_) n += s.ended ? s.phase.names.size() : s.finished.size();
  return n;
}

size_t SuiteProgress::total() const {
  size_t n = 0;
  for (const State& s : phases_) n += s.phase.names.size();
  return n;
}

double SuiteProgress::fraction() const {
  const size_t all = total();
  return all == 0 ? 1.0 : static_cast<double>(done()) / static_cast<double>(all);
}

double SuiteProgress::seconds_left(double now_s) const {
  double left = 0;
  for (const State& s : phases_) {
    if (s.ended) continue;
    const double remaining = static_cast<double>(s.phase.names.size() - s.finished.size());
    double each = s.phase.prior_seconds_each;
    if (s.started_s >= 0 && !s.finished.empty())
      each = std::max(0.0, now_s - s.started_s) / static_cast<double>(s.finished.size());
    left += remaining * each;
  }
  return left;
}

}  // namespace pipescope::calibrate
