// Synthetic layouts for the layout-inference tests: the communicators and p2p flows a run of a
// known layout creates (Megatron's groups, PyTorch's per-pair p2p communicators, 1F1B
// first-operation times on clocks up to 1,000 s apart), and the truth for every rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "pipescope/analysis/layout_inference.h"

namespace pipescope::analysis::synthetic {

enum class Order { kMegatron, kPipelineFastest, kRandom };

struct Spec {
  int32_t tp = 1, pp = 1, dp = 1;
  Order order = Order::kMegatron;
  bool sequence_parallel = false;      // tensor parallel: all-gather + reduce-scatter, not all-reduce
  bool distributed_optimizer = false;  // data parallel: reduce-scatter + all-gather, not all-reduce
  bool timing = true;                  // flows carry first send / recv times
  bool interleaved = false;            // the last stage sends on to the first (needs pp >= 3)
  bool forward_only = false;           // only activation flows
  bool pipeline_comms = true;          // one communicator per pipeline, else one per pair (PyTorch p2p)
  bool extra_groups = false;           // embedding, model-parallel and tensor+data groups
  bool world_comm = true;
};

struct Coordinates {
  int32_t stage, tp, dp;
};

// What a run of `spec` would leave in its traces, and the truth for every global rank.
struct SyntheticRun {
  int32_t world = 0;
  std::vector<CommunicatorTraffic> comms;
  std::vector<P2pFlow> flows;
  std::vector<Coordinates> truth;        // per global rank
  std::map<uint64_t, CommRole> role_of;  // expected role per communicator
  std::vector<int32_t> rank_of;          // Megatron index (t + tp * (d + dp * s)) -> global rank
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  uint64_t id() { return rng_(); }
  std::mt19937_64& rng() { return rng_; }

  CommunicatorTraffic comm(SyntheticRun& run, std::vector<int32_t> members, CommRole role) {
    CommunicatorTraffic c;
    c.comm_id = id();
    c.members = std::move(members);
    run.role_of[c.comm_id] = role;
    return c;
  }

  SyntheticRun build(const Spec& spec) {
    SyntheticRun run;
    run.world = spec.tp * spec.pp * spec.dp;
    const auto world = static_cast<size_t>(run.world);
    run.rank_of.resize(world);
    std::vector<int32_t> perm(world);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng_);
    for (int32_t s = 0; s < spec.pp; ++s) {
      for (int32_t d = 0; d < spec.dp; ++d) {
        for (int32_t t = 0; t < spec.tp; ++t) {
          const int32_t megatron = t + spec.tp * (d + spec.dp * s);
          int32_t rank = megatron;
          if (spec.order == Order::kPipelineFastest) rank = s + spec.pp * (t + spec.tp * d);
          if (spec.order == Order::kRandom) rank = perm[static_cast<size_t>(megatron)];
          run.rank_of[static_cast<size_t>(megatron)] = rank;
        }
      }
    }
    auto at = [&](int32_t s, int32_t t, int32_t d) {
      return run.rank_of[static_cast<size_t>(t + spec.tp * (d + spec.dp * s))];
    };
    run.truth.resize(world);
    for (int32_t s = 0; s < spec.pp; ++s)
      for (int32_t d = 0; d < spec.dp; ++d)
        for (int32_t t = 0; t < spec.tp; ++t) run.truth[static_cast<size_t>(at(s, t, d))] = {s, t, d};

    // Bytes per member: tensor parallel moves activations every layer of every micro-batch,
    // data parallel the gradients once per step, so TP carries ten times more here.
    constexpr uint64_t kTensorBytes = 1'000'000'000, kDataBytes = 100'000'000, kSmallBytes = 4096;
    for (int32_t s = 0; s < spec.pp; ++s) {
      for (int32_t d = 0; d < spec.dp && spec.tp > 1; ++d) {
        std::vector<int32_t> m;
        for (int32_t t = 0; t < spec.tp; ++t) m.push_back(at(s, t, d));
        auto c = comm(run, m, CommRole::kTensor);
        const uint64_t total = kTensorBytes * static_cast<uint64_t>(spec.tp);
        if (spec.sequence_parallel) {
          c.all_gather_bytes = c.reduce_scatter_bytes = total / 2;
        } else {
          c.all_reduce_bytes = total;
        }
        c.collective_calls = 4000;
        run.comms.push_back(c);
      }
      for (int32_t t = 0; t < spec.tp && spec.dp > 1; ++t) {
        std::vector<int32_t> m;
        for (int32_t d = 0; d < spec.dp; ++d) m.push_back(at(s, t, d));
        auto c = comm(run, m, spec.pp == 1 && spec.tp == 1 ? CommRole::kWorld : CommRole::kData);
        const uint64_t total = kDataBytes * static_cast<uint64_t>(spec.dp);
        if (spec.distributed_optimizer) {
          c.reduce_scatter_bytes = c.all_gather_bytes = total / 2;
        } else {
          c.all_reduce_bytes = total;
        }
        c.collective_calls = 40;
        run.comms.push_back(c);
      }
    }
    if (spec.pp > 1) add_pipeline(spec, run, at);
    if (spec.extra_groups) {
      for (int32_t d = 0; d < spec.dp && spec.pp > 2; ++d) {
        for (int32_t t = 0; t < spec.tp; ++t) {  // tied embeddings: first and last stage
          auto c = comm(run, {at(0, t, d), at(spec.pp - 1, t, d)}, CommRole::kOther);
          c.all_reduce_bytes = kSmallBytes;
          c.collective_calls = 1;
          run.comms.push_back(c);
        }
      }
      for (int32_t d = 0; d < spec.dp && spec.tp > 1 && spec.pp > 1; ++d) {  // model parallel
        std::vector<int32_t> m;
        for (int32_t s = 0; s < spec.pp; ++s)
          for (int32_t t = 0; t < spec.tp; ++t) m.push_back(at(s, t, d));
        auto c =
            comm(run, m, m.size() == static_cast<size_t>(run.world) ? CommRole::kWorld : CommRole::kOther);
        c.all_reduce_bytes = kSmallBytes;
        c.collective_calls = 1;
        run.comms.push_back(c);
      }
      for (int32_t s = 0; s < spec.pp && spec.tp > 1 && spec.dp > 1; ++s) {  // tensor + data
        std::vector<int32_t> m;
        for (int32_t d = 0; d < spec.dp; ++d)
          for (int32_t t = 0; t < spec.tp; ++t) m.push_back(at(s, t, d));
        auto c = comm(run, m, spec.pp == 1 ? CommRole::kWorld : CommRole::kOther);
        c.all_reduce_bytes = kSmallBytes;
        c.collective_calls = 1;
        run.comms.push_back(c);
      }
    }
    if (spec.world_comm) {
      std::vector<int32_t> m(world);
      std::iota(m.begin(), m.end(), 0);
      auto c = comm(run, m, CommRole::kWorld);
      c.all_reduce_bytes = kSmallBytes * world;  // the start-up barrier
      c.collective_calls = world;
      run.comms.push_back(c);
    }
    std::shuffle(run.comms.begin(), run.comms.end(), rng_);
    std::shuffle(run.flows.begin(), run.flows.end(), rng_);
    return run;
  }

 private:
  // 1F1B times on each rank's own clock (F forward, B backward of one micro-batch): stage s
  // receives its first input at s*F and sends it on at (s+1)*F; the last stage sends the first
  // gradient at pp*F + B; stage s receives it at (2*pp - s)*F and sends it on B later.
  template <class At>
  void add_pipeline(const Spec& spec, SyntheticRun& run, At at) {
    constexpr int64_t F = 10'000'000, B = 20'000'000;
    constexpr uint64_t kActivationBytes = 50'000'000;
    const int32_t pp = spec.pp;
    std::vector<int64_t> clock(static_cast<size_t>(run.world));
    for (auto& c : clock) c = static_cast<int64_t>(rng_() % 1'000'000'000'000ULL);  // up to 1,000 s apart
    auto recv_backward = [&](int32_t s) { return (2 * pp - s) * F; };
    auto send_backward = [&](int32_t s) { return s == pp - 1 ? pp * F + B : recv_backward(s) + B; };
    auto flow = [&](int32_t a, int32_t b, int64_t send_ns, int64_t recv_ns) {
      P2pFlow f{a, b, kActivationBytes * 16, 16, -1, -1};
      if (spec.timing) {
        f.first_send_ns = clock[static_cast<size_t>(a)] + send_ns;
        f.first_recv_ns = clock[static_cast<size_t>(b)] + recv_ns;
      }
      run.flows.push_back(f);
    };
    for (int32_t d = 0; d < spec.dp; ++d) {
      for (int32_t t = 0; t < spec.tp; ++t) {
        for (int32_t s = 0; s + 1 < pp; ++s) {
          flow(at(s, t, d), at(s + 1, t, d), (s + 1) * F, (s + 1) * F);
          if (!spec.forward_only) flow(at(s + 1, t, d), at(s, t, d), send_backward(s + 1), recv_backward(s));
          if (!spec.pipeline_comms) {
            auto c = comm(run, {at(s, t, d), at(s + 1, t, d)}, CommRole::kPipeline);
            c.p2p_bytes = kActivationBytes * 64;
            c.p2p_calls = 64;
            run.comms.push_back(c);
          }
        }
        if (spec.interleaved) {  // the next model chunk: last stage -> first stage
          flow(at(pp - 1, t, d), at(0, t, d), pp * F, pp * F);
          if (!spec.forward_only) flow(at(0, t, d), at(pp - 1, t, d), 4 * pp * F, 4 * pp * F);
        }
        if (spec.pipeline_comms) {
          std::vector<int32_t> m;
          for (int32_t s = 0; s < pp; ++s) m.push_back(at(s, t, d));
          auto c = comm(run, m,
                        m.size() == static_cast<size_t>(run.world) ? CommRole::kWorld : CommRole::kPipeline);
          c.p2p_bytes = kActivationBytes * 64 * static_cast<uint64_t>(pp);
          c.p2p_calls = 64 * static_cast<uint64_t>(pp);
          run.comms.push_back(c);
        }
      }
    }
  }

  std::mt19937_64 rng_;
};

// Hierarchical ZeRO as in InternEvo v2: 2,048 ranks, parameters sharded in groups of 64.
struct ZeroRun {
  std::vector<CommunicatorTraffic> comms;
  std::vector<std::vector<int32_t>> shard_groups;  // members in NCCL order
  std::map<uint64_t, CommRole> role_of;
};

ZeroRun hierarchical_zero(uint64_t seed, bool shuffle_ranks, bool world_reduces) {
  constexpr int32_t kWorld = 2048, kShard = 64, kGroups = kWorld / kShard;
  std::mt19937_64 rng(seed);
  std::vector<int32_t> perm(kWorld);
  std::iota(perm.begin(), perm.end(), 0);
  if (shuffle_ranks) std::shuffle(perm.begin(), perm.end(), rng);
  ZeroRun run;
  for (int32_t g = 0; g < kGroups; ++g) {  // parameter all-gathers within each shard group
    CommunicatorTraffic c{.comm_id = rng(), .members = {}};
    for (int32_t i = 0; i < kShard; ++i) c.members.push_back(perm[static_cast<size_t>(g * kShard + i)]);
    c.all_gather_bytes = 2'000'000'000ULL * kShard;
    c.collective_calls = 500;
    run.role_of[c.comm_id] = CommRole::kShard;
    run.shard_groups.push_back(c.members);
    run.comms.push_back(c);
  }
  if (world_reduces) {  // gradients reduce-scattered over every rank
    CommunicatorTraffic c{.comm_id = rng(), .members = std::vector<int32_t>(perm.begin(), perm.end())};
    c.reduce_scatter_bytes = 500'000'000ULL * kWorld;
    c.collective_calls = 100;
    run.role_of[c.comm_id] = CommRole::kWorld;
    run.comms.push_back(c);
  } else {  // gradients all-reduced across the shard groups
    for (int32_t i = 0; i < kShard; ++i) {
      CommunicatorTraffic c{.comm_id = rng(), .members = {}};
      for (int32_t g = 0; g < kGroups; ++g) c.members.push_back(perm[static_cast<size_t>(g * kShard + i)]);
      c.all_reduce_bytes = 30'000'000ULL * kGroups;
      c.collective_calls = 100;
      run.role_of[c.comm_id] = CommRole::kData;
      run.comms.push_back(c);
    }
  }
  std::shuffle(run.comms.begin(), run.comms.end(), rng);
  return run;
}

}  // namespace pipescope::analysis::synthetic
