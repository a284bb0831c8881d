// What the NCCL recorder's three files share (nccl_recorder.cpp: the flight recorder and the
// records; nccl_recorder_ops.cpp: operations and groups; nccl_recorder_comms.cpp: communicators):
// small helpers, errno kept around our own work, forwarding to the real call, and the lookup of
// the real function. Internal to profiler/inject.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "nccl_recorder.h"

namespace pipescope::inject::nccl::detail {

using trace::NcclCommEvent;
using trace::NcclOpType;
using trace::RecordKind;

constexpr uint8_t kNoReduceOp = 0xFF;

inline bool succeeded(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }

inline uint8_t encode_reduce_op(ncclRedOp_t op) {
  // Built-in ops are 0..4; ncclRedOpCreatePreMulSum hands out small numbers after them.
  const auto value = static_cast<int64_t>(op);
  return value >= 0 && value < kNoReduceOp ? static_cast<uint8_t>(value) : uint8_t{0xFE};
}

inline uint8_t encode_datatype(ncclDataType_t datatype) {
  const auto value = static_cast<int64_t>(datatype);
  return value >= 0 && value <= 0xFF ? static_cast<uint8_t>(value) : uint8_t{0xFF};
}

inline uint64_t handle_value(ncclComm_t comm) { return reinterpret_cast<uintptr_t>(comm); }

inline void warn_once(std::atomic<bool>& said, const char* message) {
  if (!said.exchange(true)) std::fprintf(stderr, "pipescope: %s\n", message);
}

// Keeps the caller's errno around our own work, and hands back what the real call left.
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  void before_forward() const { errno = saved_; }
  void after_forward() { saved_ = errno; }
  ~ErrnoKeeper() { errno = saved_; }

 private:
  int saved_;
};

// The real call, with errno as the caller left it going in and as the call left it coming out,
// marked as NCCL's own time so that calls NCCL makes into its API are not recorded again.
template <class Call>
ncclResult_t forward(ErrnoKeeper& errno_keeper, GroupState& group, Call&& call) {
  ++group.forwarding;
  errno_keeper.before_forward();
  const ncclResult_t result = call();
  errno_keeper.after_forward();
  --group.forwarding;
  return result;
}

}  // namespace pipescope::inject::nccl::detail

namespace pipescope::inject::nccl {

template <class Fn>
Fn NcclRecorder::real(Fn NcclFunctions::*member, const char* name) noexcept {
  const NcclFunctions* functions = library_.functions();
  if (functions == nullptr) return nullptr;  // resolve() said so
  Fn function = functions->*member;
  if (function == nullptr) [[unlikely]] {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      const detail::ErrnoKeeper errno_keeper;
      std::fprintf(stderr,
                   "pipescope: %s is not in the loaded NCCL library; the call returns ncclSystemError\n",
                   name);
    }
  }
  return function;
}

#define PIPESCOPE_REAL_OR_FAIL(member, name)                \
  const auto function = real(&NcclFunctions::member, name); \
  if (function == nullptr) return ncclSystemError
}  // namespace pipescope::inject::nccl
