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
// A raw sub-chunk's payload check (tcp::raw_payload_check's value) on the codec's fastest XXH3
// (AVX2/AVX-512); the baseline XXH3 without the codec.
uint32_t raw_payload_check(const void* p, size_t n);

}  // namespace zipnet::pipeline::codec_seam
