// Streaming union of intervals: intervals come roughly in start order (a bounded reorder window
// puts them in exact order), and the union's length grows by whatever an interval adds past the
// furthest end seen so far. No interval is stored once it has been swept.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <vector>

namespace pipescope::analysis {

class UnionLength {
 public:
  // Adds [start, end) to the union; returns the part that was new, as [from, end) (from >= end:
  // nothing new). Exact when starts are non-decreasing.
  int64_t add(int64_t start_ns, int64_t end_ns, int64_t* new_from = nullptr) {
    const int64_t from = std::max(start_ns, cover_end_);
    if (new_from != nullptr) *new_from = from;
    if (end_ns <= from) return 0;
    total_ += end_ns - from;
    cover_end_ = end_ns;
    return end_ns - from;
  }
  int64_t total() const { return total_; }

 private:
  int64_t cover_end_ = INT64_MIN;
  int64_t total_ = 0;
};

// Holds items until no earlier-starting one can arrive any more (the newest start seen minus
// `window_ns`), then hands them out in start order. Input is nearly sorted (CUPTI writes records
// in completion order), so an item is inserted by a short walk back from the newest one.
template <class Item>
class ReorderWindow {
 public:
  explicit ReorderWindow(int64_t window_ns) : window_ns_(window_ns) {}

  // Returns false when the item starts before one already handed out: it is handed out at once,
  // out of order.
  template <class Sink>
  bool push(const Item& item, Sink&& sink) {
    if (item.start_ns < released_up_to_) {
      sink(item);
      return false;
    }
    auto at = held_.end();
    while (at != held_.begin() && std::prev(at)->start_ns > item.start_ns) --at;
    held_.insert(at, item);
    newest_start_ = std::max(newest_start_, item.start_ns);
    while (!held_.empty() && held_.front().start_ns <= newest_start_ - window_ns_) release_front(sink);
    return true;
  }

  template <class Sink>
  void drain(Sink&& sink) {
    while (!held_.empty()) release_front(sink);
  }

 private:
  template <class Sink>
  void release_front(Sink& sink) {
    const Item item = held_.front();
    held_.pop_front();
    released_up_to_ = item.start_ns;
    sink(item);
  }

  int64_t window_ns_;
  int64_t newest_start_ = INT64_MIN;
  int64_t released_up_to_ = INT64_MIN;
  std::deque<Item> held_;
};

}  // namespace pipescope::analysis
