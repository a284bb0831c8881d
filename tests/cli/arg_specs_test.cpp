#include "arg_specs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pipescope::cli {
namespace {

TEST(RankSpec, AcceptsRangesAndSingleRanksInAnyOrder) {
  auto spec = parse_rank_spec("16-31,0-7,12");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->size(), 3u);
  EXPECT_EQ((*spec)[0].first, 16);
  EXPECT_EQ((*spec)[0].last, 31);
  EXPECT_EQ((*spec)[1].first, 0);
  EXPECT_EQ((*spec)[1].last, 7);
  EXPECT_EQ((*spec)[2].first, 12);
  EXPECT_EQ((*spec)[2].last, 12);
}

TEST(RankSpec, RejectsReversedEmptyAndNegativeParts) {
  for (const char* bad : {"7-0", "", "1,,2", "-3", "a-b", "1-", "0-7,x"}) {
    auto spec = parse_rank_spec(bad);
    EXPECT_FALSE(spec.ok()) << bad;
    if (!spec.ok()) {
      EXPECT_NE(spec.error().message.find("rank list"), std::string::npos);
    }
  }
}

TEST(TimeWindow, ParsesSecondsAndOpenEnds) {
  auto w = parse_time_window("1.5:30");
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->start_s, 1.5);
  EXPECT_DOUBLE_EQ(w->end_s, 30.0);
  auto open_end = parse_time_window("10:");
  ASSERT_TRUE(open_end.ok());
  EXPECT_TRUE(std::isinf(open_end->end_s));
  auto open_start = parse_time_window(":5");
  ASSERT_TRUE(open_start.ok());
  EXPECT_DOUBLE_EQ(open_start->start_s, 0.0);
}

TEST(TimeWindow, RejectsEmptyOrBackwardWindows) {
  for (const char* bad : {"5:5", "9:3", "x:1", "1", "1:2:3", "-1:2", "nan:3", ":"}) {
    EXPECT_FALSE(parse_time_window(bad).ok()) << bad;
  }
}

TEST(StepRange, IsInclusiveAndOrdered) {
  auto s = parse_step_range("100:110");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->first, 100);
  EXPECT_EQ(s->last, 110);
  EXPECT_TRUE(parse_step_range("3:3").ok());
  EXPECT_FALSE(parse_step_range("110:100").ok());
  EXPECT_FALSE(parse_step_range("1-2").ok());
}

TEST(LayoutSpec, MissingDimensionsAreOne) {
  auto layout = parse_layout_spec("pp=4,tp=8");
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->tp, 8);
  EXPECT_EQ(layout->pp, 4);
  EXPECT_EQ(layout->dp, 1);
}

TEST(LayoutSpec, RejectsUnknownRepeatedOrZeroDimensions) {
  for (const char* bad : {"tp=0", "tp=2,tp=4", "ep=2", "tp", "tp=x", "tp=8;pp=2"}) {
    EXPECT_FALSE(parse_layout_spec(bad).ok()) << bad;
  }
}

TEST(KindList, AcceptsTheDesignVocabularyOnly) {
  auto kinds = parse_kind_list("kernel,nccl,nvtx");
  ASSERT_TRUE(kinds.ok());
  EXPECT_EQ(kinds->size(), 3u);
  EXPECT_TRUE(parse_kind_list("all").ok());
  auto bad = parse_kind_list("kernel,cpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'cpu'"), std::string::npos);
}

TEST(WholeNumber, HonoursTheMinimum) {
  EXPECT_TRUE(parse_whole_number("0", 0).ok());
  EXPECT_FALSE(parse_whole_number("0", 1).ok());
  EXPECT_FALSE(parse_whole_number("2.5", 1).ok());
  EXPECT_FALSE(parse_whole_number("-4", 0).ok());
  EXPECT_EQ(*parse_whole_number("64", 1), 64);
}

TEST(NumberInRange, RefusesWhatIsNotAFiniteNumberWithinTheRange) {
  EXPECT_DOUBLE_EQ(*parse_number_in_range("0.5", 0.001, 3600), 0.5);
  EXPECT_DOUBLE_EQ(*parse_number_in_range("1e3", 1, 1e6), 1000);
  EXPECT_DOUBLE_EQ(*parse_number_in_range("3600", 0.001, 3600), 3600);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "", "2x", "0", "3601", "1e30", " 1"}) {
    const auto parsed = parse_number_in_range(bad, 0.001, 3600);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("0.001 to 3600"), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace pipescope::cli
