// Warp-parallel XXH3-64 (seed 0), equal to xxh3::hash64. Lane l adds the words l, l+32, l+64,
// l+96 of each 1 KiB stripe block (stripe l/8 + 4k, word l%8); a butterfly over the lanes with the
// same l%8 sums them, and every lane then holds accumulator l%8. Only the per-block scramble is
// sequential. The pieces can be fed in order as the data arrives (the decoder hashes each chunk
// it writes). All 32 lanes must call every function.
#pragma once

#include "xxh3_hd.h"

namespace zipnet::codec::xxh3 {

__device__ __forceinline__ uint64_t shfl_xor64(uint64_t v, int m) { return __shfl_xor_sync(0xFFFFFFFFu, v, m); }
__device__ __forceinline__ uint64_t shfl64(uint64_t v, int src) { return __shfl_sync(0xFFFFFFFFu, v, src); }

template <bool kAligned>
__device__ __forceinline__ uint64_t load_word(const uint8_t* p) {
  if constexpr (kAligned) return *reinterpret_cast<const uint64_t*>(p);
  else return load_u64(p);
}

struct WarpAcc {
  uint64_t acc;         // accumulator lane%8
  uint64_t key[4];      // secret words of this lane's 4 stripe words (loaded once per hash)
  uint64_t scramble;
  __device__ void init() {
    const int lane = threadIdx.x & 31, i = lane & 7;
    acc = long_init().v[i];
    const uint64_t* words = reinterpret_cast<const uint64_t*>(kSecretGlobal);
#pragma unroll
    for (int k = 0; k < 4; ++k) key[k] = words[(lane >> 3) + 4 * k + i];
    static_assert(kScrambleKey % 8 == 0, "the scramble key is whole words of the secret");
    scramble = words[kScrambleKey / 8 + i];
  }

  // Adds `nstripes` stripes of the stripe block at blk (the first uses secret offset 0).
  template <bool kAligned>
  __device__ void add(const uint8_t* blk, int nstripes) {
    const int lane = threadIdx.x & 31;
    uint64_t m = 0, d = 0;
    uint64_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = (lane >> 3) + 4 * k < nstripes ? load_word<kAligned>(blk + 8 * (lane + 32 * k)) : 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if ((lane >> 3) + 4 * k < nstripes) {
        uint64_t mm, dd;
        stripe_word(w[k], key[k], &mm, &dd);
        m += mm;
        d += dd;
      }
    }
    m += shfl_xor64(m, 8);
    m += shfl_xor64(m, 16);
    d += shfl_xor64(d, 8);
    d += shfl_xor64(d, 16);
    acc += m + shfl_xor64(d, 1);
  }
  // The scramble that ends every whole 1 KiB stripe block.
  __device__ void scramble_block() {
    acc ^= acc >> 47;
    acc ^= scramble;
    acc *= kP32_1;
  }
  // The stripe sums of the whole 1 KiB stripe block at blk (8-byte aligned) into part[0..7], which
  // fold_parts later adds in order: blocks can be summed by any warp, in any order. Keeps the keys.
  __device__ void sums_of_block(const uint8_t* blk, uint64_t* part) {
    acc = 0;
    add<true>(blk, int(kStripesPerBlock));
    if ((threadIdx.x & 31) < 8) part[threadIdx.x & 31] = acc;
  }
  // Adds the sums of `count` whole stripe blocks in order, each followed by its scramble.
  __device__ void fold_parts(const uint64_t (*part)[8], uint32_t count) {
    for (uint32_t b = 0; b < count; ++b) {
      acc += part[b][threadIdx.x & 7];
      scramble_block();
    }
  }
  // A whole 1 KiB stripe block followed by the scramble.
  template <bool kAligned>
  __device__ void block(const uint8_t* blk) {
    add<kAligned>(blk, int(kStripesPerBlock));
    scramble_block();
  }
  // After the long_blocks(len) scrambled blocks: `last_blk` points at the last (partial) stripe
  // block, `last_stripe` at the final 64 bytes of the input (any alignment).
  template <bool kAligned>
  __device__ uint64_t finish(const uint8_t* last_blk, const uint8_t* last_stripe, size_t len) {
    add<kAligned>(last_blk, int(last_block_stripes(len)));
    const int i = threadIdx.x & 7;
    uint64_t m, d;
    stripe_word(load_u64(last_stripe + 8 * i), secret64(kLastStripeKey + 8 * i), &m, &d);
    acc += m + shfl_xor64(d, 1);
    Acc a;
#pragma unroll
    for (int j = 0; j < 8; ++j) a.v[j] = shfl64(acc, j);
    return long_merge(a, len);
  }
};

// Inputs of at most 240 bytes (hash_short), by the whole warp; every lane gets the hash. Past 16
// bytes XXH3's short path is a sum of independent 16-byte mixes (two sums past 128 bytes, with an
// avalanche between): lane k takes mix k, and shuffles add them. (Lane 0 alone ran hash_short's
// unrolled ladder: about 1,900 instructions of straight-line code in the group decoder's frame
// checks, and every lane ran it for the header in each block job; ncu 2026-12-02.) kAligned4: in
// and len are multiples of 4 (word loads).
template <bool kAligned4>
__device__ __forceinline__ uint64_t warp_hash_short_as(const uint8_t* in, size_t len) {
  const uint32_t lane = threadIdx.x & 31;
  if (len <= 16) return shfl64(lane == 0 ? hash_upto16_as<kAligned4>(in, len) : 0, 0);
  // This lane's mix, of in[off, off + 16) with the secret at sec, goes to the first sum or (past
  // 128 bytes) the second. Up to 128 bytes: mix pairs p = 0, 1, ... (in + 16 p, secret 32 p) and
  // (in + len - 16 (p + 1), secret 32 p + 16); past it: mix i of in + 16 i (lanes 0..14, the
  // first 8 in the first sum), then the last 16 bytes (lane 16).
  bool has, second;
  size_t off, sec;
  if (len <= 128) {
    const uint32_t p = lane / 2, pairs = uint32_t(len - 1) / 32 + 1;
    has = lane < 2 * pairs;
    second = false;
    off = lane & 1 ? len - 16 * (p + 1) : 16 * p;
    sec = 32 * p + 16 * (lane & 1);
  } else {
    has = lane < len / 16 || lane == 16;  // len / 16 <= 15
    second = lane >= 8;
    off = lane == 16 ? len - 16 : 16 * lane;
    sec = lane < 8 ? 16 * lane : lane == 16 ? 136 - 17 : 16 * (lane - 8) + 3;
  }
  const uint64_t m = has ? mix16<kAligned4>(in + off, sec) : 0;
  uint64_t s1 = second ? 0 : m, s2 = second ? m : 0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s1 += shfl_xor64(s1, o);
    s2 += shfl_xor64(s2, o);
  }
  const uint64_t acc = avalanche(len * kP64_1 + s1);
  return len <= 128 ? acc : avalanche(acc + s2);
}
// Any alignment: word loads where in and len allow.
__device__ __forceinline__ uint64_t warp_hash_short(const uint8_t* in, size_t len) {
  return ((uintptr_t(in) | len) & 3) == 0 ? warp_hash_short_as<true>(in, len) : warp_hash_short_as<false>(in, len);
}

// The whole hash of in[0..len). kAligned: `in` is 8-byte aligned.
template <bool kAligned>
__device__ inline uint64_t warp_hash64(const uint8_t* in, size_t len) {
  if (len <= 240) return warp_hash_short(in, len);
  WarpAcc w;
  w.init();
  const size_t nb = long_blocks(len);
  for (size_t b = 0; b < nb; ++b) w.block<kAligned>(in + b * kBlockLen);
  return w.finish<kAligned>(in + nb * kBlockLen, in + len - kStripeLen, len);
}

// The hash of a block split over the warps of a group, in two calls with a group barrier between:
//  1. parts_of_blocks (every warp): warp w sums the stripes of whole 1 KiB blocks w, w + warps, ...
//     into part[b] (additions commute, so this is the only part that needs no order);
//  2. hash_from_parts (one warp): the scrambles in order over part[], then the finish.
// in: the whole input, 8-byte aligned; part: long_blocks(len) entries.
// first: stripe blocks before it are already summed.
__device__ __forceinline__ void parts_of_blocks(const uint8_t* in, size_t len, uint64_t (*part)[8], int warp, int warps,
                                                uint32_t first = 0) {
  if (len <= 240) return;
  WarpAcc t;
  t.init();
  const uint32_t nb = uint32_t(long_blocks(len));
  for (uint32_t b = first + warp; b < nb; b += warps) t.sums_of_block(in + uint64_t(b) * kBlockLen, part[b]);
}
__device__ __forceinline__ uint64_t hash_from_parts(const uint8_t* in, size_t len, const uint64_t (*part)[8]) {
  if (len <= 240) return warp_hash_short(in, len);
  WarpAcc acc;
  acc.init();
  const uint32_t nb = uint32_t(long_blocks(len));
  acc.fold_parts(part, nb);
  return acc.finish<true>(in + uint64_t(nb) * kBlockLen, in + (len - kStripeLen), len);
}

}  // namespace zipnet::codec::xxh3
