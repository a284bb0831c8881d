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
  // The length covered before `at_ns`, while every interval added so far started before it (the
  // covered part from at_ns on is then one piece, up to the furthest end).
  int64_t total_before(int64_t at_ns) const {
    return cover_end_ <= at_ns ? total_ : total_ - (cover_end_ - at_ns);
  }

 private:
  int64_t cover_end_ = INT64_MIN;
  int64_t total_ = 0;
};

// Holds items until no earlier-starting one can arrive any more (the newest start seen minus
// `window_ns`), then hands them out in start order, equal starts in arrival order. Most items
// come in start order and go to the back of a queue; CUPTI delivers each stream's buffers on its
// own schedule, so a batch of records can come most of a flush period late: those go to a
// min-heap, each placed in logarithmic time however many are held, and the two are merged as
// they are handed out.
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
    if (in_order_.empty() || item.start_ns >= in_order_.back().start_ns) {
      in_order_.push_back(item);
    } else {
      late_.push_back(Late{item, late_arrivals_++});
      std::push_heap(late_.begin(), late_.end(), later);
    }
    newest_start_ = std::max(newest_start_, item.start_ns);
    const int64_t release_to = newest_start_ - window_ns_;
    while (true) {
      const bool from_late = late_first();
      if (from_late ? late_.front().item.start_ns > release_to
                    : in_order_.empty() || in_order_.front().start_ns > release_to)
        break;
      release_front(from_late, sink);
    }
    return true;
  }

  template <class Sink>
  void drain(Sink&& sink) {
    while (!in_order_.empty() || !late_.empty()) release_front(late_first(), sink);
  }

  size_t held_count() const { return in_order_.size() + late_.size(); }

 private:
  struct Late {
    Item item;
    uint64_t arrival;
  };
  // a after b: the heap's order (its root is the earliest start, the first to arrive of equals).
  static bool later(const Late& a, const Late& b) {
    if (a.item.start_ns != b.item.start_ns) return a.item.start_ns > b.item.start_ns;
    return a.arrival > b.arrival;
  }
  // Whether the heap holds the next item. On equal starts the queue's goes first: it arrived
  // before the queue's newest item, the heap's after it.
  bool late_first() const {
    return !late_.empty() && (in_order_.empty() || late_.front().item.start_ns < in_order_.front().start_ns);
  }

  template <class Sink>
  void release_front(bool from_late, Sink& sink) {
    Item item;
    if (from_late) {
      std::pop_heap(late_.begin(), late_.end(), later);
      item = late_.back().item;
      late_.pop_back();
    } else {
      item = in_order_.front();
      in_order_.pop_front();
    }
    released_up_to_ = item.start_ns;
    sink(item);
  }

  int64_t window_ns_;
  int64_t newest_start_ = INT64_MIN;
  int64_t released_up_to_ = INT64_MIN;
  uint64_t late_arrivals_ = 0;
  std::deque<Item> in_order_;
  std::vector<Late> late_;
};

}  // namespace pipescope::analysis
