// Reading and writing calibration profile JSON (docs/calibration-format.md).
#include <algorithm>
#include <array>
#include <set>
#include <tuple>
#include <utility>

#include "bundled_data.h"
#include "named_input.h"
#include "pipescope/common/data_dirs.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::planner {
namespace {

using detail::json;
using pipescope::field_path;
using pipescope::index_path;
using pipescope::JsonFieldReader;
using pipescope::JsonRange;

constexpr std::string_view kLogFlopsInterpolation = "linear_in_log_flops";
constexpr std::string_view kShapeGridInterpolation = "grid_in_log_mnk";

JsonRange json_range(LossDomain domain) {
  switch (domain) {
    case LossDomain::kFraction: return JsonRange::kFraction;
    case LossDomain::kPositive: return JsonRange::kPositive;
    case LossDomain::kNonNegative: return JsonRange::kNonNegative;
  }
  return JsonRange::kAny;
}

SourcedValue read_sourced(JsonFieldReader& reader, const json& parent, std::string_view key,
                          const std::string& path, JsonRange range) {
  SourcedValue out;
  const json* object = reader.object(parent, key, path);
  if (object == nullptr) return out;
  const std::string here = field_path(path, key);
  reader.only_fields(*object, here, {"value", "source"});
  out.value = reader.number(*object, "value", here, range);
  out.source = reader.string(*object, "source", here);
  return out;
}

GemmWaves read_waves(JsonFieldReader& reader, const json& gemm) {
  GemmWaves waves;
  if (!gemm.contains("wave_quantization")) return waves;
  const json* object = reader.object(gemm, "wave_quantization", "gemm");
  if (object == nullptr) return waves;
  const std::string here = "gemm.wave_quantization";
  reader.only_fields(*object, here, {"sm_count", "tile_m", "tile_n", "source"});
  waves.sm_count = reader.integer(*object, "sm_count", here, JsonRange::kPositive);
  waves.tile_m = reader.integer(*object, "tile_m", here, JsonRange::kPositive);
  waves.tile_n = reader.integer(*object, "tile_n", here, JsonRange::kPositive);
  waves.source = reader.string(*object, "source", here);
  return waves;
}

// The shape grid must hold every (m, n, k) combination of the values it uses, once; it is kept in
// lexicographic order, which the interpolation walks.
void check_shape_grid(JsonFieldReader& reader, std::vector<GemmPoint>& points) {
  std::set<int64_t> ms, ns, ks;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (const auto& p : points) {
    ms.insert(p.m);
    ns.insert(p.n);
    ks.insert(p.k);
    if (!seen.emplace(p.m, p.n, p.k).second) {
      reader.fail("field 'gemm.points' repeats m " + std::to_string(p.m) + ", n " + std::to_string(p.n) +
                  ", k " + std::to_string(p.k));
      return;
    }
  }
  if (points.size() != ms.size() * ns.size() * ks.size()) {
    reader.fail("field 'gemm.points' must hold every (m, n, k) combination of the values it uses for " +
                std::string(kShapeGridInterpolation) + ": " + std::to_string(ms.size()) + " x " +
                std::to_string(ns.size()) + " x " + std::to_string(ks.size()) + " points, found " +
                std::to_string(points.size()));
    return;
  }
  std::sort(points.begin(), points.end(), [](const GemmPoint& a, const GemmPoint& b) {
    return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
  });
}

std::vector<GemmPoint> read_gemm(JsonFieldReader& reader, const json& root, CalibrationProfile& profile) {
  std::vector<GemmPoint> points;
  const json* gemm = reader.object(root, "gemm", "");
  if (gemm == nullptr) return points;
  reader.only_fields(*gemm, "gemm", {"interpolation", "wave_quantization", "points"});
  const std::string interpolation = reader.string(*gemm, "interpolation", "gemm");
  const bool grid = interpolation == kShapeGridInterpolation;
  if (!grid && interpolation != kLogFlopsInterpolation && reader.ok()) {
    reader.fail("field 'gemm.interpolation' must be \"" + std::string(kLogFlopsInterpolation) + "\" or \"" +
                std::string(kShapeGridInterpolation) + "\"");
  }
  if (!grid && gemm->contains("wave_quantization") && reader.ok()) {
    reader.fail("field 'gemm.wave_quantization' needs \"interpolation\": \"" +
                std::string(kShapeGridInterpolation) + "\"");
  }
  profile.gemm_interpolation = grid ? GemmInterpolation::kLogShapeGrid : GemmInterpolation::kLogFlops;
  profile.gemm_waves = read_waves(reader, *gemm);
  const json* list = reader.array(*gemm, "points", "gemm");
  if (list == nullptr) return points;
  for (size_t i = 0; i < list->size() && reader.ok(); ++i) {
    const std::string here = index_path("gemm.points", i);
    const json& item = (*list)[i];
    if (!reader.expect_object(item, here)) break;
    reader.only_fields(item, here, {"m", "n", "k", "efficiency", "source"});
    GemmPoint point;
    point.m = reader.integer(item, "m", here, JsonRange::kPositive);
    point.n = reader.integer(item, "n", here, JsonRange::kPositive);
    point.k = reader.integer(item, "k", here, JsonRange::kPositive);
    point.efficiency = reader.number(item, "efficiency", here, JsonRange::kFraction);
    point.source = reader.string(item, "source", here);
    // Interpolation walks the points in FLOP order; an unordered table is a mistake in the file.
    if (!grid && reader.ok() && !points.empty() && point.flops() <= points.back().flops()) {
      reader.fail("field '" + here + "': points must be in strictly increasing 2*m*n*k order");
    }
    points.push_back(std::move(point));
  }
  if (grid && reader.ok()) check_shape_grid(reader, points);
  if (points.empty() && reader.ok()) reader.fail("field 'gemm.points' must not be empty");
  return points;
}

std::vector<AttentionPoint> read_attention_pass(JsonFieldReader& reader, const json& attention,
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
    point.seq_len = reader.integer(item, "seq_len", here, JsonRange::kPositive);
    point.head_dim = reader.integer(item, "head_dim", here, JsonRange::kPositive);
    point.efficiency = reader.number(item, "efficiency", here, JsonRange::kFraction);
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

std::vector<MeasuredCollective> read_measured(JsonFieldReader& reader, const json& object,
                                              const std::string& path) {
  std::vector<MeasuredCollective> out;
  if (!object.contains("measured")) return out;
  const json* list = reader.array(object, "measured", path);
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size() && reader.ok(); ++i) {
    const std::string here = index_path(field_path(path, "measured"), i);
    const json& item = (*list)[i];
    if (!reader.expect_object(item, here)) break;
    reader.only_fields(item, here, {"ranks", "segments", "source"});
    MeasuredCollective entry;
    entry.ranks = static_cast<int>(reader.integer(item, "ranks", here, JsonRange::kPositive, 1 << 24));
    if (reader.ok() && !out.empty() && entry.ranks <= out.back().ranks) {
      reader.fail("field '" + here + "': entries must be in strictly increasing 'ranks' order");
    }
    entry.source = reader.string(item, "source", here);
    const json* segments = reader.array(item, "segments", here);
    for (size_t j = 0; segments != nullptr && j < segments->size() && reader.ok(); ++j) {
      const std::string at = index_path(field_path(here, "segments"), j);
      const json& s = (*segments)[j];
      if (!reader.expect_object(s, at)) break;
      reader.only_fields(s, at, {"max_bytes", "latency_s", "bus_bandwidth_bytes_per_s", "source"});
      CollectiveSegment segment;
      const bool last = j + 1 == segments->size();
      // The last regime is open-ended; the others end where the next begins.
      if (!last) segment.max_bytes = reader.number(s, "max_bytes", at, JsonRange::kPositive);
      if (last && s.contains("max_bytes") && reader.ok()) {
        reader.fail("field '" + at + ".max_bytes': the last segment has no upper bound; leave it out");
      }
      segment.latency_s = reader.number(s, "latency_s", at, JsonRange::kNonNegative);
      segment.bus_bandwidth_bytes_per_s =
          reader.number(s, "bus_bandwidth_bytes_per_s", at, JsonRange::kPositive);
      segment.source = reader.string(s, "source", at);
      if (reader.ok() && !entry.segments.empty() && !last &&
          segment.max_bytes <= entry.segments.back().max_bytes) {
        reader.fail("field '" + at + ".max_bytes' must grow from one segment to the next");
      }
      entry.segments.push_back(std::move(segment));
    }
    if (reader.ok() && entry.segments.empty()) reader.fail("field '" + here + ".segments' must not be empty");
    out.push_back(std::move(entry));
  }
  return out;
}

CollectiveCost read_collective(JsonFieldReader& reader, const json& tier, std::string_view kind,
                               const std::string& path, std::vector<MeasuredCollective>& measured) {
  CollectiveCost cost;
  const json* object = reader.object(tier, kind, path);
  if (object == nullptr) return cost;
  const std::string here = field_path(path, kind);
  reader.only_fields(*object, here,
                     {"latency_s", "latency_ranks", "latency_nodes", "bus_bandwidth_bytes_per_s",
                      "bus_bandwidth_fraction", "source", "measured"});
  measured = read_measured(reader, *object, here);
  cost.latency_s = reader.number(*object, "latency_s", here, JsonRange::kPositive);
  const bool ranks_given = object->contains("latency_ranks");
  if (ranks_given != object->contains("latency_nodes") && reader.ok()) {
    reader.fail("field '" + here + "' needs both or neither of 'latency_ranks' and 'latency_nodes'");
  }
  if (ranks_given && reader.ok()) {
    constexpr int64_t kMostRanks = 1 << 20;
    cost.latency_ranks =
        static_cast<int>(reader.integer(*object, "latency_ranks", here, JsonRange::kPositive, kMostRanks));
    cost.latency_nodes =
        static_cast<int>(reader.integer(*object, "latency_nodes", here, JsonRange::kPositive, kMostRanks));
    if (reader.ok() && (cost.latency_nodes < 2 || cost.latency_ranks % cost.latency_nodes != 0)) {
      reader.fail("field '" + here + "': latency_ranks " + std::to_string(cost.latency_ranks) +
                  " over latency_nodes " + std::to_string(cost.latency_nodes) +
                  " is not a group spread evenly over two or more nodes, as NCCL's tuning model needs");
    }
  }
  const bool absolute = object->contains("bus_bandwidth_bytes_per_s");
  const bool fraction = object->contains("bus_bandwidth_fraction");
  if (absolute == fraction && reader.ok()) {
    reader.fail("field '" + here +
                "' needs exactly one of 'bus_bandwidth_bytes_per_s' and 'bus_bandwidth_fraction'");
  }
  // NVLink SHARP can push all_reduce busbw past the link rate, so a fraction may exceed 1.
  if (absolute) {
    cost.bus_bandwidth_bytes_per_s =
        reader.number(*object, "bus_bandwidth_bytes_per_s", here, JsonRange::kPositive);
  }
  if (fraction) {
    cost.bus_bandwidth_fraction =
        reader.number(*object, "bus_bandwidth_fraction", here, JsonRange::kPositive);
  }
  cost.source = reader.string(*object, "source", here);
  return cost;
}

void read_copies(JsonFieldReader& reader, const json& root, CalibrationProfile& profile) {
  const json* copies = reader.object(root, "copies", "");
  if (copies == nullptr) return;
  reader.only_fields(*copies, "copies", {"host_to_device", "device_to_host", "device_to_device"});
  for (CopyKind kind : kCopyKinds) {
    if (!copies->contains(copy_kind_name(kind))) continue;
    const json* object = reader.object(*copies, copy_kind_name(kind), "copies");
    if (object == nullptr) return;
    const std::string here = field_path("copies", copy_kind_name(kind));
    reader.only_fields(*object, here, {"latency_s", "bytes_per_s", "source"});
    CopyCost& cost = profile.copies[static_cast<size_t>(kind)];
    cost.latency_s = reader.number(*object, "latency_s", here, JsonRange::kNonNegative);
    cost.bytes_per_s = reader.number(*object, "bytes_per_s", here, JsonRange::kPositive);
    cost.source = reader.string(*object, "source", here);
  }
}

// Provenance fields in file order; strings only (nothing here is a number the planner uses).
std::vector<std::pair<std::string_view, std::string Provenance::*>> provenance_fields() {
  return {{"gpu_device_name", &Provenance::gpu_device_name},
          {"driver_version", &Provenance::driver_version},
          {"cuda_runtime_version", &Provenance::cuda_runtime_version},
          {"cublaslt_version", &Provenance::cublaslt_version},
          {"nccl_version", &Provenance::nccl_version},
          {"torch_version", &Provenance::torch_version},
          {"date", &Provenance::date},
          {"host", &Provenance::host},
          {"command", &Provenance::command},
          {"tool", &Provenance::tool}};
}

void read_provenance(JsonFieldReader& reader, const json& root, Provenance& out) {
  const json* object = reader.object(root, "provenance", "");
  if (object == nullptr) return;
  for (const auto& [key, value] : object->items()) {
    bool known = false;
    for (const auto& [name, field] : provenance_fields()) {
      if (key != name) continue;
      known = true;
      out.*field = reader.string(*object, name, "provenance");
    }
    if (!known && reader.ok()) reader.fail("field 'provenance." + key + "' is not part of the format");
  }
}

CalibrationProfile read_profile(JsonFieldReader& reader, const json& root) {
  CalibrationProfile profile;
  reader.check_schema_version(root, kCalibrationSchemaVersion);
  reader.only_fields(root, "",
                     {"schema_version", "gpu", "description", "gemm", "attention", "memory_bound",
                      "collectives", "copies", "memory_overheads", "losses", "provenance"});
  profile.gpu = reader.string(root, "gpu", "");
  profile.description = reader.optional_string(root, "description", "").value_or("");
  profile.gemm = read_gemm(reader, root, profile);
  if (const json* attention = reader.object(root, "attention", "")) {
    reader.only_fields(*attention, "attention", {"forward", "backward"});
    profile.attention_forward = read_attention_pass(reader, *attention, "forward");
    profile.attention_backward = read_attention_pass(reader, *attention, "backward");
  }
  if (const json* memory_bound = reader.object(root, "memory_bound", "")) {
    reader.only_fields(*memory_bound, "memory_bound", {"hbm_bandwidth_fraction"});
    profile.hbm_bandwidth_fraction =
        read_sourced(reader, *memory_bound, "hbm_bandwidth_fraction", "memory_bound", JsonRange::kFraction);
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
        profile.collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)] = read_collective(
            reader, *tier_object, collective_kind_name(kind), tier_path,
            profile.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)]);
      }
    }
  }
  if (root.contains("copies")) read_copies(reader, root, profile);
  if (root.contains("provenance")) read_provenance(reader, root, profile.provenance);
  if (const json* overheads = reader.object(root, "memory_overheads", "")) {
    const std::string path = "memory_overheads";
    reader.only_fields(*overheads, path,
                       {"cuda_context_bytes", "allocator_reserve_fraction",
                        "nccl_buffer_bytes_per_communicator", "memory_headroom_fraction"});
    MemoryOverheads& out = profile.overheads;
    out.cuda_context_bytes =
        read_sourced(reader, *overheads, "cuda_context_bytes", path, JsonRange::kPositive);
    out.allocator_reserve_fraction =
        read_sourced(reader, *overheads, "allocator_reserve_fraction", path, JsonRange::kOpenFraction);
    out.nccl_buffer_bytes_per_communicator =
        read_sourced(reader, *overheads, "nccl_buffer_bytes_per_communicator", path, JsonRange::kPositive);
    out.memory_headroom_fraction =
        read_sourced(reader, *overheads, "memory_headroom_fraction", path, JsonRange::kOpenFraction);
  }
  if (const json* losses = root.contains("losses") ? reader.object(root, "losses", "") : nullptr) {
    const std::string path = "losses";
    std::array<std::string_view, kTrainingLossFields.size()> names;
    for (size_t i = 0; i < names.size(); ++i) names[i] = kTrainingLossFields[i].name;
    reader.only_fields(*losses, path, names);
    for (const TrainingLossField& field : kTrainingLossFields) {
      if (losses->contains(field.name)) {
        profile.losses.*field.member =
            read_sourced(reader, *losses, field.name, path, json_range(field.domain));
      }
    }
  }
  return profile;
}

json measured_json(const std::vector<MeasuredCollective>& measured) {
  json list = json::array();
  for (const auto& entry : measured) {
    json segments = json::array();
    for (size_t i = 0; i < entry.segments.size(); ++i) {
      const CollectiveSegment& s = entry.segments[i];
      json segment = json::object();
      if (i + 1 < entry.segments.size()) segment["max_bytes"] = s.max_bytes;
      segment["latency_s"] = s.latency_s;
      segment["bus_bandwidth_bytes_per_s"] = s.bus_bandwidth_bytes_per_s;
      segment["source"] = s.source;
      segments.push_back(std::move(segment));
    }
    list.push_back({{"ranks", entry.ranks}, {"segments", segments}, {"source", entry.source}});
  }
  return list;
}

json sourced_json(const SourcedValue& value) { return {{"value", value.value}, {"source", value.source}}; }

json losses_json(const TrainingLosses& losses) {
  json out = json::object();
  for (const TrainingLossField& field : kTrainingLossFields) {
    const SourcedValue& value = losses.*field.member;
    if (!value.source.empty() || value.value != 0) out[std::string(field.name)] = sourced_json(value);
  }
  return out;
}

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
  JsonFieldReader reader{std::string(origin)};
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
    if (auto installed = find_data_file("profiles", name_or_path)) {
      auto text = detail::read_text_file(installed->string(), "calibration profile");
      if (!text.ok()) return text.error();
      return parse_calibration_profile(*text, "installed calibration profile '" + installed->string() + "'");
    }
    return Error{"unknown calibration profile '" + std::string(name_or_path) + "'; known profiles: " +
                 detail::bundled_names(detail::bundled_profiles()) + " (or pass a profile JSON file)"};
  }
  return parse_calibration_profile(file->text,
                                   "bundled calibration profile '" + std::string(name_or_path) + "'");
}

Expected<CalibrationProfile> profile_for_gpu(const Gpu& gpu) {
  if (detail::find_bundled(detail::bundled_profiles(), gpu.name) == nullptr &&
      !find_data_file("profiles", gpu.name)) {
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
      if (cost.latency_ranks > 0) {
        entry["latency_ranks"] = cost.latency_ranks;
        entry["latency_nodes"] = cost.latency_nodes;
      }
      if (cost.bus_bandwidth_fraction > 0) {
        entry["bus_bandwidth_fraction"] = cost.bus_bandwidth_fraction;
      } else {
        entry["bus_bandwidth_bytes_per_s"] = cost.bus_bandwidth_bytes_per_s;
      }
      const auto& measured =
          profile.measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
      if (!measured.empty()) entry["measured"] = measured_json(measured);
      tier_json[std::string(collective_kind_name(kind))] = std::move(entry);
    }
    collectives[std::string(link_tier_name(tier))] = std::move(tier_json);
  }
  const MemoryOverheads& o = profile.overheads;
  json gemm = {{"interpolation", profile.gemm_interpolation == GemmInterpolation::kLogShapeGrid
                                     ? kShapeGridInterpolation
                                     : kLogFlopsInterpolation}};
  if (profile.gemm_waves.enabled()) {
    const GemmWaves& w = profile.gemm_waves;
    gemm["wave_quantization"] = {
        {"sm_count", w.sm_count}, {"tile_m", w.tile_m}, {"tile_n", w.tile_n}, {"source", w.source}};
  }
  gemm["points"] = gemm_points;
  json root = {{"schema_version", kCalibrationSchemaVersion},
               {"gpu", profile.gpu},
               {"gemm", gemm},
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
  json copies = json::object();
  for (CopyKind kind : kCopyKinds) {
    const CopyCost& c = profile.copy(kind);
    if (c.bytes_per_s <= 0) continue;
    copies[std::string(copy_kind_name(kind))] = {
        {"latency_s", c.latency_s}, {"bytes_per_s", c.bytes_per_s}, {"source", c.source}};
  }
  if (!copies.empty()) root["copies"] = copies;
  if (!profile.losses.empty()) root["losses"] = losses_json(profile.losses);
  if (!profile.provenance.empty()) {
    json provenance = json::object();
    for (const auto& [name, field] : provenance_fields()) {
      if (!(profile.provenance.*field).empty()) provenance[std::string(name)] = profile.provenance.*field;
    }
    root["provenance"] = provenance;
  }
  return root.dump(2) + "\n";
}

}  // namespace pipescope::planner
