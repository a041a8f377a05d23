// Per-thread scratch buffers of the CPU codec, grown on first use for a block size and then reused,
// so the data path does not allocate per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zipnet::codec::cpu {

// Encode works on up to kEncodeGroup blocks at once (their rANS loops interleave).
inline constexpr unsigned kEncodeGroup = 2;
struct EncodeBuffers {
  std::vector<uint8_t> gathered;  // LL/LL128 data of the block
  std::vector<uint8_t> sym;
  std::vector<uint8_t> res[3];
  std::vector<uint16_t> words;    // rANS words, written back to front
};

struct Scratch {
  EncodeBuffers enc[kEncodeGroup];
  std::vector<uint8_t> gathered;  // encode: block 0's LL/LL128 data for detection; decode: joined data
  std::vector<uint8_t> sym;       // decode: symbols of one block
  std::vector<uint8_t> sym2;      // decode: symbols of the second block of a pair
  std::vector<uint8_t> zeros;     // stands in for absent planes (decode)
  std::vector<uint32_t> table;    // 2048-entry rANS slot table (decode)
  std::vector<uint32_t> table2;   // the same for the second block of a pair

  // Makes every buffer big enough for blocks of `block_bytes` original bytes.
  void reserve(size_t block_bytes);
};

Scratch& thread_scratch();

}  // namespace zipnet::codec::cpu
