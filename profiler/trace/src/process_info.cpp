#include "pipescope/trace/process_info.h"

#include <cstring>

namespace pipescope::trace {
namespace {

void put_bytes(std::vector<std::byte>& out, const void* data, size_t size) {
  const auto* p = static_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + size);
}

void put_field(std::vector<std::byte>& out, ProcessField field, const void* data, size_t size) {
  ProcessFieldHeader header{static_cast<uint16_t>(field), 0, static_cast<uint32_t>(size)};
  put_bytes(out, &header, sizeof(header));
  put_bytes(out, data, size);
}

void put_i32(std::vector<std::byte>& out, ProcessField field, const std::optional<int32_t>& v) {
  if (v) put_field(out, field, &*v, sizeof(int32_t));
}

void put_text(std::vector<std::byte>& out, ProcessField field, const std::string& text) {
  if (!text.empty()) put_field(out, field, text.data(), text.size());
}

template <class T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

std::vector<std::byte> encode_process_info(const ProcessInfo& info) {
  std::vector<std::byte> out;
  put_i32(out, ProcessField::kRank, info.rank);
  put_i32(out, ProcessField::kLocalRank, info.local_rank);
  put_i32(out, ProcessField::kWorldSize, info.world_size);
  put_i32(out, ProcessField::kLocalWorldSize, info.local_world_size);
  put_i32(out, ProcessField::kNodeRank, info.node_rank);
  put_i32(out, ProcessField::kRestartAttempt, info.restart_attempt);
  put_text(out, ProcessField::kRunId, info.run_id);
  put_text(out, ProcessField::kLauncher, info.launcher);
  put_text(out, ProcessField::kCommandLine, info.command_line);
  put_text(out, ProcessField::kPipescopeVersion, info.pipescope_version);
  if (info.capture_kinds) {
    put_field(out, ProcessField::kCaptureKinds, &*info.capture_kinds, sizeof(uint32_t));
  }
  for (const DeviceInfo& d : info.devices) {
    std::vector<std::byte> value;
    put_bytes(value, &d.ordinal, 4);
    put_bytes(value, d.uuid.data(), 16);
    put_bytes(value, &d.pci_domain, 4);
    put_bytes(value, &d.pci_bus, 4);
    put_bytes(value, &d.pci_device, 4);
    put_bytes(value, &d.memory_bytes, 8);
    put_bytes(value, d.name.data(), d.name.size());
    put_field(out, ProcessField::kDevice, value.data(), value.size());
  }
  return out;
}

Expected<ProcessInfo> decode_process_info(std::span<const std::byte> payload) {
  ProcessInfo info;
  size_t at = 0;
  while (at < payload.size()) {
    if (payload.size() - at < sizeof(ProcessFieldHeader)) {
      return Error{"process info: field header cut short"};
    }
    const auto header = load<ProcessFieldHeader>(payload.data() + at);
    at += sizeof(header);
    if (header.length_bytes > payload.size() - at) {
      return Error{"process info: field " + std::to_string(header.field) + " runs past the chunk"};
    }
    const std::byte* value = payload.data() + at;
    const size_t length = header.length_bytes;
    at += length;

    auto read_i32 = [&](std::optional<int32_t>& into) -> Status {
      if (length != 4)
        return Error{"process info: field " + std::to_string(header.field) + " is not 4 bytes"};
      into = load<int32_t>(value);
      return {};
    };
    auto text = [&] { return std::string(reinterpret_cast<const char*>(value), length); };

    Status status;
    switch (static_cast<ProcessField>(header.field)) {
      case ProcessField::kRank: status = read_i32(info.rank); break;
      case ProcessField::kLocalRank: status = read_i32(info.local_rank); break;
      case ProcessField::kWorldSize: status = read_i32(info.world_size); break;
      case ProcessField::kLocalWorldSize: status = read_i32(info.local_world_size); break;
      case ProcessField::kNodeRank: status = read_i32(info.node_rank); break;
      case ProcessField::kRestartAttempt: status = read_i32(info.restart_attempt); break;
      case ProcessField::kRunId: info.run_id = text(); break;
      case ProcessField::kLauncher: info.launcher = text(); break;
      case ProcessField::kCommandLine: info.command_line = text(); break;
      case ProcessField::kPipescopeVersion: info.pipescope_version = text(); break;
      case ProcessField::kCaptureKinds:
        if (length != 4) return Error{"process info: capture kinds is not 4 bytes"};
        info.capture_kinds = load<uint32_t>(value);
        break;
      case ProcessField::kDevice: {
        if (length < kDeviceFixedBytes) return Error{"process info: device field cut short"};
        DeviceInfo d;
        d.ordinal = load<int32_t>(value);
        std::memcpy(d.uuid.data(), value + 4, 16);
        d.pci_domain = load<uint32_t>(value + 20);
        d.pci_bus = load<uint32_t>(value + 24);
        d.pci_device = load<uint32_t>(value + 28);
        d.memory_bytes = load<uint64_t>(value + 32);
        d.name.assign(reinterpret_cast<const char*>(value + kDeviceFixedBytes), length - kDeviceFixedBytes);
        info.devices.push_back(std::move(d));
        break;
      }
      default: break;  // a field from a newer minor version: skipped by design
    }
    if (!status.ok()) return status.error();
  }
  return info;
}

}  // namespace pipescope::trace
