// Quick round trips over the basic cases; the thorough suites live in the other test_*.cpp files.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

TEST_CASE("empty message is a 40-byte frame", "[smoke]") {
  std::vector<uint8_t> frame(max_frame_size(0));
  size_t fs = 0;
  REQUIRE(encode(nullptr, 0, frame.data(), frame.size(), &fs) == Status::ok);
  REQUIRE(fs == kFrameHeaderSize);
  size_t out = 123;
  uint8_t dst[1];
  REQUIRE(decode(frame.data(), fs, dst, 0, &out) == Status::ok);
  REQUIRE(out == 0);
}

TEST_CASE("gaussian bf16 compresses and round-trips", "[smoke]") {
  auto data = gaussian_bf16(1 << 20, 1);
  auto r = roundtrip(data.data(), data.size());
  REQUIRE(r.ok);
  CHECK(r.ratio() > 1.4);
}

TEST_CASE("every status has its own name", "[smoke]") {
  std::set<std::string_view> names;
  for (int s = 0; s <= int(Status::device_error); ++s) {
    const std::string_view name = to_string(Status(s));
    CHECK(name != "unknown status");
    names.insert(name);
  }
  CHECK(names.size() == size_t(Status::device_error) + 1);
}
