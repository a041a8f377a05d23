// Format §6 (dtype): the dtype detector. Integer-only and deterministic so that the CPU and the GPU
// pick the same dtype for the same bytes. It estimates, for each dtype, the coded size of a sample
// (order-0 entropy of the symbols + the residual planes that are not all zero + the tail) and picks
// the smallest; opaque wins unless that estimate is below 97% of the raw size.
#pragma once

#include "elements.h"
#include "hd.h"

namespace zipnet::codec::common {

// The sample is the first kDetectSampleBytes of block 0's gathered data (fewer if shorter).
constexpr uint32_t kDetectSampleBytes = 4096;
constexpr uint32_t kDetectPercent = 97;

// log2(v) in Q16 fixed point, v >= 1 (bit-by-bit squaring; exact same result everywhere).
ZIPNET_HD inline uint32_t log2_q16(uint32_t v) {
  uint32_t k = 0;
  while ((v >> k) > 1) ++k;
  uint64_t m = uint64_t(v) << (31 - k);  // Q31 mantissa in [1, 2)
  uint32_t r = k << 16;
  for (int bit = 15; bit >= 0; --bit) {
    m = (m * m) >> 31;
    if (m >= (uint64_t(1) << 32)) {
      m >>= 1;
      r |= 1u << bit;
    }
  }
  return r;
}

// Order-0 entropy of a histogram in Q16 bits: sum c * (log2 n - log2 c).
ZIPNET_HD inline uint64_t entropy_bits_q16(const uint32_t* hist, uint32_t n) {
  if (n == 0) return 0;
  uint32_t ln = log2_q16(n);
  uint64_t bits = 0;
  for (int s = 0; s < 256; ++s)
    if (hist[s]) bits += uint64_t(hist[s]) * (ln - log2_q16(hist[s]));
  return bits;
}

// Estimated coded bits (Q16) of `len` sample bytes as dtype d.
ZIPNET_HD inline uint64_t estimate_bits_q16(unsigned d, const uint8_t* p, uint32_t len) {
  uint32_t hist[256];
  for (int s = 0; s < 256; ++s) hist[s] = 0;
  unsigned es = element_size(d), planes = residual_planes(d);
  uint32_t n = len / es;
  uint32_t res_or = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t v = load_element(es, p + uint64_t(i) * es);
    ++hist[symbol_of(d, v)];
    res_or |= residual_of(d, v);
  }
  uint32_t nonzero_planes = 0;
  for (unsigned j = 0; j < planes; ++j) nonzero_planes += ((res_or >> (8 * j)) & 0xFF) != 0;
  uint64_t raw_bits = uint64_t(nonzero_planes) * n * 8 + uint64_t(len % es) * 8;
  return entropy_bits_q16(hist, n) + (raw_bits << 16);
}

// Detects the dtype from the sample; returns kDtypeOpaque.. kDtypeFp32.
ZIPNET_HD inline unsigned detect_dtype(const uint8_t* sample, uint32_t len) {
  if (len > kDetectSampleBytes) len = kDetectSampleBytes;
  if (len == 0) return kDtypeOpaque;
  unsigned best = kDtypeOpaque;
  uint64_t best_bits = estimate_bits_q16(kDtypeOpaque, sample, len);
  for (unsigned d = kDtypeBf16; d < kNumDtypes; ++d) {
    uint64_t b = estimate_bits_q16(d, sample, len);
    if (b < best_bits) {
      best = d;
      best_bits = b;
    }
  }
  uint64_t raw_bits_q16 = (uint64_t(len) * 8) << 16;
  if (best_bits * 100 >= raw_bits_q16 * kDetectPercent) return kDtypeOpaque;
  return best;
}

}  // namespace zipnet::codec::common
