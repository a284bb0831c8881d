#include "pipescope/calibrate/profile_base.h"

#include <functional>

namespace pipescope::calibrate {
namespace {

using planner::CalibrationProfile;

// Every source string of a profile, so that a base's can say where they came from.
void for_each_source(CalibrationProfile& p, const std::function<void(std::string&)>& visit) {
  for (auto& g : p.gemm) visit(g.source);
  if (p.gemm_waves.enabled()) visit(p.gemm_waves.source);
  for (auto& a : p.attention_forward) visit(a.source);
  for (auto& a : p.attention_backward) visit(a.source);
  visit(p.hbm_bandwidth_fraction.source);
  for (auto& tier : p.collectives) {
    for (auto& cost : tier) visit(cost.source);
  }
  for (auto& tier : p.measured_collectives) {
    for (auto& kind : tier) {
      for (auto& entry : kind) {
        visit(entry.source);
        for (auto& segment : entry.segments) visit(segment.source);
      }
    }
  }
  for (auto& copy : p.copies) {
    if (copy.bytes_per_s > 0) visit(copy.source);
  }
  for (auto* v : {&p.overheads.cuda_context_bytes, &p.overheads.allocator_reserve_fraction,
                  &p.overheads.nccl_buffer_bytes_per_communicator, &p.overheads.memory_headroom_fraction})
    visit(v->source);
  // A loss without a source is absent (no loss priced), and stays so.
  for (const planner::TrainingLossField& field : planner::kTrainingLossFields) {
    std::string& source = (p.losses.*field.member).source;
    if (!source.empty()) visit(source);
  }
}

void prefix_sources(CalibrationProfile& p, const std::string& prefix) {
  for_each_source(p, [&](std::string& source) { source = prefix + source; });
}

}  // namespace

std::vector<std::string> gpu_specific_parts() {
  std::vector<std::string> parts = {"gemm", "attention forward", "attention backward", "memory_bound"};
  for (planner::CollectiveKind kind : planner::kCollectiveKinds)
    parts.push_back("collectives intra_node " + std::string(planner::collective_kind_name(kind)));
  parts.emplace_back("memory_overheads.nccl_buffer_bytes_per_communicator");
  return parts;
}

Expected<ProfileBase> resolve_base(const planner::Gpu& gpu, const std::string& base_option) {
  ProfileBase base;
  if (!base_option.empty()) {
    auto loaded = planner::load_calibration_profile(base_option);
    if (!loaded.ok()) return loaded.error();
    base.profile = std::move(*loaded);
    // load_calibration_profile's rule: a name unless it has a '/' or ends in .json.
    const bool bundled =
        base_option.find('/') == std::string::npos &&
        !(base_option.size() >= 5 && base_option.compare(base_option.size() - 5, 5, ".json") == 0);
    const std::string what = (bundled ? "the bundled " : "the ") + base.profile.gpu + " profile" +
                             (bundled ? "" : " in " + base_option);
    if (base.profile.gpu == gpu.name) {
      base.kind = BaseKind::kSameGpu;
      base.origin = what;
      return base;
    }
    // Efficiencies are fractions of the GPU's own peaks and collective bandwidths fractions of its
    // links, so another GPU's profile prices this one sensibly; every number says it is borrowed.
    base.kind = BaseKind::kOtherGpu;
    base.origin = what + " (another GPU, given as --base)";
    prefix_sources(base.profile, "from " + base.origin + ": ");
    base.profile.gpu = gpu.name;
    base.profile.provenance = {};
    return base;
  }
  if (auto own = planner::profile_for_gpu(gpu); own.ok()) {
    base.profile = std::move(*own);
    base.kind = BaseKind::kSameGpu;
    base.origin = "the bundled " + gpu.name + " profile";
    return base;
  }
  auto defaults = planner::load_calibration_profile(kDefaultsProfile);
  if (!defaults.ok()) return defaults.error();
  base.profile = std::move(*defaults);
  base.kind = BaseKind::kDefaults;
  base.origin = "the GPU-independent entries of the bundled " + std::string(kDefaultsProfile) + " profile";
  prefix_sources(base.profile, "default for a GPU without a profile of its own, from the bundled " +
                                   std::string(kDefaultsProfile) + " profile: ");
  base.profile.gpu = gpu.name;
  base.profile.copies = {};
  base.profile.provenance = {};
  return base;
}

}  // namespace pipescope::calibrate
