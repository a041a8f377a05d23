// XXH3-64 (seed 0, default secret) written for both host and device, bit for bit equal to
// xxhash.h's XXH3_64bits. The long path is split into the pieces a warp runs in parallel:
// within one 1 KiB stripe block the 64-byte stripe accumulations only add (mod 2^64), so they can
// be summed in any order; only the scramble between stripe blocks is sequential.
// test/codec/gpu/test_xxh3_host.cpp checks every length 0..2100 and large ones against xxhash.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/hd.h"

#if defined(__CUDACC__)
#define ZIPNET_XXH_HD __host__ __device__ __forceinline__
#else
#define ZIPNET_XXH_HD inline
#endif

namespace zipnet::codec::xxh3 {

inline constexpr size_t kSecretSize = 192;
inline constexpr size_t kStripeLen = 64;
inline constexpr size_t kStripesPerBlock = (kSecretSize - kStripeLen) / 8;  // 16
inline constexpr size_t kBlockLen = kStripeLen * kStripesPerBlock;          // 1024
inline constexpr size_t kScrambleKey = kSecretSize - kStripeLen;            // 128
inline constexpr size_t kLastStripeKey = kSecretSize - kStripeLen - 7;      // 121
inline constexpr size_t kMergeKey = 11;

inline constexpr uint64_t kP32_1 = 0x9E3779B1U, kP32_2 = 0x85EBCA77U, kP32_3 = 0xC2B2AE3DU;
inline constexpr uint64_t kP64_1 = 0x9E3779B185EBCA87ULL, kP64_2 = 0xC2B2AE3D27D4EB4FULL,
                          kP64_3 = 0x165667B19E3779F9ULL, kP64_4 = 0x85EBCA77C2B2AE63ULL,
                          kP64_5 = 0x27D4EB2F165667C5ULL;
inline constexpr uint64_t kMx1 = 0x165667919E3779F9ULL, kMx2 = 0x9FB21C651E98DF25ULL;

// The XXH3 default secret (the spec's kSecret); the host test compares it with xxhash.h's.
#define ZIPNET_XXH3_SECRET_BYTES                                                                     \
  {0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, \
   0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, \
   0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, \
   0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, \
   0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, \
   0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, \
   0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, \
   0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, \
   0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, \
   0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, \
   0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, \
   0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e}

inline constexpr uint8_t kSecretHost[kSecretSize] = ZIPNET_XXH3_SECRET_BYTES;
#if defined(__CUDACC__)
// The device's copy, in global memory and 8-byte aligned, read a word at a time (secret64). For
// the warp hash's per-lane keys, 32 lanes reading 32 different words at once is one coalesced load
// here, and 32 serialised ones (times 8 byte loads) from constant memory.
static __device__ __align__(16) uint8_t kSecretGlobal[kSecretSize] = ZIPNET_XXH3_SECRET_BYTES;
#endif

// The host's secret (the host tests read it).
inline const uint8_t* secret() { return kSecretHost; }

// Little-endian loads (common/hd.h): bytes at any alignment; with kAligned4, words on the device.
using common::load_u32_as;
using common::load_u64;
using common::load_u64_as;

// Secret bytes [off, off + 8) as a little-endian word (off <= 184: every offset XXH3 reads). On the
// device: one or two aligned loads of kSecretGlobal, joined by shifts. (Read through byte loads from
// constant memory, each was 8 byte loads, some with a different address in each lane: 16 x 512 KiB
// then encoded 1.08x and decoded 1.04x slower, 64 MiB 1.05x and 1.04x; H200 2026-12-02.)
ZIPNET_XXH_HD uint64_t secret64(size_t off) {
#if defined(__CUDA_ARCH__)
  const uint64_t* w = reinterpret_cast<const uint64_t*>(kSecretGlobal);
  const unsigned sh = unsigned(off & 7) * 8;
  const uint64_t lo = w[off >> 3];
  return sh ? (lo >> sh) | (w[(off >> 3) + 1] << (64 - sh)) : lo;
#else
  return load_u64(kSecretHost + off);
#endif
}
ZIPNET_XXH_HD uint32_t secret32(size_t off) { return uint32_t(secret64(off)); }

ZIPNET_XXH_HD uint64_t mul128_fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  unsigned __int128 p = (unsigned __int128)a * b;
  return uint64_t(p) ^ uint64_t(p >> 64);
#endif
}
ZIPNET_XXH_HD uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
ZIPNET_XXH_HD uint64_t swap64(uint64_t x) {
  x = ((x & 0x00FF00FF00FF00FFULL) << 8) | ((x >> 8) & 0x00FF00FF00FF00FFULL);
  x = ((x & 0x0000FFFF0000FFFFULL) << 16) | ((x >> 16) & 0x0000FFFF0000FFFFULL);
  return (x << 32) | (x >> 32);
}
ZIPNET_XXH_HD uint64_t xxh64_avalanche(uint64_t h) {
  h ^= h >> 33; h *= kP64_2; h ^= h >> 29; h *= kP64_3; h ^= h >> 32;
  return h;
}
ZIPNET_XXH_HD uint64_t avalanche(uint64_t h) {
  h ^= h >> 37; h *= kMx1; h ^= h >> 32;
  return h;
}
ZIPNET_XXH_HD uint64_t rrmxmx(uint64_t h, uint64_t len) {
  h ^= rotl64(h, 49) ^ rotl64(h, 24);
  h *= kMx2;
  h ^= (h >> 35) + len;
  h *= kMx2;
  return h ^ (h >> 28);
}
template <bool kAligned4>
ZIPNET_XXH_HD uint64_t mix16(const uint8_t* in, size_t sec) {
  return mul128_fold64(load_u64_as<kAligned4>(in) ^ secret64(sec), load_u64_as<kAligned4>(in + 8) ^ secret64(sec + 8));
}

// Inputs of 0..16 bytes (seed 0). kAligned4: in and len are multiples of 4, so every word it
// reads is 4-byte aligned.
template <bool kAligned4>
ZIPNET_XXH_HD uint64_t hash_upto16_as(const uint8_t* in, size_t len) {
  if (len > 8) {
    uint64_t lo = load_u64_as<kAligned4>(in) ^ (secret64(24) ^ secret64(32));
    uint64_t hi = load_u64_as<kAligned4>(in + len - 8) ^ (secret64(40) ^ secret64(48));
    return avalanche(len + swap64(lo) + hi + mul128_fold64(lo, hi));
  }
  if (len >= 4) {
    uint64_t v = uint64_t(load_u32_as<kAligned4>(in + len - 4)) + (uint64_t(load_u32_as<kAligned4>(in)) << 32);
    return rrmxmx(v ^ (secret64(8) ^ secret64(16)), len);
  }
  if (len > 0) {
    uint32_t c = (uint32_t(in[0]) << 16) | (uint32_t(in[len >> 1]) << 24) | uint32_t(in[len - 1]) |
                 (uint32_t(len) << 8);
    return xxh64_avalanche(uint64_t(c) ^ uint64_t(secret32(0) ^ secret32(4)));
  }
  return xxh64_avalanche(secret64(56) ^ secret64(64));
}

// Inputs of 0..240 bytes (seed 0), at any alignment. (warp_hash_short_as in xxh3_warp.cuh spreads
// the same mixes over a warp.)
ZIPNET_XXH_HD uint64_t hash_short(const uint8_t* in, size_t len) {
  if (len <= 16) return hash_upto16_as<false>(in, len);
  uint64_t acc = len * kP64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) { acc += mix16<false>(in + 48, 96); acc += mix16<false>(in + len - 64, 112); }
        acc += mix16<false>(in + 32, 64); acc += mix16<false>(in + len - 48, 80);
      }
      acc += mix16<false>(in + 16, 32); acc += mix16<false>(in + len - 32, 48);
    }
    acc += mix16<false>(in, 0); acc += mix16<false>(in + len - 16, 16);
    return avalanche(acc);
  }
  for (int i = 0; i < 8; ++i) acc += mix16<false>(in + 16 * i, 16 * i);
  acc = avalanche(acc);
  const int rounds = int(len / 16);
  for (int i = 8; i < rounds; ++i) acc += mix16<false>(in + 16 * i, 16 * (i - 8) + 3);
  acc += mix16<false>(in + len - 16, 136 - 17);
  return avalanche(acc);
}

// ---- long path (> 240 bytes), in pieces ----
struct Acc { uint64_t v[8]; };

ZIPNET_XXH_HD Acc long_init() {
  return Acc{{kP32_3, kP64_1, kP64_2, kP64_3, kP64_4, kP32_2, kP64_5, kP32_1}};
}
// What word `i` (0..7) of one stripe adds: `mul` to lane i, `data` to lane i^1.
ZIPNET_XXH_HD void stripe_word(uint64_t data, uint64_t key, uint64_t* mul, uint64_t* add) {
  uint64_t k = data ^ key;
  *mul = uint64_t(uint32_t(k)) * (k >> 32);
  *add = data;
}
// key: the offset of the stripe's secret words.
ZIPNET_XXH_HD void accumulate_stripe(Acc& a, const uint8_t* in, size_t key) {
  for (int i = 0; i < 8; ++i) {
    uint64_t m, d;
    stripe_word(load_u64(in + 8 * i), secret64(key + 8 * i), &m, &d);
    a.v[i ^ 1] += d;
    a.v[i] += m;
  }
}
ZIPNET_XXH_HD uint64_t scramble_lane(uint64_t acc, int i) {
  acc ^= acc >> 47;
  acc ^= secret64(kScrambleKey + 8 * i);
  return acc * kP32_1;
}
// Number of full 1 KiB blocks that are followed by a scramble, and stripes of the last block.
ZIPNET_XXH_HD size_t long_blocks(size_t len) { return (len - 1) / kBlockLen; }
ZIPNET_XXH_HD size_t last_block_stripes(size_t len) {
  return ((len - 1) - kBlockLen * long_blocks(len)) / kStripeLen;
}
ZIPNET_XXH_HD uint64_t long_merge(const Acc& a, size_t len) {
  uint64_t r = len * kP64_1;
  for (int i = 0; i < 4; ++i)
    r += mul128_fold64(a.v[2 * i] ^ secret64(kMergeKey + 16 * i), a.v[2 * i + 1] ^ secret64(kMergeKey + 16 * i + 8));
  return avalanche(r);
}
// The tail after the scrambled blocks: the last block's whole stripes and the final stripe.
ZIPNET_XXH_HD uint64_t long_finish(Acc a, const uint8_t* in, size_t len) {
  const size_t nb = long_blocks(len), ns = last_block_stripes(len);
  for (size_t s = 0; s < ns; ++s) accumulate_stripe(a, in + nb * kBlockLen + s * kStripeLen, 8 * s);
  accumulate_stripe(a, in + len - kStripeLen, kLastStripeKey);
  return long_merge(a, len);
}

ZIPNET_XXH_HD uint64_t hash_long(const uint8_t* in, size_t len) {
  Acc a = long_init();
  const size_t nb = long_blocks(len);
  for (size_t b = 0; b < nb; ++b) {
    for (size_t s = 0; s < kStripesPerBlock; ++s)
      accumulate_stripe(a, in + b * kBlockLen + s * kStripeLen, 8 * s);
    for (int i = 0; i < 8; ++i) a.v[i] = scramble_lane(a.v[i], i);
  }
  return long_finish(a, in, len);
}

// XXH3_64bits(in, len) with seed 0.
ZIPNET_XXH_HD uint64_t hash64(const void* p, size_t len) {
  const uint8_t* in = static_cast<const uint8_t*>(p);
  return len <= 240 ? hash_short(in, len) : hash_long(in, len);
}

}  // namespace zipnet::codec::xxh3
