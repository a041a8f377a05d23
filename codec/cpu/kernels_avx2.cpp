// AVX2 versions of the hot loops, for CPUs without AVX-512. Each function carries its own target
// attribute (the build stays baseline x86-64). rANS: 32 lanes = four vectors of 8; vpexpand and
// vpcompress are emulated with vpermd and 256-entry index tables.
#include "cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>

#include "common/elements.h"
#include "common/rans.h"
#include "cpu/xxh3_variants.h"

#define ZIPNET_AVX2 __attribute__((target("avx2,bmi2,popcnt,fma")))

namespace zipnet::codec::cpu {
namespace {

using namespace zipnet::codec::common;

// For a lane mask m: expand[m][i] = index of the word lane i takes (its rank among set lanes);
// compress_top[m][j] = the lane whose word goes to position j, set lanes packed at the top.
struct Luts {
  alignas(32) uint32_t expand[256][8];
  alignas(32) uint32_t compress_top[256][8];
  Luts() {
    for (int m = 0; m < 256; ++m) {
      int rank = 0, cnt = __builtin_popcount(unsigned(m));
      for (int i = 0; i < 8; ++i) {
        expand[m][i] = (m >> i & 1) ? uint32_t(rank++) : 0;
        compress_top[m][i] = 0;
      }
      int pos = 8 - cnt;
      for (int i = 0; i < 8; ++i)
        if (m >> i & 1) compress_top[m][pos++] = uint32_t(i);
    }
  }
};
const Luts& luts() {
  static const Luts l;
  return l;
}

ZIPNET_AVX2 inline __m256i fix_pack(__m256i v) { return _mm256_permute4x64_epi64(v, 0xD8); }

ZIPNET_AVX2 uint32_t split_avx2(unsigned dtype, const uint8_t* src, uint32_t n, uint8_t* sym, uint8_t* const* res) {
  if (dtype == kDtypeFp32) return portable_kernels().split(dtype, src, n, sym, res);
  const __m256i ff = _mm256_set1_epi16(0xFF), m7f = _mm256_set1_epi16(0x7F), m80 = _mm256_set1_epi16(0x80);
  __m256i acc = _mm256_setzero_si256();
  uint32_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i + 32));
    __m256i sa, sb, ra, rb;
    if (dtype == kDtypeBf16) {
      sa = _mm256_srli_epi16(_mm256_slli_epi16(a, 1), 8);
      sb = _mm256_srli_epi16(_mm256_slli_epi16(b, 1), 8);
      ra = _mm256_or_si256(_mm256_and_si256(a, m7f), _mm256_and_si256(_mm256_srli_epi16(a, 8), m80));
      rb = _mm256_or_si256(_mm256_and_si256(b, m7f), _mm256_and_si256(_mm256_srli_epi16(b, 8), m80));
    } else {
      sa = _mm256_srli_epi16(a, 8);
      sb = _mm256_srli_epi16(b, 8);
      ra = _mm256_and_si256(a, ff);
      rb = _mm256_and_si256(b, ff);
    }
    __m256i s = fix_pack(_mm256_packus_epi16(sa, sb));
    __m256i r = fix_pack(_mm256_packus_epi16(ra, rb));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sym + i), s);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(res[0] + i), r);
    acc = _mm256_or_si256(acc, r);
  }
  alignas(32) uint8_t lanes[32];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
  uint32_t out = 0;
  for (uint8_t b : lanes) out |= b;
  if (i < n) {
    uint8_t* rest[1] = {res[0] + i};
    out |= portable_kernels().split(dtype, src + 2 * i, n - i, sym + i, rest);
  }
  return out;
}

ZIPNET_AVX2 void join_avx2(unsigned dtype, const uint8_t* sym, const uint8_t* const* res, uint32_t n, uint8_t* dst) {
  if (dtype == kDtypeFp32) return portable_kernels().join(dtype, sym, res, n, dst);
  const __m256i m7f = _mm256_set1_epi16(0x7F), m8000 = _mm256_set1_epi16(int16_t(0x8000)),
                m7f80 = _mm256_set1_epi16(0x7F80);
  uint32_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(res[0] + i));
    __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sym + i));
    __m256i lo = _mm256_unpacklo_epi8(r, s), hi = _mm256_unpackhi_epi8(r, s);  // u16 = r | s << 8
    __m256i w0 = _mm256_permute2x128_si256(lo, hi, 0x20), w1 = _mm256_permute2x128_si256(lo, hi, 0x31);
    if (dtype == kDtypeBf16) {
      auto tf = [&](__m256i w) ZIPNET_AVX2 {
        return _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(w, 8), m8000),
                                               _mm256_and_si256(_mm256_srli_epi16(w, 1), m7f80)),
                               _mm256_and_si256(w, m7f));
      };
      w0 = tf(w0);
      w1 = tf(w1);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i), w0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i + 32), w1);
  }
  if (i < n) {
    const uint8_t* rest[1] = {res[0] + i};
    portable_kernels().join(dtype, sym + i, rest, n - i, dst + 2 * i);
  }
}

// One encoder step for 8 lanes; the group's words go just below p in ascending lane order.
ZIPNET_AVX2 inline __m256i enc_group(__m256i x, const uint8_t* s8, const RansEncTable& t, uint16_t*& p) {
  const __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  const __m256i pk = _mm256_i32gather_epi32(reinterpret_cast<const int*>(t.packed), s, 4);
  const __m256i f = _mm256_and_si256(pk, _mm256_set1_epi32(0xFFFF));
  const __m256i cum = _mm256_srli_epi32(pk, 16);
  const __m256i emit = _mm256_cmpgt_epi32(_mm256_srli_epi32(x, kRenormShift), _mm256_sub_epi32(f, _mm256_set1_epi32(1)));
  const unsigned m = unsigned(_mm256_movemask_ps(_mm256_castsi256_ps(emit)));
  const unsigned cnt = unsigned(__builtin_popcount(m));
  // Selected lanes to the top, low 16 bits of each, store 8 words ending at p (the garbage below
  // p - cnt is overwritten by later groups; the caller leaves slack below the stream).
  __m256i c = _mm256_permutevar8x32_epi32(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(luts().compress_top[m])));
  const __m256i pack = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9, 12,
                                        13, -1, -1, -1, -1, -1, -1, -1, -1);
  c = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(c, pack), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p - 8), _mm256_castsi256_si128(c));
  p -= cnt;
  x = _mm256_blendv_epi8(x, _mm256_srli_epi32(x, 16), emit);
  // q = x / f from a float estimate (within +-1), corrected exactly.
  const __m256 ffl = _mm256_cvtepi32_ps(f);
  __m256 rcp = _mm256_rcp_ps(ffl);
  rcp = _mm256_mul_ps(rcp, _mm256_fnmadd_ps(ffl, rcp, _mm256_set1_ps(2.0f)));
  rcp = _mm256_mul_ps(rcp, _mm256_fnmadd_ps(ffl, rcp, _mm256_set1_ps(2.0f)));
  // x as float with one rounding (AVX2 has no unsigned convert): hi * 65536 + lo in one FMA.
  const __m256 xf = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x, 16)), _mm256_set1_ps(65536.0f),
                                    _mm256_cvtepi32_ps(_mm256_and_si256(x, _mm256_set1_epi32(0xFFFF))));
  __m256i q = _mm256_cvttps_epi32(_mm256_mul_ps(xf, rcp));
  __m256i r = _mm256_sub_epi32(x, _mm256_mullo_epi32(q, f));
  const __m256i neg = _mm256_cmpgt_epi32(_mm256_setzero_si256(), r);
  q = _mm256_add_epi32(q, neg);  // -1 where negative
  r = _mm256_add_epi32(r, _mm256_and_si256(neg, f));
  const __m256i big = _mm256_cmpgt_epi32(r, _mm256_sub_epi32(f, _mm256_set1_epi32(1)));
  q = _mm256_sub_epi32(q, big);
  r = _mm256_sub_epi32(r, _mm256_and_si256(big, f));
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(q, kProbBits), r), cum);
}

ZIPNET_AVX2 uint32_t rans_encode_avx2(const uint8_t* sym, uint32_t n, const RansEncTable& t, uint32_t* states,
                                      uint16_t* words_end) {
  uint32_t x[kLanes];
  std::memcpy(x, states, sizeof(x));
  uint16_t* p = words_end;
  const uint32_t full = n / kLanes;
  for (uint32_t i = n; i-- > full * kLanes;) {
    uint32_t& xs = x[i % kLanes];
    uint32_t s = sym[i], f = t.freq[s];
    if ((xs >> kRenormShift) >= f) {
      *--p = uint16_t(xs);
      xs >>= 16;
    }
    xs = ((xs / f) << kProbBits) + (xs % f) + t.cum[s];
  }
  // The first vector store writes up to 8 words at and above p - 8; words at or above p must not
  // be clobbered, and they are not: each store ends exactly at the current p.
  __m256i v[4];
  for (int g = 0; g < 4; ++g) v[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 8 * g));
  for (uint32_t step = full; step-- > 0;) {
    const uint8_t* s = sym + uint64_t(step) * kLanes;
    v[3] = enc_group(v[3], s + 24, t, p);
    v[2] = enc_group(v[2], s + 16, t, p);
    v[1] = enc_group(v[1], s + 8, t, p);
    v[0] = enc_group(v[0], s, t, p);
  }
  for (int g = 0; g < 4; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(states + 8 * g), v[g]);
  return uint32_t(words_end - p);
}

ZIPNET_AVX2 inline __m256i dec_group(__m256i x, const uint32_t* table, const uint8_t* words, uint32_t nwords,
                                     uint32_t& w, uint8_t* out, bool& bad) {
  const __m256i e = _mm256_i32gather_epi32(reinterpret_cast<const int*>(table),
                                           _mm256_and_si256(x, _mm256_set1_epi32(kProbScale - 1)), 4);
  const __m256i low = _mm256_shuffle_epi8(e, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              -1, -1));
  const __m256i packed = _mm256_permutevar8x32_epi32(low, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  const __m256i f = _mm256_and_si256(_mm256_srli_epi32(e, 8), _mm256_set1_epi32(0xFFF));
  x = _mm256_add_epi32(_mm256_mullo_epi32(f, _mm256_srli_epi32(x, kProbBits)), _mm256_srli_epi32(e, 20));
  const __m256i need = _mm256_cmpeq_epi32(_mm256_srli_epi32(x, 16), _mm256_setzero_si256());
  const unsigned m = unsigned(_mm256_movemask_ps(_mm256_castsi256_ps(need)));
  const uint32_t cnt = uint32_t(__builtin_popcount(m));
  const uint32_t left = nwords - w;
  __m128i wv;
  if (left >= 8) {
    wv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 2ull * w));
  } else {
    alignas(16) uint8_t tmp[16] = {};
    std::memcpy(tmp, words + 2ull * w, 2ull * left);  // never reads past the end
    wv = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    if (cnt > left) bad = true;
  }
  const __m256i ex = _mm256_permutevar8x32_epi32(_mm256_cvtepu16_epi32(wv),
                                                 _mm256_load_si256(reinterpret_cast<const __m256i*>(luts().expand[m])));
  x = _mm256_blendv_epi8(x, _mm256_or_si256(_mm256_slli_epi32(x, 16), ex), need);
  w += cnt > left ? left : cnt;
  return x;
}

ZIPNET_AVX2 bool rans_decode_avx2(const uint32_t* table, uint32_t* states, const uint8_t* words, uint32_t nwords,
                                  uint32_t n, uint8_t* sym) {
  __m256i v[4];
  for (int g = 0; g < 4; ++g) v[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(states + 8 * g));
  uint32_t w = 0;
  bool bad = false;
  const uint32_t full = n / kLanes;
  for (uint32_t step = 0; step < full; ++step) {
    uint8_t* out = sym + uint64_t(step) * kLanes;
    for (int g = 0; g < 4; ++g) v[g] = dec_group(v[g], table, words, nwords, w, out + 8 * g, bad);
  }
  if (bad) return false;
  uint32_t x[kLanes];
  for (int g = 0; g < 4; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + 8 * g), v[g]);
  for (uint32_t i = full * kLanes; i < n; ++i) {
    uint32_t& xs = x[i % kLanes];
    uint32_t e = table[xs & (kProbScale - 1)];
    sym[i] = uint8_t(e);
    xs = ((e >> 8) & 0xFFF) * (xs >> kProbBits) + (e >> 20);
    if (xs < kRansL) {
      if (w >= nwords) return false;
      xs = (xs << 16) | load_u16(words + 2ull * w);
      ++w;
    }
  }
  std::memcpy(states, x, sizeof(x));
  return w == nwords;
}

}  // namespace

const Kernels* avx2_kernels() {
  static const Kernels* k = []() -> const Kernels* {
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma")))
      return nullptr;
    luts();
    static Kernels full = {"avx2", split_avx2, join_avx2, portable_kernels().histogram, rans_encode_avx2,
                           nullptr, rans_decode_avx2, nullptr, xxh3_avx2};
    return &full;
  }();
  return k;
}

}  // namespace zipnet::codec::cpu

#else
namespace zipnet::codec::cpu {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace zipnet::codec::cpu
#endif
