// The preloaded library forwards to the real libnccl.so.2 when NCCL is loaded the way Python
// loads it: as the dependency of a module opened with RTLD_LOCAL, where dlsym(RTLD_NEXT) cannot
// see it. Without a GPU the real ncclCommInitRank fails; what matters is that the program sees
// NCCL's own results and errno, exactly as without the library, and the trace records the call.
#include <gtest/gtest.h>

#include <string>

#include "loaded_trace.h"
#include "rank_launcher.h"

namespace pipescope::inject {
namespace {

using testing::LaunchOptions;
using testing::load_trace;
using testing::make_temp_dir;
using testing::RankResult;
using testing::trace_files_in;

// One plain process (no launcher variables) running the program on the module.
RankResult run_program(const std::string& preload, const std::string& trace_dir) {
  LaunchOptions options;
  options.argv = {NCCL_LOCAL_PROGRAM, NCCL_LOCAL_MODULE};
  options.torchrun_env = false;
  options.preload = preload;
  if (!trace_dir.empty()) options.env = {{"PIPESCOPE_OUTPUT", trace_dir}};
  options.env_remove = {"NCCL_DEBUG", "NCCL_COMM_ID"};
  return testing::launch_ranks(options).ranks.at(0);
}

TEST(NcclLocalPreload, RealNcclResultsComeBackUnchangedAndTheCallIsRecorded) {
  const RankResult plain = run_program("", "");
  ASSERT_TRUE(plain.exited_with(0)) << plain.status_text() << plain.err;
  // The case under test: libnccl is invisible to the global scope.
  ASSERT_NE(plain.out.find("nccl in global scope: no"), std::string::npos) << plain.out;

  const std::string dir = make_temp_dir("nccl-local-trace");
  const RankResult traced = run_program(PIPESCOPE_INJECT_LIBRARY, dir);
  EXPECT_TRUE(traced.exited_with(0)) << traced.status_text() << traced.err;
  EXPECT_EQ(traced.out, plain.out);  // every result and errno as without the library
  EXPECT_EQ(traced.err, plain.err);

  const auto files = trace_files_in(dir);
  ASSERT_EQ(files.size(), 1u) << "ncclCommInitRank did not reach the interposer";
  const auto loaded = load_trace(files[0]);
  // Without a GPU the real library refuses and no communicator comes of the call (comm_handle
  // 0); on a GPU the communicator is made and destroyed.
  const bool made = traced.out.find("ncclCommInitRank: 0 ") != std::string::npos;
  const auto comms = loaded.all<trace::NcclCommRecord>();
  ASSERT_EQ(comms.size(), made ? 2u : 1u);
  EXPECT_EQ(comms[0].event, static_cast<uint8_t>(trace::NcclCommEvent::kInit));
  EXPECT_EQ(comms[0].rank, 0);
  EXPECT_EQ(comms[0].size, 1);
  EXPECT_NE(comms[0].comm_id, 0u);
  EXPECT_EQ(comms[0].comm_handle != 0, made);
}

}  // namespace
}  // namespace pipescope::inject
