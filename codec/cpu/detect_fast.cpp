// common::detect_dtype spends most of its time in log2_q16 (16 dependent 64-bit squarings per
// non-zero histogram bin, ~500 bins per sample); here every value it can be asked for (counts
// and element counts up to the 4096-byte sample) comes from a table built once with log2_q16
// itself, and all four histograms come from one pass of two counts per 16-bit element.
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
  // One pass over u32 words = (even u16 element e, odd u16 element o), two counts per element:
  // its low byte, and its high byte with bit 7 of the low byte (512 bins, kept apart for even and
  // odd elements). Every histogram the rule needs follows: fp16 symbol = high byte; bf16 symbol =
  // (high << 1 | low >> 7) & 0xFF; fp32 symbol = the bf16 symbol of the odd element; opaque =
  // low bytes + high bytes. Likewise the residual ORs.
  uint32_t h_lo[2][256] = {}, h_hb[2][512] = {};
  uint32_t or_e = 0, or_o = 0;
  const uint32_t n2 = len / 2, n4 = len / 4;
  for (uint32_t i = 0; i < n4; ++i) {
    uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);  // little-endian host
    const uint32_t e = w & 0xFFFF, o = w >> 16;
    or_e |= e;
    or_o |= o;
    ++h_lo[0][e & 0xFF];
    ++h_lo[1][o & 0xFF];
    ++h_hb[0][e >> 7];
    ++h_hb[1][o >> 7];
  }
  uint32_t or_16 = or_e | or_o;
  if (n2 % 2) {  // a last u16 element outside the fp32 elements
    uint16_t e;
    std::memcpy(&e, p + 2 * (n2 - 1), 2);
    or_16 |= e;
    ++h_lo[0][e & 0xFF];
    ++h_hb[0][e >> 7];
  }
  uint32_t h_op[256] = {}, h_bf[256] = {}, h_fp[256] = {}, h_32[256] = {};
  for (uint32_t hb = 0; hb < 512; ++hb) {
    const uint32_t even = h_hb[0][hb], odd = h_hb[1][hb];
    h_fp[hb >> 1] += even + odd;
    h_bf[hb & 0xFF] += even + odd;
    h_32[hb & 0xFF] += odd;
  }
  for (int s = 0; s < 256; ++s) h_op[s] = h_lo[0][s] + h_lo[1][s] + h_fp[s];
  if (len % 2) ++h_op[p[len - 1]];
  const uint32_t or_bf = residual_of(kDtypeBf16, or_16), or_fp = residual_of(kDtypeFp16, or_16);
  const uint32_t or_32 = or_e | (residual_of(kDtypeBf16, or_o) << 16);
  const uint64_t est[kNumDtypes] = {entropy_q16(h_op, len, lg),
                                    entropy_q16(h_bf, n2, lg) + raw_q16(kDtypeBf16, or_bf, n2, len),
                                    entropy_q16(h_fp, n2, lg) + raw_q16(kDtypeFp16, or_fp, n2, len),
                                    entropy_q16(h_32, n4, lg) + raw_q16(kDtypeFp32, or_32, n4, len)};
  // The selection of common::detect_dtype: lowest estimate, ties to the earlier dtype.
  unsigned best = kDtypeOpaque;
  for (unsigned d = kDtypeBf16; d < kNumDtypes; ++d)
    if (est[d] < est[best]) best = d;
  const uint64_t raw_bits_q16 = (uint64_t(len) * 8) << 16;
  if (est[best] * 100 >= raw_bits_q16 * kDetectPercent) return kDtypeOpaque;
  return best;
}

}  // namespace zipnet::codec::cpu
