// Host/device-neutral basics shared by codec/cpu and codec/cuda: the ZIPNET_HD qualifier, status
// codes that mirror zipnet::codec::Status, and little-endian byte access. No STL here: nvcc
// compiles these headers for the GPU.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZIPNET_HD __host__ __device__
#else
#define ZIPNET_HD
#endif

namespace zipnet::codec::common {

// Same numbering as zipnet::codec::Status (codec.h); the CPU codec static_asserts that.
enum : uint8_t {
  kOk = 0,
  kDstTooSmall = 1,
  kTruncated = 2,
  kBadMagic = 3,
  kBadVersion = 4,
  kBadHeader = 5,
  kBadTable = 6,
  kCorruptBlock = 7,
  kChecksumMismatch = 8,
  kTooLarge = 9,
  kBadOptions = 10,
};

// Byte-wise so that any alignment works on both sides; compilers fuse these into single loads.
ZIPNET_HD inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (uint32_t(p[1]) << 8)); }
ZIPNET_HD inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
ZIPNET_HD inline uint64_t load_u64(const uint8_t* p) {
  return uint64_t(load_u32(p)) | (uint64_t(load_u32(p + 4)) << 32);
}
// The same, where the caller knows p to be 4-byte aligned (kAligned4): word loads on the device.
// (A decoder block job parses its frame's header from shared memory: those byte loads were code
// that runs once a block, cold in the instruction cache.) The host reads bytes (aliasing rules).
template <bool kAligned4>
ZIPNET_HD inline uint32_t load_u32_as(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (kAligned4) return *reinterpret_cast<const uint32_t*>(p);
#endif
  return load_u32(p);
}
template <bool kAligned4>
ZIPNET_HD inline uint64_t load_u64_as(const uint8_t* p) {
  return uint64_t(load_u32_as<kAligned4>(p)) | (uint64_t(load_u32_as<kAligned4>(p + 4)) << 32);
}
ZIPNET_HD inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
ZIPNET_HD inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
ZIPNET_HD inline void store_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

ZIPNET_HD inline uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

ZIPNET_HD inline uint32_t popcount32(uint32_t v) {
  uint32_t c = 0;
  for (; v; v &= v - 1) ++c;
  return c;
}

}  // namespace zipnet::codec::common
