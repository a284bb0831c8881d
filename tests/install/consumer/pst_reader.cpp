// Prints how many records a .pst trace holds and whether it was closed cleanly.
#include <cstdint>
#include <cstdio>

#include "pipescope/trace/trace_summary.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pst_reader FILE.pst\n");
    return 2;
  }
  auto summary = pipescope::trace::summarize_trace_file(argv[1]);
  if (!summary.ok()) {
    std::fprintf(stderr, "pst_reader: %s\n", summary.error().message.c_str());
    return 1;
  }
  uint64_t records = 0;
  for (uint64_t n : summary->records_by_kind) records += n;
  std::printf("records %llu, closed %s\n", static_cast<unsigned long long>(records),
              summary->end ? "yes" : "no");
  return 0;
}
