// What kind of work a GPU kernel does, from its (demangled) name: gemm, attention, embedding,
// elementwise (memory-bound: elementwise, reductions, norms, copies inside kernels), nccl, or
// other. Copies and memsets are the report's `copy` category, from their own records.
#pragma once

#include <string>
#include <string_view>

namespace pipescope::analysis {

// The kernel's own name out of a demangled signature: no return type, parameters, template
// arguments or namespaces ("void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
// "vectorized_elementwise_kernel"). A generic wrapper (cutlass::Kernel<Op>, device_kernel<Op>)
// is named by what it wraps ("cutlass::Kernel2<cutlass_80_..._gemm_...>" -> its argument's name).
std::string kernel_base_name(std::string_view signature);

// Matched on the base name, first rule that applies: nccl (ncclKernel*, ncclDevKernel*),
// attention (flash, fmha, attention, attn, sdpa, softmax), embedding (embedding, embedding
// bags), gemm (gemm, gemv, cutlass, xmma, cublas, matmul, wgmma, cuBLASLt's nvjet*; an
// "fbgemm_gpu::" namespace is gone with the namespace), elementwise (elementwise, vectorized, unrolled,
// reduce, norm, copy, fill, cat, index, scatter, gather), else other.
const char* kernel_category(std::string_view signature);

// Whether a kernel name (mangled, demangled or plain, as CUPTI or the PyTorch profiler give it) is
// an NCCL kernel: the one decision the scan, the Kineto reader and the categories share.
bool is_nccl_kernel(std::string_view name);

}  // namespace pipescope::analysis
