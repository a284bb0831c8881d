// Bytes of the element types the pricing counts traffic in. Internal to planner/core.
#pragma once

namespace pipescope::planner {

inline constexpr double kHalf = 2;   // bytes of a bf16 element
inline constexpr double kFloat = 4;  // bytes of an fp32 element

// An optimizer step's kernels, per parameter they run on: fused Adam on the fp32 master (weight,
// gradient and both moments read; weight and moments written), the master copied into the bf16
// weight, the fp32 gradient zeroed, and the gradient norm read over it.
inline constexpr double kFusedAdamBytes = 4 * kFloat + 3 * kFloat;
inline constexpr double kMasterToBf16Bytes = kFloat + kHalf;
inline constexpr double kZeroGradientBytes = kFloat;
inline constexpr double kGradientNormBytes = kFloat;

}  // namespace pipescope::planner
