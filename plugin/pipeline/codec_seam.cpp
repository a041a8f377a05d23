#include "plugin/pipeline/codec_seam.h"

#include "transport/tcp/handshake.h"

#if ZIPNET_HAVE_CODEC
#include <zipnet/codec.h>
#endif

namespace zipnet::pipeline::codec_seam {

#if ZIPNET_HAVE_CODEC
namespace zc = zipnet::codec;

bool available() { return true; }
const char* cpu_path() { return zc::cpu_path().data(); }
size_t max_frame_size(size_t n) { return zc::max_frame_size(n); }

bool encode(const void* src, size_t n, void* dst, size_t cap, size_t* frame_size, const EncodeConfig& cfg) {
  zc::EncodeOptions opts;
  switch (cfg.dtype) {
    case params::Dtype::auto_detect: break;
    case params::Dtype::bf16: opts.dtype = zc::Dtype::bf16; break;
    case params::Dtype::fp16: opts.dtype = zc::Dtype::fp16; break;
    case params::Dtype::fp32: opts.dtype = zc::Dtype::fp32; break;
    case params::Dtype::opaque: opts.dtype = zc::Dtype::opaque; break;
  }
  opts.modes = cfg.modes;
  return zc::encode(src, n, dst, cap, frame_size, opts) == zc::Status::ok;
}

std::string decode(const void* frame, size_t frame_size, void* dst, size_t orig_len) {
  size_t out = 0;
  zc::Status s = zc::decode(frame, frame_size, dst, orig_len, &out);
  if (s != zc::Status::ok) return std::string(zc::to_string(s));
  if (out != orig_len)
    return "frame expands to " + std::to_string(out) + " bytes, header said " + std::to_string(orig_len);
  return {};
}

uint32_t raw_payload_check(const void* p, size_t n) { return uint32_t(zc::checksum64(p, n)); }
#else
bool available() { return false; }
const char* cpu_path() { return "none (built without the codec)"; }
size_t max_frame_size(size_t n) { return n + 4096; }
bool encode(const void*, size_t, void*, size_t, size_t*, const EncodeConfig&) { return false; }
std::string decode(const void*, size_t, void*, size_t) {
  return "this zipnet build has no codec and cannot decode compressed frames";
}
uint32_t raw_payload_check(const void* p, size_t n) {
  return tcp::raw_payload_check(static_cast<const uint8_t*>(p), n);
}
#endif

}  // namespace zipnet::pipeline::codec_seam
