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
// reduce, norm, copy, fill, cat, index, scatter, gather, and PyTorch's foreach and fused optimizer
// kernels, multi_tensor_apply), else other.
// A mangled symbol is demangled first.
const char* kernel_category(std::string_view signature);

// The full signature of a kernel CUPTI named by its mangled symbol ("_ZN2at6native..." ->
// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)"), by the C++ ABI's
// demangler; any other name as it is.
std::string demangled_kernel_name(std::string_view name);

// The name as Nsight Systems and the PyTorch profiler show it: demangled, no return type, no
// parameter list, and template arguments shortened when the name is long
// ("at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, ...>").
std::string readable_kernel_name(std::string_view name);

// Whether a kernel name (mangled, demangled or plain, as CUPTI or the PyTorch profiler give it) is
// an NCCL kernel: the one decision the scan, the Kineto reader and the categories share.
bool is_nccl_kernel(std::string_view name);

}  // namespace pipescope::analysis
