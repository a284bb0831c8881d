#include "pipescope/planner/nccl_tuning.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

namespace pipescope::planner {
namespace {

// NCCL 2.30.7, src/graph/tuning.cc (ncclTunerConstantsDefaults and ncclTopoTuneModel), in
// microseconds and GB/s; indexed [protocol] in the order LL, LL128, Simple.
using PerProtocol = std::array<double, 3>;
constexpr PerProtocol kBaseLatencyRingUs = {6.6, 14.0, 8.4};
constexpr PerProtocol kBaseLatencyTreeUs = {6.8, 14.0, 8.4};
constexpr PerProtocol kNvlinkHopRingUs = {0.6, 1.9, 3.4};
constexpr PerProtocol kNvlinkHopTreeUs = {0.6, 1.25, 4.0};
constexpr PerProtocol kNetworkHopRingUs = {2.7, 4.0, 14.0};
constexpr PerProtocol kNetworkHopTreeUs = {5.0, 8.5, 14.0};
// What posting a network operation costs an x86 Intel host (getNetOverhead), three times over with
// Simple; a ring's NVLink hops on a multi-node ring take at least this long.
constexpr double kNetOverheadUs = 1.0;
// LL's bandwidth ceiling across nodes on an Intel host (llMaxBws: two nodes, more than two).
constexpr double kLlMaxTwoNodesGBps = 39.0;
constexpr double kLlMaxManyNodesGBps = 20.4;
// Bandwidth ratios to the channel bandwidth: LL carries 8 bytes of data per 16, LL128 120 per 128
// (NCCL takes 0.92 for the ring), the tree's all-reduce 0.92 of it and LL 1 / 3.8 on a tree.
constexpr double kRingLlShare = 0.5;
constexpr double kRingLl128Share = 0.92;
constexpr double kTreeAllReduceShare = 0.92;
constexpr double kTreeLlShare = 1.0 / 3.8;
constexpr double kTreeLl128ShareAcrossNodes = 120.0 / 128.0;
// The tree's measured departure from its model for medium sizes (ncclTopoGetAlgoTime,
// treeCorrectionFactor): by protocol, for buffers of 64 B x 2^i.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};
constexpr std::array<NcclProtocol, 3> kProtocols = {NcclProtocol::kLL, NcclProtocol::kLL128,
                                                    NcclProtocol::kSimple};

int floor_log2(int64_t value) {
  int log = -1;
  for (; value > 0; value >>= 1) ++log;
  return log;
}

size_t index_of(NcclProtocol p) { return static_cast<size_t>(p); }

double ring_latency_us(CollectiveKind kind, NcclGroupShape shape, NcclProtocol p) {
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  const int steps = all_reduce ? 2 * (shape.ranks - 1) : shape.ranks - 1;
  const int network_steps = all_reduce ? 2 * (shape.nodes - 1) : shape.nodes - 1;
  const double overhead = p == NcclProtocol::kSimple ? 3 * kNetOverheadUs : kNetOverheadUs;
  const double nvlink_hop = std::max(kNvlinkHopRingUs[index_of(p)], overhead);
  // One GPU per node: every hop crosses the network, and NCCL takes the tree's network latency.
  const bool one_per_node = shape.ranks == shape.nodes;
  const double network_hop = one_per_node ? kNetworkHopTreeUs[index_of(p)] : kNetworkHopRingUs[index_of(p)];
  return kBaseLatencyRingUs[index_of(p)] + (steps - network_steps) * nvlink_hop + network_steps * network_hop;
}

double tree_latency_us(NcclGroupShape shape, NcclProtocol p) {
  const int per_node = shape.ranks / shape.nodes;
  return kBaseLatencyTreeUs[index_of(p)] + 2 * ((per_node - 1) * kNvlinkHopTreeUs[index_of(p)] +
                                                floor_log2(shape.nodes) * kNetworkHopTreeUs[index_of(p)]);
}

double ll_max_bytes_per_s(NcclGroupShape shape) {
  return (shape.nodes <= 2 ? kLlMaxTwoNodesGBps : kLlMaxManyNodesGBps) * 1e9;
}

// The ring's algorithm bandwidth (bytes of the buffer per second) with protocol `p`.
double ring_bytes_per_s(CollectiveKind kind, NcclGroupShape shape, NcclProtocol p, double bus_bytes_per_s) {
  double bus = bus_bytes_per_s;
  if (p == NcclProtocol::kLL) bus = std::min(ll_max_bytes_per_s(shape), bus * kRingLlShare);
  if (p == NcclProtocol::kLL128) bus *= kRingLl128Share;
  return bus / bus_bandwidth_factor(kind, shape.ranks);
}

// The tree's all-reduce bandwidth for a buffer of `bytes`. NCCL gives the tree half the channel
// bandwidth as algorithm bandwidth; the channel bandwidth is the ring's bus bandwidth.
double tree_bytes_per_s(double bytes, NcclGroupShape shape, NcclProtocol p, double bus_bytes_per_s) {
  double bus = bus_bytes_per_s * kTreeAllReduceShare;
  if (p == NcclProtocol::kLL) bus = std::min(ll_max_bytes_per_s(shape), bus * kTreeLlShare);
  if (p == NcclProtocol::kLL128) bus *= kTreeLl128ShareAcrossNodes;
  const int size_class = floor_log2(static_cast<int64_t>(bytes) >> 6);
  if (size_class >= 0 && size_class < static_cast<int>(kTreeCorrection[0].size()))
    bus *= kTreeCorrection[index_of(p)][static_cast<size_t>(size_class)];
  return bus * 0.5;
}

}  // namespace

std::string_view nccl_algorithm_name(NcclAlgorithm algorithm) {
  return algorithm == NcclAlgorithm::kRing ? "ring" : "tree";
}

std::string_view nccl_protocol_name(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL: return "LL";
    case NcclProtocol::kLL128: return "LL128";
    case NcclProtocol::kSimple: return "Simple";
  }
  return "?";
}

bool nccl_tuning_applies(CollectiveKind kind, NcclGroupShape shape) {
  const bool modelled = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
                        kind == CollectiveKind::kReduceScatter;
  return modelled && shape.nodes > 1 && shape.ranks >= shape.nodes && shape.ranks % shape.nodes == 0;
}

NcclChoice nccl_fastest_choice(CollectiveKind kind, double bytes, NcclGroupShape shape,
                               double ring_bus_bytes_per_s, double latency_offset_s) {
  assert(nccl_tuning_applies(kind, shape) && ring_bus_bytes_per_s > 0);
  NcclChoice best;
  bool first = true;
  const auto consider = [&](NcclAlgorithm algorithm, NcclProtocol protocol, double latency_us,
                            double bytes_per_s) {
    NcclChoice c{algorithm, protocol, latency_us * 1e-6 + latency_offset_s, bytes / bytes_per_s};
    if (first || c.time_s() < best.time_s()) best = c;
    first = false;
  };
  for (NcclProtocol p : kProtocols) {
    consider(NcclAlgorithm::kRing, p, ring_latency_us(kind, shape, p),
             ring_bytes_per_s(kind, shape, p, ring_bus_bytes_per_s));
    if (kind == CollectiveKind::kAllReduce)
      consider(NcclAlgorithm::kTree, p, tree_latency_us(shape, p),
               tree_bytes_per_s(bytes, shape, p, ring_bus_bytes_per_s));
  }
  return best;
}

double nccl_least_latency_s(CollectiveKind kind, NcclGroupShape shape) {
  assert(nccl_tuning_applies(kind, shape));
  double least_us = ring_latency_us(kind, shape, NcclProtocol::kLL);
  for (NcclProtocol p : kProtocols) {
    least_us = std::min(least_us, ring_latency_us(kind, shape, p));
    if (kind == CollectiveKind::kAllReduce) least_us = std::min(least_us, tree_latency_us(shape, p));
  }
  return least_us * 1e-6;
}

}  // namespace pipescope::planner
