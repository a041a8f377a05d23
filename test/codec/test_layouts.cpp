// NCCL LL and LL128 lines: bit-exact, flags removed and restored, and the data still compresses.
#include <catch2/catch.hpp>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

// Builds LL lines {d1, flag, d2, flag} from data (8 data bytes per 16-byte line).
std::vector<uint8_t> make_ll(const std::vector<uint8_t>& data, uint32_t flag) {
  std::vector<uint8_t> out(data.size() / 8 * 16);
  for (size_t i = 0; i < data.size() / 8; ++i) {
    std::memcpy(&out[16 * i], &data[8 * i], 4);
    std::memcpy(&out[16 * i + 4], &flag, 4);
    std::memcpy(&out[16 * i + 8], &data[8 * i + 4], 4);
    std::memcpy(&out[16 * i + 12], &flag, 4);
  }
  return out;
}
std::vector<uint8_t> make_ll128(const std::vector<uint8_t>& data, uint64_t flag) {
  std::vector<uint8_t> out(data.size() / 120 * 128);
  for (size_t i = 0; i < data.size() / 120; ++i) {
    std::memcpy(&out[128 * i], &data[120 * i], 120);
    std::memcpy(&out[128 * i + 120], &flag, 8);
  }
  return out;
}

Layout layout_of(const RoundTrip& r) {
  FrameInfo info;
  REQUIRE(read_header(r.bytes.data(), r.bytes.size(), &info) == Status::ok);
  return info.layout;
}

}  // namespace

TEST_CASE("LL lines round-trip and compress", "[layout]") {
  for (size_t lines : {size_t(2), size_t(3), size_t(1000), size_t(65536 + 7)}) {
    auto data = gaussian_bf16(lines * 8, 31 + lines);
    auto ll = make_ll(data, 0x1234567u + uint32_t(lines));
    auto r = roundtrip(ll.data(), ll.size());
    INFO("lines " << lines);
    REQUIRE(r.ok);
    CHECK(layout_of(r) == Layout::ll);
    if (lines >= 1000) CHECK(r.ratio() > 2.8);  // half the bytes are flags, the rest is bf16
    REQUIRE(roundtrip(ll.data(), ll.size(), {}, 3, 5).ok);
  }
}

TEST_CASE("LL128 lines round-trip and compress", "[layout]") {
  for (size_t lines : {size_t(2), size_t(5), size_t(1000), size_t(9001)}) {
    auto data = gaussian_bf16(lines * 120, 41 + lines);
    auto ll = make_ll128(data, 0xABCDEF0123456789ull + lines);
    auto r = roundtrip(ll.data(), ll.size());
    INFO("lines " << lines);
    REQUIRE(r.ok);
    CHECK(layout_of(r) == Layout::ll128);
    if (lines >= 1000) CHECK(r.ratio() > 1.55);
    REQUIRE(roundtrip(ll.data(), ll.size(), {}, 1, 7).ok);
  }
}

TEST_CASE("lines with a differing or zero flag, or one line, stay flat and exact", "[layout]") {
  auto data = gaussian_bf16(8000 * 8, 51);
  auto ll = make_ll(data, 77);
  ll[16 * 4000 + 12] ^= 1;  // one flag differs
  auto r = roundtrip(ll.data(), ll.size());
  REQUIRE(r.ok);
  CHECK(layout_of(r) == Layout::flat);
  auto z = make_ll(data, 0);
  auto rz = roundtrip(z.data(), z.size());
  REQUIRE(rz.ok);
  CHECK(layout_of(rz) == Layout::flat);
  auto one = make_ll(std::vector<uint8_t>(data.begin(), data.begin() + 8), 5);
  auto r1 = roundtrip(one.data(), one.size());
  REQUIRE(r1.ok);
  CHECK(layout_of(r1) == Layout::flat);
  EncodeOptions o;
  o.detect_layout = false;
  auto ok = make_ll(data, 9);
  auto rf = roundtrip(ok.data(), ok.size(), o);
  REQUIRE(rf.ok);
  CHECK(layout_of(rf) == Layout::flat);
}

TEST_CASE("LL frames under every mode", "[layout]") {
  auto data = gaussian_bf16(4096 * 8, 61);
  auto ll = make_ll(data, 3);
  auto l128 = make_ll128(std::vector<uint8_t>(data.begin(), data.begin() + 240 * 120), 4);
  for (Mode m : {Mode::raw, Mode::planes, Mode::window, Mode::rans}) {
    EncodeOptions o;
    o.modes = mode_bit(m);
    REQUIRE(roundtrip(ll.data(), ll.size(), o).ok);
    REQUIRE(roundtrip(l128.data(), l128.size(), o).ok);
  }
}
