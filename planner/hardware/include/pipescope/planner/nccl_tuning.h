// NCCL's own model of what a collective costs across nodes, by algorithm and protocol, as NCCL
// 2.30.7 computes it to choose one (src/graph/tuning.cc: ncclTopoTuneModel for the latencies and
// bandwidth ratios, ncclTopoGetAlgoTime for the time and the tree's size correction). A ring's
// latency grows with its steps: 2(n - 1) for an all-reduce over n ranks, each an NVLink hop or a
// network hop; a tree's with log2 of the nodes. One latency per collective, as a profile measured
// on a few nodes states it, cannot say what 1,024 ranks pay.
//
// The bandwidth side stays the calibration profile's: its bus bandwidth is the ring's with NCCL's
// Simple protocol (what nccl-tests measures on large buffers), and the other choices are priced
// at NCCL's ratios to it. Modelled: ring (all-reduce, all-gather, reduce-scatter) and tree
// (all-reduce) with LL, LL128 and Simple, on nodes whose GPUs talk over NVLink, with an x86 host
// (NCCL's net overhead for Intel CPUs) and a network plugin that reports no latency of its own.
// Not modelled: NVLS and NVLS-tree (NVSwitch multicast, Hopper and later), CollNet, PAT, the
// per-channel bandwidth caps (they need NCCL's channel count) and the ring's latency plateau.
#pragma once

#include <string_view>

#include "pipescope/planner/collective_model.h"

namespace pipescope::planner {

enum class NcclAlgorithm { kRing, kTree };
enum class NcclProtocol { kLL, kLL128, kSimple };
std::string_view nccl_algorithm_name(NcclAlgorithm algorithm);  // "ring", "tree"
std::string_view nccl_protocol_name(NcclProtocol protocol);     // "LL", "LL128", "Simple"

// A communicator spread evenly over `nodes` nodes (ranks / nodes members on each).
struct NcclGroupShape {
  int ranks = 0;
  int nodes = 0;
  bool operator==(const NcclGroupShape&) const = default;
};

// Whether the tuning model prices `kind` over `shape`: all-reduce, all-gather and reduce-scatter
// over more than one node, ranks a multiple of the nodes. Everything else keeps the profile's
// single latency.
bool nccl_tuning_applies(CollectiveKind kind, NcclGroupShape shape);

// One algorithm and protocol as NCCL prices it.
struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_s = 0;   // NCCL's base and per-step latencies over the group
  double transfer_s = 0;  // the bytes at this choice's bandwidth
  double time_s() const { return latency_s + transfer_s; }
};

// The choice NCCL's model finds fastest for `bytes` (nccl-tests' size: the buffer of an
// all-reduce, the gathered buffer of an all-gather) when the ring with Simple reaches
// `ring_bus_bytes_per_s` of bus bandwidth (nccl-tests' convention). `latency_offset_s` is added to
// every choice's latency (what the profile's own measurement shows beyond NCCL's model).
// Requires nccl_tuning_applies(kind, shape) and a positive bandwidth.
NcclChoice nccl_fastest_choice(CollectiveKind kind, double bytes, NcclGroupShape shape,
                               double ring_bus_bytes_per_s, double latency_offset_s);

// The least latency of any choice over `shape`: what a small buffer's time measures.
double nccl_least_latency_s(CollectiveKind kind, NcclGroupShape shape);

}  // namespace pipescope::planner
