#include "suite_args.h"

#include <string_view>

namespace pipescope::benches {

SuiteArgs take_suite_args(int& argc, char** argv) {
  SuiteArgs a;
  for (int i = 0; i < argc; ++i) a.command += (i > 0 ? " " : "") + std::string(argv[i]);
  int kept = argc > 0 ? 1 : 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      a.quick = true;
    } else if (arg == "--rendezvous") {
      if (i + 1 >= argc) {
        a.error = "--rendezvous needs a FILE";
      } else {
        a.rendezvous = argv[++i];
      }
    } else if (arg.rfind("--rendezvous=", 0) == 0) {
      a.rendezvous = arg.substr(std::string_view("--rendezvous=").size());
    } else {
      if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true" ||
          arg == "--benchmark_list_tests=1")
        a.list_only = true;
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return a;
}

}  // namespace pipescope::benches
