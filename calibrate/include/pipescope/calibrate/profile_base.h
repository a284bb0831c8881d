// Where the parts of a fitted profile come from that the results do not measure: --base (any
// GPU's profile: another GPU's numbers are taken over and their sources say so), else the GPU's
// bundled profile, else only the entries that do not depend on the GPU (docs/calibration.md,
// "Fitting a GPU without a profile"), and then the results must measure all the rest.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::calibrate {

enum class BaseKind {
  kSameGpu,   // a profile of the GPU measured (bundled, or --base)
  kOtherGpu,  // --base of another GPU, retargeted
  kDefaults,  // no profile of this GPU and no --base: GPU-independent entries only
};

struct ProfileBase {
  planner::CalibrationProfile profile;  // describes the fitted GPU (its `gpu` is set to it)
  BaseKind kind = BaseKind::kSameGpu;
  std::string origin;  // for messages and the description, e.g. "the bundled h100-80gb profile"
};

// The bundled profile whose GPU-independent entries stand in when a GPU has none of its own:
// inter-node collectives (set by the network and NCCL), the allocator's reserve, the planner's
// headroom and the CUDA context (their sources name no GPU).
inline constexpr std::string_view kDefaultsProfile = "h100-80gb";

// `base_option`: --base NAME|FILE, or empty.
Expected<ProfileBase> resolve_base(const planner::Gpu& gpu, const std::string& base_option);

// Parts of a profile the planner needs that only a measurement of the GPU itself can give, in
// the names ProfileFit::kept_from_base uses. With BaseKind::kDefaults, none may be kept.
std::vector<std::string> gpu_specific_parts();

}  // namespace pipescope::calibrate
