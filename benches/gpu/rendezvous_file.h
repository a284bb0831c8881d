// Handing the NCCL unique id from rank 0 to the other ranks through a file every rank can read
// (a shared file system across nodes, /tmp on one node). Pure POSIX: no CUDA, no NCCL.
#pragma once

#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::benches {

// Rank 0: writes `id` (opaque bytes) for a job of `world_size` ranks to `path`, atomically (a
// temporary file beside it, then rename), so that a reader never sees half an id.
Status publish_id_file(const std::string& path, const std::string& id, int world_size);

// Other ranks: waits until `path` holds an id for `world_size` ranks, polling, at most
// `timeout_s` seconds. A file written for another world size is taken for a leftover of an
// earlier job and waited past; at the timeout the error says what was found.
Expected<std::string> wait_for_id_file(const std::string& path, int world_size, double timeout_s);

}  // namespace pipescope::benches
