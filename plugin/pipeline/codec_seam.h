// The pipeline's only contact with the codec (codec/include/zipnet/codec.h). Built without the
// codec (ZIPNET_HAVE_CODEC=0, e.g. before it lands) everything is sent raw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "plugin/params.h"

namespace zipnet::pipeline::codec_seam {

bool available();
const char* cpu_path();  // "avx2", "portable", ... or "none"
size_t max_frame_size(size_t n);

struct EncodeConfig {
  params::Dtype dtype = params::Dtype::auto_detect;
  uint8_t modes = 0xF;
};
// Encodes n bytes into dst (capacity >= max_frame_size(n)). False if the codec is unavailable.
bool encode(const void* src, size_t n, void* dst, size_t cap, size_t* frame_size, const EncodeConfig& cfg);
// Decodes a whole frame that must expand to exactly orig_len bytes at dst. "" or why it failed.
std::string decode(const void* frame, size_t frame_size, void* dst, size_t orig_len);

}  // namespace zipnet::pipeline::codec_seam
