// One PyTorch profiler (Kineto) trace event as the reader hands it to the converter: the
// fields pipescope reads, nothing else. Strings are views into the parser's buffers, valid only
// while the event is being handled (copy what must outlive it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace pipescope::analysis::kineto {

// The first tensors of an operator's "Input Dims" / "Input type" arguments.
inline constexpr size_t kTensorsRead = 2;

struct EventArgs {
  // Numbers, absent when the key is missing or not a number.
  std::optional<double> device, stream, bytes, registers_per_thread, shared_memory;
  std::optional<double> in_msg_nelems, out_msg_nelems, group_size;      // record_param_comms
  std::optional<double> memory_bytes, device_type, device_id, address;  // "[memory]" instants
  // Identifiers as the reader numbers them: integers as they are, strings hashed (0: absent).
  uint32_t correlation = 0;
  uint32_t external_id = 0;
  std::array<uint32_t, 3> grid{};  // 0 where not stated
  std::array<uint32_t, 3> block{};
  std::string_view collective_name, dtype, group_name;  // "" when absent or not a string
  // "Process Group Ranks", as a list or as its text ("[0, 1, 2]"); empty unless complete.
  std::span<const int32_t> group_ranks;
  // "Input Dims" and "Input type": how many entries each list has, and of the first ones the
  // element count (absent unless a non-empty list of non-negative numbers) and the type name.
  size_t input_dims_count = 0;
  size_t input_type_count = 0;
  std::array<std::optional<uint64_t>, kTensorsRead> input_elements{};
  std::array<std::optional<std::string_view>, kTensorsRead> input_type{};
};

struct Event {
  std::string_view cat, name, ph;
  std::optional<double> ts_us;  // absent when missing or not a number: the event is not timed
  double dur_us = 0;
  uint32_t tid = 0;  // as identifiers are numbered above
  EventArgs args;
};

// "distributedInfo": which rank of which job the trace is.
struct DistributedInfo {
  std::optional<int64_t> rank;  // absent unless an integer
  std::optional<double> world_size;
  std::string backend;
};

}  // namespace pipescope::analysis::kineto
