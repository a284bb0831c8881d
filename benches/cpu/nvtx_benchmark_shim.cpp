// NvtxRecorder inside a shared object, as it runs in libpipescope.so: there, every
// thread-local access goes through __tls_get_addr, which a copy linked into the benchmark's
// executable would be spared. nvtx_benchmark calls these as NVTX calls the injection.
#include <optional>

#include "nvtx_recorder.h"
#include "session.h"

namespace pi = pipescope::inject;

namespace {

struct BenchRecorder {
  BenchRecorder(pi::InjectConfig config)
      : session(std::move(config), pi::LauncherInfo{}), recorder(session) {}
  pi::Session session;
  pi::NvtxRecorder recorder;
};

pi::NvtxAttributes named(const char* name) {
  pi::NvtxAttributes attributes;
  attributes.message = pi::NvtxMessage::of(name);
  return attributes;
}

}  // namespace

#define NVTX_BENCH_EXPORT extern "C" __attribute__((visibility("default")))

// A session writing to `dir`, flushed only by nvtx_bench_flush; steps counted from
// `first_step` (capture off until then) when it is >= 0.
NVTX_BENCH_EXPORT void* nvtx_bench_open(const char* dir, long long first_step) {
  pi::InjectConfig config;
  config.output_dir = dir;
  config.flush_ms = 3'600'000;  // the flusher stays out of the timed loop
  config.compress = false;
  if (first_step >= 0) config.steps = pi::StepWindow{first_step, first_step};
  return new BenchRecorder(std::move(config));
}

NVTX_BENCH_EXPORT void nvtx_bench_close(void* bench) {
  auto* b = static_cast<BenchRecorder*>(bench);
  b->session.finish();
  delete b;
}

NVTX_BENCH_EXPORT int nvtx_bench_push(void* bench, const char* name) {
  return static_cast<BenchRecorder*>(bench)->recorder.push(nullptr, named(name));
}

NVTX_BENCH_EXPORT const void* nvtx_bench_register(void* bench, const char* name) {
  return static_cast<BenchRecorder*>(bench)->recorder.register_string(nullptr, name);
}

NVTX_BENCH_EXPORT int nvtx_bench_push_registered(void* bench, const void* name) {
  pi::NvtxAttributes attributes;
  attributes.message = pi::NvtxMessage::of(static_cast<const pi::NvtxRegisteredString*>(name));
  return static_cast<BenchRecorder*>(bench)->recorder.push(nullptr, attributes);
}

NVTX_BENCH_EXPORT int nvtx_bench_pop(void* bench) {
  return static_cast<BenchRecorder*>(bench)->recorder.pop(nullptr);
}

NVTX_BENCH_EXPORT void nvtx_bench_flush(void* bench) {
  static_cast<BenchRecorder*>(bench)->session.flush_now();
}

NVTX_BENCH_EXPORT bool nvtx_bench_capturing(void* bench) {
  return static_cast<BenchRecorder*>(bench)->session.capturing();
}
