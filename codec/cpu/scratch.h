// Per-thread scratch buffers of the CPU codec, grown on first use for a block size and then reused,
// so the data path does not allocate per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zipnet::codec::cpu {

struct Scratch {
  std::vector<uint8_t> gathered;  // LL/LL128 data of one block (encode) / joined data (decode)
  std::vector<uint8_t> sym;       // symbols of one block
  std::vector<uint8_t> sym2;      // decode: symbols of the second block of a pair
  std::vector<uint8_t> res[3];    // residual planes (encode)
  std::vector<uint8_t> gathered2; // encode: the second block of a pair
  std::vector<uint8_t> res2[3];
  std::vector<uint16_t> words2;
  std::vector<uint8_t> zeros;     // stands in for absent planes (decode)
  std::vector<uint16_t> words;    // rANS words, written back to front (encode)
  std::vector<uint32_t> table;    // 2048-entry rANS slot table (decode)
  std::vector<uint32_t> table2;   // the same for the second block of a pair

  // Makes every buffer big enough for blocks of `block_bytes` original bytes.
  void reserve(size_t block_bytes);
};

Scratch& thread_scratch();

}  // namespace zipnet::codec::cpu
