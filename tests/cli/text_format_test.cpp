// The terminal tables' number and column formatting.
#include "text_format.h"

#include <gtest/gtest.h>

namespace pipescope::cli {
namespace {

TEST(TextFormat, ThousandsSeparatesEveryThirdDigit) {
  EXPECT_EQ(thousands(1234567), "1,234,567");
  EXPECT_EQ(thousands(-1234), "-1,234");
  EXPECT_EQ(thousands(999), "999");
}

TEST(TextFormat, ColumnsAlignRightInTheirWidth) {
  EXPECT_EQ(column("1.5", 8), "     1.5");
  EXPECT_EQ(column("yes", 5) + column("no", 5), "  yes   no");
}

TEST(TextFormat, ColumnsNeverRunTogetherWhenAValueIsWiderThanItsColumn) {
  // A 15-character step time in a 14-wide column still leaves a space before the next value.
  EXPECT_EQ(column("926236984.219 s", 14) + column("926236984.219 s", 14),
            " 926236984.219 s 926236984.219 s");
}

}  // namespace
}  // namespace pipescope::cli
