// Portable C++ versions of the codec's hot loops: the reference every SIMD path must match.
#include <cstring>

#include "common/elements.h"
#include "common/rans.h"
#include "cpu/kernels.h"
#include "cpu/xxh3_variants.h"

namespace zipnet::codec::cpu {
namespace {

using namespace zipnet::codec::common;

uint32_t split_portable(unsigned dtype, const uint8_t* src, uint32_t n, uint8_t* sym,
                        uint8_t* const* res) {
  uint32_t acc = 0;
  switch (dtype) {
    case kDtypeBf16:
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t v = load_u16(src + 2 * i);
        sym[i] = uint8_t(v >> 7);
        uint8_t r = uint8_t(((v >> 8) & 0x80) | (v & 0x7F));
        res[0][i] = r;
        acc |= r;
      }
      break;
    case kDtypeFp16:
      for (uint32_t i = 0; i < n; ++i) {
        sym[i] = src[2 * i + 1];
        res[0][i] = src[2 * i];
        acc |= src[2 * i];
      }
      break;
    case kDtypeFp32:
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t v = load_u32(src + 4 * i);
        sym[i] = uint8_t(v >> 23);
        uint32_t r = residual_of(kDtypeFp32, v);
        res[0][i] = uint8_t(r);
        res[1][i] = uint8_t(r >> 8);
        res[2][i] = uint8_t(r >> 16);
        acc |= r;
      }
      break;
    default: break;
  }
  return acc;
}

void join_portable(unsigned dtype, const uint8_t* sym, const uint8_t* const* res, uint32_t n,
                   uint8_t* dst) {
  switch (dtype) {
    case kDtypeBf16:
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t r = res[0][i];
        store_u16(dst + 2 * i, uint16_t(((r >> 7) << 15) | (uint32_t(sym[i]) << 7) | (r & 0x7F)));
      }
      break;
    case kDtypeFp16:
      for (uint32_t i = 0; i < n; ++i) {
        dst[2 * i] = res[0][i];
        dst[2 * i + 1] = sym[i];
      }
      break;
    case kDtypeFp32:
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t r = res[0][i] | (uint32_t(res[1][i]) << 8) | (uint32_t(res[2][i]) << 16);
        store_u32(dst + 4 * i, join_element(kDtypeFp32, sym[i], r));
      }
      break;
    default: break;
  }
}

void histogram_portable(const uint8_t* sym, uint32_t n, uint32_t* hist) {
  // Four sub-tables so that runs of one symbol do not serialise on one counter.
  uint32_t h[4][256];
  std::memset(h, 0, sizeof(h));
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, sym + i, 8);
    ++h[0][w & 0xFF];
    ++h[1][(w >> 8) & 0xFF];
    ++h[2][(w >> 16) & 0xFF];
    ++h[3][(w >> 24) & 0xFF];
    ++h[0][(w >> 32) & 0xFF];
    ++h[1][(w >> 40) & 0xFF];
    ++h[2][(w >> 48) & 0xFF];
    ++h[3][w >> 56];
  }
  for (; i < n; ++i) ++h[0][sym[i]];
  for (int s = 0; s < 256; ++s) hist[s] = h[0][s] + h[1][s] + h[2][s] + h[3][s];
}

uint32_t rans_encode_portable(const uint8_t* sym, uint32_t n, const RansEncTable& t,
                              uint32_t* states, uint16_t* words_end) {
  uint32_t x[kLanes];
  std::memcpy(x, states, sizeof(x));
  uint16_t* p = words_end;
  for (uint32_t i = n; i-- > 0;) {
    uint32_t& xs = x[i % kLanes];
    uint32_t s = sym[i], f = t.freq[s];
    if ((xs >> kRenormShift) >= f) {
      *--p = uint16_t(xs);
      xs >>= 16;
    }
    xs = ((xs / f) << kProbBits) + (xs % f) + t.cum[s];
  }
  std::memcpy(states, x, sizeof(x));
  return uint32_t(words_end - p);
}

bool rans_decode_portable(const uint32_t* table, uint32_t* states, const uint8_t* words,
                          uint32_t nwords, uint32_t n, uint8_t* sym) {
  uint32_t x[kLanes];
  std::memcpy(x, states, sizeof(x));
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t& xs = x[i % kLanes];
    uint32_t e = table[xs & (kProbScale - 1)];
    sym[i] = uint8_t(e);
    xs = ((e >> 8) & 0xFFF) * (xs >> kProbBits) + (e >> 20);
    if (xs < kRansL) {
      if (w >= nwords) return false;
      xs = (xs << 16) | load_u16(words + 2 * w);
      ++w;
    }
  }
  std::memcpy(states, x, sizeof(x));
  return w == nwords;
}

const Kernels kPortable = {"portable", split_portable, join_portable, histogram_portable,
                           rans_encode_portable, nullptr, rans_decode_portable, nullptr, xxh3_default};

}  // namespace

const Kernels& portable_kernels() { return kPortable; }

}  // namespace zipnet::codec::cpu
