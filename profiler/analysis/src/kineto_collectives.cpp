#include "kineto_collectives.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace pipescope::analysis::kineto {
namespace {

using nlohmann::json;
using trace::NcclOpType;

std::optional<uint64_t> count_of(const json& object, const char* key) {
  const json* v = member(object, key);
  if (v == nullptr || !v->is_number() || v->get<double>() < 0) return std::nullopt;
  return static_cast<uint64_t>(v->get<double>());
}

// Element sizes by the names PyTorch writes: C++ type names in "Input type", ScalarType names in
// record_param_comms' "dtype".
uint64_t element_bytes(const std::string& type) {
  static const std::map<std::string, uint64_t> kSizes = {{"float", 4},
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

// "[0, 1, 2, 3]" (or a JSON array) as ranks; empty when the list is cut short ("...") or odd.
std::vector<int32_t> ranks_of(const json* value) {
  std::vector<int32_t> ranks;
  if (value == nullptr) return ranks;
  if (value->is_array()) {
    for (const json& r : *value) {
      if (!r.is_number_integer()) return {};
      ranks.push_back(static_cast<int32_t>(r.get<int64_t>()));
    }
    return ranks;
  }
  if (!value->is_string()) return ranks;
  const std::string text = value->get<std::string>();
  if (text.find("...") != std::string::npos) return {};
  int64_t current = -1;
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      current = (current < 0 ? 0 : current * 10) + (c - '0');
      if (current > INT32_MAX) return {};
    } else {
      if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
      current = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return {};
    }
  }
  if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
  return ranks;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<uint64_t> tensor_bytes(const json& dims, const std::string& type) {
  if (!dims.is_array() || dims.empty()) return std::nullopt;
  const uint64_t size = element_bytes(type);
  if (size == 0) return std::nullopt;
  uint64_t elements = 1;
  for (const json& d : dims) {
    if (!d.is_number() || d.get<double>() < 0) return std::nullopt;
    elements *= static_cast<uint64_t>(d.get<double>());
  }
  return elements * size;
}

CollectiveFacts facts_of_param_comms(const json& args) {
  CollectiveFacts facts;
  const json* dtype = member(args, "dtype");
  const uint64_t size = dtype != nullptr && dtype->is_string() ? element_bytes(dtype->get<std::string>()) : 0;
  if (size > 0) {
    if (auto n = count_of(args, "In msg nelems")) facts.in_bytes = *n * size;
    if (auto n = count_of(args, "Out msg nelems")) facts.out_bytes = *n * size;
  }
  if (auto n = count_of(args, "Group size"); n && *n <= INT32_MAX)
    facts.group_size = static_cast<int32_t>(*n);
  if (const json* name = member(args, "Process Group Name"); name != nullptr && name->is_string())
    facts.group_name = name->get<std::string>();
  facts.group_ranks = ranks_of(member(args, "Process Group Ranks"));
  if (facts.group_size == 0) facts.group_size = static_cast<int32_t>(facts.group_ranks.size());
  if (facts.group_ranks.size() != static_cast<size_t>(facts.group_size)) facts.group_ranks.clear();
  return facts;
}

CollectiveFacts facts_of_c10d(const std::string& op_name, const json& args) {
  CollectiveFacts facts;
  // These three take (output, input, ...); the list forms and all-reduce carry no dims.
  if (op_name != "_allgather_base_" && op_name != "_reduce_scatter_base_" && op_name != "alltoall_base_")
    return facts;
  const json* dims = member(args, "Input Dims");
  const json* types = member(args, "Input type");
  if (dims == nullptr || types == nullptr || !dims->is_array() || !types->is_array() || dims->size() < 2 ||
      types->size() < 2 || !(*types)[0].is_string() || !(*types)[1].is_string())
    return facts;
  facts.out_bytes = tensor_bytes((*dims)[0], (*types)[0].get<std::string>());
  facts.in_bytes = tensor_bytes((*dims)[1], (*types)[1].get<std::string>());
  return facts;
}

CollectiveFacts facts_of_annotation(const json& args) {
  CollectiveFacts facts;
  const json* dims = member(args, "Input Dims");
  const json* types = member(args, "Input type");
  if (dims == nullptr || types == nullptr || !dims->is_array() || !types->is_array() || dims->empty() ||
      types->empty() || !(*types)[0].is_string())
    return facts;
  facts.in_bytes = tensor_bytes((*dims)[0], (*types)[0].get<std::string>());
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
