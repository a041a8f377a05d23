// Format §4 and §6 (mode rule): sizes of every block mode from the block's statistics, the WINDOW
// base rule, and the mode choice (smallest wins, ties to the lower mode). Shared by both codecs so
// that they make the same choices and so produce the same bytes.
#pragma once

#include "elements.h"
#include "frame.h"
#include "hd.h"
#include "rans.h"

namespace zipnet::codec::common {

constexpr unsigned kWindowWidth = 7;
constexpr unsigned kMaxWindowBase = 249;

// What the encoder knows about a block after splitting it (before choosing a mode).
struct BlockStats {
  uint64_t original_bytes = 0;  // of the block in the message (flags included)
  uint32_t n = 0;               // elements
  uint32_t tail = 0;            // gathered bytes % esize
  uint32_t residual_planes = 0; // of the dtype
  uint8_t plane_mask = 0;       // bit0 symbol plane non-zero, bit 1+j residual plane j non-zero
};

// §6: base = m - 4 clamped to [0, 249], m the rounded mean of the non-zero symbols (0 if none).
ZIPNET_HD inline uint32_t window_base(const uint32_t* hist) {
  uint64_t sum = 0, cnt = 0;
  for (int s = 1; s < 256; ++s) {
    sum += uint64_t(s) * hist[s];
    cnt += hist[s];
  }
  uint64_t m = cnt ? (sum + cnt / 2) / cnt : 0;
  int64_t base = int64_t(m) - 4;
  if (base < 0) base = 0;
  if (base > int64_t(kMaxWindowBase)) base = kMaxWindowBase;
  return uint32_t(base);
}
ZIPNET_HD inline uint32_t window_escapes(const uint32_t* hist, uint32_t n, uint32_t base) {
  uint32_t in = 0;
  for (uint32_t s = base; s < base + kWindowWidth; ++s) in += hist[s];
  return n - in;
}
// Bytes of the WINDOW symbol section: base, 3 code planes, escapes.
ZIPNET_HD inline uint64_t window_section_size(uint32_t n, uint32_t escapes) {
  return 1 + 3 * ceil_div(n, 8) + escapes;
}

ZIPNET_HD inline uint32_t popcount8(uint32_t v) {
  uint32_t c = 0;
  for (; v; v &= v - 1) ++c;
  return c;
}

// Bytes before the symbol section in modes 1..3: mode, mask, present residual planes, tail.
ZIPNET_HD inline uint64_t planes_prefix_size(const BlockStats& b, uint8_t mask) {
  return 2 + uint64_t(popcount8(mask >> 1)) * b.n + b.tail;
}

// Sizes of each mode; UINT64_MAX where a mode is not possible. rans_section is the size of the
// coded rANS section (table + states + words) or 0 when it was not computed.
struct ModeSizes {
  uint64_t size[4];
};
constexpr uint64_t kNoSize = ~uint64_t(0);

ZIPNET_HD inline ModeSizes mode_sizes(const BlockStats& b, uint64_t window_section,
                                      uint64_t rans_section) {
  ModeSizes m;
  uint8_t with_sym = uint8_t(b.plane_mask | 1);
  m.size[kModeRaw] = 1 + b.original_bytes;
  m.size[kModePlanes] = planes_prefix_size(b, b.plane_mask) + ((b.plane_mask & 1) ? b.n : 0);
  m.size[kModeWindow] = planes_prefix_size(b, with_sym) + window_section;
  m.size[kModeRans] = rans_section ? planes_prefix_size(b, with_sym) + rans_section : kNoSize;
  return m;
}

// Smallest allowed mode; ties go to the lower mode. RAW is always allowed.
ZIPNET_HD inline unsigned choose_mode(const ModeSizes& m, unsigned allowed_mask) {
  unsigned best = kModeRaw;
  for (unsigned k = 1; k < 4; ++k)
    if ((allowed_mask & (1u << k)) && m.size[k] < m.size[best]) best = k;
  return best;
}

}  // namespace zipnet::codec::common
