#include "kineto_event_fields.h"

#include <cctype>
#include <functional>

namespace pipescope::analysis::kineto {
namespace {

namespace dom = simdjson::dom;
using Type = dom::element_type;

std::optional<double> number(dom::element v) {
  double d = 0;
  if (!v.is_number() || v.get_double().get(d) != simdjson::SUCCESS) return std::nullopt;
  return d;
}

std::string_view string(dom::element v) {
  std::string_view s;
  return v.get_string().get(s) == simdjson::SUCCESS ? s : std::string_view();
}

// Integers as they are (truncated to 32 bits), fractions truncated, strings hashed; 0 otherwise.
uint32_t id(dom::element v) {
  switch (v.type()) {
    case Type::INT64: return static_cast<uint32_t>(v.get_int64().value_unsafe());
    case Type::UINT64: return static_cast<uint32_t>(v.get_uint64().value_unsafe());
    case Type::DOUBLE: return static_cast<uint32_t>(v.get_double().value_unsafe());
    case Type::STRING:
      return static_cast<uint32_t>(std::hash<std::string_view>{}(v.get_string().value_unsafe()));
    default: return 0;
  }
}

void dim3(dom::element v, std::array<uint32_t, 3>& out) {
  dom::array parts;
  if (v.get_array().get(parts) != simdjson::SUCCESS) return;
  size_t i = 0;
  for (dom::element part : parts) {
    if (i == out.size()) break;
    if (auto n = number(part)) out[i] = static_cast<uint32_t>(*n);
    ++i;
  }
}

void ranks_of(dom::element v, std::vector<int32_t>& ranks) {
  ranks.clear();
  if (v.is_string()) return ranks_of_text(v.get_string().value_unsafe(), ranks);
  dom::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) return;
  for (dom::element r : list) {
    int64_t rank = 0;
    if (r.type() != Type::INT64 || (rank = r.get_int64().value_unsafe()) < INT32_MIN || rank > INT32_MAX)
      return ranks.clear();
    ranks.push_back(static_cast<int32_t>(rank));
  }
}

// One tensor's dims: the element count, absent unless a non-empty list of non-negative numbers.
std::optional<uint64_t> elements(dom::element v) {
  dom::array dims;
  if (v.get_array().get(dims) != simdjson::SUCCESS || dims.size() == 0) return std::nullopt;
  uint64_t count = 1;
  for (dom::element d : dims) {
    const auto n = number(d);
    if (!n || *n < 0) return std::nullopt;
    count *= static_cast<uint64_t>(*n);
  }
  return count;
}

void input_dims(dom::element v, EventArgs& args) {
  dom::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) return;
  size_t i = 0;
  for (dom::element dims : list) {
    if (i < kTensorsRead) args.input_elements[i] = elements(dims);
    ++i;
  }
  args.input_dims_count = i;
}

void input_types(dom::element v, EventArgs& args) {
  dom::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) return;
  size_t i = 0;
  for (dom::element name : list) {
    if (i < kTensorsRead && name.is_string()) args.input_type[i] = name.get_string().value_unsafe();
    ++i;
  }
  args.input_type_count = i;
}

void read_args(dom::element v, EventArgs& args, std::vector<int32_t>& ranks) {
  dom::object object;
  if (v.get_object().get(object) != simdjson::SUCCESS) return;
  for (const dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    const dom::element value = field.value;
    // By length first: most keys of a trace are ones nothing here reads.
    switch (key.size()) {
      case 4:
        if (key == "grid")
          dim3(value, args.grid);
        else if (key == "Addr")
          args.address = number(value);
        break;
      case 5:
        if (key == "block")
          dim3(value, args.block);
        else if (key == "bytes")
          args.bytes = number(value);
        else if (key == "dtype")
          args.dtype = string(value);
        else if (key == "Bytes")
          args.memory_bytes = number(value);
        break;
      case 6:
        if (key == "device")
          args.device = number(value);
        else if (key == "stream")
          args.stream = number(value);
        break;
      case 9:
        if (key == "Device Id") args.device_id = number(value);
        break;
      case 10:
        if (key == "Input Dims")
          input_dims(value, args);
        else if (key == "Input type")
          input_types(value, args);
        else if (key == "Group size")
          args.group_size = number(value);
        break;
      case 11:
        if (key == "External id")
          args.external_id = id(value);
        else if (key == "correlation")
          args.correlation = id(value);
        else if (key == "Device Type")
          args.device_type = number(value);
        break;
      case 13:
        if (key == "shared memory")
          args.shared_memory = number(value);
        else if (key == "In msg nelems")
          args.in_msg_nelems = number(value);
        break;
      case 14:
        if (key == "Out msg nelems") args.out_msg_nelems = number(value);
        break;
      case 15:
        if (key == "Collective name") args.collective_name = string(value);
        break;
      case 18:
        if (key == "Process Group Name") args.group_name = string(value);
        break;
      case 19:
        if (key == "Process Group Ranks") {
          ranks_of(value, ranks);
          args.group_ranks = ranks;
        }
        break;
      case 20:
        if (key == "registers per thread") args.registers_per_thread = number(value);
        break;
      default: break;
    }
  }
}

}  // namespace

void ranks_of_text(std::string_view text, std::vector<int32_t>& ranks) {
  if (text.find("...") != std::string_view::npos) return;
  int64_t current = -1;
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      current = (current < 0 ? 0 : current * 10) + (c - '0');
      if (current > INT32_MAX) return ranks.clear();
    } else {
      if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
      current = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return ranks.clear();
    }
  }
  if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
}

void read_event(dom::object object, Event& event, std::vector<int32_t>& ranks,
                const DocumentHandler& handler) {
  for (const dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    const dom::element value = field.value;
    switch (key.size()) {
      case 2:
        if (key == "ph")
          event.ph = string(value);
        else if (key == "ts")
          event.ts_us = number(value);
        break;
      case 3:
        if (key == "cat")
          event.cat = string(value);
        else if (key == "tid")
          event.tid = id(value);
        else if (key == "dur")
          event.dur_us = std::max(0.0, number(value).value_or(0));
        break;
      case 4:
        if (key == "name")
          event.name = string(value);
        else if (key == "args" && handler.wants_args(event))
          read_args(value, event.args, ranks);
        break;
      default: break;
    }
  }
}

}  // namespace pipescope::analysis::kineto
