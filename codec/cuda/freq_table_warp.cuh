// common::parse_freq_table by a whole warp: the same verdict, frequencies and consumed bytes for
// every input, 32 table bytes a round instead of one entry at a time on one lane. (On one lane,
// each entry's byte load waited on the previous entry's length: about 2 us of every RANS block's
// decoder set-up, on the critical path of a small batch.)
#pragma once

#include <cstdint>

#include "common/rans.h"

namespace zipnet::codec::cuda::detail {

// Why entry starts need no serial walk: a two-byte entry's second byte is f >> 7 (at most 16) or 0,
// so it never has its top bit set in a table that parses. Byte k > 2 therefore starts an entry
// exactly when byte k - 1 has its top bit clear. Where a second byte does have its top bit set, the
// serial parser reads an entry of f >= 2^14 there and rejects the table (the sum reaches M); this
// one reads the same entry at the same place, before anything differs, and rejects it the same way.
//
// in: the table bytes (any memory), avail of them; freq: 256 words of shared memory, written for
// every symbol. Every lane of the warp calls it and gets the same result.
__device__ inline bool parse_freq_table_warp(const uint8_t* in, uint32_t avail, uint32_t* freq, uint32_t* consumed) {
  namespace cm = zipnet::codec::common;
  constexpr uint32_t kAll = 0xFFFFFFFFu;
  const uint32_t lane = threadIdx.x & 31;
  if (avail < 2) return false;
  const uint32_t lo = in[0], span = uint32_t(in[1]) + 1;
  if (lo + span > 256) return false;
  for (uint32_t s = lane; s < 256; s += 32) freq[s] = 0;
  __syncwarp();
  uint32_t covered = 0;     // symbols covered by the entries of earlier rounds (i of the serial parser)
  bool after_high = false;  // the byte before this round's first has its top bit set
  uint32_t sum = 0, end = 2;
  bool bad = false;
  for (uint32_t k0 = 2; covered + 1 < span; k0 += 32) {
    const uint32_t k = k0 + lane;
    const uint32_t b = k < avail ? in[k] : 0, c = k + 1 < avail ? in[k + 1] : 0;
    const bool high = (b & 0x80) != 0;
    const uint32_t highs = __ballot_sync(kAll, high);
    const bool start = !(lane ? ((highs >> (lane - 1)) & 1) != 0 : after_high);
    // What the entry starting here covers: a frequency (one symbol), an absent symbol (0x00), or
    // a run of absent symbols (0x80 | (run - 2), 0x00).
    uint32_t cover = 0, f = 0;
    if (start) {
      cover = high && c == 0 ? (b & 0x7F) + 2 : 1;
      f = !high ? b : c == 0 ? 0 : (b & 0x7F) | (c << 7);
    }
    uint32_t inc = cover;
    for (uint32_t o = 1; o < 32; o <<= 1) {
      const uint32_t t = __shfl_up_sync(kAll, inc, o);
      if (lane >= o) inc += t;
    }
    const uint32_t before = covered + inc - cover;  // the serial parser's i at this entry
    const bool parsed = start && before + 1 < span;
    const uint32_t len = high ? 2 : 1;
    if (parsed) {
      if (k + len > avail) bad = true;                      // the entry runs past the table
      if (cover > 1 && before + cover + 1 > span) bad = true;  // a run reaches hi
      if (f) {
        freq[lo + before] = f;
        sum += f;
      }
    }
    const uint32_t last = __ballot_sync(kAll, parsed && before + cover + 1 >= span);
    if (last) end = __shfl_sync(kAll, k + len, __ffs(last) - 1);
    covered += __shfl_sync(kAll, inc, 31);
    after_high = (highs >> 31) != 0;
    if (__any_sync(kAll, bad)) return false;
  }
  // Every frequency is positive, so the serial check of the running sum fails iff the total does.
  sum = __reduce_add_sync(kAll, sum);
  if (sum >= cm::kProbScale) return false;
  __syncwarp();
  if (lane == 0) freq[lo + span - 1] = cm::kProbScale - sum;
  __syncwarp();
  *consumed = end;
  return true;
}

}  // namespace zipnet::codec::cuda::detail
