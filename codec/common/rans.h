// Format §4.2 and §6 (frequencies): rANS constants, the frequency quantisation rule that both codecs
// must follow bit for bit, the frequency table's serialisation, and the decode-table entry packing.
#pragma once

#include "hd.h"

namespace zipnet::codec::common {

constexpr unsigned kProbBits = 11;
constexpr uint32_t kProbScale = 1u << kProbBits;  // M = 2048
constexpr uint32_t kRansL = 1u << 16;             // lower bound of a normalised state
constexpr unsigned kLanes = 32;
constexpr uint32_t kStateBytes = 4 * kLanes;      // the 32 final states

// §6: f[s] = max(1, floor((c[s]*M + n/2) / n)) for every symbol that occurs; then fix the sum to M.
// hist[s] are the counts, n their sum (> 0). Returns false only if n == 0.
ZIPNET_HD inline bool quantize_freqs(const uint32_t* hist, uint32_t n, uint32_t* freq) {
  if (n == 0) return false;
  uint32_t sum = 0;
  for (int s = 0; s < 256; ++s) {
    uint32_t f = 0;
    if (hist[s] != 0) {
      f = uint32_t((uint64_t(hist[s]) * kProbScale + n / 2) / n);
      if (f == 0) f = 1;
    }
    freq[s] = f;
    sum += f;
  }
  if (sum < kProbScale) {
    int best = 0;
    for (int s = 1; s < 256; ++s)
      if (freq[s] > freq[best]) best = s;  // strict: ties keep the lowest symbol
    freq[best] += kProbScale - sum;
  } else if (sum > kProbScale) {
    // Symbols in descending order of f (ties: lowest symbol first) each give up min(f-1, excess).
    // One pass always suffices (at most 256 symbols, M = 2048). Selection instead of a sort keeps
    // this STL-free; excess is usually cleared by the first (largest) symbol.
    uint32_t excess = sum - kProbScale;
    uint32_t done[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    while (excess > 0) {
      int best = -1;
      for (int s = 0; s < 256; ++s) {
        if (done[s >> 5] & (1u << (s & 31))) continue;
        if (freq[s] != 0 && (best < 0 || freq[s] > freq[best])) best = s;
      }
      if (best < 0) break;  // cannot happen: sum(f-1) >= excess
      done[best >> 5] |= 1u << (best & 31);
      uint32_t give = freq[best] - 1 < excess ? freq[best] - 1 : excess;
      freq[best] -= give;
      excess -= give;
    }
  }
  return true;
}

// Frequency table (§4.2): [lo][span-1][freq[lo..lo+span-1] as 1 or 2 bytes].
ZIPNET_HD inline uint32_t freq_bytes(uint32_t f) { return f < 0x80 ? 1u : 2u; }
ZIPNET_HD inline void symbol_range(const uint32_t* freq, int* lo, int* hi) {
  *lo = 0;
  while (*lo < 255 && freq[*lo] == 0) ++*lo;
  *hi = 255;
  while (*hi > *lo && freq[*hi] == 0) --*hi;
}
ZIPNET_HD inline uint32_t freq_table_size(const uint32_t* freq) {
  int lo, hi;
  symbol_range(freq, &lo, &hi);
  uint32_t size = 2;
  for (int s = lo; s <= hi; ++s) size += freq_bytes(freq[s]);
  return size;
}
ZIPNET_HD inline uint32_t write_freq_table(const uint32_t* freq, uint8_t* out) {
  int lo, hi;
  symbol_range(freq, &lo, &hi);
  uint32_t k = 0;
  out[k++] = uint8_t(lo);
  out[k++] = uint8_t(hi - lo);
  for (int s = lo; s <= hi; ++s) {
    uint32_t f = freq[s];
    if (f < 0x80) {
      out[k++] = uint8_t(f);
    } else {
      out[k++] = uint8_t(0x80 | (f & 0x7F));
      out[k++] = uint8_t(f >> 7);
    }
  }
  return k;
}
// Parses a table from in[0..avail); fills freq[256] (zeros outside the range) and *consumed.
// Returns false if it overruns avail, the range passes 255, or the sum is not exactly M.
ZIPNET_HD inline bool parse_freq_table(const uint8_t* in, uint32_t avail, uint32_t* freq,
                                       uint32_t* consumed) {
  if (avail < 2) return false;
  uint32_t lo = in[0], span = uint32_t(in[1]) + 1;
  if (lo + span > 256) return false;
  for (int s = 0; s < 256; ++s) freq[s] = 0;
  uint32_t k = 2, sum = 0;
  for (uint32_t i = 0; i < span; ++i) {
    if (k >= avail) return false;
    uint32_t b = in[k++];
    if (b & 0x80) {
      if (k >= avail) return false;
      b = (b & 0x7F) | (uint32_t(in[k++]) << 7);
    }
    freq[lo + i] = b;
    sum += b;
  }
  if (sum != kProbScale) return false;
  *consumed = k;
  return true;
}

// Cumulative frequencies: cum[s] = sum of freq below s.
ZIPNET_HD inline void cumulative(const uint32_t* freq, uint32_t* cum) {
  uint32_t c = 0;
  for (int s = 0; s < 256; ++s) {
    cum[s] = c;
    c += freq[s];
  }
}

// Decode-table entry for slot k of symbol s: symbol in bits 0..7, freq (1..2048) in bits 8..19,
// slot - cum[s] in bits 20..30. Then x' = freq * (x >> 11) + (slot - cum).
ZIPNET_HD inline uint32_t decode_entry(uint32_t s, uint32_t f, uint32_t k) {
  return s | (f << 8) | (k << 20);
}

// Encoder: a lane emits a word before coding s when x >= ((L >> PROB_BITS) << 16) * freq[s],
// i.e. when (x >> 21) >= freq[s] (same test, no 64-bit product).
constexpr unsigned kRenormShift = 32 - kProbBits;  // 21

}  // namespace zipnet::codec::common
