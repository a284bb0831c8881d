// Kernel categories from names as CUPTI reports them (demangled), taken from real PyTorch,
// cuBLAS, CUTLASS, FlashAttention, NCCL and FBGEMM kernels.
#include "pipescope/analysis/kernel_category.h"

#include <gtest/gtest.h>

namespace pipescope::analysis {
namespace {

TEST(KernelCategory, TheNameIsWhatIsLeftWithoutReturnTypeParametersTemplatesAndNamespaces) {
  EXPECT_EQ(
      kernel_base_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
                       "BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::"
                       "BFloat16>, at::detail::Array<char*, 3>)"),
      "vectorized_elementwise_kernel");
  EXPECT_EQ(
      kernel_base_name("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned "
                       "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>)"),
      "indexSelectLargeIndex");
  EXPECT_EQ(
      kernel_base_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"),
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1");
  // A generic wrapper is named by what it wraps.
  EXPECT_EQ(
      kernel_base_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_"
                       "tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::"
                       "Params)"),
      "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8");
}

TEST(KernelCategory, GemmsFromCublasAndCutlass) {
  for (const char* name :
       {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>("
        "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)",
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
        "cutlass::gemm::collective::CollectiveMma<> > >(cutlass::gemm::kernel::GemmUniversal<>::Params)",
        "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, "
        "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
        "cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<>, float, float)",
        "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"})  // cuBLASLt's Hopper kernels
    EXPECT_STREQ(kernel_category(name), "gemm") << name;
}

TEST(KernelCategory, AttentionKernels) {
  for (const char* name :
       {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
        "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, "
        "false>(Flash_fwd_params)",
        "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, "
        "false, false, cutlass::bfloat16_t> >(Flash_bwd_params)",
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_"
        "t, "
        "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
        "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, "
        "false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)"})
    EXPECT_STREQ(kernel_category(name), "attention") << name;
}

TEST(KernelCategory, EmbeddingKernelsAreNotGemmsThoughTheirNamespaceSaysFbgemm) {
  for (const char* name :
       {"void fbgemm_gpu::split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 128, "
        "4>"
        "(at::GenericPackedTensorAccessor<float, 1, at::RestrictPtrTraits, long>)",
        "void fbgemm_gpu::(anonymous namespace)::split_embedding_backward_codegen_rowwise_adagrad_"
        "unweighted_kernel_cta_per_row_1<float, float, float, long, 4>(int)",
        "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, "
        "long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int)"})
    EXPECT_STREQ(kernel_category(name), "embedding") << name;
}

TEST(KernelCategory, MemoryBoundKernelsAreElementwise) {
  for (const char* name :
       {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
        "at::native::func_wrapper_t<float, "
        "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, "
        "float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
        "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, "
        "float)#1}>, unsigned int, float, 4>)",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, "
        "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
        "c10::BFloat16*)",
        "void "
        "at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1}, "
        "at::detail::Array<char*, 2>, 4, TrivialOffsetCalculator<1, unsigned int>>(int)"})
    EXPECT_STREQ(kernel_category(name), "elementwise") << name;
}

TEST(KernelCategory, NcclKernelsOfEveryNcclVersion) {
  for (const char* name :
       {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_SendRecv",
        "ncclKernel_AllGather_RING_LL_Sum_int8_t",
        "void ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bfloat16(ncclDevComm*, unsigned long, "
        "ncclWork*)",
        // As CUPTI hands many of them over: mangled ("AllReduce" once read as elementwise).
        "_Z41ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"}) {
    EXPECT_STREQ(kernel_category(name), "nccl") << name;
    EXPECT_TRUE(is_nccl_kernel(name)) << name;
  }
  EXPECT_FALSE(is_nccl_kernel("void at::native::reduce_kernel<512, 1>(...)"));
  EXPECT_STREQ(kernel_category("my_custom_kernel(float*)"), "other");
}

// CUPTI names many kernels by their mangled symbol: shown demangled and shortened, categorized on
// the demangled name.
TEST(KernelCategory, MangledSymbolsReadAsNsightShowsThem) {
  constexpr const char* kFill =
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_"
      "T1_";
  EXPECT_EQ(
      demangled_kernel_name(kFill),
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)");
  // 99 characters without return type and parameters: over the limit, cut to the first argument.
  EXPECT_EQ(readable_kernel_name(kFill), "at::native::vectorized_elementwise_kernel<4, ...>");
  EXPECT_EQ(kernel_category(kFill), std::string("elementwise"));
  // Not mangled: as it is, less its return type and parameters.
  EXPECT_EQ(readable_kernel_name(
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"),
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
  EXPECT_EQ(
      readable_kernel_name("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>(int)"),
      "at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>");
  EXPECT_EQ(readable_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64");
  // Long template arguments are cut to the first, then to "<...>".
  const std::string long_args = "void ns::kernel<8, " + std::string(120, 'x') + ">(int)";
  EXPECT_EQ(readable_kernel_name(long_args), "ns::kernel<8, ...>");
  const std::string long_first = "void ns::kernel<" + std::string(120, 'y') + ", 2>(int)";
  EXPECT_EQ(readable_kernel_name(long_first), "ns::kernel<...>");
  // Not a valid symbol: kept.
  EXPECT_EQ(readable_kernel_name("_Znot_a_symbol"), "_Znot_a_symbol");
  // PyTorch's fused and foreach optimizer kernels are memory-bound.
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                            "(anonymous namespace)::TensorListMetadata<4> >(int)"),
            std::string("elementwise"));
}
}  // namespace
}  // namespace pipescope::analysis
