#include "config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pipescope::inject {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

ConfigResult config_from(std::map<std::string, std::string> vars) {
  FakeEnv env{std::move(vars)};
  return read_config(env.lookup());
}

TEST(InjectConfig, EmptyEnvironmentGivesDesignDefaults) {
  const ConfigResult r = config_from({});
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.output_dir, "./pipescope-traces");
  EXPECT_EQ(r.config.flush_ms, 1000u);
  EXPECT_EQ(r.config.kinds, trace::default_capture_kinds());
  EXPECT_FALSE(r.config.kinds.has(trace::RecordKind::kApi));
  EXPECT_TRUE(r.config.kinds.has(trace::RecordKind::kKernel));
  EXPECT_FALSE(r.config.window.has_value());
  EXPECT_FALSE(r.config.steps.has_value());
  EXPECT_EQ(r.config.nvtx_step_regex, "step|iteration|train_step");
}

TEST(InjectConfig, ValidValuesAreTaken) {
  const ConfigResult r = config_from({{"PIPESCOPE_OUTPUT", "/tmp/t"},
                                      {"PIPESCOPE_KINDS", "kernel,nccl"},
                                      {"PIPESCOPE_FLUSH_MS", "250"},
                                      {"PIPESCOPE_BUFFER_MB", "3"},
                                      {"PIPESCOPE_STEPS", "100:110"},
                                      {"PIPESCOPE_NVTX_STEP", "^iter"}});
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.config.output_dir, "/tmp/t");
  EXPECT_TRUE(r.config.kinds.has(trace::RecordKind::kNcclOp));
  EXPECT_TRUE(r.config.kinds.has(trace::RecordKind::kNcclComm));
  EXPECT_FALSE(r.config.kinds.has(trace::RecordKind::kNvtx));
  EXPECT_EQ(r.config.flush_ms, 250u);
  EXPECT_EQ(r.config.buffer_bytes, size_t{4} << 20);  // 3 MiB rounds up to a power of two
  ASSERT_TRUE(r.config.steps.has_value());
  EXPECT_EQ(r.config.steps->first, 100);
  EXPECT_EQ(r.config.steps->last, 110);
  EXPECT_EQ(r.config.nvtx_step_regex, "^iter");
}

TEST(InjectConfig, WindowWithOpenEnd) {
  const ConfigResult r = config_from({{"PIPESCOPE_WINDOW", "30:"}});
  ASSERT_TRUE(r.config.window.has_value());
  EXPECT_DOUBLE_EQ(r.config.window->start_s, 30.0);
  EXPECT_FALSE(r.config.window->end_s.has_value());
}

TEST(InjectConfig, EveryInvalidValueWarnsOnceAndKeepsTheDefault) {
  const ConfigResult r = config_from({{"PIPESCOPE_KINDS", "kernel,bogus"},
                                      {"PIPESCOPE_FLUSH_MS", "0"},
                                      {"PIPESCOPE_BUFFER_MB", "lots"},
                                      {"PIPESCOPE_WINDOW", "9:3"},
                                      {"PIPESCOPE_STEPS", "5"},
                                      {"PIPESCOPE_NVTX_STEP", "(unclosed"},
                                      {"PIPESCOPE_COMPRESS", "yes"},
                                      {"PIPESCOPE_TSC", "off"}});
  ASSERT_EQ(r.warnings.size(), 8u);
  EXPECT_NE(r.warnings[0].find("PIPESCOPE_KINDS='kernel,bogus'"), std::string::npos);
  EXPECT_NE(r.warnings[0].find("unknown kind 'bogus'"), std::string::npos);
  EXPECT_EQ(r.config.kinds, trace::default_capture_kinds());
  EXPECT_EQ(r.config.flush_ms, 1000u);
  EXPECT_EQ(r.config.buffer_bytes, size_t{4} << 20);
  EXPECT_FALSE(r.config.window.has_value());
  EXPECT_FALSE(r.config.steps.has_value());
  EXPECT_EQ(r.config.nvtx_step_regex, "step|iteration|train_step");
  EXPECT_TRUE(r.config.compress);
  EXPECT_TRUE(r.config.read_tsc);
  EXPECT_NE(r.warnings[7].find("PIPESCOPE_TSC='off' is not 0 or 1; using 1"), std::string::npos)
      << r.warnings[7];
}

TEST(InjectConfig, TheTraceClockMayBeKeptOffTheTsc) {
  EXPECT_TRUE(config_from({}).config.read_tsc);
  const ConfigResult off = config_from({{"PIPESCOPE_TSC", "0"}});
  EXPECT_TRUE(off.warnings.empty());
  EXPECT_FALSE(off.config.read_tsc);
}

TEST(InjectConfig, DeclaredPipelineStage) {
  const ConfigResult ok = config_from({{"PIPESCOPE_STAGE", "3"}});
  EXPECT_TRUE(ok.warnings.empty());
  EXPECT_EQ(ok.config.declared_stage, 3);
  const ConfigResult bad = config_from({{"PIPESCOPE_STAGE", "-1"}});
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(bad.warnings[0].find("PIPESCOPE_STAGE='-1'"), std::string::npos);
  EXPECT_FALSE(bad.config.declared_stage.has_value());
}

TEST(InjectConfig, StepsWinOverAWindow) {
  const ConfigResult r = config_from({{"PIPESCOPE_WINDOW", "1:2"}, {"PIPESCOPE_STEPS", "1:2"}});
  EXPECT_EQ(r.warnings.size(), 1u);
  EXPECT_TRUE(r.config.steps.has_value());
  EXPECT_FALSE(r.config.window.has_value());
}

TEST(CaptureKinds, NvtxNcclTurnsOnNcclsOwnDomain) {
  auto kinds = trace::parse_capture_kinds("nvtx-nccl");
  ASSERT_TRUE(kinds.ok());
  EXPECT_TRUE(kinds->nccl_nvtx_domain);
  EXPECT_TRUE(kinds->has(trace::RecordKind::kNvtx));
  EXPECT_TRUE(kinds->has(trace::RecordKind::kNotice));
  EXPECT_FALSE(kinds->has(trace::RecordKind::kKernel));
}

TEST(CaptureKinds, AllIncludesApi) {
  auto kinds = trace::parse_capture_kinds("all");
  ASSERT_TRUE(kinds.ok());
  EXPECT_TRUE(kinds->has(trace::RecordKind::kApi));
  EXPECT_FALSE(kinds->nccl_nvtx_domain);
  EXPECT_FALSE(trace::parse_capture_kinds("").ok());
  EXPECT_FALSE(trace::parse_capture_kinds("kernel,").ok());
}

TEST(InjectConfig, CuptiKnobsAndKernelSamplingDefaultToTheCheapestSettingThatLosesNothing) {
  const ConfigResult r = config_from({});
  EXPECT_EQ(r.config.kernel_sample_steps, 1u);
  const CuptiTuning& t = r.config.cupti;
  EXPECT_EQ(t.activity_buffer_bytes, size_t{8} << 20);
  EXPECT_FALSE(t.device_buffer_bytes.has_value());
  EXPECT_FALSE(t.device_buffers_preallocated.has_value());
  EXPECT_FALSE(t.host_pinned_device_buffers.has_value());
  EXPECT_FALSE(t.per_thread_buffers.has_value());
  EXPECT_FALSE(t.latency_timestamps);
  EXPECT_TRUE(t.clock_callback);
  EXPECT_EQ(t.flush_period_ms, 0u);
  EXPECT_FALSE(t.all_sync_records);
  EXPECT_TRUE(t.nccl_launch_api_only);
  EXPECT_TRUE(t.zeroed_buffers);
  EXPECT_TRUE(t.convert_on_own_thread);
}

TEST(InjectConfig, CuptiKnobsAreTaken) {
  const ConfigResult r = config_from({{"PIPESCOPE_KERNEL_SAMPLE", "10"},
                                      {"PIPESCOPE_CUPTI_BUFFER_MB", "64"},
                                      {"PIPESCOPE_CUPTI_DEVICE_BUFFER_MB", "32"},
                                      {"PIPESCOPE_CUPTI_DEVICE_BUFFERS", "6"},
                                      {"PIPESCOPE_CUPTI_HOST_PINNED", "1"},
                                      {"PIPESCOPE_CUPTI_PER_THREAD_BUFFERS", "0"},
                                      {"PIPESCOPE_CUPTI_LATENCY_TIMESTAMPS", "1"},
                                      {"PIPESCOPE_CUPTI_CLOCK", "offset"},
                                      {"PIPESCOPE_CUPTI_FLUSH_PERIOD_MS", "10"},
                                      {"PIPESCOPE_CUPTI_ALL_SYNC_RECORDS", "1"},
                                      {"PIPESCOPE_CUPTI_NCCL_API", "all"},
                                      {"PIPESCOPE_CUPTI_ZEROED_BUFFERS", "0"},
                                      {"PIPESCOPE_CUPTI_CONVERT", "callback"}});
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.config.kernel_sample_steps, 10u);
  const CuptiTuning& t = r.config.cupti;
  EXPECT_EQ(t.activity_buffer_bytes, size_t{64} << 20);
  EXPECT_EQ(t.device_buffer_bytes, size_t{32} << 20);
  EXPECT_EQ(t.device_buffers_preallocated, size_t{6});
  EXPECT_EQ(t.host_pinned_device_buffers, true);
  EXPECT_EQ(t.per_thread_buffers, false);
  EXPECT_TRUE(t.latency_timestamps);
  EXPECT_FALSE(t.clock_callback);
  EXPECT_EQ(t.flush_period_ms, 10u);
  EXPECT_TRUE(t.all_sync_records);
  EXPECT_FALSE(t.nccl_launch_api_only);
  EXPECT_FALSE(t.zeroed_buffers);
  EXPECT_FALSE(t.convert_on_own_thread);
}

TEST(InjectConfig, BadCuptiKnobsWarnOnceEachAndKeepTheirDefaults) {
  const ConfigResult r = config_from({{"PIPESCOPE_KERNEL_SAMPLE", "0"},
                                      {"PIPESCOPE_CUPTI_BUFFER_MB", "999"},
                                      {"PIPESCOPE_CUPTI_HOST_PINNED", "yes"},
                                      {"PIPESCOPE_CUPTI_CLOCK", "tsc"},
                                      {"PIPESCOPE_CUPTI_NCCL_API", "some"}});
  ASSERT_EQ(r.warnings.size(), 5u);
  EXPECT_NE(r.warnings[0].find("PIPESCOPE_KERNEL_SAMPLE='0' is not a whole number from 1 to"),
            std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[3].find("callback or offset"), std::string::npos) << r.warnings[3];
  EXPECT_EQ(r.config.kernel_sample_steps, 1u);
  EXPECT_EQ(r.config.cupti.activity_buffer_bytes, size_t{8} << 20);
  EXPECT_FALSE(r.config.cupti.host_pinned_device_buffers.has_value());
  EXPECT_TRUE(r.config.cupti.clock_callback);
  EXPECT_TRUE(r.config.cupti.nccl_launch_api_only);
}

}  // namespace
}  // namespace pipescope::inject
