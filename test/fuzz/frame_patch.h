// Re-seals a mutated frame so the fuzzer gets past the cheap header and table checks and reaches the
// block decoders (a random mutation almost never keeps an XXH3 valid). Field offsets are those of
// docs/format.md §1; this file only rewrites checksums and frame_size, it never decodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <xxhash.h>

namespace zipnet::fuzz {

inline uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void store_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}

inline uint32_t xxh3_low32(const void* p, size_t n) { return uint32_t(XXH3_64bits(p, n)); }

// Makes frame_size equal n and recomputes the table and header checksums in place. Leaves frames
// whose header cannot be read (too short, bad block_log2) alone: the decoder must reject those anyway.
inline void reseal(uint8_t* f, size_t n) {
  if (n < 40) return;
  const unsigned block_log2 = f[7];
  if (block_log2 < 12 || block_log2 > 20) return;
  const uint64_t original = load_le(f + 8, 8);
  const uint64_t nblk = (original >> block_log2) + ((original & ((uint64_t(1) << block_log2) - 1)) != 0);
  store_le(f + 16, n, 8);
  if (nblk <= (n - 40) / 8) store_le(f + 32, xxh3_low32(f + 40, size_t(nblk) * 8), 4);
  store_le(f + 36, xxh3_low32(f, 36), 4);
}

}  // namespace zipnet::fuzz
