// AVX-512 (F/BW/VL/DQ/VBMI/VBMI2) versions of the hot loops. Each function carries its own target
// attribute so the rest of the build stays baseline x86-64; dispatch.cpp calls these only when the
// CPU has the features. rANS: 32 lanes = two vectors of 16. Blocks of at most 32 distinct symbols
// (all real tensors) look their symbols up in registers (encode: vpermi2d; decode: the rank of
// each slot by compares, then vpermw) instead of gathering; wider blocks gather (decode from the
// 2048-entry slot table). Decode places renormalisation words with vpexpandd; encode emits them
// with vpcompressd.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about _mm512_undefined_*() inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>

#include "common/elements.h"
#include "common/rans.h"
#include "cpu/xxh3_variants.h"

#define ZIPNET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vbmi2,avx2,bmi2,popcnt,fma")))

namespace zipnet::codec::cpu {
namespace {

using namespace zipnet::codec::common;

// Byte indices for vpermt2b over two 64-byte registers (bit 6 picks the second register).
ZIPNET_AVX512 inline __m512i even_bytes() {
  alignas(64) uint8_t idx[64];
  for (int i = 0; i < 64; ++i) idx[i] = uint8_t(2 * i);
  return _mm512_load_si512(idx);
}
ZIPNET_AVX512 inline __m512i odd_bytes() { return _mm512_add_epi8(even_bytes(), _mm512_set1_epi8(1)); }
// Interleave: output byte j takes element j/2 of a (even j) or of b (odd j), for elements base..base+31.
ZIPNET_AVX512 inline __m512i interleave_idx(int base) {
  alignas(64) uint8_t idx[64];
  for (int j = 0; j < 64; ++j) idx[j] = uint8_t((j & 1 ? 64 : 0) + base + j / 2);
  return _mm512_load_si512(idx);
}

// fp32, 16 elements per vector: symbol = bits 23..30, residual bytes = bits 0..7, 8..15, and
// bits 16..22 with the sign on top.
ZIPNET_AVX512 uint32_t split_fp32_avx512(const uint8_t* src, uint32_t n, uint8_t* sym, uint8_t* const* res) {
  const __m512i ff = _mm512_set1_epi32(0xFF), m7f = _mm512_set1_epi32(0x7F), m80 = _mm512_set1_epi32(0x80);
  __m512i acc = _mm512_setzero_si512();
  uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_loadu_si512(src + 4 * i);
    const __m512i r2 = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi32(v, 16), m7f),
                                                 _mm512_srli_epi32(v, 24), m80, 0xF8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(sym + i), _mm512_cvtepi32_epi8(_mm512_and_si512(_mm512_srli_epi32(v, 23), ff)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(res[0] + i), _mm512_cvtepi32_epi8(v));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(res[1] + i), _mm512_cvtepi32_epi8(_mm512_srli_epi32(v, 8)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(res[2] + i), _mm512_cvtepi32_epi8(r2));
    acc = _mm512_or_si512(acc, _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(r2, 16)));
  }
  uint32_t out = uint32_t(_mm512_reduce_or_epi32(acc));
  if (i < n) {
    uint8_t* rest[3] = {res[0] + i, res[1] + i, res[2] + i};
    out |= portable_kernels().split(kDtypeFp32, src + 4 * i, n - i, sym + i, rest);
  }
  return out;
}

ZIPNET_AVX512 inline __m512i load16_u8(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

ZIPNET_AVX512 void join_fp32_avx512(const uint8_t* sym, const uint8_t* const* res, uint32_t n, uint8_t* dst) {
  const __m512i m7f = _mm512_set1_epi32(0x7F), m80 = _mm512_set1_epi32(0x80);
  uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i s = load16_u8(sym + i), r0 = load16_u8(res[0] + i), r1 = load16_u8(res[1] + i),
                  r2 = load16_u8(res[2] + i);
    __m512i v = _mm512_or_si512(r0, _mm512_slli_epi32(r1, 8));
    v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_and_si512(r2, m7f), 16));
    v = _mm512_or_si512(v, _mm512_slli_epi32(s, 23));
    v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_and_si512(r2, m80), 24));
    _mm512_storeu_si512(dst + 4 * i, v);
  }
  if (i < n) {
    const uint8_t* rest[3] = {res[0] + i, res[1] + i, res[2] + i};
    portable_kernels().join(kDtypeFp32, sym + i, rest, n - i, dst + 4 * i);
  }
}

ZIPNET_AVX512 uint32_t split_avx512(unsigned dtype, const uint8_t* src, uint32_t n, uint8_t* sym,
                                    uint8_t* const* res) {
  if (dtype == kDtypeFp32) return split_fp32_avx512(src, n, sym, res);
  const __m512i ev = even_bytes(), od = odd_bytes();
  __m512i acc = _mm512_setzero_si512();
  uint32_t i = 0;
  if (dtype == kDtypeBf16) {
    const __m512i m7f = _mm512_set1_epi16(0x7F), m80 = _mm512_set1_epi16(0x80);
    for (; i + 64 <= n; i += 64) {
      __m512i a = _mm512_loadu_si512(src + 2 * i), b = _mm512_loadu_si512(src + 2 * i + 64);
      // symbol = bits 7..14 = high byte of (v << 1)
      __m512i s = _mm512_permutex2var_epi8(_mm512_slli_epi16(a, 1), od, _mm512_slli_epi16(b, 1));
      // residual = sign (bit 15 -> bit 7) | mantissa (bits 0..6), in the low byte
      __m512i ra = _mm512_ternarylogic_epi32(_mm512_and_si512(a, m7f), _mm512_srli_epi16(a, 8), m80, 0xF8);
      __m512i rb = _mm512_ternarylogic_epi32(_mm512_and_si512(b, m7f), _mm512_srli_epi16(b, 8), m80, 0xF8);
      __m512i r = _mm512_permutex2var_epi8(ra, ev, rb);
      _mm512_storeu_si512(sym + i, s);
      _mm512_storeu_si512(res[0] + i, r);
      acc = _mm512_or_si512(acc, r);
    }
  } else {  // fp16: symbol = high byte, residual = low byte
    for (; i + 64 <= n; i += 64) {
      __m512i a = _mm512_loadu_si512(src + 2 * i), b = _mm512_loadu_si512(src + 2 * i + 64);
      __m512i r = _mm512_permutex2var_epi8(a, ev, b);
      _mm512_storeu_si512(sym + i, _mm512_permutex2var_epi8(a, od, b));
      _mm512_storeu_si512(res[0] + i, r);
      acc = _mm512_or_si512(acc, r);
    }
  }
  uint32_t out = _mm512_reduce_or_epi32(acc);
  out = (out | (out >> 8) | (out >> 16) | (out >> 24)) & 0xFF;
  if (i < n) {
    uint8_t* rest[1] = {res[0] + i};
    out |= portable_kernels().split(dtype, src + 2 * i, n - i, sym + i, rest);
  }
  return out;
}

ZIPNET_AVX512 void join_avx512(unsigned dtype, const uint8_t* sym, const uint8_t* const* res, uint32_t n,
                               uint8_t* dst) {
  if (dtype == kDtypeFp32) return join_fp32_avx512(sym, res, n, dst);
  const __m512i lo = interleave_idx(0), hi = interleave_idx(32);
  uint32_t i = 0;
  if (dtype == kDtypeBf16) {
    const __m512i m7f = _mm512_set1_epi16(0x7F), m8000 = _mm512_set1_epi16(int16_t(0x8000)),
                  m7f80 = _mm512_set1_epi16(0x7F80);
    for (; i + 64 <= n; i += 64) {
      __m512i r = _mm512_loadu_si512(res[0] + i), s = _mm512_loadu_si512(sym + i);
      for (int h = 0; h < 2; ++h) {
        __m512i w = _mm512_permutex2var_epi8(r, h ? hi : lo, s);  // u16 = r | s << 8
        __m512i sign = _mm512_and_si512(_mm512_slli_epi16(w, 8), m8000);
        __m512i ex = _mm512_and_si512(_mm512_srli_epi16(w, 1), m7f80);
        __m512i v = _mm512_ternarylogic_epi32(sign, ex, _mm512_and_si512(w, m7f), 0xFE);
        _mm512_storeu_si512(dst + 2 * i + 64 * h, v);
      }
    }
  } else {
    for (; i + 64 <= n; i += 64) {
      __m512i r = _mm512_loadu_si512(res[0] + i), s = _mm512_loadu_si512(sym + i);
      _mm512_storeu_si512(dst + 2 * i, _mm512_permutex2var_epi8(r, lo, s));
      _mm512_storeu_si512(dst + 2 * i + 64, _mm512_permutex2var_epi8(r, hi, s));
    }
  }
  if (i < n) {
    const uint8_t* rest[1] = {res[0] + i};
    portable_kernels().join(dtype, sym + i, rest, n - i, dst + 2 * i);
  }
}

// Counts how often each of vals[0..K) occurs in nv vectors of 64 symbols: one compare and one
// masked byte increment per value and vector (K values share each load), summed every 255
// vectors before the byte counters wrap.
template <unsigned K>
ZIPNET_AVX512 void count_values(const uint8_t* sym, uint32_t nv, const uint8_t* vals, uint32_t* hist) {
  const __m512i minus1 = _mm512_set1_epi8(-1), zero = _mm512_setzero_si512();
  __m512i c[K];
  for (unsigned k = 0; k < K; ++k) c[k] = _mm512_set1_epi8(char(vals[k]));
  uint64_t total[K] = {};
  for (uint32_t i0 = 0; i0 < nv; i0 += 255) {
    const uint32_t i1 = nv - i0 < 255 ? nv : i0 + 255;
    __m512i acc[K];
    for (unsigned k = 0; k < K; ++k) acc[k] = zero;
    for (uint32_t i = i0; i < i1; ++i) {
      const __m512i v = _mm512_loadu_si512(sym + 64 * i);
      for (unsigned k = 0; k < K; ++k)
        acc[k] = _mm512_mask_sub_epi8(acc[k], _mm512_cmpeq_epi8_mask(v, c[k]), acc[k], minus1);
    }
    for (unsigned k = 0; k < K; ++k) total[k] += uint64_t(_mm512_reduce_add_epi64(_mm512_sad_epu8(acc[k], zero)));
  }
  for (unsigned k = 0; k < K; ++k) hist[vals[k]] = uint32_t(total[k]);
}

// Histogram: exponents of real tensors take few values, so count them with compares (a fraction
// of a cycle per symbol) instead of scalar increments. The candidates are 0 (exact zeros, apart
// so that they do not widen a range; only if there are any) and two ranges, symbols below and
// above 0x80 (the fp16 split puts the sign in bit 7: its symbols form two clusters ~128 apart).
// The last candidate's count is what the others leave. Too many candidates: scalar.
ZIPNET_AVX512 void histogram_avx512(const uint8_t* sym, uint32_t n, uint32_t* hist) {
  constexpr unsigned kMaxValues = 64;
  const uint32_t nv = n / 64;
  __m512i mn0 = _mm512_set1_epi8(char(0xFF)), mx0 = _mm512_setzero_si512();
  __m512i mn1 = _mm512_set1_epi8(char(0xFF)), mx1 = _mm512_setzero_si512(), mn = mn1;
  for (uint32_t i = 0; i < nv; ++i) {
    const __m512i v = _mm512_loadu_si512(sym + 64 * i);
    const __mmask64 top = _mm512_movepi8_mask(v), nz = _mm512_test_epi8_mask(v, v);
    mn0 = _mm512_mask_min_epu8(mn0, nz & ~top, mn0, v);
    mx0 = _mm512_mask_max_epu8(mx0, ~top, mx0, v);
    mn1 = _mm512_mask_min_epu8(mn1, top, mn1, v);
    mx1 = _mm512_max_epu8(mx1, v);
    mn = _mm512_min_epu8(mn, v);
  }
  alignas(64) uint8_t b[5][64];
  _mm512_store_si512(b[0], mn0);
  _mm512_store_si512(b[1], mx0);
  _mm512_store_si512(b[2], mn1);
  _mm512_store_si512(b[3], mx1);
  _mm512_store_si512(b[4], mn);
  unsigned lo0 = 255, hi0 = 0, lo1 = 255, hi1 = 0, lo = 255;
  for (int k = 0; k < 64; ++k) {
    lo0 = b[0][k] < lo0 ? b[0][k] : lo0;
    hi0 = b[1][k] > hi0 ? b[1][k] : hi0;
    lo1 = b[2][k] < lo1 ? b[2][k] : lo1;
    hi1 = b[3][k] > hi1 ? b[3][k] : hi1;
    lo = b[4][k] < lo ? b[4][k] : lo;
  }
  uint8_t vals[kMaxValues];
  unsigned nvals = 0;
  if (lo == 0) vals[nvals++] = 0;
  const unsigned r0 = hi0 >= lo0 && lo0 >= 1 ? hi0 - lo0 + 1 : 0;
  const unsigned r1 = hi1 >= 0x80 && lo1 <= hi1 ? hi1 - lo1 + 1 : 0;
  if (nv == 0 || nvals + r0 + r1 > kMaxValues) {
    portable_kernels().histogram(sym, n, hist);
    return;
  }
  for (unsigned v = 0; v < r0; ++v) vals[nvals++] = uint8_t(lo0 + v);
  for (unsigned v = 0; v < r1; ++v) vals[nvals++] = uint8_t(lo1 + v);
  for (int s = 0; s < 256; ++s) hist[s] = 0;
  // Count all but the last candidate, four at a time, then the rest.
  const unsigned counted = nvals - 1;
  unsigned g = 0;
  for (; g + 4 <= counted; g += 4) count_values<4>(sym, nv, vals + g, hist);
  switch (counted - g) {
    case 3: count_values<3>(sym, nv, vals + g, hist); break;
    case 2: count_values<2>(sym, nv, vals + g, hist); break;
    case 1: count_values<1>(sym, nv, vals + g, hist); break;
    default: break;
  }
  uint32_t rest = nv * 64;
  for (unsigned k = 0; k < counted; ++k) rest -= hist[vals[k]];
  hist[vals[counted]] = rest;
  for (uint32_t i = nv * 64; i < n; ++i) ++hist[sym[i]];
}

// Per-symbol lookups for one 16-lane group: freq | cum << 16, from two registers with vpermi2d
// instead of a gather when the block has at most 32 distinct symbols (every real tensor: even the
// fp16 split of bf16 data, whose symbols span ~136 values in two clusters, has ~15). Symbols
// spanning at most 32 values index the table as s - base; others are renumbered by their rank
// among the present symbols with a 256-byte map (two vpermi2b).
enum class EncIndex { gather, offset, rank };
struct EncLookup {
  EncIndex mode;
  __m512i lo_tab, hi_tab;  // offset: packed[base..base+31]; rank: packed[] of the present symbols
  __m512i lo_rcp, hi_rcp;  // rcp[] likewise
  __m512i map[4];          // rank: symbol -> its rank among the present symbols (bytes)
  __m512i base;            // offset: base in every byte
  const RansEncTable* t;
};

// Symbol bytes -> ranks: bytes below 0x80 from map[0..1], the others from map[2..3].
ZIPNET_AVX512 inline __m512i enc_rank(__m512i s, const EncLookup& lk) {
  const __m512i a = _mm512_permutex2var_epi8(lk.map[0], s, lk.map[1]);
  const __m512i b = _mm512_permutex2var_epi8(lk.map[2], s, lk.map[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(s), a, b);
}

// One encoder step for 16 lanes (format §4.2, lanes of the group in descending order: the words
// of the group are stored ascending just below p, which is what the scalar loop produces).
// s: the 16 symbols (offset, rank: their table indices) as u32.
ZIPNET_AVX512 inline __m512i enc_group(__m512i x, __m512i s, const EncLookup& lk, uint16_t*& p) {
  const bool regs = lk.mode != EncIndex::gather;
  const __m512i pk = regs ? _mm512_permutex2var_epi32(lk.lo_tab, s, lk.hi_tab) : _mm512_i32gather_epi32(s, lk.t->packed, 4);
  const __m512 rcp = regs ? _mm512_castsi512_ps(_mm512_permutex2var_epi32(lk.lo_rcp, s, lk.hi_rcp))
                          : _mm512_i32gather_ps(s, lk.t->rcp, 4);
  const __m512i f = _mm512_and_si512(pk, _mm512_set1_epi32(0xFFFF));
  const __m512i cum = _mm512_srli_epi32(pk, 16);
  const __mmask16 k = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(x, kRenormShift), f);
  const unsigned cnt = unsigned(__builtin_popcount(k));
  p -= cnt;
  _mm256_mask_storeu_epi16(p, __mmask16((1u << cnt) - 1), _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(k, x)));
  x = _mm512_mask_srli_epi32(x, k, x, 16);
  // q = x / f (x < f * 2^21 now): float(x) * rcp, every rounding toward zero, is at most x / f and
  // (3 roundings of relative error < 2^-23 on a quotient < 2^21) more than x / f - 1, so q is
  // exact or one short: one correction.
  constexpr int rz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
  __m512i q = _mm512_cvttps_epu32(_mm512_mul_round_ps(_mm512_cvt_roundepu32_ps(x, rz), rcp, rz));
  __m512i r = _mm512_sub_epi32(x, _mm512_mullo_epi32(q, f));
  const __mmask16 big = _mm512_cmpge_epu32_mask(r, f);
  q = _mm512_mask_add_epi32(q, big, q, _mm512_set1_epi32(1));
  r = _mm512_mask_sub_epi32(r, big, r, f);
  return _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(q, kProbBits), r), cum);
}

// The 32 lanes of one block being encoded.
struct EncLanes {
  __m512i x0, x1;
  uint16_t* p;
  EncLookup lk;
};

// States start at j.states (L + seed); the partial top step (it comes first when encoding backwards) is scalar.
ZIPNET_AVX512 inline void enc_begin(EncLanes& e, const RansEncodeJob& j) {
  const RansEncTable& t = *j.t;
  uint32_t x[kLanes];
  std::memcpy(x, j.states, sizeof(x));
  uint16_t* p = j.words_end;
  for (uint32_t i = j.n; i-- > j.n / kLanes * kLanes;) {
    uint32_t& xs = x[i % kLanes];
    uint32_t s = j.sym[i], f = t.freq[s];
    if ((xs >> kRenormShift) >= f) {
      *--p = uint16_t(xs);
      xs >>= 16;
    }
    xs = ((xs / f) << kProbBits) + (xs % f) + t.cum[s];
  }
  e.p = p;
  e.lk.t = &t;
  int lo = 0, hi = 255;
  while (lo < 255 && t.freq[lo] == 0) ++lo;
  while (hi > lo && t.freq[hi] == 0) --hi;
  if (hi - lo < 32) {
    const int base = lo > 224 ? 224 : lo;
    e.lk.mode = EncIndex::offset;
    e.lk.base = _mm512_set1_epi8(char(base));
    e.lk.lo_tab = _mm512_loadu_si512(t.packed + base);
    e.lk.hi_tab = _mm512_loadu_si512(t.packed + base + 16);
    e.lk.lo_rcp = _mm512_castps_si512(_mm512_loadu_ps(t.rcp + base));
    e.lk.hi_rcp = _mm512_castps_si512(_mm512_loadu_ps(t.rcp + base + 16));
  } else {
    alignas(64) uint32_t packed[32] = {};
    alignas(64) float rcp[32] = {};
    alignas(64) uint8_t rank[256] = {};
    unsigned present = 0;
    for (unsigned v = 0; v < 256; ++v) {
      if (t.freq[v] == 0) continue;
      if (present < 32) {
        packed[present] = t.packed[v];
        rcp[present] = t.rcp[v];
      }
      rank[v] = uint8_t(present++);
    }
    e.lk.mode = present <= 32 ? EncIndex::rank : EncIndex::gather;
    e.lk.lo_tab = _mm512_load_si512(packed);
    e.lk.hi_tab = _mm512_load_si512(packed + 16);
    e.lk.lo_rcp = _mm512_castps_si512(_mm512_load_ps(rcp));
    e.lk.hi_rcp = _mm512_castps_si512(_mm512_load_ps(rcp + 16));
    for (int q = 0; q < 4; ++q) e.lk.map[q] = _mm512_load_si512(rank + 64 * q);
  }
  e.x0 = _mm512_loadu_si512(x);
  e.x1 = _mm512_loadu_si512(x + 16);
}

ZIPNET_AVX512 inline void enc_step(EncLanes& e, const RansEncodeJob& j, uint32_t step) {
  const uint8_t* s = j.sym + uint64_t(step) * kLanes;
  __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  if (e.lk.mode == EncIndex::offset) v = _mm512_sub_epi8(v, e.lk.base);
  else if (e.lk.mode == EncIndex::rank) v = enc_rank(v, e.lk);
  e.x1 = enc_group(e.x1, _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(v, 1)), e.lk, e.p);
  e.x0 = enc_group(e.x0, _mm512_cvtepu8_epi32(_mm512_castsi512_si128(v)), e.lk, e.p);
}

ZIPNET_AVX512 inline void enc_end(EncLanes& e, RansEncodeJob& j) {
  _mm512_storeu_si512(j.states, e.x0);
  _mm512_storeu_si512(j.states + 16, e.x1);
  j.nwords = uint32_t(j.words_end - e.p);
}

ZIPNET_AVX512 uint32_t rans_encode_avx512(const uint8_t* sym, uint32_t n, const RansEncTable& t, uint32_t* states,
                                          uint16_t* words_end) {
  RansEncodeJob j{sym, n, &t, states, words_end, 0};
  EncLanes e;
  enc_begin(e, j);
  for (uint32_t step = n / kLanes; step-- > 0;) enc_step(e, j, step);
  enc_end(e, j);
  return j.nwords;
}

// Several blocks at once: their chains (renormalise -> divide -> next state) are independent, so
// the core overlaps them. Steps run downwards in each block; a longer block first catches up.
template <unsigned N>
ZIPNET_AVX512 void rans_encode_n(RansEncodeJob* jobs) {
  EncLanes e[N];
  uint32_t steps[N], low = ~0u;
  for (unsigned j = 0; j < N; ++j) {
    enc_begin(e[j], jobs[j]);
    steps[j] = jobs[j].n / kLanes;
    low = steps[j] < low ? steps[j] : low;
  }
  for (unsigned j = 0; j < N; ++j)
    while (steps[j] > low) enc_step(e[j], jobs[j], --steps[j]);
  for (uint32_t step = low; step-- > 0;)
    for (unsigned j = 0; j < N; ++j) enc_step(e[j], jobs[j], step);
  for (unsigned j = 0; j < N; ++j) enc_end(e[j], jobs[j]);
}

ZIPNET_AVX512 void rans_encode_group_avx512(RansEncodeJob* jobs, unsigned count) {
  switch (count) {
    case 2: return rans_encode_n<2>(jobs);
    case 3: return rans_encode_n<3>(jobs);
    case 4: return rans_encode_n<4>(jobs);
    default:
      for (unsigned j = 0; j < count; ++j)
        jobs[j].nwords = rans_encode_avx512(jobs[j].sym, jobs[j].n, *jobs[j].t, jobs[j].states, jobs[j].words_end);
  }
}

// One decoder step for one group of 16 lanes, up to the renormalisation test.
ZIPNET_AVX512 inline __m512i dec_advance(__m512i x, const uint32_t* table, uint8_t* out, __mmask16* need) {
  const __m512i e = _mm512_i32gather_epi32(_mm512_and_si512(x, _mm512_set1_epi32(kProbScale - 1)), table, 4);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(e));
  const __m512i f = _mm512_and_si512(_mm512_srli_epi32(e, 8), _mm512_set1_epi32(0xFFF));
  x = _mm512_add_epi32(_mm512_mullo_epi32(f, _mm512_srli_epi32(x, kProbBits)), _mm512_srli_epi32(e, 20));
  *need = _mm512_cmplt_epu32_mask(x, _mm512_set1_epi32(kRansL));
  return x;
}

// Shifts in one word per lane of mask k, taken in ascending lane order from words[w..].
ZIPNET_AVX512 inline __m512i dec_renorm(__m512i x, __mmask16 k, const uint8_t* words, uint32_t nwords, uint32_t w,
                                       bool& bad) {
  __m256i wv;
  if (w + 16 <= nwords) {
    wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 2ull * w));
  } else {
    const uint32_t left = w < nwords ? nwords - w : 0;
    wv = _mm256_maskz_loadu_epi16(__mmask16((1u << left) - 1), words + 2ull * (w < nwords ? w : nwords));
    if (uint32_t(__builtin_popcount(k)) > left) bad = true;  // never reads past the end
  }
  return _mm512_mask_or_epi32(x, k, _mm512_slli_epi32(x, 16), _mm512_maskz_expand_epi32(k, _mm512_cvtepu16_epi32(wv)));
}

// Blocks of at most 32 distinct symbols decode without the gather (which bounds the table
// decoder): a slot's symbol is its rank r among the present symbols, r = the number of rank
// boundaries cum[1..count-1] at or below the slot, found by compares on the 32 slots of a step
// packed as u16; freq, cum and the symbol of each rank come from 32-word registers (vpermw).
struct DecRanks {
  unsigned count;             // distinct symbols; 0: decode with the slot table
  __m512i freq, cum, sym;     // u16 per rank
  alignas(64) uint16_t f[32], c[32], s[32];  // the same, for the scalar tail
  alignas(64) uint16_t bound[32][32];  // bound[b]: cum of rank b + 1 in every word
};

// The 32 lanes of one block being decoded.
struct DecLanes {
  __m512i x0, x1;
  uint32_t w;
  bool bad;
  DecRanks r;
};

ZIPNET_AVX512 inline void dec_start(DecLanes& d, const RansDecodeJob& j) {
  d.x0 = _mm512_loadu_si512(j.states);
  d.x1 = _mm512_loadu_si512(j.states + 16);
  d.w = 0;
  d.bad = false;
  d.r.count = 0;
  if (!j.freq) return;
  alignas(64) uint16_t f[32] = {}, c[32] = {}, sy[32] = {};
  unsigned count = 0;
  uint32_t cum = 0;
  for (unsigned v = 0; v < 256; ++v) {
    const uint32_t fv = j.freq[v];
    if (fv == 0) continue;
    if (count == 32) return;  // too many: the table decoder
    f[count] = uint16_t(fv);
    c[count] = uint16_t(cum);
    sy[count] = uint16_t(v);
    cum += fv;
    ++count;
  }
  d.r.count = count;
  d.r.freq = _mm512_load_si512(f);
  d.r.cum = _mm512_load_si512(c);
  d.r.sym = _mm512_load_si512(sy);
  std::memcpy(d.r.f, f, sizeof f);
  std::memcpy(d.r.c, c, sizeof c);
  std::memcpy(d.r.s, sy, sizeof sy);
  for (unsigned b = 0; b + 1 < count; ++b) _mm512_store_si512(d.r.bound[b], _mm512_set1_epi16(short(c[b + 1])));
}

ZIPNET_AVX512 inline void dec_words(DecLanes& d, const RansDecodeJob& j, __mmask16 k0, __mmask16 k1) {
  // Group 1 starts after group 0's count, so the word loads wait only for the masks, not for the
  // other group's state.
  const uint32_t c0 = uint32_t(__builtin_popcount(k0)), c1 = uint32_t(__builtin_popcount(k1));
  d.x0 = dec_renorm(d.x0, k0, j.words, j.nwords, d.w, d.bad);
  d.x1 = dec_renorm(d.x1, k1, j.words, j.nwords, d.w + c0, d.bad);
  d.w += c0 + c1;
  if (d.w > j.nwords) {
    d.bad = true;
    d.w = j.nwords;
  }
}

ZIPNET_AVX512 inline void dec_step(DecLanes& d, const RansDecodeJob& j, uint32_t step) {
  uint8_t* out = j.sym + uint64_t(step) * kLanes;
  __mmask16 k0, k1;
  d.x0 = dec_advance(d.x0, j.table, out, &k0);
  d.x1 = dec_advance(d.x1, j.table, out + 16, &k1);
  dec_words(d, j, k0, k1);
}

// Byte j of the output takes word j of lanes 0..15 / 16..31 as _mm512_packus_epi32 orders them
// (per 128-bit lane: four words of the first source, then four of the second).
ZIPNET_AVX512 inline __m512i packed_word_order() {
  alignas(64) uint8_t idx[64] = {};
  for (int j = 0; j < 32; ++j) {
    const int lane = j % 16, pos = 8 * (lane / 4) + (j >= 16 ? 4 : 0) + lane % 4;
    idx[j] = uint8_t(2 * pos);
  }
  return _mm512_load_si512(idx);
}

ZIPNET_AVX512 inline void dec_step_ranked(DecLanes& d, const RansDecodeJob& j, uint32_t step, __m512i order) {
  const __m512i m = _mm512_set1_epi32(kProbScale - 1), minus1 = _mm512_set1_epi16(-1), zero = _mm512_setzero_si512();
  const __m512i slot = _mm512_packus_epi32(_mm512_and_si512(d.x0, m), _mm512_and_si512(d.x1, m));
  __m512i r0 = zero, r1 = zero;
  const unsigned nb = d.r.count - 1;
  unsigned b = 0;
  for (; b + 2 <= nb; b += 2) {
    r0 = _mm512_mask_sub_epi16(r0, _mm512_cmpge_epu16_mask(slot, _mm512_load_si512(d.r.bound[b])), r0, minus1);
    r1 = _mm512_mask_sub_epi16(r1, _mm512_cmpge_epu16_mask(slot, _mm512_load_si512(d.r.bound[b + 1])), r1, minus1);
  }
  if (b < nb) r0 = _mm512_mask_sub_epi16(r0, _mm512_cmpge_epu16_mask(slot, _mm512_load_si512(d.r.bound[b])), r0, minus1);
  const __m512i rank = _mm512_add_epi16(r0, r1);
  const __m512i f = _mm512_permutexvar_epi16(rank, d.r.freq);
  const __m512i dd = _mm512_sub_epi16(slot, _mm512_permutexvar_epi16(rank, d.r.cum));
  const __m512i sy = _mm512_permutexvar_epi8(order, _mm512_permutexvar_epi16(rank, d.r.sym));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(j.sym + uint64_t(step) * kLanes), _mm512_castsi512_si256(sy));
  d.x0 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_unpacklo_epi16(f, zero), _mm512_srli_epi32(d.x0, kProbBits)),
                          _mm512_unpacklo_epi16(dd, zero));
  d.x1 = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_unpackhi_epi16(f, zero), _mm512_srli_epi32(d.x1, kProbBits)),
                          _mm512_unpackhi_epi16(dd, zero));
  const __m512i L = _mm512_set1_epi32(kRansL);
  dec_words(d, j, _mm512_cmplt_epu32_mask(d.x0, L), _mm512_cmplt_epu32_mask(d.x1, L));
}

// The partial last step (scalar) and the end checks of format §4.2.
ZIPNET_AVX512 bool dec_finish(DecLanes& d, const RansDecodeJob& j) {
  if (d.bad) return false;
  uint32_t x[kLanes];
  _mm512_storeu_si512(x, d.x0);
  _mm512_storeu_si512(x + 16, d.x1);
  uint32_t w = d.w;
  for (uint32_t i = j.n / kLanes * kLanes; i < j.n; ++i) {
    uint32_t& xs = x[i % kLanes];
    const uint32_t slot = xs & (kProbScale - 1);
    uint32_t e;
    if (d.r.count) {  // ranked blocks may have no table
      unsigned r = d.r.count - 1;
      while (d.r.c[r] > slot) --r;
      e = decode_entry(d.r.s[r], d.r.f[r], slot - d.r.c[r]);
    } else {
      e = j.table[slot];
    }
    j.sym[i] = uint8_t(e);
    xs = ((e >> 8) & 0xFFF) * (xs >> kProbBits) + (e >> 20);
    if (xs < kRansL) {
      if (w >= j.nwords) return false;
      xs = (xs << 16) | load_u16(j.words + 2ull * w);
      ++w;
    }
  }
  std::memcpy(j.states, x, sizeof(x));
  return w == j.nwords;
}

ZIPNET_AVX512 bool rans_decode_avx512(const uint32_t* table, uint32_t* states, const uint8_t* words,
                                      uint32_t nwords, uint32_t n, uint8_t* sym) {
  const RansDecodeJob j{table, states, words, nwords, n, sym, nullptr};
  DecLanes d;
  dec_start(d, j);
  for (uint32_t step = 0; step < n / kLanes; ++step) dec_step(d, j, step);
  return dec_finish(d, j);
}

// Two blocks: their step loops are independent, so running them together hides the latency of
// the chain (lookup -> multiply -> renormalise) that bounds one block.
template <bool RankedA, bool RankedB>
ZIPNET_AVX512 void dec_pair(DecLanes& da, const RansDecodeJob& a, DecLanes& db, const RansDecodeJob& b) {
  const __m512i order = packed_word_order();
  auto step_a = [&](uint32_t t) ZIPNET_AVX512 {
    if constexpr (RankedA) dec_step_ranked(da, a, t, order);
    else dec_step(da, a, t);
  };
  auto step_b = [&](uint32_t t) ZIPNET_AVX512 {
    if constexpr (RankedB) dec_step_ranked(db, b, t, order);
    else dec_step(db, b, t);
  };
  const uint32_t sa = a.n / kLanes, sb = b.n / kLanes, both = sa < sb ? sa : sb;
  uint32_t step = 0;
  for (; step < both; ++step) {
    step_a(step);
    step_b(step);
  }
  for (uint32_t t = step; t < sa; ++t) step_a(t);
  for (uint32_t t = step; t < sb; ++t) step_b(t);
}

ZIPNET_AVX512 void rans_decode2_avx512(const RansDecodeJob& a, const RansDecodeJob& b, bool* ok) {
  DecLanes da, db;
  dec_start(da, a);
  if (b.freq == a.freq) {  // the two streams of one block (format §4.2): the same ranks
    db = da;
    db.x0 = _mm512_loadu_si512(b.states);
    db.x1 = _mm512_loadu_si512(b.states + 16);
  } else {
    dec_start(db, b);
  }
  const bool ra = da.r.count != 0, rb = db.r.count != 0;
  if (ra && rb) dec_pair<true, true>(da, a, db, b);
  else if (ra) dec_pair<true, false>(da, a, db, b);
  else if (rb) dec_pair<false, true>(da, a, db, b);
  else dec_pair<false, false>(da, a, db, b);
  ok[0] = dec_finish(da, a);
  ok[1] = dec_finish(db, b);
}

const Kernels kAvx512 = {"avx512", split_avx512, join_avx512, histogram_avx512, rans_encode_avx512, rans_encode_group_avx512, rans_decode_avx512,
                         rans_decode2_avx512,
                         xxh3_avx512,
                         32};

}  // namespace

const Kernels* avx512_kernels() {
  static const Kernels* k = [] () -> const Kernels* {
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2") &&
          __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma")))
      return nullptr;
    return &kAvx512;
  }();
  return k;
}

}  // namespace zipnet::codec::cpu

#else
namespace zipnet::codec::cpu {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace zipnet::codec::cpu
#endif
