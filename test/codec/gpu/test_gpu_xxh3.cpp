// The warp XXH3, the scalar one and warp_hash_short_as<true> on the device against xxhash.h, over
// every length 0..2100 and large ones, from aligned and unaligned starts.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "xxhash.h"

bool device_hashes(const std::vector<uint8_t>& buf, const std::vector<uint32_t>& lens, uint32_t off,
                   std::vector<uint64_t>* out);

TEST_CASE("warp XXH3 on the GPU equals XXH3_64bits", "[xxh3]") {
  std::vector<uint32_t> lens;
  for (uint32_t n = 0; n <= 2100; ++n) lens.push_back(n);
  for (uint32_t n : {4095u, 4096u, 32767u, 32768u, 32769u, 65553u, 1u << 20}) lens.push_back(n);
  std::mt19937_64 rng(3);
  std::vector<uint8_t> buf((1u << 20) + 16);
  for (auto& b : buf) b = uint8_t(rng() >> 56);
  for (uint32_t off : {0u, 8u, 5u, 4u}) {  // 4: 4-byte aligned words (warp_hash_short), not 8
    std::vector<uint64_t> out;
    REQUIRE(device_hashes(buf, lens, off, &out));
    for (size_t i = 0; i < lens.size(); ++i) {
      const uint64_t want = XXH3_64bits(buf.data() + off, lens[i]);
      INFO("len " << lens[i] << " offset " << off);
      REQUIRE(out[i] == want);
      REQUIRE(out[lens.size() + i] == want);
      REQUIRE(out[2 * lens.size() + i] == want);
    }
  }
}
