// Test helper: a bundled description, failing the calling test when it does not load.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pipescope/models/model_catalog.h"

namespace pipescope::models {

inline ModelDesc bundled(const std::string& name) {
  Expected<ModelDesc> m = load_bundled_model(name);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : ModelDesc{};
}

}  // namespace pipescope::models
