// Writes the fuzzer's seed corpus: small valid traces that reach every chunk type and record
// kind, compressed and not, plus a truncated one, so that fuzzing starts deep in the format.
#include <cstdio>
#include <filesystem>
#include <string>

#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_writer.h"

using namespace pipescope::trace;

namespace {

bool write_seed(const std::string& path, bool compress, int rounds) {
  WriterOptions options;
  options.host = "seed-host";
  options.pid = 4242;
  options.compress = compress;
  options.thread_buffer_bytes = 64 << 10;
  options.max_chunk_bytes = 64 << 10;
  auto writer = TraceWriter::create(path, options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.error().message.c_str());
    return false;
  }
  ProcessInfo info;
  info.rank = 3;
  info.world_size = 8;
  info.local_rank = 3;
  info.run_id = "seed-run";
  info.launcher = "torchrun";
  info.devices.push_back(DeviceInfo{0, {}, 0, 0x18, 0, 80ull << 30, "seed GPU"});
  (void)(*writer)->write_process_info(info);
  ThreadBuffer* buffer = (*writer)->register_thread();
  const uint32_t kernel_name = (*writer)->intern("ampere_bf16_gemm");
  const uint32_t range_name = (*writer)->intern("forward");
  for (int i = 0; i < rounds; ++i) {
    auto k = make_record<KernelRecord>();
    k.start_ns = 1000 + i;
    k.end_ns = 2000 + i;
    k.name_id = kernel_name;
    buffer->append(k);
    buffer->append(make_record<MemcpyRecord>());
    buffer->append(make_record<MemsetRecord>());
    buffer->append(make_record<MemoryRecord>());
    buffer->append(make_record<SyncRecord>());
    buffer->append(make_record<ApiRecord>());
    auto op = make_record<NcclOpRecord>();
    op.sequence = static_cast<uint64_t>(i);
    buffer->append(op);
    buffer->append(make_record<NcclCommRecord>());
    auto nvtx = make_record<NvtxRecord>();
    nvtx.name_id = range_name;
    buffer->append(nvtx);
    buffer->append(make_record<OverheadRecord>());
    buffer->append(make_record<NoticeRecord>());
    // A call in flight and, for every other one, its return (the flight recorder's pair).
    auto call = make_record<NcclCallRecord>();
    call.call_kind =
        static_cast<uint8_t>(i % 2 == 0 ? NcclCallKind::kOperation : NcclCallKind::kCommunicator);
    call.what = 1;
    call.state = static_cast<uint8_t>(NcclCallState::kInFlight);
    call.sequence = static_cast<uint64_t>(i);
    call.call_serial = static_cast<uint32_t>(i + 1);
    call.size = 8;
    buffer->append(call);
    if (i % 2 == 1) {
      call.state = static_cast<uint8_t>(NcclCallState::kReturned);
      call.result = 2;
      buffer->append(call);
    }
    auto ending = make_record<NoticeRecord>();
    ending.code = static_cast<uint16_t>(i % 2 == 0 ? NoticeCode::kProcessSignal : NoticeCode::kProcessExit);
    ending.count = 6;
    buffer->append(ending);
    if (i % 4 == 3) (void)(*writer)->flush();
  }
  return (*writer)->close().ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path dir = argv[1];
  fs::remove_all(dir);
  fs::create_directories(dir);
  const bool ok = write_seed(dir / "plain.pst", false, 8) && write_seed(dir / "zstd.pst", true, 8) &&
                  write_seed(dir / "tiny.pst", false, 1);
  if (!ok) return 1;
  // A copy cut inside its last chunk, as a killed writer leaves it.
  fs::copy_file(dir / "plain.pst", dir / "truncated.pst");
  fs::resize_file(dir / "truncated.pst", fs::file_size(dir / "plain.pst") - 13);
  return 0;
}
