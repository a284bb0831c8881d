#include "suite_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipescope::benches {
namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    for (std::string& s : strings) pointers.push_back(s.data());
    argc = static_cast<int>(pointers.size());
  }
  std::vector<std::string> rest() const { return {pointers.begin(), pointers.begin() + argc}; }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  int argc = 0;
};

TEST(SuiteArgs, TakesItsOwnFlagsAndLeavesGoogleBenchmarksOnes) {
  Argv a({"nccl_benchmark", "--quick", "--rendezvous", "/tmp/id", "--benchmark_out=x.json"});
  const SuiteArgs s = take_suite_args(a.argc, a.pointers.data());
  EXPECT_TRUE(s.quick);
  EXPECT_EQ(s.rendezvous, "/tmp/id");
  EXPECT_FALSE(s.list_only);
  EXPECT_EQ(s.command, "nccl_benchmark --quick --rendezvous /tmp/id --benchmark_out=x.json");
  EXPECT_EQ(a.rest(), (std::vector<std::string>{"nccl_benchmark", "--benchmark_out=x.json"}));
}

TEST(SuiteArgs, RendezvousWithAnEqualsSignAndAListing) {
  Argv a({"nccl_benchmark", "--rendezvous=/shared/id", "--benchmark_list_tests=true"});
  const SuiteArgs s = take_suite_args(a.argc, a.pointers.data());
  EXPECT_FALSE(s.quick);
  EXPECT_EQ(s.rendezvous, "/shared/id");
  EXPECT_TRUE(s.list_only);
  EXPECT_EQ(a.rest(), (std::vector<std::string>{"nccl_benchmark", "--benchmark_list_tests=true"}));
}

TEST(SuiteArgs, RendezvousWithoutAFileIsAnError) {
  Argv a({"nccl_benchmark", "--rendezvous"});
  EXPECT_EQ(take_suite_args(a.argc, a.pointers.data()).error, "--rendezvous needs a FILE");
}

}  // namespace
}  // namespace pipescope::benches
