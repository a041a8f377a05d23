// Every bf16 and fp16 bit pattern, and the special values, round-trip bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

std::vector<uint8_t> all_u16_patterns(uint64_t shuffle_seed) {
  std::vector<uint16_t> v(65536);
  std::iota(v.begin(), v.end(), 0);
  if (shuffle_seed) std::shuffle(v.begin(), v.end(), std::mt19937_64(shuffle_seed));
  std::vector<uint8_t> out(v.size() * 2);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

TEST_CASE("every 16-bit pattern round-trips as bf16, fp16 and detected", "[patterns]") {
  for (uint64_t seed : {0, 7}) {
    auto data = all_u16_patterns(seed);
    for (auto d : {std::optional<Dtype>{}, std::optional<Dtype>{Dtype::bf16}, std::optional<Dtype>{Dtype::fp16}}) {
      EncodeOptions o;
      o.dtype = d;
      auto r = roundtrip(data.data(), data.size(), o);
      INFO("seed " << seed << " dtype " << (d ? int(*d) : -1));
      REQUIRE(r.ok);
    }
  }
}

TEST_CASE("special values: NaN payloads, -0, Inf, denormals, in bf16/fp16/fp32", "[patterns]") {
  std::vector<uint16_t> h16 = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x7FFF, 0x0001, 0x807F,
                               0x0040, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x03FF, 0x8001, 0x3F80, 0xBF80};
  std::vector<uint32_t> h32 = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                               0xFFFFFFFF, 0x7FFFFFFF, 0x00000001, 0x807FFFFF, 0x3F800000, 0x00400000};
  std::mt19937_64 rng(3);
  // Mixed into gaussian data so that the compressed modes are exercised, and alone.
  for (int mix = 0; mix < 2; ++mix) {
    auto data = gaussian_bf16(1 << 16, 9);
    for (size_t i = 0; i < data.size() / 2; i += (mix ? 37 : 1)) {
      uint16_t v = h16[rng() % h16.size()];
      std::memcpy(&data[2 * i], &v, 2);
    }
    for (auto d : {Dtype::bf16, Dtype::fp16, Dtype::opaque}) {
      EncodeOptions o;
      o.dtype = d;
      REQUIRE(roundtrip(data.data(), data.size(), o).ok);
    }
    std::vector<uint8_t> d32(1 << 16);
    for (size_t i = 0; i < d32.size() / 4; ++i) {
      uint32_t v = (mix && i % 41) ? (uint32_t(rng()) & 0x3FFFFFFF) : h32[rng() % h32.size()];
      std::memcpy(&d32[4 * i], &v, 4);
    }
    EncodeOptions o;
    o.dtype = Dtype::fp32;
    REQUIRE(roundtrip(d32.data(), d32.size(), o).ok);
    REQUIRE(roundtrip(d32.data(), d32.size()).ok);
  }
}

TEST_CASE("constant and all-zero buffers", "[patterns]") {
  for (uint8_t b : {0x00, 0xFF, 0x3F}) {
    std::vector<uint8_t> data(100000, b);
    auto r = roundtrip(data.data(), data.size());
    REQUIRE(r.ok);
    CHECK(r.ratio() > 20);  // zero planes / a one-symbol rANS table
  }
}
