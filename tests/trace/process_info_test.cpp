// The process-info payload: tagged fields, each {u16 field, u16 reserved, u32 length, value},
// so that a reader skips what it does not know.
#include "pipescope/trace/process_info.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::append;
using test::bytes_of;
using test::bytes_of_text;

std::vector<std::byte> field(uint16_t id, std::span<const std::byte> value) {
  std::vector<std::byte> out;
  const ProcessFieldHeader header{id, 0, static_cast<uint32_t>(value.size())};
  append(out, bytes_of(header));
  append(out, value);
  return out;
}

TEST(ProcessInfo, EncodesAFieldAsHeaderThenValue) {
  ProcessInfo info;
  info.rank = 3;
  const std::vector<std::byte> encoded = encode_process_info(info);
  // {field 1, reserved 0, length 4} then the i32 3, little-endian.
  const uint8_t expected[] = {1, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0};
  ASSERT_EQ(encoded.size(), sizeof(expected));
  EXPECT_EQ(std::memcmp(encoded.data(), expected, sizeof(expected)), 0);
}

TEST(ProcessInfo, UnsetFieldsAreNotWritten) {
  EXPECT_TRUE(encode_process_info(ProcessInfo{}).empty());
  auto decoded = decode_process_info({});
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, ProcessInfo{});
}

TEST(ProcessInfo, DeviceFieldIsFixedPartThenName) {
  ProcessInfo info;
  DeviceInfo device;
  device.name = "GPU";
  info.devices.push_back(device);
  // 8 bytes of field header, 40 fixed bytes (4 + 16 + 4 + 4 + 4 + 8), 3 bytes of name.
  EXPECT_EQ(encode_process_info(info).size(), 8u + 40u + 3u);
  EXPECT_EQ(kDeviceFixedBytes, 40u);
}

TEST(ProcessInfo, RoundTripsEveryField) {
  const ProcessInfo info = test::process_info_with_every_field();
  auto decoded = decode_process_info(encode_process_info(info));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, info);
  ASSERT_EQ(decoded->devices.size(), 2u);
  EXPECT_EQ(decoded->devices[1].pci_bus, 0x2Cu);
  EXPECT_EQ(decoded->devices[1].uuid[15], 0x01);
  EXPECT_EQ(decoded->command_line.size(), 25u);
}

TEST(ProcessInfo, SkipsFieldsOfANewerMinorVersion) {
  const int32_t rank = 7;
  std::vector<std::byte> payload = field(0x7777, bytes_of_text("future"));
  append(payload, field(static_cast<uint16_t>(ProcessField::kRank), bytes_of(rank)));
  auto decoded = decode_process_info(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->rank, 7);
}

TEST(ProcessInfo, RejectsAnIntegerFieldThatIsNotFourBytes) {
  const std::vector<std::byte> payload =
      field(static_cast<uint16_t>(ProcessField::kWorldSize), bytes_of_text("abc"));
  auto decoded = decode_process_info(payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message.find("not 4 bytes"), std::string::npos) << decoded.error().message;
}

TEST(ProcessInfo, RejectsCaptureKindsThatAreNotFourBytes) {
  const uint64_t wide = 1;
  auto decoded =
      decode_process_info(field(static_cast<uint16_t>(ProcessField::kCaptureKinds), bytes_of(wide)));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message.find("capture kinds"), std::string::npos) << decoded.error().message;
}

TEST(ProcessInfo, RejectsADeviceShorterThanItsFixedPart) {
  const std::vector<std::byte> short_device(kDeviceFixedBytes - 1);
  auto decoded = decode_process_info(field(static_cast<uint16_t>(ProcessField::kDevice), short_device));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message.find("device"), std::string::npos) << decoded.error().message;
}

TEST(ProcessInfo, RejectsAFieldThatRunsPastThePayload) {
  std::vector<std::byte> payload = encode_process_info(test::process_info_with_every_field());
  payload.resize(payload.size() - 1);  // the last device name loses a byte
  auto decoded = decode_process_info(payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message.find("runs past"), std::string::npos) << decoded.error().message;
}

TEST(ProcessInfo, RejectsAFieldHeaderCutShort) {
  std::vector<std::byte> payload = encode_process_info(test::process_info_with_every_field());
  payload.resize(payload.size() + 5);  // five stray bytes: less than a field header
  auto decoded = decode_process_info(payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message.find("cut short"), std::string::npos) << decoded.error().message;
}

}  // namespace
}  // namespace pipescope::trace
