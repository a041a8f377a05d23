// Launchers of the CUDA codec's kernels (encode_kernels.cu, decode_kernels.cu), called by
// codec_cuda.cu. All launches go to one stream; nothing here synchronises.
#pragma once

#include <cuda_runtime.h>

#include "batch.h"

namespace zipnet::codec::cuda::detail {

// Threads per CTA and CTAs per SM of each kernel, for sizing grids by SMs.
constexpr int kAnalyseThreads = 256;
constexpr int kEncodeGroupThreads = 128;  // one group codes one block
constexpr int kEncodeGroups = 4;          // groups per CTA of encode_kernel
constexpr int kStatsGroups = 8;           // groups per CTA of stats_kernel (64 registers a thread)
// rans_kernel (a warp per block) comes in two forms: on small batches, 8 warps per CTA, each
// staging its block's symbols in shared memory (the recurrence then reads them at shared-memory
// latency); on batches of more than one wave of those, 16 warps per CTA streaming the symbols
// from global memory through a small ring each (twice the recurrences per SM).
constexpr int kRansWarpsStaged = 8;
constexpr int kRansWarpsWide = 16;
constexpr uint32_t kRansSymStage = 16384;  // most symbols stats_kernel writes to a block's slot, and
                                           // a staging warp holds in shared memory
inline bool prefer_wide_rans(uint32_t total_blocks, int grid_ctas) {
  return total_blocks > uint32_t(grid_ctas) * kRansWarpsStaged;
}
// Batches that leave the staging rans_kernel's upper half of warps without a block: those warps
// hash the blocks (XXH3) while the lower half runs the recurrences, and encode_kernel takes the
// hashes instead of computing them on its critical path.
__host__ __device__ inline bool hash_in_rans_kernel(uint32_t total_blocks, int grid_ctas) {
  return total_blocks <= uint32_t(grid_ctas) * (kRansWarpsStaged / 2);
}
constexpr unsigned kMaxStagedLog2 = 15;  // the encoder stages blocks up to 32 KiB in shared memory
// Small batches encode their blocks in one kernel (fused_encode_kernel, a 128-thread group per
// block, kFusedEncodeGroups per CTA) instead of stats_kernel, rans_kernel and encode_kernel: when
// the blocks fit one wave of its groups and a block fits its stage in shared memory.
constexpr int kFusedEncodeGroups = 2;
inline bool fused_encode_fits(uint32_t total_blocks, int grid_ctas, unsigned block_log2) {
  return block_log2 <= kMaxStagedLog2 && total_blocks <= uint32_t(grid_ctas) * kFusedEncodeGroups;
}
constexpr int kHeaderThreads = 256;       // header_kernel: a CTA per message
constexpr int kValidateThreads = 256;
constexpr unsigned kDecodeChunk = 2048;   // original bytes staged per step of a decoding warp
constexpr int kDecodeGroups = 4;          // blocks decoded at once per CTA by the group decoder
constexpr uint64_t kDecodeGroupBlock = 1u << 15;  // largest block the group decoder takes
// The group decoder cuts a block's latency (small batches), the warp decoder keeps 4x more blocks
// in flight per SM (large batches; measured 2x faster on 64 MiB). Group when the blocks, estimated
// from the frame bytes at a ratio of 1.5, fit in one wave of groups.
inline bool prefer_group_decoder(uint64_t frame_bytes, int grid_ctas) {
  return frame_bytes / 2 * 3 <= uint64_t(grid_ctas) * kDecodeGroups * kDecodeGroupBlock;
}

// Decodes of at most this many frames need no validate_kernel (DecodeArgs::fused): the block
// decoders' CTAs each place the blocks in shared memory (4 bytes a frame) and check the frames.
constexpr uint32_t kFusedMaxFrames = 512;

// Scratch slot bytes per block for block size `bs`: the symbols (flat blocks) at its front, the
// rANS words at its end.
inline uint64_t slot_bytes_for(uint64_t bs) { return 2 * bs + 1024; }

// marks (optional, 3 events), for the benchmark's per-kernel breakdown: encode records them before
// analyse_kernel, after it and after header_kernel; decode before and after validate_kernel (which
// fused decodes do not run: nothing between the first two), and after the block decoders.
// Launches kernel<<<grid, block, smem, s>>>(args...) with programmatic dependent launch (sm_90):
// its CTAs may be scheduled while the previous kernel in the stream finishes, and each waits in
// start_after_previous_kernel (device_util.cuh) until that kernel is done. The codec's batches are
// 2 to 5 back-to-back kernels, so each launch's latency would otherwise add to a small batch's time.
template <typename... Params, typename... Args>
inline void launch_after_previous(void (*kernel)(Params...), int grid, int block, size_t smem, cudaStream_t s, Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(unsigned(block));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, kernel, args...);
}

void launch_encode(const EncodeArgs& a, int grid_ctas, cudaStream_t s, cudaEvent_t* marks = nullptr);
void launch_decode(const DecodeArgs& a, int grid_ctas, cudaStream_t s, cudaEvent_t* marks = nullptr);
size_t decode_smem_bytes(int warps);  // 0: the group decoder
size_t encode_stage_bytes(unsigned block_log2);
size_t fused_encode_smem_bytes();
cudaError_t configure_encode();
cudaError_t configure_kernels();  // kernel attributes (shared memory sizes), once per device

}  // namespace zipnet::codec::cuda::detail
