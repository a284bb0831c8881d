// What a trace learns about its process after the header is written: rank, world size,
// run identity, restart attempt, devices. Encoded as a list of tagged fields so that a reader
// skips fields it does not know; a later process-info chunk replaces an earlier one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::trace {

enum class ProcessField : uint16_t {
  kRank = 1,               // i32
  kLocalRank = 2,          // i32
  kWorldSize = 3,          // i32
  kLocalWorldSize = 4,     // i32
  kNodeRank = 5,           // i32
  kRestartAttempt = 6,     // i32
  kRunId = 7,              // UTF-8
  kLauncher = 8,           // UTF-8: torchrun, slurm, openmpi, mpich, pmix
  kDevice = 9,             // DeviceInfo, repeated once per device
  kCommandLine = 10,       // UTF-8, arguments separated by NUL bytes
  kPipescopeVersion = 11,  // UTF-8
  kCaptureKinds = 12,      // u32 bit set, bit k = RecordKind k
};

struct ProcessFieldHeader {
  uint16_t field;  // ProcessField
  uint16_t reserved;
  uint32_t length_bytes;
};
static_assert(sizeof(ProcessFieldHeader) == 8);

struct DeviceInfo {
  int32_t ordinal = 0;
  std::array<uint8_t, 16> uuid{};
  uint32_t pci_domain = 0;
  uint32_t pci_bus = 0;
  uint32_t pci_device = 0;
  uint64_t memory_bytes = 0;
  std::string name;

  bool operator==(const DeviceInfo&) const = default;
};
// Fixed part of a kDevice field value; the device name fills the rest of the field.
inline constexpr size_t kDeviceFixedBytes = 4 + 16 + 4 + 4 + 4 + 8;

struct ProcessInfo {
  std::optional<int32_t> rank;
  std::optional<int32_t> local_rank;
  std::optional<int32_t> world_size;
  std::optional<int32_t> local_world_size;
  std::optional<int32_t> node_rank;
  std::optional<int32_t> restart_attempt;
  std::string run_id;
  std::string launcher;
  std::string command_line;
  std::string pipescope_version;
  std::optional<uint32_t> capture_kinds;
  std::vector<DeviceInfo> devices;

  bool operator==(const ProcessInfo&) const = default;
};

std::vector<std::byte> encode_process_info(const ProcessInfo& info);
Expected<ProcessInfo> decode_process_info(std::span<const std::byte> payload);

}  // namespace pipescope::trace
