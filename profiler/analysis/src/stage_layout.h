// Internal to layout inference: one pipeline stage's tensor-, data-, shard- and expert-parallel
// sizes read from its communicators. Communicators of one size that partition the stage form a
// family; the families' traffic and how their groups meet name them (layout_inference.h has the
// rules). Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout_groups.h"
#include "pipescope/analysis/layout_inference.h"
#include "pipescope/common/expected.h"

namespace pipescope::analysis::layout {

struct Dims {
  int32_t tp = 1, dp = 1, shard = 1, ep = 1;
  bool operator==(const Dims&) const = default;
  std::string str() const {
    return "tp " + std::to_string(tp) + " x dp " + std::to_string(dp) + " (zero_shard " +
           std::to_string(shard) + ", ep " + std::to_string(ep) + ")";
  }
};

class StageInference {
 public:
  StageInference(int32_t world_size, const std::vector<Group>& groups,
                 const std::optional<StatedLayout>& stated, const std::vector<int32_t>& untraced,
                 InferredLayout& out);

  void note(std::string text);
  void set_role(const Family& f, CommRole role) {
    for (size_t g : f.groups) role_[g] = role;
  }
  const std::vector<std::optional<CommRole>>& roles() const { return role_; }

  // The stage's families, busiest first.
  std::vector<Family> families(int32_t stage, const std::vector<int32_t>& ranks);
  // The stage's sizes; the ranks' coordinates and the groups' roles go into the output.
  Expected<Dims> analyze(int32_t stage, const std::vector<int32_t>& ranks,
                         const std::vector<Family>& families);

 private:
  bool orthogonal(const Family& a, const Family& b) const;
  bool nested(const Family& inner, const Family& outer) const;
  bool one_tp_rank(const Family& tp, const Family& f) const;
  Error not_orthogonal(const Family& tp, const Family& other, int32_t dp) const;
  void fallback(const std::vector<int32_t>& ranks, const Family* tp, const Family* dp, bool dp_found,
                const Dims& dims);
  void fill_uncovered(const std::vector<int32_t>& ranks, const Family& tp, const Family& dp);

  int32_t world_;
  const std::vector<Group>& groups_;
  const std::optional<StatedLayout>& stated_;
  std::vector<bool> untraced_;  // per global rank
  InferredLayout& out_;
  std::vector<std::optional<CommRole>> role_;
};

}  // namespace pipescope::analysis::layout
