// A miniature 3D-parallel training step over NCCL, one process per rank, for the no-GPU tests
// of the NCCL interposer. It is built twice: linked into nccl_ranks_program (libnccl.so.2 a
// normal dependency), and into nccl_ranks_module.so, which nccl_ranks_dlopen_program opens
// with RTLD_LOCAL the way Python opens torch's extension modules.
//
//   nccl_ranks_program --id-dir DIR [--nvtx] [--steps N] [--tp T] [--pp P] [--call-log FILE]
//                      [--straggler R:MS] [--hang R:STEP] [--hang-p2p R:STEP] [--zero K]
//                      [--no-comms R] [--desync R:STEP] [--p2p-size R:STEP] [--exit|--abort R:STEP]
//
// Reads RANK, WORLD_SIZE and LOCAL_RANK as torchrun sets them. Rank 0 makes the unique id and
// hands it over in DIR/nccl-id; everyone builds the world communicator and splits it, in this
// order, into TP (split 0), PP (split 1), a "first stage" communicator that only pipeline stage
// 0 joins (split 2; everyone else passes NCCL_SPLIT_NOCOLOR) and DP (split 3). Megatron's rank
// order: rank = tp_rank + T * (dp_rank + D * pp_rank). Per step, on every member, as Megatron
// calls them (tensor parallel in every layer, data parallel once a step):
//   TP:    4 x ncclAllReduce 1024 float sum in forward (2 layers: attention, MLP), 4 in backward
//   PP:    group { to next stage: send 2048 bf16, recv 1024 bf16 } and
//          group { from previous stage: recv 2048 bf16, send 1024 bf16 }, then ungrouped:
//          send 128 float to the next stage / recv 128 float from the previous one
//   DP:    ncclAllReduce 4096 float sum, ncclAllGather 512 bf16, ncclReduceScatter 256 float sum
//   stage: ncclAllReduce 32 float max (stage 0 only)
//   world: ncclBroadcast 64 int32 root 0, ncclAlltoAll 16 int32
// Every call uses stream (cudaStream_t)(0x5000 + LOCAL_RANK). Then the world communicator is
// finalized and all are destroyed, one line is printed:
//   rank R/W local L: world r/s tp r/s pp r/s dp r/s stage r/s|none device D nccl V
// and the program exits 0 (1 when an NCCL call failed, 2 on bad usage).
//
// --nvtx wraps each step in NVTX ranges: push "train_step" { push "forward" { TP, PP groups }
// pop; push "backward" { TP, ungrouped p2p, DP, stage } pop; world } pop.
// --call-log FILE writes each NCCL call as the fake library's call log would (call_text.h).
// --straggler R:MS: rank R sleeps MS ms before every data-parallel ncclAllReduce. --hang R:STEP:
// rank R stops before step STEP's data-parallel ncclAllReduce and ends by SIGTERM after twice
// FAKE_NCCL_TIMEOUT_MS. Under FAKE_NCCL_WAIT=1 the others wait for it (and time out).
// --hang-p2p R:STEP: the same, but before step STEP's pipeline exchange (its neighbour stage
// then waits in a send/receive group).
// --no-comms R: rank R stops before it creates any communicator (the others block in creation).
// --desync R:STEP: rank R's data-parallel ncclAllReduce of step STEP has 2048 elements, not 4096.
// --p2p-size R:STEP: rank R's ungrouped send to the next stage at step STEP has 64, not 128.
// --exit R:STEP / --abort R:STEP: rank R calls exit(3) / abort() before step STEP's
// data-parallel ncclAllReduce. With FAKE_NCCL_TIMEOUT_MS=0 nothing times out, as in real NCCL:
// --hang and --no-comms ranks then sleep until the job is ended from outside.
// --zero K: hierarchical ZeRO instead (no tp/pp): world split into shard groups of K consecutive
// ranks and replica groups (equal rank % K); per step on the shard group 2 ncclAllGather 8192
// bf16 in "forward", 2 more and a ncclReduceScatter 1024 float in "backward", then ncclAllReduce
// 1024 float on the replica group (where --straggler and --hang act); prints
//   rank R/W: shard r/s replica r/s
#pragma once

namespace pipescope::test_programs {

int nccl_ranks_main(int argc, char** argv);

}  // namespace pipescope::test_programs
