// Handing the NCCL unique id from rank 0 to the other ranks over TCP, for torchrun jobs that name
// no rendezvous file: rank 0 listens on MASTER_PORT + 1 (torchrun's own store holds MASTER_PORT),
// the others connect to MASTER_ADDR. Pure POSIX sockets: no CUDA, no NCCL.
#pragma once

#include <string>

#include "pipescope/common/expected.h"

namespace pipescope::benches {

// Rank 0: accepts `clients` connections on `port` (all interfaces) and sends `id` to each, at
// most `timeout_s` seconds in all.
Status serve_id(int port, const std::string& id, int clients, double timeout_s);

// Other ranks: connects to host:port, retrying until rank 0 listens, and reads `id_bytes` bytes,
// at most `timeout_s` seconds in all.
Expected<std::string> fetch_id(const std::string& host, int port, size_t id_bytes, double timeout_s);

}  // namespace pipescope::benches
