// Bytes of the element types the pricing counts traffic in. Internal to planner/core.
#pragma once

namespace pipescope::planner {

inline constexpr double kHalf = 2;   // bytes of a bf16 element
inline constexpr double kFloat = 4;  // bytes of an fp32 element

}  // namespace pipescope::planner
