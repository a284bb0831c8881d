// The NCCL ranks program with libnccl.so.2 as an ordinary dependency (see nccl_ranks.h).
#include "nccl_ranks.h"

int main(int argc, char** argv) { return pipescope::test_programs::nccl_ranks_main(argc, argv); }
