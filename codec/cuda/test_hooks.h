// Internal hooks of the CUDA codec for its tests only (not part of the public API).
#pragma once

#include "zipnet/codec_cuda.h"

namespace zipnet::codec::cuda {

// Decoder used by c's decode_batch from now on: 4 the group decoder, 8 or 16 the warp decoder,
// 0 chosen by batch size (the default).
void force_decoder_for_tests(Codec& c, int warps);
// true: c's decode_batch always runs validate_kernel before the block decoders, as it does for
// batches of more than kFusedMaxFrames frames; false (the default): those of fewer fuse it.
void force_separate_validation_for_tests(Codec& c, bool on);
// Encoder used by c's encode_batch from now on: split, the split kernels (analyse_kernel,
// stats_kernel, rans_kernel, encode_kernel), as batches of more blocks than one wave of
// fused_encode_kernel's groups take; fused, fused_encode_kernel whatever the batch size (blocks of
// up to 32 KiB; larger ones take the split kernels); by_size, chosen by batch size (the default).
enum class EncoderPath { by_size, split, fused };
void force_encoder_for_tests(Codec& c, EncoderPath path);

}  // namespace zipnet::codec::cuda
