#include "kineto_collectives.h"

#include <algorithm>
#include <map>

namespace pipescope::analysis::kineto {
namespace {

using trace::NcclOpType;

std::optional<uint64_t> count_of(const std::optional<double>& value) {
  if (!value || *value < 0) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

// Element sizes by the names PyTorch writes: C++ type names in "Input type", ScalarType names in
// record_param_comms' "dtype".
uint64_t element_bytes(std::string_view type) {
  static const std::map<std::string, uint64_t, std::less<>> kSizes = {{"float", 4},
                                                                      {"double", 8},
                                                                      {"int", 4},
                                                                      {"long", 8},
                                                                      {"long int", 8},
                                                                      {"short", 2},
                                                                      {"unsigned char", 1},
                                                                      {"signed char", 1},
                                                                      {"char", 1},
                                                                      {"bool", 1},
                                                                      {"c10::Half", 2},
                                                                      {"c10::BFloat16", 2},
                                                                      {"c10::Float8_e4m3fn", 1},
                                                                      {"c10::Float8_e5m2", 1},
                                                                      {"Float", 4},
                                                                      {"Double", 8},
                                                                      {"Half", 2},
                                                                      {"BFloat16", 2},
                                                                      {"Int", 4},
                                                                      {"Long", 8},
                                                                      {"Short", 2},
                                                                      {"Byte", 1},
                                                                      {"Char", 1},
                                                                      {"Bool", 1},
                                                                      {"Float8_e4m3fn", 1},
                                                                      {"Float8_e5m2", 1},
                                                                      {"Float8_e4m3fnuz", 1},
                                                                      {"Float8_e5m2fnuz", 1},
                                                                      {"ComplexFloat", 8},
                                                                      {"ComplexDouble", 16},
                                                                      {"UInt16", 2},
                                                                      {"UInt32", 4},
                                                                      {"UInt64", 8}};
  const auto it = kSizes.find(type);
  return it == kSizes.end() ? 0 : it->second;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

std::optional<uint64_t> tensor_bytes(std::optional<uint64_t> elements, std::string_view type) {
  const uint64_t size = element_bytes(type);
  if (!elements || size == 0) return std::nullopt;
  return *elements * size;
}

CollectiveFacts facts_of_param_comms(const EventArgs& args) {
  CollectiveFacts facts;
  const uint64_t size = element_bytes(args.dtype);
  if (size > 0) {
    if (auto n = count_of(args.in_msg_nelems)) facts.in_bytes = *n * size;
    if (auto n = count_of(args.out_msg_nelems)) facts.out_bytes = *n * size;
  }
  if (auto n = count_of(args.group_size); n && *n <= INT32_MAX) facts.group_size = static_cast<int32_t>(*n);
  facts.group_name = std::string(args.group_name);
  facts.group_ranks.assign(args.group_ranks.begin(), args.group_ranks.end());
  if (facts.group_size == 0) facts.group_size = static_cast<int32_t>(facts.group_ranks.size());
  if (facts.group_ranks.size() != static_cast<size_t>(facts.group_size)) facts.group_ranks.clear();
  return facts;
}

CollectiveFacts facts_of_c10d(std::string_view op_name, const EventArgs& args) {
  CollectiveFacts facts;
  // These three take (output, input, ...); the list forms and all-reduce carry no dims.
  if (op_name != "_allgather_base_" && op_name != "_reduce_scatter_base_" && op_name != "alltoall_base_")
    return facts;
  if (args.input_dims_count < 2 || args.input_type_count < 2 || !args.input_type[0] || !args.input_type[1])
    return facts;
  facts.out_bytes = tensor_bytes(args.input_elements[0], *args.input_type[0]);
  facts.in_bytes = tensor_bytes(args.input_elements[1], *args.input_type[1]);
  return facts;
}

CollectiveFacts facts_of_annotation(const EventArgs& args) {
  CollectiveFacts facts;
  if (args.input_dims_count < 1 || args.input_type_count < 1 || !args.input_type[0]) return facts;
  facts.in_bytes = tensor_bytes(args.input_elements[0], *args.input_type[0]);
  return facts;
}

CollectiveFacts merged(CollectiveFacts outer, const CollectiveFacts& inner) {
  if (!outer.in_bytes) outer.in_bytes = inner.in_bytes;
  if (!outer.out_bytes) outer.out_bytes = inner.out_bytes;
  if (outer.group_size == 0) outer.group_size = inner.group_size;
  if (outer.group_name.empty()) outer.group_name = inner.group_name;
  if (outer.group_ranks.empty()) outer.group_ranks = inner.group_ranks;
  return outer;
}

int32_t group_size_of(NcclOpType op, const CollectiveFacts& facts, int32_t world_size) {
  if (facts.group_size > 0) return facts.group_size;
  if (!facts.in_bytes || !facts.out_bytes || *facts.in_bytes == 0 || *facts.out_bytes == 0) return 0;
  uint64_t big = 0, small = 0;
  if (op == NcclOpType::kAllGather) {
    big = *facts.out_bytes;
    small = *facts.in_bytes;
  } else if (op == NcclOpType::kReduceScatter) {
    big = *facts.in_bytes;
    small = *facts.out_bytes;
  } else {
    return 0;
  }
  if (big % small != 0) return 0;
  const uint64_t ratio = big / small;
  if (ratio < 2 || ratio > static_cast<uint64_t>(world_size) || world_size % static_cast<int32_t>(ratio) != 0)
    return 0;
  return static_cast<int32_t>(ratio);
}

uint64_t recorded_bytes(NcclOpType op, const CollectiveFacts& facts, int32_t group_size) {
  const uint64_t n = static_cast<uint64_t>(std::max(group_size, 1));
  const uint64_t in = facts.in_bytes.value_or(0);
  const uint64_t out = facts.out_bytes.value_or(0);
  switch (op) {
    case NcclOpType::kAllGather: return facts.in_bytes ? in : out / n;
    case NcclOpType::kReduceScatter: return facts.out_bytes ? out : in / n;
    case NcclOpType::kAllToAll: return std::max(in, out) / n;
    default: return std::max(in, out);
  }
}

CommSlot comm_slot_of(const CollectiveFacts& facts, int32_t group_size, const std::string& run_id,
                      int32_t rank, int32_t world_size) {
  if (group_size <= 0 || group_size == world_size)
    return CommSlot{fnv1a(run_id + ":world"), rank, world_size};
  const auto place = std::find(facts.group_ranks.begin(), facts.group_ranks.end(), rank);
  if (place != facts.group_ranks.end()) {
    std::string key = run_id + ":group";
    for (int32_t r : facts.group_ranks) key += " " + std::to_string(r);
    return CommSlot{fnv1a(key), static_cast<int32_t>(place - facts.group_ranks.begin()), group_size};
  }
  const std::string key = run_id + ":rank " + std::to_string(rank) + " in a group of " +
                          std::to_string(group_size) + " " + facts.group_name;
  return CommSlot{fnv1a(key), 0, group_size};
}

}  // namespace pipescope::analysis::kineto
