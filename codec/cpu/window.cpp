// The 3-bit window: code c = s - base + 1 inside [base, base+6], else 0 and the symbol is escaped.
#include "cpu/window.h"

#include <cstring>

#include "common/block.h"

namespace zipnet::codec::cpu {

uint32_t window_encode(const uint8_t* sym, uint32_t n, uint32_t base, uint8_t* out) {
  const uint32_t plane = (n + 7) / 8;
  out[0] = uint8_t(base);
  uint8_t* p0 = out + 1;
  uint8_t* p1 = p0 + plane;
  uint8_t* p2 = p1 + plane;
  uint8_t* esc = p2 + plane;
  uint32_t k = 0;
  for (uint32_t byte = 0; byte < plane; ++byte) {
    uint32_t b0 = 0, b1 = 0, b2 = 0;
    uint32_t lim = n - byte * 8 < 8 ? n - byte * 8 : 8;
    for (uint32_t bit = 0; bit < lim; ++bit) {
      uint32_t s = sym[byte * 8 + bit];
      uint32_t d = s - base;
      uint32_t c = d < common::kWindowWidth ? d + 1 : 0;
      if (c == 0) esc[k++] = uint8_t(s);
      b0 |= (c & 1) << bit;
      b1 |= ((c >> 1) & 1) << bit;
      b2 |= ((c >> 2) & 1) << bit;
    }
    p0[byte] = uint8_t(b0);
    p1[byte] = uint8_t(b1);
    p2[byte] = uint8_t(b2);
  }
  return 1 + 3 * plane + k;
}

bool window_decode(const uint8_t* in, uint32_t size, uint32_t n, uint8_t* sym) {
  const uint32_t plane = (n + 7) / 8;
  if (size < 1 + 3 * plane) return false;
  uint32_t base = in[0];
  if (base > common::kMaxWindowBase) return false;
  const uint8_t* p0 = in + 1;
  const uint8_t* p1 = p0 + plane;
  const uint8_t* p2 = p1 + plane;
  const uint8_t* esc = p2 + plane;
  const uint32_t nesc = size - 1 - 3 * plane;
  uint32_t k = 0;
  for (uint32_t byte = 0; byte < plane; ++byte) {
    uint32_t lim = n - byte * 8 < 8 ? n - byte * 8 : 8;
    uint32_t b0 = p0[byte], b1 = p1[byte], b2 = p2[byte];
    if (lim < 8 && ((b0 | b1 | b2) >> lim) != 0) return false;  // padding bits must be zero
    for (uint32_t bit = 0; bit < lim; ++bit) {
      uint32_t c = ((b0 >> bit) & 1) | (((b1 >> bit) & 1) << 1) | (((b2 >> bit) & 1) << 2);
      if (c) {
        sym[byte * 8 + bit] = uint8_t(base + c - 1);
      } else {
        if (k >= nesc) return false;
        sym[byte * 8 + bit] = esc[k++];
      }
    }
  }
  return k == nesc;
}

}  // namespace zipnet::codec::cpu
