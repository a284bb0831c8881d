// Reading and writing calibration profile JSON (docs/calibration-format.md).
#include <set>
#include <utility>

#include "bundled_data.h"
#include "json_reader.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::planner {
namespace {

using detail::field_path;
using detail::index_path;
using detail::json;
using detail::JsonReader;
using detail::Range;

constexpr std::string_view kGemmInterpolation = "linear_in_log_flops";

SourcedValue read_sourced(JsonReader& reader, const json& parent, std::string_view key,
                          const std::string& path, Range range) {
  SourcedValue out;
  const json* object = reader.object(parent, key, path);
  if (object == nullptr) return out;
  const std::string here = field_path(path, key);
  reader.only_fields(*object, here, {"value", "source"});
  out.value = reader.number(*object, "value", here, range);
  out.source = reader.string(*object, "source", here);
  return out;
}

std::vector<GemmPoint> read_gemm(JsonReader& reader, const json& root) {
  std::vector<GemmPoint> points;
  const json* gemm = reader.object(root, "gemm", "");
  if (gemm == nullptr) return points;
  reader.only_fields(*gemm, "gemm", {"interpolation", "points"});
  if (reader.string(*gemm, "interpolation", "gemm") != kGemmInterpolation && reader.ok()) {
    reader.fail("field 'gemm.interpolation' must be \"" + std::string(kGemmInterpolation) + "\"");
  }
  const json* list = reader.array(*gemm, "points", "gemm");
  if (list == nullptr) return points;
  for (size_t i = 0; i < list->size() && reader.ok(); ++i) {
    const std::string here = index_path("gemm.points", i);
    const json& item = (*list)[i];
    if (!reader.expect_object(item, here)) break;
    reader.only_fields(item, here, {"m", "n", "k", "efficiency", "source"});
    GemmPoint point;
    point.m = reader.integer(item, "m", here, Range::kPositive);
    point.n = reader.integer(item, "n", here, Range::kPositive);
    point.k = reader.integer(item, "k", here, Range::kPositive);
    point.efficiency = reader.number(item, "efficiency", here, Range::kFraction);
    point.source = reader.string(item, "source", here);
    // Interpolation walks the points in FLOP order; an unordered table is a mistake in the file.
    if (reader.ok() && !points.empty() && point.flops() <= points.back().flops()) {
      reader.fail("field '" + here + "': points must be in strictly increasing 2*m*n*k order");
    }
    points.push_back(std::move(point));
  }
  return points;
}

std::vector<AttentionPoint> read_attention_pass(JsonReader& reader, const json& attention,
                                                std::string_view pass) {
  std::vector<AttentionPoint> points;
  const std::string path = field_path("attention", pass);
  const json* object = reader.object(attention, pass, "attention");
  if (object == nullptr) return points;
  reader.only_fields(*object, path, {"points"});
  const json* list = reader.array(*object, "points", path);
  if (list == nullptr) return points;
  std::set<int64_t> seq_lens, head_dims;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (size_t i = 0; i < list->size() && reader.ok(); ++i) {
    const std::string here = index_path(field_path(path, "points"), i);
    const json& item = (*list)[i];
    if (!reader.expect_object(item, here)) break;
    reader.only_fields(item, here, {"seq_len", "head_dim", "efficiency", "source"});
    AttentionPoint point;
    point.seq_len = reader.integer(item, "seq_len", here, Range::kPositive);
    point.head_dim = reader.integer(item, "head_dim", here, Range::kPositive);
    point.efficiency = reader.number(item, "efficiency", here, Range::kFraction);
    point.source = reader.string(item, "source", here);
    if (reader.ok() && !seen.emplace(point.seq_len, point.head_dim).second) {
      reader.fail("field '" + here + "' repeats seq_len " + std::to_string(point.seq_len) + ", head_dim " +
                  std::to_string(point.head_dim));
    }
    seq_lens.insert(point.seq_len);
    head_dims.insert(point.head_dim);
    points.push_back(std::move(point));
  }
  // Bilinear interpolation needs every corner: a missing combination would be guessed silently.
  if (reader.ok() && points.size() != seq_lens.size() * head_dims.size()) {
    reader.fail("field '" + path +
                ".points' must hold every (seq_len, head_dim) combination of the values it " +
                "uses: " + std::to_string(seq_lens.size()) + " x " + std::to_string(head_dims.size()) +
                " = " + std::to_string(seq_lens.size() * head_dims.size()) + " points, found " +
                std::to_string(points.size()));
  }
  return points;
}

CollectiveCost read_collective(JsonReader& reader, const json& tier, std::string_view kind,
                               const std::string& path) {
  CollectiveCost cost;
  const json* object = reader.object(tier, kind, path);
  if (object == nullptr) return cost;
  const std::string here = field_path(path, kind);
  reader.only_fields(*object, here,
                     {"latency_s", "bus_bandwidth_bytes_per_s", "bus_bandwidth_fraction", "source"});
  cost.latency_s = reader.number(*object, "latency_s", here, Range::kPositive);
  const bool absolute = object->contains("bus_bandwidth_bytes_per_s");
  const bool fraction = object->contains("bus_bandwidth_fraction");
  if (absolute == fraction && reader.ok()) {
    reader.fail("field '" + here +
                "' needs exactly one of 'bus_bandwidth_bytes_per_s' and 'bus_bandwidth_fraction'");
  }
  // NVLink SHARP can push all_reduce busbw past the link rate, so a fraction may exceed 1.
  if (absolute) {
    cost.bus_bandwidth_bytes_per_s =
        reader.number(*object, "bus_bandwidth_bytes_per_s", here, Range::kPositive);
  }
  if (fraction) {
    cost.bus_bandwidth_fraction = reader.number(*object, "bus_bandwidth_fraction", here, Range::kPositive);
  }
  cost.source = reader.string(*object, "source", here);
  return cost;
}

CalibrationProfile read_profile(JsonReader& reader, const json& root) {
  CalibrationProfile profile;
  reader.check_schema_version(root, kCalibrationSchemaVersion);
  reader.only_fields(root, "",
                     {"schema_version", "gpu", "description", "gemm", "attention", "memory_bound",
                      "collectives", "memory_overheads"});
  profile.gpu = reader.string(root, "gpu", "");
  profile.description = reader.optional_string(root, "description", "").value_or("");
  profile.gemm = read_gemm(reader, root);
  if (const json* attention = reader.object(root, "attention", "")) {
    reader.only_fields(*attention, "attention", {"forward", "backward"});
    profile.attention_forward = read_attention_pass(reader, *attention, "forward");
    profile.attention_backward = read_attention_pass(reader, *attention, "backward");
  }
  if (const json* memory_bound = reader.object(root, "memory_bound", "")) {
    reader.only_fields(*memory_bound, "memory_bound", {"hbm_bandwidth_fraction"});
    profile.hbm_bandwidth_fraction =
        read_sourced(reader, *memory_bound, "hbm_bandwidth_fraction", "memory_bound", Range::kFraction);
  }
  if (const json* collectives = reader.object(root, "collectives", "")) {
    reader.only_fields(*collectives, "collectives", {"intra_node", "inter_node"});
    for (LinkTier tier : kLinkTiers) {
      const std::string tier_path = field_path("collectives", link_tier_name(tier));
      const json* tier_object = reader.object(*collectives, link_tier_name(tier), "collectives");
      if (tier_object == nullptr) break;
      reader.only_fields(*tier_object, tier_path,
                         {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"});
      for (CollectiveKind kind : kCollectiveKinds) {
        profile.collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)] =
            read_collective(reader, *tier_object, collective_kind_name(kind), tier_path);
      }
    }
  }
  if (const json* overheads = reader.object(root, "memory_overheads", "")) {
    const std::string path = "memory_overheads";
    reader.only_fields(*overheads, path,
                       {"cuda_context_bytes", "allocator_reserve_fraction",
                        "nccl_buffer_bytes_per_communicator", "memory_headroom_fraction"});
    MemoryOverheads& out = profile.overheads;
    out.cuda_context_bytes = read_sourced(reader, *overheads, "cuda_context_bytes", path, Range::kPositive);
    out.allocator_reserve_fraction =
        read_sourced(reader, *overheads, "allocator_reserve_fraction", path, Range::kOpenFraction);
    out.nccl_buffer_bytes_per_communicator =
        read_sourced(reader, *overheads, "nccl_buffer_bytes_per_communicator", path, Range::kPositive);
    out.memory_headroom_fraction =
        read_sourced(reader, *overheads, "memory_headroom_fraction", path, Range::kOpenFraction);
  }
  return profile;
}

json sourced_json(const SourcedValue& value) { return {{"value", value.value}, {"source", value.source}}; }

json attention_json(const std::vector<AttentionPoint>& points) {
  json list = json::array();
  for (const auto& p : points) {
    list.push_back({{"seq_len", p.seq_len},
                    {"head_dim", p.head_dim},
                    {"efficiency", p.efficiency},
                    {"source", p.source}});
  }
  return {{"points", list}};
}

}  // namespace

std::vector<std::string> known_profile_names() {
  std::vector<std::string> names;
  for (const auto& file : detail::bundled_profiles()) names.emplace_back(file.name);
  return names;
}

Expected<CalibrationProfile> parse_calibration_profile(std::string_view text, std::string_view origin) {
  JsonReader reader{std::string(origin)};
  const json root = reader.parse(text);
  CalibrationProfile profile = read_profile(reader, root);
  if (!reader.ok()) return reader.error();
  return profile;
}

Expected<CalibrationProfile> load_calibration_profile(std::string_view name_or_path) {
  if (detail::looks_like_path(name_or_path)) {
    const std::string path(name_or_path);
    auto text = detail::read_text_file(path, "calibration profile");
    if (!text.ok()) return text.error();
    return parse_calibration_profile(*text, "calibration profile '" + path + "'");
  }
  const auto* file = detail::find_bundled(detail::bundled_profiles(), name_or_path);
  if (file == nullptr) {
    return Error{"unknown calibration profile '" + std::string(name_or_path) + "'; known profiles: " +
                 detail::bundled_names(detail::bundled_profiles()) + " (or pass a profile JSON file)"};
  }
  return parse_calibration_profile(file->text,
                                   "bundled calibration profile '" + std::string(name_or_path) + "'");
}

Expected<CalibrationProfile> profile_for_gpu(const Gpu& gpu) {
  if (detail::find_bundled(detail::bundled_profiles(), gpu.name) == nullptr) {
    return Error{"no bundled calibration profile for GPU '" + gpu.name +
                 "' (bundled: " + detail::bundled_names(detail::bundled_profiles()) +
                 "); measure one with `pipescope calibrate run` and pass it with --calibration FILE"};
  }
  return load_calibration_profile(gpu.name);
}

Status check_profile_matches(const CalibrationProfile& profile, const Gpu& gpu) {
  if (profile.gpu == gpu.name) return Status::Ok();
  return Error{"calibration profile is for GPU '" + profile.gpu + "' but the cluster has '" + gpu.name +
               "'; pass a profile measured on " + gpu.name + " with --calibration FILE"};
}

std::string write_calibration_profile(const CalibrationProfile& profile) {
  json gemm_points = json::array();
  for (const auto& p : profile.gemm) {
    gemm_points.push_back(
        {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"efficiency", p.efficiency}, {"source", p.source}});
  }
  json collectives = json::object();
  for (LinkTier tier : kLinkTiers) {
    json tier_json = json::object();
    for (CollectiveKind kind : kCollectiveKinds) {
      const CollectiveCost& cost = profile.collective(kind, tier);
      json entry = {{"latency_s", cost.latency_s}, {"source", cost.source}};
      if (cost.bus_bandwidth_fraction > 0) {
        entry["bus_bandwidth_fraction"] = cost.bus_bandwidth_fraction;
      } else {
        entry["bus_bandwidth_bytes_per_s"] = cost.bus_bandwidth_bytes_per_s;
      }
      tier_json[std::string(collective_kind_name(kind))] = std::move(entry);
    }
    collectives[std::string(link_tier_name(tier))] = std::move(tier_json);
  }
  const MemoryOverheads& o = profile.overheads;
  json root = {{"schema_version", kCalibrationSchemaVersion},
               {"gpu", profile.gpu},
               {"gemm", {{"interpolation", kGemmInterpolation}, {"points", gemm_points}}},
               {"attention",
                {{"forward", attention_json(profile.attention_forward)},
                 {"backward", attention_json(profile.attention_backward)}}},
               {"memory_bound", {{"hbm_bandwidth_fraction", sourced_json(profile.hbm_bandwidth_fraction)}}},
               {"collectives", collectives},
               {"memory_overheads",
                {{"cuda_context_bytes", sourced_json(o.cuda_context_bytes)},
                 {"allocator_reserve_fraction", sourced_json(o.allocator_reserve_fraction)},
                 {"nccl_buffer_bytes_per_communicator", sourced_json(o.nccl_buffer_bytes_per_communicator)},
                 {"memory_headroom_fraction", sourced_json(o.memory_headroom_fraction)}}}};
  if (!profile.description.empty()) root["description"] = profile.description;
  return root.dump(2) + "\n";
}

}  // namespace pipescope::planner
