#include "synthetic_results.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace pipescope::calibrate::testing {
namespace {

using nlohmann::json;

json entry(const std::string& name, double seconds, json counters = json::object()) {
  json e = {{"name", name + "/manual_time"},
            {"run_name", name + "/manual_time"},
            {"run_type", "iteration"},
            {"iterations", 100},
            {"real_time", seconds * 1e6},
            {"cpu_time", seconds * 1e6},
            {"time_unit", "us"}};
  e.update(counters);
  return e;
}

}  // namespace

std::string synthetic_results_json(const SyntheticGpu& gpu) {
  json list = json::array();
  // GEMM: efficiency grows with each dimension up to gpu.gemm_efficiency at 8192.
  for (int64_t m : {1024, 8192}) {
    for (int64_t n : {1024, 8192}) {
      for (int64_t k : {1024, 8192}) {
        const double e = gpu.gemm_efficiency * (1 - 0.1 * ((m < 8192) + (n < 8192) + (k < 8192)));
        const double flops = 2.0 * m * n * k;
        list.push_back(
            entry("gemm/bf16/m:" + std::to_string(m) + "/n:" + std::to_string(n) + "/k:" + std::to_string(k),
                  flops / (e * gpu.peak_bf16_flops_per_s), {{"flops", flops}}));
      }
    }
  }
  for (int64_t seq : {2048, 4096, 8192}) {
    for (bool backward : {false, true}) {
      if (backward && !gpu.attention_backward) continue;
      const double flops = 4.0 * 2 * seq * seq * 128 * 32 / 2 * (backward ? 2.5 : 1);
      const double e = gpu.attention_efficiency * (backward ? 0.8 : 1.0) * (seq == 2048 ? 0.9 : 1.0);
      list.push_back(entry(std::string("attention/") + (backward ? "backward" : "forward") +
                               "/batch:2/heads:32/seq:" + std::to_string(seq) + "/head_dim:128/causal:1",
                           flops / (e * gpu.peak_bf16_flops_per_s),
                           {{"flops", flops}, {"label", "torch sdpa flash"}}));
    }
  }
  for (double bytes = 1 << 20; bytes <= (1 << 30); bytes *= 4) {
    for (const char* variant : {"copy", "scale", "add", "norm"}) {
      list.push_back(
          entry(std::string("hbm/") + variant + "/bytes:" + std::to_string(static_cast<int64_t>(bytes)),
                2e-6 + 2 * bytes / gpu.hbm_bytes_per_s, {{"bytes", 2 * bytes}}));
    }
    list.push_back(entry("memcpy/h2d/bytes:" + std::to_string(static_cast<int64_t>(bytes)),
                         8e-6 + bytes / gpu.h2d_bytes_per_s, {{"bytes", bytes}}));
  }
  for (double bytes = 1 << 16; bytes <= (1 << 30); bytes *= 4) {
    const double seconds = gpu.all_reduce_latency_s + bytes * 2 * 7 / 8 / gpu.all_reduce_busbw;
    list.push_back(entry("nccl/all_reduce/ranks:8/bytes:" + std::to_string(static_cast<int64_t>(bytes)),
                         seconds,
                         {{"bytes", bytes},
                          {"ranks", 8},
                          {"nodes", 1},
                          {"algbw", bytes / seconds},
                          {"busbw", bytes / seconds * 1.75}}));
  }
  if (gpu.every_collective) {
    for (const char* kind : {"all_gather", "reduce_scatter", "send_recv", "all_to_all"}) {
      const double factor = std::string(kind) == "send_recv" ? 1.0 : 7.0 / 8;
      for (double bytes = 1 << 16; bytes <= (1 << 30); bytes *= 4) {
        const double seconds = 25e-6 + bytes * factor / 300e9;
        list.push_back(entry(
            std::string("nccl/") + kind + "/ranks:8/bytes:" + std::to_string(static_cast<int64_t>(bytes)),
            seconds, {{"bytes", bytes}, {"ranks", 8}, {"nodes", 1}}));
      }
    }
  }
  json doc = {{"context",
               {{"date", "2026-11-22T10:00:00+00:00"},
                {"host_name", "gpu-node-1"},
                {"pipescope_suite", "gpu"},
                {"gpu_name", gpu.gpu_name},
                {"sm_count", "132"},
                {"driver_version", "580.65.06"},
                {"cuda_runtime_version", "13.0"},
                {"cuda_context_bytes", "536870912"}}},
              {"benchmarks", list}};
  if (gpu.every_collective) {
    doc["context"]["ranks"] = "8";
    doc["context"]["nccl_buffer_bytes_per_communicator"] = "805306368";
  }
  return doc.dump(1);
}

}  // namespace pipescope::calibrate::testing
