// common::detect_dtype spends most of its time in log2_q16 (16 dependent 64-bit squarings per
// non-zero histogram bin, ~500 bins per sample); here every value it can be asked for (counts
// and element counts up to the 4096-byte sample) comes from a table built once with log2_q16
// itself, and the bf16, fp16 and opaque histograms share one pass.
#include "cpu/detect_fast.h"

#include <array>
#include <cstring>

#include "common/detect.h"

namespace zipnet::codec::cpu {
namespace {

using namespace zipnet::codec::common;

const uint32_t* log2_table() {
  static const std::array<uint32_t, kDetectSampleBytes + 1> t = [] {
    std::array<uint32_t, kDetectSampleBytes + 1> a{};
    for (uint32_t v = 1; v <= kDetectSampleBytes; ++v) a[v] = log2_q16(v);
    return a;
  }();
  return t.data();
}

// entropy_bits_q16 with table logs (hist counts and n are at most kDetectSampleBytes).
uint64_t entropy_q16(const uint32_t* hist, uint32_t n, const uint32_t* lg) {
  if (n == 0) return 0;
  const uint32_t ln = lg[n];
  uint64_t bits = 0;
  for (int s = 0; s < 256; ++s)
    if (hist[s]) bits += uint64_t(hist[s]) * (ln - lg[hist[s]]);
  return bits;
}

uint64_t raw_q16(unsigned d, uint32_t res_or, uint32_t n, uint32_t len) {
  uint32_t nonzero_planes = 0;
  for (unsigned j = 0; j < residual_planes(d); ++j) nonzero_planes += ((res_or >> (8 * j)) & 0xFF) != 0;
  return (uint64_t(nonzero_planes) * n * 8 + uint64_t(len % element_size(d)) * 8) << 16;
}

}  // namespace

unsigned detect_dtype_fast(const uint8_t* p, uint32_t len) {
  if (len > kDetectSampleBytes) len = kDetectSampleBytes;
  if (len == 0) return kDtypeOpaque;
  const uint32_t* lg = log2_table();
  // The fp16 symbol is the high byte, so the opaque histogram is that of the low bytes plus the
  // fp16 one. Two tables per histogram (even and odd elements): runs of one exponent would
  // otherwise serialise on one counter.
  uint32_t h_lo[2][256] = {}, h_fp[2][256] = {}, h_bf[2][256] = {}, h_32[2][256] = {};
  uint32_t or_bf = 0, or_fp = 0, or_32 = 0;
  const uint32_t n2 = len / 2, n4 = len / 4;
  for (uint32_t i = 0; i < n2; ++i) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);  // little-endian host
    const unsigned t = i & 1;
    ++h_lo[t][v & 0xFF];
    ++h_fp[t][symbol_of(kDtypeFp16, v)];
    ++h_bf[t][symbol_of(kDtypeBf16, v)];
    or_bf |= residual_of(kDtypeBf16, v);
    or_fp |= residual_of(kDtypeFp16, v);
  }
  for (uint32_t i = 0; i < n4; ++i) {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    ++h_32[i & 1][symbol_of(kDtypeFp32, v)];
    or_32 |= residual_of(kDtypeFp32, v);
  }
  uint32_t h_op[256];
  for (int s = 0; s < 256; ++s) {
    h_fp[0][s] += h_fp[1][s];
    h_bf[0][s] += h_bf[1][s];
    h_32[0][s] += h_32[1][s];
    h_op[s] = h_lo[0][s] + h_lo[1][s] + h_fp[0][s];
  }
  if (len % 2) ++h_op[p[len - 1]];
  const uint64_t est[kNumDtypes] = {entropy_q16(h_op, len, lg),
                                    entropy_q16(h_bf[0], n2, lg) + raw_q16(kDtypeBf16, or_bf, n2, len),
                                    entropy_q16(h_fp[0], n2, lg) + raw_q16(kDtypeFp16, or_fp, n2, len),
                                    entropy_q16(h_32[0], n4, lg) + raw_q16(kDtypeFp32, or_32, n4, len)};
  // The selection of common::detect_dtype: lowest estimate, ties to the earlier dtype.
  unsigned best = kDtypeOpaque;
  for (unsigned d = kDtypeBf16; d < kNumDtypes; ++d)
    if (est[d] < est[best]) best = d;
  const uint64_t raw_bits_q16 = (uint64_t(len) * 8) << 16;
  if (est[best] * 100 >= raw_bits_q16 * kDetectPercent) return kDtypeOpaque;
  return best;
}

}  // namespace zipnet::codec::cpu
