// Format §2: how each dtype cuts an element into an 8-bit symbol (the exponent, mostly) and a
// residual (sign + mantissa), and joins them back. Shared by the CPU and CUDA codecs.
#pragma once

#include "hd.h"

namespace zipnet::codec::common {

enum : uint8_t { kDtypeOpaque = 0, kDtypeBf16 = 1, kDtypeFp16 = 2, kDtypeFp32 = 3, kNumDtypes = 4 };

// Bytes per element: 1, 2, 2, 4.
ZIPNET_HD constexpr unsigned element_size(unsigned dtype) {
  return dtype == kDtypeFp32 ? 4u : dtype == kDtypeOpaque ? 1u : 2u;
}
// Residual byte planes per element: 0, 1, 1, 3.
ZIPNET_HD constexpr unsigned residual_planes(unsigned dtype) {
  return dtype == kDtypeFp32 ? 3u : dtype == kDtypeOpaque ? 0u : 1u;
}

// v is the element as a little-endian integer (u8, u16 or u32).
ZIPNET_HD inline uint8_t symbol_of(unsigned dtype, uint32_t v) {
  switch (dtype) {
    case kDtypeBf16: return uint8_t((v >> 7) & 0xFF);
    case kDtypeFp16: return uint8_t(v >> 8);
    case kDtypeFp32: return uint8_t((v >> 23) & 0xFF);
    default: return uint8_t(v);
  }
}
ZIPNET_HD inline uint32_t residual_of(unsigned dtype, uint32_t v) {
  switch (dtype) {
    case kDtypeBf16: return ((v >> 15) << 7) | (v & 0x7F);
    case kDtypeFp16: return v & 0xFF;
    case kDtypeFp32: return ((v >> 31) << 23) | (v & 0x7FFFFF);
    default: return 0;
  }
}
ZIPNET_HD inline uint32_t join_element(unsigned dtype, uint32_t s, uint32_t r) {
  switch (dtype) {
    // r * 0x101 puts r's bit 7 (the sign) at bit 15 beside its bits 0..6 (r < 256, s < 256): the
    // GPU decoders' rANS step joins in four operations where the shifts took seven (64 MiB of
    // bf16 decoded 1.013x faster, H200 2026-12-02).
    case kDtypeBf16: return (s << 7) | ((r * 0x101u) & 0x807Fu);
    case kDtypeFp16: return (s << 8) | r;
    case kDtypeFp32: return ((r >> 23) << 31) | (s << 23) | (r & 0x7FFFFF);
    default: return s;
  }
}

ZIPNET_HD inline uint32_t load_element(unsigned esize, const uint8_t* p) {
  return esize == 4 ? load_u32(p) : esize == 2 ? load_u16(p) : p[0];
}
ZIPNET_HD inline void store_element(unsigned esize, uint8_t* p, uint32_t v) {
  if (esize == 4) store_u32(p, v);
  else if (esize == 2) store_u16(p, uint16_t(v));
  else p[0] = uint8_t(v);
}

}  // namespace zipnet::codec::common
