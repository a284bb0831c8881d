// The streaming interval sweep: the reorder window puts late items back in start order (ties in
// arrival order) however late they come within the window, and the union knows its length before
// a time the sweep has not reached.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "interval_sweep.h"

namespace pipescope::analysis {
namespace {

struct Item {
  int64_t start_ns;
  int id;
};

std::vector<int> released_ids(ReorderWindow<Item>& window, const std::vector<Item>& items, int* late) {
  std::vector<int> out;
  *late = 0;
  for (const Item& item : items)
    if (!window.push(item, [&](const Item& i) { out.push_back(i.id); })) ++*late;
  window.drain([&](const Item& i) { out.push_back(i.id); });
  return out;
}

TEST(ReorderWindow, PutsItemsLateWithinTheWindowBackInStartOrder) {
  // A stream's records a whole flush period late, behind 1,000 later-starting ones.
  std::vector<Item> items;
  for (int i = 0; i < 1000; ++i) items.push_back({1'000'000'000 + i * 1'000'000, 1000 + i});
  for (int i = 0; i < 10; ++i) items.push_back({1'000'500'000 + i * 1'000'000, i});
  ReorderWindow<Item> window(3'000'000'000);
  int late = 0;
  const std::vector<int> ids = released_ids(window, items, &late);
  EXPECT_EQ(late, 0);
  ASSERT_EQ(ids.size(), 1010u);
  // In start order: 1000, 0, 1001, 1, ..., 1009, 9, 1010, 1011, ...
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ids[static_cast<size_t>(2 * i)], 1000 + i);
    EXPECT_EQ(ids[static_cast<size_t>(2 * i + 1)], i);
  }
  EXPECT_EQ(ids[20], 1010);
}

TEST(ReorderWindow, KeepsArrivalOrderAmongEqualStartsAndHandsOutWhatIsTooLate) {
  ReorderWindow<Item> window(100);
  int late = 0;
  const std::vector<int> ids =
      released_ids(window, {{50, 1}, {50, 2}, {40, 3}, {50, 4}, {300, 5}, {45, 6}, {301, 7}}, &late);
  // {300} releases everything up to 200; {45} then comes after 50 was handed out: late.
  EXPECT_EQ(late, 1);
  EXPECT_EQ(ids, (std::vector<int>{3, 1, 2, 4, 6, 5, 7}));
}

TEST(UnionLength, KnowsItsLengthBeforeATimeItHasNotReached) {
  UnionLength u;
  u.add(0, 10);
  u.add(5, 30);  // covers [0, 30)
  u.add(12, 20);
  EXPECT_EQ(u.total(), 30);
  EXPECT_EQ(u.total_before(25), 25);  // every start so far is before 25
  EXPECT_EQ(u.total_before(40), 30);
  UnionLength empty;
  EXPECT_EQ(empty.total_before(1'000), 0);
}

}  // namespace
}  // namespace pipescope::analysis
