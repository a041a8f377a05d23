// The CUDA codec's XXH3-64 (codec/cuda/xxh3_hd.h, compiled here for the host) against xxhash.h:
// every length 0..2100 (all short paths, the 129..240 mid path, and the long path around each
// stripe and 1 KiB block boundary), large lengths, odd offsets, and the split into stripe blocks
// that the warp version uses. Runs without a GPU (suite codec).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "xxh3_hd.h"
#include "xxhash.h"

namespace xxh3 = zipnet::codec::xxh3;

namespace {
std::vector<uint8_t> random_buffer(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng() >> 56);
  return v;
}

// The warp decomposition run serially: per stripe block, lanes' word contributions are summed
// in lane order (any order gives the same sums), then added to the accumulators and scrambled.
uint64_t hash_as_warp(const uint8_t* in, size_t len) {
  if (len <= 240) return xxh3::hash_short(in, len);
  const uint8_t* sec = xxh3::secret();
  uint64_t acc[8];
  xxh3::Acc a0 = xxh3::long_init();
  std::memcpy(acc, a0.v, sizeof acc);
  auto add_block = [&](const uint8_t* blk, int nstripes) {
    uint64_t m[8] = {}, d[8] = {};
    for (int lane = 31; lane >= 0; --lane) {  // reverse order on purpose
      const int i = lane & 7;
      for (int k = 0; k < 4; ++k) {
        const int stripe = (lane >> 3) + 4 * k;
        if (stripe >= nstripes) continue;
        uint64_t mm, dd;
        xxh3::stripe_word(xxh3::load_u64(blk + 8 * (lane + 32 * k)), xxh3::load_u64(sec + 8 * (stripe + i)), &mm, &dd);
        m[i] += mm;
        d[i] += dd;
      }
    }
    for (int i = 0; i < 8; ++i) acc[i] += m[i] + d[i ^ 1];
  };
  const size_t nb = xxh3::long_blocks(len);
  for (size_t b = 0; b < nb; ++b) {
    add_block(in + b * xxh3::kBlockLen, int(xxh3::kStripesPerBlock));
    for (int i = 0; i < 8; ++i) acc[i] = xxh3::scramble_lane(acc[i], i);
  }
  add_block(in + nb * xxh3::kBlockLen, int(xxh3::last_block_stripes(len)));
  xxh3::Acc a;
  std::memcpy(a.v, acc, sizeof acc);
  uint64_t m[8], d[8];
  for (int i = 0; i < 8; ++i)
    xxh3::stripe_word(xxh3::load_u64(in + len - 64 + 8 * i), xxh3::load_u64(sec + xxh3::kLastStripeKey + 8 * i), &m[i], &d[i]);
  for (int i = 0; i < 8; ++i) a.v[i] += m[i] + d[i ^ 1];
  return xxh3::long_merge(a, len);
}
}  // namespace

TEST_CASE("device XXH3 secret is xxhash's default secret", "[xxh3]") {
  REQUIRE(sizeof(XXH3_kSecret) == xxh3::kSecretSize);
  REQUIRE(std::memcmp(XXH3_kSecret, xxh3::kSecretHost, xxh3::kSecretSize) == 0);
}

TEST_CASE("device XXH3 equals XXH3_64bits for every length 0..2100", "[xxh3]") {
  auto buf = random_buffer(2100 + 16, 7);
  for (size_t len = 0; len <= 2100; ++len) {
    for (size_t off : {size_t(0), size_t(3)}) {
      const uint64_t want = XXH3_64bits(buf.data() + off, len);
      INFO("len " << len << " offset " << off);
      REQUIRE(xxh3::hash64(buf.data() + off, len) == want);
      REQUIRE(hash_as_warp(buf.data() + off, len) == want);
    }
  }
}

TEST_CASE("device XXH3 equals XXH3_64bits on large and patterned inputs", "[xxh3]") {
  for (size_t len : {size_t(4095), size_t(4096), size_t(32767), size_t(32768), size_t(32769), size_t(65536 + 17),
                     size_t(1) << 20}) {
    auto buf = random_buffer(len, len);
    INFO("len " << len);
    REQUIRE(xxh3::hash64(buf.data(), len) == XXH3_64bits(buf.data(), len));
    REQUIRE(hash_as_warp(buf.data(), len) == XXH3_64bits(buf.data(), len));
    std::vector<uint8_t> zeros(len, 0), ones(len, 0xFF);
    REQUIRE(xxh3::hash64(zeros.data(), len) == XXH3_64bits(zeros.data(), len));
    REQUIRE(xxh3::hash64(ones.data(), len) == XXH3_64bits(ones.data(), len));
  }
}
