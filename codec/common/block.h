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

// Plane-mask bits 1+j of the residual planes (of `planes`) that hold a non-zero byte, from the OR
// of every residual.
ZIPNET_HD inline uint8_t residual_plane_bits(uint32_t res_or, unsigned planes) {
  uint8_t bits = 0;
  for (unsigned j = 0; j < planes; ++j)
    if ((res_or >> (8 * j)) & 0xFF) bits |= uint8_t(2u << j);
  return bits;
}

// Bytes before the symbol section in modes 1..3: mode, mask, present residual planes, tail.
ZIPNET_HD inline uint64_t planes_prefix_size(const BlockStats& b, uint8_t mask) {
  return 2 + uint64_t(popcount32(mask >> 1)) * b.n + b.tail;
}

// Residual bytes a RANS block carries in its lane seeds instead of its payload (§4.2): the last
// `seed` bytes of its present residual planes (taken in plane order, as the payload stores them).
ZIPNET_HD inline uint32_t rans_seed_bytes(const BlockStats& b, uint8_t mask) {
  if (b.original_bytes > kSeedPiece && b.original_bytes % kSeedPiece != 0) return 0;
  const uint64_t present = uint64_t(popcount32(mask >> 1)) * b.n;
  const uint64_t even = present & ~uint64_t(1), most = 2 * kLanes * rans_streams(b.n);
  return uint32_t(even < most ? even : most);
}
// The highest present residual plane (mask has one).
ZIPNET_HD inline unsigned last_residual_plane(uint8_t mask) {
  unsigned j = 0;
  for (unsigned k = 0; k < 3; ++k)
    if (mask & (2u << k)) j = k;
  return j;
}
// Where byte k (< present planes x n) of the residual area comes from: residual plane *plane of
// element *elem.
ZIPNET_HD inline void residual_area_position(uint64_t k, uint32_t n, uint8_t mask, unsigned* plane,
                                             uint32_t* elem) {
  uint64_t skip = k / n;  // present planes before it
  unsigned j = 0;
  for (;; ++j)
    if (mask & (2u << j)) {
      if (skip == 0) break;
      --skip;
    }
  *plane = j;
  *elem = uint32_t(k % n);
}
// The seed of lane l (< seed / 2) from the block's residual bytes: res(plane, elem).
template <class ResidualByte>
ZIPNET_HD inline uint32_t lane_seed(const BlockStats& b, uint8_t mask, uint32_t seed, unsigned l,
                                    ResidualByte res) {
  uint32_t v = 0;
  if (seed <= b.n) {  // the usual case: all in the last present plane, no division
    const unsigned j = last_residual_plane(mask);
    const uint32_t i = b.n - seed + 2 * l;
    return uint32_t(res(j, i)) | (uint32_t(res(j, i + 1)) << 8);
  }
  const uint64_t first = uint64_t(popcount32(mask >> 1)) * b.n - seed + 2 * l;
  for (unsigned h = 0; h < 2; ++h) {
    unsigned j;
    uint32_t i;
    residual_area_position(first + h, b.n, mask, &j, &i);
    v |= uint32_t(res(j, i)) << (8 * h);
  }
  return v;
}

// Decoding: element i's value v (joined with whatever the residual planes held) with its seeded
// residual bytes replaced. seeds: the residual area's last `seed` bytes; they belong to elements
// [n - min(n, seed), n).
ZIPNET_HD inline uint32_t with_seeded_bytes(unsigned dtype, uint32_t v, uint32_t i, uint32_t n, uint8_t mask,
                                            uint32_t seed, const uint8_t* seeds) {
  uint32_t r = residual_of(dtype, v);
  if (seed <= n) {  // the usual case: one byte of the last present plane per element
    const unsigned j = last_residual_plane(mask);
    r = (r & ~(0xFFu << (8 * j))) | (uint32_t(seeds[i - (n - seed)]) << (8 * j));
    return join_element(dtype, symbol_of(dtype, v), r);
  }
  const uint64_t first = uint64_t(popcount32(mask >> 1)) * n - seed;
  unsigned k = 0;  // present planes so far
  for (unsigned j = 0; j < residual_planes(dtype); ++j) {
    if (!(mask & (2u << j))) continue;
    const uint64_t at = uint64_t(k++) * n + i;
    if (at >= first) r = (r & ~(0xFFu << (8 * j))) | (uint32_t(seeds[at - first]) << (8 * j));
  }
  return join_element(dtype, symbol_of(dtype, v), r);
}

// Sizes of each mode; UINT64_MAX where a mode is not possible. rans_section is the size of the
// coded rANS section (table + states + words) or 0 when it was not computed; a RANS payload leaves
// out its seeded residual bytes.
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
  m.size[kModeRans] =
      rans_section ? planes_prefix_size(b, with_sym) + rans_section - rans_seed_bytes(b, with_sym) : kNoSize;
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
