// Host-side state of zipnet::codec::cuda::Codec, shared by codec_cuda.cu and bench.cu.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "batch.h"
#include "test_hooks.h"
#include "zipnet/codec_cuda.h"

namespace zipnet::codec::cuda {

struct Codec::Impl {
  int device = 0;
  int sm_count = 0;
  int sms = 0;  // SM budget: no grid of this codec is larger (one CTA per SM)
  int decode_warps = 0;  // 0: by batch size (prefer_group_decoder); 4: group decoder; 8 or 16: warp decoder (benchmark knob)
  bool separate_validation = false;  // always validate_kernel, never the fused decoders (benchmark and test knob)
  EncoderPath encoder = EncoderPath::by_size;  // benchmark and test knob, as separate_validation
  size_t max_items = 0, max_item_bytes = 0;
  EncodeOptions opts;
  bool opts_ok = true;
  uint64_t max_blocks = 0, slot_bytes = 0;
  detail::DevMsg* d_msgs = nullptr;  // max_items + 1
  detail::DevMsg* h_msgs = nullptr;  // pinned
  detail::BlockRec* d_recs = nullptr;
  detail::BlockPlanRec* d_plans = nullptr;
  uint8_t* d_scratch = nullptr;
  uint64_t* d_published = nullptr;  // fused_encode_kernel's sizes, one per block
  uint32_t* d_ticket = nullptr;     // and its block counter
  std::string error;

  // Fills h_msgs for an encode of items[0..count); returns ok or the first bad item's status.
  Status stage_encode(const BatchItem* items, size_t count, uint32_t* total_blocks);
  detail::EncodeArgs encode_args(detail::DevMsg* msgs, size_t count, uint32_t total_blocks) const;
  Status stage_decode(const BatchItem* items, size_t count);
  // frame_bytes: the batch's frame bytes, to choose the decoder.
  detail::DecodeArgs decode_args(detail::DevMsg* msgs, size_t count, uint64_t frame_bytes) const;
  int encode_grid(uint32_t total_blocks, size_t count) const;
  int decode_grid(size_t count, uint64_t frame_bytes) const;
  bool check(cudaError_t e, const char* what);  // records the error; true when e == success
};

}  // namespace zipnet::codec::cuda
