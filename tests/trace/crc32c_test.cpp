// CRC-32C as RFC 3720 (iSCSI) defines it, the checksum of every header and chunk.
#include "pipescope/trace/crc32c.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace pipescope::trace {
namespace {

TEST(Crc32c, CheckValueOfTheDigitsOneToNine) {
  // The "check" value of the CRC-32C catalogue entry.
  constexpr std::string_view kDigits = "123456789";
  EXPECT_EQ(crc32c(kDigits.data(), kDigits.size()), 0xE3069283u);
  EXPECT_EQ(crc32c_extend_portable(0, kDigits.data(), kDigits.size()), 0xE3069283u);
}

TEST(Crc32c, MatchesTheIscsiTestVectors) {
  // RFC 3720, appendix B.4.
  std::array<uint8_t, 32> zeros{};
  std::array<uint8_t, 32> ones{};
  std::array<uint8_t, 32> ascending{};
  std::array<uint8_t, 32> descending{};
  for (int i = 0; i < 32; ++i) {
    ones[i] = 0xFF;
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending.data(), descending.size()), 0x113FDB5Cu);
}

TEST(Crc32c, OfNothingIsZero) {
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  // Extending by nothing leaves a CRC as it was.
  EXPECT_EQ(crc32c_extend(0xE3069283u, nullptr, 0), 0xE3069283u);
}

TEST(Crc32c, ExtendingInTwoPiecesEqualsTheWhole) {
  std::vector<uint8_t> data(300);
  std::mt19937 rng(7);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const uint32_t whole = crc32c(data.data(), data.size());
  for (size_t split = 0; split <= data.size(); ++split) {
    const uint32_t first = crc32c(data.data(), split);
    EXPECT_EQ(crc32c_extend(first, data.data() + split, data.size() - split), whole) << "split at " << split;
  }
}

TEST(Crc32c, HardwarePathEqualsPortablePathAtEveryLengthAndAlignment) {
  // Lengths around the 8-byte steps and alignments 0..7 reach every head/body/tail mix of
  // the SSE4.2 loop; the initial CRC varies so that extension is covered too.
  std::mt19937 rng(2024);
  std::vector<uint8_t> buffer(1100);
  for (auto& b : buffer) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t length = 0; length <= 1024; length += (length < 80 ? 1 : 37)) {
      const uint32_t seed = static_cast<uint32_t>(rng());
      const uint8_t* p = buffer.data() + align;
      ASSERT_EQ(crc32c_extend(seed, p, length), crc32c_extend_portable(seed, p, length))
          << "alignment " << align << ", length " << length;
    }
  }
}

}  // namespace
}  // namespace pipescope::trace
